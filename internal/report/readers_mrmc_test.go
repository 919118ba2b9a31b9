package report

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
)

// sampleOutcomes reads samples.csv back into, per run and record, the
// rows' correctness per question, and per record its path; heart says
// which records are heart-type (from the benchmark).
type sampleOutcomes struct {
	correct map[string]map[string]map[benchmark.Question]bool // run → key → question → asked and correct
	path    map[string]benchmark.Path
	heart   map[string]bool
}

func readSampleOutcomes(t *testing.T, out string, recs []*benchmark.Record) *sampleOutcomes {
	t.Helper()
	so := &sampleOutcomes{correct: map[string]map[string]map[benchmark.Question]bool{}, path: map[string]benchmark.Path{}, heart: map[string]bool{}}
	for _, r := range recs {
		so.heart[r.KeyID] = r.IsHeartType()
	}
	turn := map[string]benchmark.Question{}
	for _, q := range benchmark.Questions {
		turn[q.Turn()] = q
	}
	ct := readCSVTable(t, filepath.Join(out, SamplesCSV))
	for _, row := range ct.rows {
		run, key := ct.get(row, "run"), ct.get(row, "key_id")
		if ct.get(row, "record_status") != "ok" {
			continue
		}
		if so.correct[run] == nil {
			so.correct[run] = map[string]map[benchmark.Question]bool{}
		}
		if so.correct[run][key] == nil {
			so.correct[run][key] = map[benchmark.Question]bool{}
		}
		so.path[key] = benchmark.Path(ct.get(row, "path"))
		q, ok := turn[ct.get(row, "turn")]
		if !ok {
			t.Fatalf("samples.csv: turn %q", ct.get(row, "turn"))
		}
		so.correct[run][key][q] = ct.get(row, "status") == "asked" && ct.get(row, "correct") == "true"
	}
	return so
}

// stageOwn is whether every question of stage k that applies to the
// record was asked and right.
func (so *sampleOutcomes) stageOwn(run, key string, k benchmark.Stage) bool {
	for _, q := range benchmark.Questions {
		if q.Stage() == k && benchmark.Applies(so.path[key], so.heart[key], q) && !so.correct[run][key][q] {
			return false
		}
	}
	return true
}

// e2e is the record's end-to-end outcome at stage k (every applicable
// stage 1..k right) and whether stage k applies; ok is false when the
// run has no row of the record.
func (so *sampleOutcomes) e2e(run, key string, path benchmark.Path, k benchmark.Stage) (v float64, ok bool) {
	if _, has := so.correct[run][key]; !has || so.path[key] != path || !benchmark.StageApplies(path, so.heart[key], k) {
		return 0, false
	}
	for j := benchmark.Stage(1); j <= k; j++ {
		if benchmark.StageApplies(path, so.heart[key], j) && !so.stageOwn(run, key, j) {
			return 0, true
		}
	}
	return 1, true
}

// paired is each run's e2e outcomes on the records every run has, in
// key order.
func (so *sampleOutcomes) paired(runs []string, path benchmark.Path, k benchmark.Stage) [][]float64 {
	var keys []string
	for key := range so.path {
		all := true
		for _, run := range runs {
			if _, ok := so.e2e(run, key, path, k); !ok {
				all = false
			}
		}
		if all {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	out := make([][]float64, len(runs))
	for j, run := range runs {
		for _, key := range keys {
			v, _ := so.e2e(run, key, path, k)
			out[j] = append(out[j], v)
		}
	}
	return out
}

// orOne is the one-modality Obuchowski–Rockette analysis of figures
// given as per-reader case scores, by brute force: each reader's
// accuracy recomputed without each case, the covariance of two readers'
// leave-one-out accuracies, MS(R), Hillis' df and the t interval.
func orOne(figs [][]float64) (est, se, df, lo, hi, p float64) {
	r, c := len(figs), len(figs[0])
	theta := make([]float64, r)
	jack := make([][]float64, r)
	for j, s := range figs {
		for k := range s {
			var sum float64
			for i, x := range s {
				if i != k {
					sum += x
				}
			}
			jack[j] = append(jack[j], sum/float64(c-1))
		}
		for _, x := range s {
			theta[j] += x / float64(c)
		}
		est += theta[j] / float64(r)
	}
	var msr, cov2 float64
	for j := range theta {
		msr += (theta[j] - est) * (theta[j] - est) / float64(r-1)
	}
	for j := range jack {
		for j2 := range jack {
			if j == j2 {
				continue
			}
			var ma, mb, s float64
			for k := range jack[j] {
				ma += jack[j][k] / float64(c)
				mb += jack[j2][k] / float64(c)
			}
			for k := range jack[j] {
				s += (jack[j][k] - ma) * (jack[j2][k] - mb)
			}
			cov2 += s * float64(c-1) / float64(c) / float64(r*(r-1))
		}
	}
	cov2 = math.Max(cov2, 0)
	se = math.Sqrt(msr/float64(r) + cov2)
	df = (msr + float64(r)*cov2) * (msr + float64(r)*cov2) / (msr * msr / float64(r-1))
	var q float64
	if math.IsInf(df, 1) {
		q = distuv.UnitNormal.Quantile(0.975)
		p = 2 * distuv.UnitNormal.Survival(math.Abs(est)/se)
	} else {
		tt := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
		q = tt.Quantile(0.975)
		p = 2 * tt.Survival(math.Abs(est)/se)
	}
	return est, se, df, est - q*se, est + q*se, p
}

// readerStudyFixture writes four readers of different skill over the
// records of index divisible by 3 (the first also over record 1) and three models
// over every record, in oracle mode none, and reports them.
func readerStudyFixture(t *testing.T) (string, []*benchmark.Record) {
	t.Helper()
	tmp := t.TempDir()
	recs := benchtest.Full(4)
	index := map[string]int{}
	sample := map[string]bool{}
	for i, r := range recs {
		index[r.KeyID] = i
		if i%3 == 0 {
			sample[r.KeyID] = true
		}
	}
	extra := map[string]bool{recs[1].KeyID: true}
	for k := range sample {
		extra[k] = true
	}
	missEvery := func(n int, badStage3 bool) analysistest.Policy {
		return func(rec *benchmark.Record, p protocol.PlannedTurn) string {
			if index[rec.KeyID]%n == 0 && p.Q == benchmark.QDetection {
				return "Answer: " + strconv.Itoa(p.GT[0]%p.NOptions+1)
			}
			if badStage3 && index[rec.KeyID]%4 == 2 && p.Q == benchmark.QRevisionResult {
				return "Answer: " + strconv.Itoa(p.GT[0]%p.NOptions+1)
			}
			return analysistest.Oracle(rec, p)
		}
	}
	runs := []*analysistest.Run{
		{Provider: "human", Label: "expert", Oracle: "none", Policy: analysistest.Oracle, Only: extra},
		{Provider: "human", Label: "good", Oracle: "none", Policy: missEvery(7, false), Only: sample},
		{Provider: "human", Label: "fair", Oracle: "none", Policy: missEvery(5, true), Only: sample},
		{Provider: "human", Label: "weak", Oracle: "none", Policy: missEvery(2, true), Only: sample},
		{Provider: "opensource", Label: "first", Oracle: "none", Policy: analysistest.First},
		{Provider: "opensource", Label: "random", Oracle: "none", Policy: analysistest.Random(3)},
		{Provider: "opensource", Label: "near", Oracle: "none", Policy: missEvery(4, true)},
	}
	dir := fixture(t, tmp, recs, runs...)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(Config{Inputs: []string{dir}, Out: out, Analysis: analysis.Options{Bootstrap: 50}}); err != nil {
		t.Fatal(err)
	}
	return out, recs
}

// TestReaderMRMCRecomputed: every row of ext_reader_mrmc.csv is
// recomputed from samples.csv alone, on the records every compared
// party answered, by a brute-force jackknife; n_records is the readers'
// record count (the models answered a superset).
func TestReaderMRMCRecomputed(t *testing.T) {
	out, recs := readerStudyFixture(t)
	so := readSampleOutcomes(t, out, recs)
	readers := []string{"human_expert", "human_good", "human_fair", "human_weak"}
	ct := readCSVTable(t, filepath.Join(out, "ext_reader_mrmc.csv"))
	seen := map[string]int{}
	checked := 0
	for i, row := range ct.rows {
		r := mrmcRowOf(t, ct, row)
		seen[r.Comparison]++
		runs := slices.Clone(readers)
		if r.Comparison != analysis.ComparisonReaders {
			runs = append([]string{r.Model}, readers...)
		}
		figs := so.paired(runs, r.Path, r.Stage)
		// The readers' count: the records the second reader (who read
		// only the sample) has in the cell.
		n := 0
		for key := range so.path {
			if _, ok := so.e2e("human_good", key, r.Path, r.Stage); ok {
				n++
			}
		}
		if r.NRecords != n || len(figs[0]) != n || r.NReaders != 4 {
			t.Errorf("row %d (%s %s %d): n_records %d, n_readers %d; the readers have %d records, %d paired", i+2, r.Comparison, r.Path, r.Stage, r.NRecords, r.NReaders, n, len(figs[0]))
			continue
		}
		if r.Comparison != analysis.ComparisonReaders {
			// The model's differences from each reader.
			model := figs[0]
			figs = figs[1:]
			for j := range figs {
				d := make([]float64, len(model))
				for k := range model {
					d[k] = model[k] - figs[j][k]
				}
				figs[j] = d
			}
		}
		if n < 2 {
			if r.Valid() || n == 0 && !math.IsNaN(r.Estimate) {
				t.Errorf("row %d (%s %s %d): %d records give %+v", i+2, r.Comparison, r.Path, r.Stage, n, r)
			}
			continue
		}
		est, se, df, lo, hi, p := orOne(figs)
		floor := -1.0
		if r.Comparison == analysis.ComparisonReaders {
			floor, p = 0, math.NaN()
		}
		lo, hi = math.Max(lo, floor), math.Min(hi, 1)
		if !(se > 0) {
			se, df, lo, hi, p = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"estimate", r.Estimate, est}, {"se", r.SE, se}, {"df", r.DF, df}, {"ci_low", r.Lo, lo}, {"ci_high", r.Hi, hi}, {"p_value", r.P, p}} {
			same := math.IsNaN(c.got) == math.IsNaN(c.want) && (math.IsNaN(c.got) || math.IsInf(c.want, 1) && math.IsInf(c.got, 1) || math.Abs(c.got-c.want) <= 1e-6*math.Max(1, math.Abs(c.want)))
			if !same {
				t.Errorf("row %d (%s %s %d): %s %v, recomputed %v", i+2, r.Comparison, r.Path, r.Stage, c.name, c.got, c.want)
			}
		}
		if r.Valid() {
			checked++
		}
	}
	want := map[string]int{analysis.ComparisonReaders: 8, "model:opensource_first": 8, "model:opensource_random": 8, "model:opensource_near": 8}
	for k, n := range want {
		if seen[k] != n {
			t.Errorf("%d rows of %s, want %d (every path and stage)", seen[k], k, n)
		}
	}
	if checked < 20 {
		t.Errorf("only %d rows with an interval", checked)
	}
}

// TestClaim3TooFewRecords: two readers on two revision-required records
// give no claim-3 verdict, however far a model is from them.
func TestClaim3TooFewRecords(t *testing.T) {
	tmp := t.TempDir()
	recs := benchtest.Full(4)
	two := map[string]bool{}
	for _, r := range recs {
		if r.Path() == benchmark.RevisionRequired && !r.IsHeartType() && len(two) < 2 {
			two[r.KeyID] = true
		}
	}
	dir := fixture(t, tmp, recs,
		&analysistest.Run{Provider: "human", Label: "r1", Oracle: "none", Policy: analysistest.First, Only: two},
		&analysistest.Run{Provider: "human", Label: "r2", Oracle: "none", Policy: analysistest.Random(1), Only: two},
		&analysistest.Run{Provider: "opensource", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "opensource", Label: "first", Oracle: "none", Policy: analysistest.First})
	out := filepath.Join(tmp, "report")
	if _, err := Generate(Config{Inputs: []string{dir}, Out: out, Analysis: analysis.Options{Bootstrap: 50}}); err != nil {
		t.Fatal(err)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	_, claim, ok := strings.Cut(md, "**Claim 3 (models fall short of expert readers).**")
	if !ok {
		t.Fatal("no claim 3 in report.md")
	}
	claim, _, _ = strings.Cut(claim, "Claim 3 rule")
	if !strings.Contains(claim, analysis.Undecided) || !strings.Contains(claim, "too few records") || !strings.Contains(claim, "at most 2 record(s)") {
		t.Errorf("claim 3: %q, want undecided for too few records", claim)
	}
	ct := readCSVTable(t, filepath.Join(out, "ext_reader_mrmc.csv"))
	for i, row := range ct.rows {
		if n := ct.get(row, "n_records"); ct.get(row, "path") == string(benchmark.RevisionRequired) && n != "2" {
			t.Errorf("row %d: %s %s stage %s: n_records %s, want the readers' 2", i+2, ct.get(row, "comparison"), ct.get(row, "path"), ct.get(row, "stage"), n)
		}
	}
}

// TestAidedStudy: three readers' unaided and aided arms with the model
// run shown give aided − unaided rows and switch counts that samples.csv
// reproduces.
func TestAidedStudy(t *testing.T) {
	tmp := t.TempDir()
	recs := benchtest.Full(4)
	index := map[string]int{}
	for i, r := range recs {
		index[r.KeyID] = i
	}
	// The shown model misses detection on every third record; unaided
	// readers miss it on every fourth (shifted per reader); aided, they
	// take the model's detection answer, right or wrong.
	modelWrong := func(rec *benchmark.Record) bool { return index[rec.KeyID]%3 == 0 }
	wrong := func(p protocol.PlannedTurn) string { return "Answer: " + strconv.Itoa(p.GT[0]%p.NOptions+1) }
	model := func(rec *benchmark.Record, p protocol.PlannedTurn) string {
		if p.Q == benchmark.QDetection && modelWrong(rec) {
			return wrong(p)
		}
		return analysistest.Oracle(rec, p)
	}
	unaided := func(shift int) analysistest.Policy {
		return func(rec *benchmark.Record, p protocol.PlannedTurn) string {
			if p.Q == benchmark.QDetection && (index[rec.KeyID]+shift)%4 == 0 {
				return wrong(p)
			}
			return analysistest.Oracle(rec, p)
		}
	}
	const aid = "opensource_shown"
	runs := []*analysistest.Run{{Provider: "opensource", Label: "shown", Oracle: "none", Policy: model}}
	readers := []string{"ana", "ben", "cy"}
	for i, name := range readers {
		runs = append(runs,
			&analysistest.Run{Provider: "human", Label: name + "_unaided", Oracle: "none", Policy: unaided(i),
				Reading: &results.ReadingArm{Study: "s1", Reader: name, Arm: results.ArmUnaided, AidRun: aid}},
			&analysistest.Run{Provider: "human", Label: name + "_aided", Oracle: "none", Policy: model,
				Reading: &results.ReadingArm{Study: "s1", Reader: name, Arm: results.ArmAided, AidRun: aid}})
	}
	dir := fixture(t, tmp, recs, runs...)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(Config{Inputs: []string{dir}, Out: out, Analysis: analysis.Options{Bootstrap: 50}}); err != nil {
		t.Fatal(err)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, want := range []string{"Does the model help the readers?", "aided study s1: 3 reader(s) with both arms (ana, ben, cy)", "| aided − unaided (s1) | revision_required | 1 | 3 |", "Switches after the model's answer"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// The panel is the unaided arms only.
	if !strings.Contains(md, "Oracle none: 3 reader(s): human_ana_unaided, human_ben_unaided, human_cy_unaided.") {
		t.Error("the readers' panel is not the three unaided arms")
	}
	so := readSampleOutcomes(t, out, recs)
	ct := readCSVTable(t, filepath.Join(out, "ext_reader_mrmc.csv"))
	aided := 0
	for i, row := range ct.rows {
		r := mrmcRowOf(t, ct, row)
		if r.Comparison != analysis.ComparisonAided {
			continue
		}
		aided++
		var runsA, runsU []string
		for _, name := range readers {
			runsA, runsU = append(runsA, "human_"+name+"_aided"), append(runsU, "human_"+name+"_unaided")
		}
		figs := so.paired(append(runsA, runsU...), r.Path, r.Stage)
		var want float64
		for j := range readers {
			want += (mean(figs[j]) - mean(figs[len(readers)+j])) / float64(len(readers))
		}
		if r.NReaders != 3 || r.NRecords != len(figs[0]) || math.Abs(r.Estimate-want) > 1e-6 {
			t.Errorf("row %d (%s %d): %d readers, %d records, aided − unaided %v; samples.csv: %d records, %v", i+2, r.Path, r.Stage, r.NReaders, r.NRecords, r.Estimate, len(figs[0]), want)
		}
		if r.Path == benchmark.RevisionRequired && r.Stage == 1 && !(r.Valid() && r.SE > 0) {
			t.Errorf("row %d: no interval for aided − unaided at detection: %+v", i+2, r)
		}
	}
	if aided != 8 {
		t.Errorf("%d aided − unaided rows, want 8 (every path and stage)", aided)
	}
	sw := readCSVTable(t, filepath.Join(out, "ext_reader_switches.csv"))
	if got := strings.Join(sw.header, ","); got != "oracle_mode,study,aid_run,reader,path,stage,n_records,model_wrong_reader_right,right_to_wrong,model_right_reader_wrong,wrong_to_right" {
		t.Errorf("ext_reader_switches.csv header %s", got)
	}
	if len(sw.rows) != 3*8 {
		t.Errorf("%d switch rows, want 3 readers × 8 cells", len(sw.rows))
	}
	switched := 0
	for i, row := range sw.rows {
		reader, path := sw.get(row, "reader"), benchmark.Path(sw.get(row, "path"))
		k, _ := strconv.Atoi(sw.get(row, "stage"))
		var n, mw, rw, mr, wr int
		for key := range so.path {
			if so.path[key] != path || !benchmark.StageApplies(path, so.heart[key], benchmark.Stage(k)) {
				continue
			}
			u, a, m := "human_"+reader+"_unaided", "human_"+reader+"_aided", aid
			if so.correct[u][key] == nil || so.correct[a][key] == nil || so.correct[m][key] == nil {
				continue
			}
			n++
			ur, ar, mok := so.stageOwn(u, key, benchmark.Stage(k)), so.stageOwn(a, key, benchmark.Stage(k)), so.stageOwn(m, key, benchmark.Stage(k))
			switch {
			case ur && !mok:
				mw++
				if !ar {
					rw++
				}
			case !ur && mok:
				mr++
				if ar {
					wr++
				}
			}
		}
		got := []string{sw.get(row, "n_records"), sw.get(row, "model_wrong_reader_right"), sw.get(row, "right_to_wrong"), sw.get(row, "model_right_reader_wrong"), sw.get(row, "wrong_to_right")}
		want := []string{itoa(n), itoa(mw), itoa(rw), itoa(mr), itoa(wr)}
		if !slices.Equal(got, want) {
			t.Errorf("switch row %d (%s %s %d): %v, samples.csv gives %v", i+2, reader, path, k, got, want)
		}
		if k == 1 {
			c, _ := strconv.Atoi(sw.get(row, "right_to_wrong"))
			d, _ := strconv.Atoi(sw.get(row, "wrong_to_right"))
			switched += c + d
		}
	}
	if switched == 0 {
		t.Error("no reader switched at detection, though the aided answers follow the model")
	}

	// Without the shown model's run among the inputs: aided − unaided
	// still, no switches, and the report says why.
	var inputs []string
	for _, name := range readers {
		inputs = append(inputs, filepath.Join(dir, "human_"+name+"_unaided"), filepath.Join(dir, "human_"+name+"_aided"))
	}
	out2 := filepath.Join(tmp, "report-no-model")
	if _, err := Generate(Config{Inputs: inputs, Out: out2, Analysis: analysis.Options{Bootstrap: 50}}); err != nil {
		t.Fatal(err)
	}
	md2 := string(read(t, filepath.Join(out2, "report.md")))
	if !strings.Contains(md2, "| aided − unaided (s1) | revision_required | 1 | 3 |") || !strings.Contains(md2, "is not among the report's inputs") || strings.Contains(md2, "Switches after") {
		t.Error("without the model run: want aided − unaided, the note, and no switch table")
	}
	if _, err := os.Stat(filepath.Join(out2, "ext_reader_switches.csv")); !os.IsNotExist(err) {
		t.Errorf("ext_reader_switches.csv without the model run: %v", err)
	}
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x / float64(len(xs))
	}
	return s
}
