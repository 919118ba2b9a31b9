package mrmc

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func loadVanDyke(t *testing.T) *Data {
	t.Helper()
	f, err := os.Open("testdata/vandyke.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := ParseScores(f, "vandyke.csv", AUC)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// near reports whether got rounds to want at want's printed precision.
func near(got float64, want string) bool {
	w, err := strconv.ParseFloat(want, 64)
	if err != nil {
		panic(err)
	}
	dec := 0
	if i := strings.IndexByte(want, '.'); i >= 0 {
		dec = len(want) - i - 1
	}
	return math.Abs(got-w) <= 0.5*math.Pow(10, -float64(dec))+1e-12
}

// TestVanDyke reproduces the published OR analysis (OR-DBM MRMC 2.51,
// AUC) of the Van Dyke et al. (1993) study: 2 modalities, 5 readers, 114
// cases.
func TestVanDyke(t *testing.T) {
	t.Parallel()
	d := loadVanDyke(t)
	if len(d.Modalities) != 2 || len(d.Readers) != 5 || len(d.Cases) != 114 {
		t.Fatalf("study %d×%d×%d, want 2×5×114", len(d.Modalities), len(d.Readers), len(d.Cases))
	}
	a, err := Analyze(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	rrrc, frrc, rrfc := a.Designs[0], a.Designs[1], a.Designs[2]
	tests := []struct {
		name string
		got  float64
		want string
	}{
		{"MS(T)", a.MST, "0.00479617"},
		{"MS(R)", a.MSR, "0.00383620"},
		{"MS(T×R)", a.MSTR, "0.00055103"},
		{"Var", a.Var, "0.00080229"},
		{"Cov1", a.Cov1, "0.00034661"},
		{"Cov2", a.Cov2, "0.00034407"},
		{"Cov3", a.Cov3, "0.00023903"},
		{"RRRC F", rrrc.Test.Stat, "4.46"},
		{"RRRC ddf", rrrc.Test.DF2, "15.26"},
		{"RRRC p", rrrc.Test.P, "0.0517"},
		{"RRRC difference", rrrc.Diffs[0].Estimate, "-0.04380"},
		{"RRRC SE", rrrc.Diffs[0].SE, "0.02075"},
		{"RRRC CI low", rrrc.Diffs[0].Lo, "-0.08796"},
		{"RRRC CI high", rrrc.Diffs[0].Hi, "0.00036"},
		{"RRRC p of the difference", rrrc.Diffs[0].P, "0.0517"},
		{"modality 1 mean", rrrc.Means[0].Estimate, "0.89703704"},
		{"modality 1 SE", rrrc.Means[0].SE, "0.03317360"},
		{"modality 1 df", rrrc.Means[0].DF, "12.74"},
		{"FRRC chi-square", frrc.Test.Stat, "5.47595"},
		{"FRRC p", frrc.Test.P, "0.0193"},
		{"RRFC F", rrfc.Test.Stat, "8.70"},
		{"RRFC p", rrfc.Test.P, "0.0420"},
	}
	for _, tt := range tests {
		if !near(tt.got, tt.want) {
			t.Errorf("%s = %.8f, want %s", tt.name, tt.got, tt.want)
		}
	}
	if !frrc.Test.Chi2 || frrc.Test.DF1 != 1 || rrfc.Test.DF2 != 4 {
		t.Errorf("FRRC %+v, RRFC %+v: want chi-square on 1 df and F on (1, 4)", frrc.Test, rrfc.Test)
	}
}

// TestJackknifeLeavesOutACase checks the jackknife of both figures
// (the figure plus its deviation) against recomputing each figure
// without the case.
func TestJackknifeLeavesOutACase(t *testing.T) {
	t.Parallel()
	d := loadVanDyke(t)
	acc := make([]float64, len(d.Cases))
	for c := range acc {
		if d.Scores[0][0][c] >= 3 == (d.Truth[c] == 1) {
			acc[c] = 1
		}
	}
	for _, tt := range []struct {
		fom   FOM
		score []float64
	}{{AUC, d.Scores[0][0]}, {AUC, d.Scores[1][4]}, {Accuracy, acc}} {
		dev := make([]float64, len(tt.score))
		theta := tt.fom.value(tt.score, d.Truth, dev)
		for k := range tt.score {
			var s []float64
			var tr []int
			for c := range tt.score {
				if c != k {
					s = append(s, tt.score[c])
					tr = append(tr, d.Truth[c])
				}
			}
			want := brute(tt.fom, s, tr)
			if got := theta + dev[k]; math.Abs(got-want) > 1e-12 {
				t.Fatalf("%s without case %d: %v, want %v", tt.fom, k, got, want)
			}
		}
	}
}

// brute is a figure of merit by its definition.
func brute(fom FOM, s []float64, truth []int) float64 {
	if fom == Accuracy {
		return meanOf(s)
	}
	var sum, n float64
	for i := range s {
		for j := range s {
			if truth[i] == 1 && truth[j] == 0 {
				n++
				switch {
				case s[i] > s[j]:
					sum++
				case s[i] == s[j]:
					sum += 0.5
				}
			}
		}
	}
	return sum / n
}

// TestModelVersusPanelIsTwoModalities checks the standalone analysis
// against the two-modality RRRC analysis in which every reader of the
// second modality gives the algorithm's scores: the two are the same
// model, so estimate, SE and df agree.
func TestModelVersusPanelIsTwoModalities(t *testing.T) {
	t.Parallel()
	d := loadVanDyke(t)
	for _, modelReader := range []int{0, 3} {
		model := d.Scores[1][modelReader]
		readers := d.Scores[0]
		got, err := ModelVersusPanel(AUC, model, readers, d.Truth, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		two := &Data{FOM: AUC, Modalities: []string{"model", "readers"}, Readers: d.Readers, Cases: d.Cases, Truth: d.Truth,
			Scores: [][][]float64{{model, model, model, model, model}, readers}}
		a, err := Analyze(two, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := a.Designs[0].Diffs[0]
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"estimate", got.Estimate, want.Estimate}, {"SE", got.SE, want.SE}, {"df", got.DF, want.DF},
			{"low", got.Lo, want.Lo}, {"high", got.Hi, want.Hi}, {"p", got.P, want.P}} {
			if math.Abs(c.got-c.want) > 1e-9 {
				t.Errorf("model = reader %d: %s %v, two-modality RRRC %v", modelReader+1, c.name, c.got, c.want)
			}
		}
		if !math.IsNaN(got.PNonInferior) {
			t.Errorf("p of non-inferiority %v without a margin, want NaN", got.PNonInferior)
		}
		// A wider margin makes non-inferiority more certain.
		narrow, err := ModelVersusPanel(AUC, model, readers, d.Truth, 0.01, 0)
		if err != nil {
			t.Fatal(err)
		}
		wide, err := ModelVersusPanel(AUC, model, readers, d.Truth, 0.05, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !(wide.PNonInferior < narrow.PNonInferior) || wide.Estimate != got.Estimate {
			t.Errorf("p of non-inferiority %v at margin 0.05, %v at 0.01: want the first smaller", wide.PNonInferior, narrow.PNonInferior)
		}
		// The level of the test is one-sided α/2, the one mrmc plan
		// sizes for: p below α/2 exactly when the two-sided interval's
		// lower limit lies above −margin, at margins on both sides of
		// the limit.
		for _, m := range []float64{0.005, 0.01, 0.02, 0.05, 0.1, -got.Lo - 1e-6, -got.Lo + 1e-6} {
			if m <= 0 {
				continue
			}
			ni, err := ModelVersusPanel(AUC, model, readers, d.Truth, m, 0)
			if err != nil {
				t.Fatal(err)
			}
			if shown, above := ni.PNonInferior < DefaultAlpha/2, ni.Lo > -m; shown != above {
				t.Errorf("margin %v: p of non-inferiority %v, lower limit %v: p < α/2 is %v, the limit above −margin %v", m, ni.PNonInferior, ni.Lo, shown, above)
			}
		}
	}
}

// TestPanelMeanIsOneModality checks PanelMean against the RRRC mean of a
// modality in the full analysis.
func TestPanelMeanIsOneModality(t *testing.T) {
	t.Parallel()
	d := loadVanDyke(t)
	a, err := Analyze(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.Modalities {
		got, err := PanelMean(AUC, d.Scores[i], d.Truth, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := a.Designs[0].Means[i].Interval; got != want && !(math.IsNaN(got.P) && got.Estimate == want.Estimate && got.SE == want.SE && got.DF == want.DF) {
			t.Errorf("modality %s: %+v, want %+v", d.Modalities[i], got, want)
		}
	}
}

// TestDegenerate: readers right on every case give no variance,
// and no interval rather than one of zero width.
func TestDegenerate(t *testing.T) {
	t.Parallel()
	scores := [][]float64{{1, 1, 1}, {1, 1, 1}, {1, 1, 1}}
	iv, err := PanelMean(Accuracy, scores, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if iv.Estimate != 1 {
		t.Errorf("estimate %v, want 1", iv.Estimate)
	}
	if iv.SE > 0 || !math.IsNaN(iv.Lo) || !math.IsNaN(iv.Hi) {
		t.Errorf("identical readers: %+v, want SE 0 and no interval", iv)
	}
	// Readers who differ only by chance of cases: the case variance
	// carries the interval even with MS(R) = 0 (df infinite).
	scores = [][]float64{{1, 0, 1, 0}, {1, 0, 1, 0}}
	iv, err = PanelMean(Accuracy, scores, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !(iv.SE > 0) || !math.IsInf(iv.DF, 1) || !(iv.Lo < 0.5 && iv.Hi > 0.5) {
		t.Errorf("readers agreeing on a varied set: %+v, want a normal interval around 0.5", iv)
	}
}

func TestAnalyzeRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    Data
		want string
	}{
		{"one reader", Data{FOM: Accuracy, Modalities: []string{"a"}, Readers: []string{"r"}, Cases: []string{"1", "2"}, Scores: [][][]float64{{{1, 0}}}}, "at least 2"},
		{"accuracy score", Data{FOM: Accuracy, Modalities: []string{"a"}, Readers: []string{"r", "s"}, Cases: []string{"1", "2"}, Scores: [][][]float64{{{1, 0}, {0.5, 1}}}}, "want 0 or 1"},
		{"auc one class", Data{FOM: AUC, Modalities: []string{"a"}, Readers: []string{"r", "s"}, Cases: []string{"1", "2", "3"}, Truth: []int{1, 1, 1}, Scores: [][][]float64{{{1, 2, 3}, {1, 2, 3}}}}, "at least 2 diseased and 2 healthy"},
		{"ragged", Data{FOM: Accuracy, Modalities: []string{"a"}, Readers: []string{"r", "s"}, Cases: []string{"1", "2"}, Scores: [][][]float64{{{1, 0}, {1}}}}, "1 scores, want 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Analyze(&tt.d, 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseScoresErrors(t *testing.T) {
	t.Parallel()
	const head = "modality,reader,case,truth,score\n"
	tests := []struct {
		name, csv, fom, want string
	}{
		{"empty", "", "auc", "s.csv: empty"},
		{"missing column", "modality,reader,case,score\n", "auc", `s.csv line 1: no column "truth"`},
		{"bad score", head + "a,r,1,0,x\n", "auc", `s.csv line 2: field score: "x" is not a finite number`},
		{"bad truth", head + "a,r,1,2,1\n", "auc", `s.csv line 2: field truth: "2": want 0 or 1`},
		{"accuracy score", head + "a,r,1,,3\n", "accuracy", `s.csv line 2: field score: "3": accuracy wants 0 or 1`},
		{"duplicate", head + "a,r,1,0,1\na,r,1,0,2\n", "auc", "s.csv line 3: modality a, reader r, case 1 already scored on line 2"},
		{"truth changes", head + "a,r,1,0,1\na,s,1,1,2\n", "auc", "s.csv line 3: field truth: case 1 is 1 here and 0 on line 2"},
		{"empty reader", head + "a,,1,0,1\n", "auc", "s.csv line 2: field reader: empty"},
		{"not crossed", head + "a,r,1,,1\na,r,2,,0\na,s,1,,1\n", "accuracy", "s.csv: modality a, reader s has no score for case 2"},
		{"not crossed, more cells than rows", head + "a,r,1,,1\nb,s,2,,0\nc,t,3,,1\n", "accuracy", "s.csv: modality a, reader r has no score for case 2"},
		// The first error in file order wins.
		{"repeat before a bad score", head + "a,r,1,0,1\na,r,1,0,2\na,r,2,0,x\n", "auc", "s.csv line 3: modality a, reader r, case 1 already scored on line 2"},
		{"bad score before a repeat", head + "a,r,1,0,1\na,r,2,0,x\na,r,1,0,2\n", "auc", `s.csv line 3: field score: "x"`},
		{"repeat with a bad truth", head + "a,r,1,0,1\na,r,1,2,2\n", "auc", "s.csv line 3: modality a, reader r, case 1 already scored on line 2"},
		{"repeat before a long row", head + "a,r,1,0,1\na,r,1,0,1\n" + strings.Repeat("x", MaxScoreRecordBytes+1) + "\n", "auc", "s.csv line 3: modality a, reader r, case 1 already scored"},
		{"no rows", head, "auc", "s.csv: no rows"},
		{"short row", head + "a,r\n", "auc", "s.csv"},
		{"long row", head + "a,r,1,0,1\n" + strings.Repeat("x", MaxScoreRecordBytes+1) + "\n", "auc",
			"s.csv line 3: record longer than 1048576 bytes (not a scores table)"},
		{"long quoted row", head + `a,"` + strings.Repeat("r\n", MaxScoreRecordBytes/2+1) + `",1,0,1` + "\n", "auc",
			"s.csv line 2: record longer than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScores(strings.NewReader(tt.csv), "s.csv", FOM(tt.fom))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

// endless is a stream of one endless line; it fails the read once more
// than max bytes were asked of it.
type endless struct{ n, max int }

func (e *endless) Read(p []byte) (int, error) {
	if e.n > e.max {
		return 0, fmt.Errorf("read %d bytes, past %d", e.n, e.max)
	}
	for i := range p {
		p[i] = 'x'
	}
	e.n += len(p)
	return len(p), nil
}

// An endless line is refused once its first MaxScoreRecordBytes are read,
// not after the stream is read whole.
func TestParseScoresStopsAtLongRecord(t *testing.T) {
	t.Parallel()
	const head = "modality,reader,case,truth,score\n"
	src := &endless{max: 4 * MaxScoreRecordBytes}
	_, err := ParseScores(io.MultiReader(strings.NewReader(head), src), "s.csv", AUC)
	if err == nil || !strings.Contains(err.Error(), "s.csv line 2: record longer than") {
		t.Fatalf("error %v, want the long record refused", err)
	}
	if src.n > 2*MaxScoreRecordBytes {
		t.Errorf("read %d bytes of the endless line, want at most %d", src.n, 2*MaxScoreRecordBytes)
	}
}

// aucQuadratic is the AUC and its leave-one-out values from the kernel
// over every (diseased, healthy) pair: leaving out a diseased case removes
// its row of the kernel sum, a healthy case its column.
func aucQuadratic(score []float64, truth []int) (float64, []float64) {
	var n0, n1, total float64
	part := make([]float64, len(score))
	for i, ti := range truth {
		if ti != 1 {
			n0++
			continue
		}
		n1++
		for j, tj := range truth {
			if tj == 0 {
				var p float64
				switch {
				case score[i] > score[j]:
					p = 1
				case score[i] == score[j]:
					p = 0.5
				}
				part[i] += p
				part[j] += p
				total += p
			}
		}
	}
	loo := make([]float64, len(score))
	for k, t := range truth {
		if t == 1 {
			loo[k] = (total - part[k]) / ((n1 - 1) * n0)
		} else {
			loo[k] = (total - part[k]) / (n1 * (n0 - 1))
		}
	}
	return total / (n0 * n1), loo
}

// TestAUCJackknifeIsQuadratic: the O(c log c) jackknife from placement
// counts equals the quadratic one over every pair, on random ratings with
// many ties (few rating levels), unbalanced classes and the smallest
// classes the jackknife allows.
func TestAUCJackknifeIsQuadratic(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 50))
	for n := range 300 {
		n1, n0 := 2+rng.IntN(40), 2+rng.IntN(40)
		if n%10 == 0 {
			n1 = 2
		}
		levels := 1 + rng.IntN(6)
		if n%3 == 0 {
			levels = 1000 // nearly continuous
		}
		var score []float64
		var truth []int
		for k := range n1 + n0 {
			tr := 0
			if k < n1 {
				tr = 1
			}
			truth = append(truth, tr)
			score = append(score, float64(rng.IntN(levels)+tr*rng.IntN(2))-0.5*float64(rng.IntN(2)))
		}
		rng.Shuffle(len(score), func(a, b int) { score[a], score[b], truth[a], truth[b] = score[b], score[a], truth[b], truth[a] })
		wantTheta, wantLoo := aucQuadratic(score, truth)
		dev := make([]float64, len(score))
		theta := AUC.value(score, truth, dev)
		if theta != wantTheta {
			t.Fatalf("case set %d: AUC %v, quadratic %v", n, theta, wantTheta)
		}
		var sum float64
		for k := range dev {
			if got := theta + dev[k]; math.Abs(got-wantLoo[k]) > 1e-14 {
				t.Fatalf("case set %d, case %d left out: %v, quadratic %v", n, k, got, wantLoo[k])
			}
			sum += dev[k]
		}
		// The deviations are centred: the leave-one-out values average
		// to the AUC.
		if math.Abs(sum) > 1e-12 {
			t.Fatalf("case set %d: deviations sum to %v", n, sum)
		}
	}
}

// BenchmarkAnalyzeAUC is the whole OR analysis of 2 modalities × 10
// readers × 50,000 cases (half diseased) with the AUC: 20 jackknifes of
// the Mann–Whitney statistic and 210 covariances over 50,000 cases.
func BenchmarkAnalyzeAUC(b *testing.B) {
	const t, r, c = 2, 10, 50000
	rng := rand.New(rand.NewPCG(1, 2))
	d := &Data{FOM: AUC, Modalities: []string{"a", "b"}, Truth: make([]int, c), Cases: make([]string, c)}
	for k := range c {
		d.Truth[k] = k % 2
		d.Cases[k] = strconv.Itoa(k)
	}
	for j := range r {
		d.Readers = append(d.Readers, strconv.Itoa(j))
	}
	d.Scores = make([][][]float64, t)
	for i := range t {
		for range r {
			s := make([]float64, c)
			for k := range s {
				s[k] = math.Round(2*float64(d.Truth[k]) + rng.NormFloat64()*2) // ties
			}
			d.Scores[i] = append(d.Scores[i], s)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Analyze(d, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFormatScoresRoundTrip: a study written by FormatScores and read
// back by ParseScores is the same study, for both figures of merit and
// the degenerate kinds of randomStudy, so that a table a report writes
// is analysed exactly as the report analysed it.
func TestFormatScoresRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	for n := range 40 {
		d, kind := randomStudy(rng, n)
		got, err := ParseScores(bytes.NewReader(FormatScores(d)), "scores.csv", d.FOM)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if d.FOM == Accuracy {
			got.Truth = d.Truth // not read for accuracy
		}
		if !reflect.DeepEqual(got, d) {
			t.Fatalf("%s (%s): read back\n%+v\nwant\n%+v", kind, d.FOM, got, d)
		}
	}
	d := &Data{FOM: Accuracy, Modalities: []string{"unaided"}, Readers: []string{"reader1", "a,b"}, Cases: []string{"k1", "k2"}, Scores: [][][]float64{{{1, 0}, {0, 1}}}}
	want := "modality,reader,case,truth,score\r\nunaided,reader1,k1,NA,1\r\nunaided,reader1,k2,NA,0\r\nunaided,\"a,b\",k1,NA,0\r\nunaided,\"a,b\",k2,NA,1\r\n"
	if got := string(FormatScores(d)); got != want {
		t.Errorf("FormatScores:\n%q\nwant\n%q", got, want)
	}
}
