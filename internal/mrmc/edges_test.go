package mrmc

import (
	"math"
	"strings"
	"testing"
)

// accuracyData is a study of 0/1 scores given as strings of digits, one
// per reader, per modality: rows[i][j] is reader j in modality i.
func accuracyData(rows ...[]string) *Data {
	d := &Data{FOM: Accuracy}
	for i, byReader := range rows {
		d.Modalities = append(d.Modalities, string(rune('1'+i)))
		var sc [][]float64
		for j, s := range byReader {
			if i == 0 {
				d.Readers = append(d.Readers, "r"+string(rune('1'+j)))
			}
			v := make([]float64, len(s))
			for k, ch := range s {
				v[k] = float64(ch - '0')
			}
			sc = append(sc, v)
		}
		d.Scores = append(d.Scores, sc)
	}
	for k := range d.Scores[0][0] {
		d.Cases = append(d.Cases, string(rune('a'+k%26))+string(rune('a'+k/26)))
	}
	return d
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func analyze(t *testing.T, d *Data) *Analysis {
	t.Helper()
	a, err := Analyze(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Every score 1: mean squares of 0 and Cov2 − Cov3 of 0, so the
// denominators of the tests are 0 and every test and difference is NA,
// not an F of r − 1 from rounding residue.
func TestAllOnesIsNA(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ t, r, c int }{{2, 7, 2}, {3, 12, 2}, {2, 2, 5}, {4, 3, 9}} {
		rows := make([][]string, tt.t)
		for i := range rows {
			rows[i] = repeat(strings.Repeat("1", tt.c), tt.r)
		}
		a := analyze(t, accuracyData(rows...))
		if a.MST != 0 || a.MSR != 0 || a.MSTR != 0 || a.Var != 0 || a.VarTR != 0 {
			t.Errorf("%v: components %+v, want 0", tt, a.Components)
		}
		for _, ds := range a.Designs {
			if ds.Test.NA != NoVariance || !math.IsNaN(ds.Test.Stat) || !math.IsNaN(ds.Test.P) {
				t.Errorf("%v %s: test %+v, want NA (no variance)", tt, ds.Name, ds.Test)
			}
			for _, x := range append(intervalsOf(ds.Diffs), meanIntervals(ds.Means)...) {
				if x.NA != NoVariance || !math.IsNaN(x.Lo) || !math.IsNaN(x.Hi) || !math.IsNaN(x.P) {
					t.Errorf("%v %s: interval %+v, want NA (no variance)", tt, ds.Name, x)
				}
			}
		}
	}
}

func intervalsOf(ds []Difference) []Interval {
	var out []Interval
	for _, d := range ds {
		out = append(out, d.Interval)
	}
	return out
}

func meanIntervals(ms []Mean) []Interval {
	var out []Interval
	for _, m := range ms {
		out = append(out, m.Interval)
	}
	return out
}

// One modality, three identical readers, 10 cases of which 7 right:
// MS(R) = 0, so Hillis' degrees of freedom are infinite and the interval
// is the normal one on the case variance, 0.7 ± 1.96·√(0.21/9).
func TestIdenticalReadersInfiniteDF(t *testing.T) {
	t.Parallel()
	a := analyze(t, accuracyData(repeat("1111111000", 3)))
	m := a.Designs[0].Means[0]
	if !math.IsInf(m.DF, 1) || m.NA != "" {
		t.Fatalf("df %v (%s), want +Inf", m.DF, m.NA)
	}
	if !near(m.Lo, "0.4006") || !near(m.Hi, "0.9994") {
		t.Errorf("interval (%.6f, %.6f), want (0.4006, 0.9994)", m.Lo, m.Hi)
	}
	if a.MSR != 0 {
		t.Errorf("MS(R) %v, want 0", a.MSR)
	}
	iv, err := PanelMean(Accuracy, accuracyData(repeat("1111111000", 3)).Scores[0], nil, 0)
	if err != nil || iv != m.Interval && !(math.IsNaN(iv.P) && iv.Lo == m.Lo && iv.Hi == m.Hi && iv.DF == m.DF) {
		t.Errorf("PanelMean %+v (%v), want %+v", iv, err, m.Interval)
	}
}

// The fixed-readers analysis uses max(Cov2 − Cov3, 0), as OR-DBM MRMC
// 2.51 and RJafroc do: here Cov2 − Cov3 < 0, and without the constraint
// the chi-square would be 2.500 (p 0.1138, SE 0.10541).
func TestFixedReadersConstraint(t *testing.T) {
	t.Parallel()
	a := analyze(t, accuracyData([]string{"001100", "110011"}, []string{"100010", "000101"}))
	if !(a.Cov2-a.Cov3 < 0) {
		t.Fatalf("Cov2 − Cov3 = %v, want < 0 for this test", a.Cov2-a.Cov3)
	}
	frrc := a.Designs[1]
	for _, c := range []struct {
		name string
		got  float64
		want string
	}{{"chi-square", frrc.Test.Stat, "0.4545"}, {"p", frrc.Test.P, "0.5002"}, {"difference SE", frrc.Diffs[0].SE, "0.24721"}} {
		if !near(c.got, c.want) {
			t.Errorf("%s %.6f, want %s", c.name, c.got, c.want)
		}
	}
	if frrc.Diffs[0].P != frrc.Test.P && math.Abs(frrc.Diffs[0].P-frrc.Test.P) > 1e-12 {
		t.Errorf("difference p %v, test p %v: with two modalities they are one test", frrc.Diffs[0].P, frrc.Test.P)
	}
}

// No degenerate design prints an interval of zero width: either the
// interval has width, or it is NA with a reason.
func TestNoZeroWidthInterval(t *testing.T) {
	t.Parallel()
	designs := map[string]*Data{
		"identical readers":    accuracyData(repeat("1101001110", 4), repeat("0111010011", 4)),
		"identical modalities": accuracyData([]string{"1101001110", "0111011011", "1111000110"}, []string{"1101001110", "0111011011", "1111000110"}),
		"three identical modalities": accuracyData([]string{"11010", "01110", "11110"}, []string{"11010", "01110", "11110"},
			[]string{"11010", "01110", "11110"}),
		"all right":          accuracyData(repeat("11111111", 3), repeat("11111111", 3)),
		"all wrong":          accuracyData(repeat("00000000", 3), repeat("00000000", 3)),
		"identical, one mod": accuracyData(repeat("10", 2)),
		"all right, one mod": accuracyData(repeat("1111", 5)),
	}
	for name, d := range designs {
		a := analyze(t, d)
		for _, ds := range a.Designs {
			for _, x := range append(intervalsOf(ds.Diffs), meanIntervals(ds.Means)...) {
				if x.NA == "" && !(x.Hi-x.Lo > 1e-6) {
					t.Errorf("%s, %s: interval (%v, %v) of width %g, SE %g", name, ds.Name, x.Lo, x.Hi, x.Hi-x.Lo, x.SE)
				}
				if x.NA != "" && !(math.IsNaN(x.Lo) && math.IsNaN(x.Hi)) {
					t.Errorf("%s, %s: NA (%s) with bounds (%v, %v)", name, ds.Name, x.NA, x.Lo, x.Hi)
				}
			}
			if ds.Test.NA == "" && len(a.Modalities) > 1 && !(ds.Test.Stat >= 0 && ds.Test.P >= 0 && ds.Test.P <= 1) {
				t.Errorf("%s, %s: test %+v", name, ds.Name, ds.Test)
			}
		}
	}
	// Identical modalities: the modalities' difference is 0 and its
	// variance too (no reader-by-modality interaction, Cov2 = Cov3,
	// Var = Cov1): every analysis' difference is NA, not a zero-width
	// interval around 0.
	a := analyze(t, designs["three identical modalities"])
	for _, ds := range a.Designs {
		if ds.Test.NA != NoVariance {
			t.Errorf("identical modalities, %s: test %+v, want NA", ds.Name, ds.Test)
		}
		for _, x := range ds.Diffs {
			if x.NA != NoVariance || x.Estimate != 0 {
				t.Errorf("identical modalities, %s: difference %+v, want 0 with no interval", ds.Name, x.Interval)
			}
		}
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	iv := Interval{Estimate: 0.9, SE: 0.1, Lo: 0.7, Hi: 1.1}
	lo, hi, cl, ch := iv.Clip(Accuracy.Range())
	if lo != 0.7 || hi != 1 || cl || !ch {
		t.Errorf("Clip: %v %v %v %v", lo, hi, cl, ch)
	}
	lo, hi, cl, ch = Interval{Lo: math.NaN(), Hi: math.NaN()}.Clip(-1, 1)
	if !math.IsNaN(lo) || !math.IsNaN(hi) || cl || ch {
		t.Errorf("Clip of NA: %v %v %v %v", lo, hi, cl, ch)
	}
}
