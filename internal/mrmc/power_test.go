package mrmc

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// vanDykePilot is the Van Dyke study analysed by this package with the
// AUC, taken as a pilot.
func vanDykePilot(t *testing.T) *Pilot {
	t.Helper()
	a, err := Analyze(loadVanDyke(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PilotFromAnalysis(a)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPilotVanDyke: the components this package estimates on the Van
// Dyke study are RJafroc's (UtilORVarComponentsFactorial, dataset02,
// Wilcoxon) to their printed digits.
func TestPilotVanDyke(t *testing.T) {
	t.Parallel()
	p := vanDykePilot(t)
	if p.Cases != 114 || p.Readers != 5 || p.FOM != AUC {
		t.Errorf("pilot %d cases, %d readers, %s; want 114, 5, auc", p.Cases, p.Readers, p.FOM)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"VarTR", p.VarTR, 0.00020040252},
		{"Cov1", p.Cov1, 0.00034661371},
		{"Cov2", p.Cov2, 0.00034407483},
		{"Cov3", p.Cov3, 0.00023902837},
		{"Var", p.Var, 0.00080228827},
	} {
		if math.Abs(c.got-c.want) > 5e-12 {
			t.Errorf("%s = %.12g, want %.11g", c.name, c.got, c.want)
		}
	}
	if math.Abs(p.Difference-(-0.043800322)) > 5e-10 {
		t.Errorf("difference %.12g, want -0.043800322", p.Difference)
	}
	if notes := p.Constraints(); len(notes) != 0 {
		t.Errorf("constraints %q, want none", notes)
	}
}

// rjafrocVanDyke are RJafroc's published powers (its tests of
// SsPowerGivenJK with the OR method on dataset02, 10 readers, the observed
// effect size) with the smallest number of cases that reaches power 0.8.
// For random readers and cases RJafroc's test takes 165 cases, two more
// than the smallest: 163 give 0.80156 and 162 0.79960.
var rjafrocVanDyke = []struct {
	analysis      string
	cases         int
	power, lambda float64
	df2           float64 // NaN: χ²
	smallest      int
}{
	{RRRC, 165, 0.80541995, 8.2096, 62.707, 163},
	{FRRC, 131, 0.80091813, 7.8673, math.NaN(), 131},
	{RRFC, 53, 0.80496663, 10.0487, 9, 53},
}

func TestPowerVanDyke(t *testing.T) {
	t.Parallel()
	p := vanDykePilot(t)
	h := Hypothesis{Effect: p.Difference}
	for _, want := range rjafrocVanDyke {
		got, err := p.Power(want.analysis, 10, want.cases, h)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Power-want.power) > 1e-7 {
			t.Errorf("%s, 10 readers, %d cases: power %.10f, want %.8f", want.analysis, want.cases, got.Power, want.power)
		}
		if math.Abs(got.Noncentrality-want.lambda) > 5e-5 {
			t.Errorf("%s: noncentrality %.6f, want %.4f", want.analysis, got.Noncentrality, want.lambda)
		}
		if math.IsNaN(want.df2) != math.IsNaN(got.DF2) || math.Abs(got.DF2-want.df2) > 5e-4 {
			t.Errorf("%s: df %.4f, want %v", want.analysis, got.DF2, want.df2)
		}
		k, err := p.SmallestCases(want.analysis, 10, 0.8, h)
		if err != nil {
			t.Fatal(err)
		}
		if k.Cases != want.smallest {
			t.Errorf("%s: smallest cases for power 0.8 with 10 readers %d (power %.8f), want %d", want.analysis, k.Cases, k.Power, want.smallest)
		}
		below, err := p.Power(want.analysis, 10, k.Cases-1, h)
		if err != nil {
			t.Fatal(err)
		}
		if !(below.Power < 0.8 && k.Power >= 0.8) {
			t.Errorf("%s: power %.8f with %d cases, %.8f with one fewer: not the smallest", want.analysis, k.Power, k.Cases, below.Power)
		}
	}
}

// TestPowerVanDykeSixReaders: RJafroc's other published figures on the
// same pilot: power 0.5526116 with 6 readers and 111 cases, and 251 cases
// as the smallest for power 0.8 with 6 readers (random readers and cases).
func TestPowerVanDykeSixReaders(t *testing.T) {
	t.Parallel()
	p := vanDykePilot(t)
	h := Hypothesis{Effect: p.Difference}
	got, err := p.Power(RRRC, 6, 111, h)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Power-0.5526116) > 5e-8 {
		t.Errorf("6 readers, 111 cases: power %.10f, want 0.5526116", got.Power)
	}
	k, err := p.SmallestCases(RRRC, 6, 0.8, h)
	if err != nil {
		t.Fatal(err)
	}
	if k.Cases != 251 {
		t.Errorf("6 readers: smallest cases %d (power %.8f), want 251", k.Cases, k.Power)
	}
}

// TestSmallestReadersVanDyke: the smallest panel for power 0.8 with the
// pilot's 114 cases is the first at or above it, one reader fewer is
// below, and the searches' answers agree with each other.
func TestSmallestReadersVanDyke(t *testing.T) {
	t.Parallel()
	p := vanDykePilot(t)
	h := Hypothesis{Effect: p.Difference}
	for _, analysis := range Analyses {
		j, err := p.SmallestReaders(analysis, 114, 0.8, h)
		if err != nil {
			t.Fatal(err)
		}
		if j.Readers > 2 {
			below, err := p.Power(analysis, j.Readers-1, 114, h)
			if err != nil {
				t.Fatal(err)
			}
			if below.Power >= 0.8 {
				t.Errorf("%s: %d readers have power %.6f already", analysis, j.Readers-1, below.Power)
			}
		}
		if j.Power < 0.8 || j.Cases != 114 {
			t.Errorf("%s: %d readers, %d cases, power %.6f", analysis, j.Readers, j.Cases, j.Power)
		}
		k, err := p.SmallestCases(analysis, j.Readers, 0.8, h)
		if err != nil {
			t.Fatal(err)
		}
		if k.Cases > 114 {
			t.Errorf("%s: %d readers need %d cases, yet reach 0.8 with 114", analysis, j.Readers, k.Cases)
		}
		t.Logf("%s: %d readers with 114 cases (power %.6f)", analysis, j.Readers, j.Power)
	}
}

// TestPowerMarginAgreesWithF: with a margin of 0 the one-sided t test's
// power and the two-sided F test's are one identity apart,
// P(F(1, ν, δ²) > t²) = P(T > t) + P(T < −t), each side computed by its
// own series; the fixed-readers normal test is Φ(δ − z) in closed form.
func TestPowerMarginAgreesWithF(t *testing.T) {
	t.Parallel()
	p := vanDykePilot(t)
	const tiny = 1e-300 // a margin of (almost) 0: the t test of d > 0
	for _, analysis := range Analyses {
		for _, k := range []int{40, 114, 400} {
			sup, err := p.Power(analysis, 8, k, Hypothesis{Effect: 0.04, Alpha: 0.1})
			if err != nil {
				t.Fatal(err)
			}
			ni, err := p.Power(analysis, 8, k, Hypothesis{Effect: 0.04, Alpha: 0.1, Margin: tiny})
			if err != nil {
				t.Fatal(err)
			}
			if ni.Critical*ni.Critical-sup.Critical > 1e-9*sup.Critical {
				t.Errorf("%s: t critical² %v, F critical %v", analysis, ni.Critical*ni.Critical, sup.Critical)
			}
			lowerTail := 1 - noncentralT{ni.DF2, ni.Noncentrality}.survival(-ni.Critical)
			if d := math.Abs(ni.Power + lowerTail - sup.Power); d > 1e-12 {
				t.Errorf("%s, %d cases: t %.15f + %.3g, F %.15f", analysis, k, ni.Power, lowerTail, sup.Power)
			}
			if analysis == FRRC {
				z := math.Sqrt(chi2Upper(0.1, 1))
				if want := normalSurvival(z - ni.Noncentrality); math.Abs(ni.Power-want) > 1e-14 {
					t.Errorf("fixed readers, %d cases: %v, Φ(δ − z) %v", k, ni.Power, want)
				}
			}
		}
	}
	// A margin makes a null difference detectable, at one-sided α/2.
	ni, err := p.Power(RRRC, 10, 200, Hypothesis{Effect: 0, Margin: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if ni.Statistic != "t" || !(ni.Power > 0.5) || math.Abs(ni.Critical-math.Sqrt(fUpper(0.05, 1, ni.DF2))) > 1e-12 {
		t.Errorf("non-inferiority by 0.05 at difference 0: %+v", ni)
	}
}

// TestPowerEdges: no effect gives the level itself; a larger study never
// has less power than its level; components that leave no variance are
// an error, not a number.
func TestPowerEdges(t *testing.T) {
	t.Parallel()
	p := vanDykePilot(t)
	for _, analysis := range Analyses {
		pw, err := p.Power(analysis, 5, 100, Hypothesis{Effect: 0, Alpha: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(pw.Power-0.05) > 1e-14 {
			t.Errorf("%s, effect 0: power %.17g, want alpha 0.05", analysis, pw.Power)
		}
	}
	flat := &Pilot{Cases: 50, Var: 0.001, Cov1: 0.001, Cov2: 0.0005, Cov3: 0.0005, VarTR: 0}
	for _, analysis := range []string{FRRC, RRFC} {
		_, err := flat.Power(analysis, 5, 100, Hypothesis{Effect: 0.05})
		if !errors.Is(err, ErrNoVariance) {
			t.Errorf("%s with Var = Cov1, Cov2 = Cov3, VarTR 0: %v, want ErrNoVariance", analysis, err)
		}
	}
	// Random readers and cases: the same components leave no variance
	// either; with a case covariance they do, on infinite df (VarTR 0 and
	// Var − Cov1 − c = 0 make the df's denominator 0).
	if _, err := flat.Power(RRRC, 5, 100, Hypothesis{Effect: 0.05}); !errors.Is(err, ErrNoVariance) {
		t.Errorf("random readers and cases with no variance: %v", err)
	}
	shared := &Pilot{Cases: 50, Var: 0.0015, Cov1: 0.001, Cov2: 0.0007, Cov3: 0.0002, VarTR: -0.0001}
	pw, err := shared.Power(RRRC, 5, 100, Hypothesis{Effect: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(pw.DF2, 1) || pw.Statistic != "F" || !(pw.Power > 0 && pw.Power < 1) {
		t.Errorf("df %v, statistic %s, power %v; want infinite df and a power", pw.DF2, pw.Statistic, pw.Power)
	}
	if want := (noncentralChi2{1, pw.Noncentrality}).survival(chi2Upper(0.05, 1)); pw.Power != want {
		t.Errorf("infinite df: power %v, χ² limit %v", pw.Power, want)
	}
	if notes := shared.Constraints(); len(notes) != 1 || !strings.Contains(notes[0], "VarTR -0.0001 is negative: taken as 0") {
		t.Errorf("constraints %q", notes)
	}
	if notes := (&Pilot{Cases: 9, Var: 1, Cov2: 0.1, Cov3: 0.2}).Constraints(); len(notes) != 1 || !strings.Contains(notes[0], "Cov2 − Cov3 = -0.1 is negative: taken as 0") {
		t.Errorf("constraints %q", notes)
	}
}

func TestPowerBadInput(t *testing.T) {
	t.Parallel()
	p := vanDykePilot(t)
	for _, tc := range []struct {
		name           string
		pilot          *Pilot
		analysis       string
		readers, cases int
		h              Hypothesis
		want           string
	}{
		{"one reader", p, RRRC, 1, 100, Hypothesis{Effect: 0.05}, "readers 1: a study needs at least 2"},
		{"one case", p, FRRC, 5, 1, Hypothesis{Effect: 0.05}, "cases 1: a study needs at least 2"},
		{"unknown analysis", p, "rrrc", 5, 100, Hypothesis{Effect: 0.05}, `analysis "rrrc"`},
		{"alpha", p, RRRC, 5, 100, Hypothesis{Effect: 0.05, Alpha: 1}, "alpha 1: want a level between 0 and 1"},
		{"effect NaN", p, RRRC, 5, 100, Hypothesis{Effect: math.NaN()}, "effect NA"},
		{"negative margin", p, RRRC, 5, 100, Hypothesis{Effect: 0.05, Margin: -0.1}, "margin -0.1"},
		{"no pilot cases", &Pilot{Var: 1}, RRRC, 5, 100, Hypothesis{Effect: 0.05}, "pilot cases 0"},
		{"zero Var", &Pilot{Cases: 50}, RRRC, 5, 100, Hypothesis{Effect: 0.05}, "Var 0: an error variance must be positive"},
		{"NaN Cov1", &Pilot{Cases: 50, Var: 1, Cov1: math.NaN()}, RRRC, 5, 100, Hypothesis{Effect: 0.05}, "Cov1 is NA"},
	} {
		_, err := tc.pilot.Power(tc.analysis, tc.readers, tc.cases, tc.h)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name   string
		h      Hypothesis
		target float64
		want   string
	}{
		{"no effect", Hypothesis{}, 0.8, "effect 0: a test of equal modalities then rejects with probability alpha"},
		{"beyond the margin", Hypothesis{Effect: -0.1, Margin: 0.05}, 0.8, "effect -0.1 is at or below −margin 0.05"},
		{"target 1", Hypothesis{Effect: 0.05}, 1, "target power 1"},
	} {
		_, err := p.SmallestCases(RRRC, 5, tc.target, tc.h)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestUnreachable: three readers cannot reach power 0.95 however many
// cases (VarTR bounds the random-reader analyses); fixed readers can.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	p := vanDykePilot(t)
	h := Hypothesis{Effect: p.Difference}
	_, err := p.SmallestCases(RRRC, 3, 0.95, h)
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("random readers and cases, 3 readers, power 0.95: %v", err)
	}
	if ue.Bound != MaxPlanCases || !(ue.Limit < 0.95) || ue.Best.Power >= 0.95 || ue.Best.Power <= 0.5 {
		t.Errorf("%+v", ue)
	}
	for _, want := range []string{"random readers, random cases: power 0.95 is not reached with 3 readers and up to 100000 cases (at most 0.", " cases; ", "it tends to 0.", "however many cases)", "VarTR bounds it; add readers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
	k, err := p.SmallestCases(FRRC, 3, 0.95, h)
	if err != nil || k.Power < 0.95 {
		t.Errorf("fixed readers, 3 readers: %+v, %v", k, err)
	}
	// With 20 cases, more readers stop helping once the case covariance
	// dominates (fixed readers: the limit is d²/(2·x·(Cov2 − Cov3))).
	_, err = p.SmallestReaders(FRRC, 20, 0.9, h)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "Cov2 − Cov3 bounds it; add cases") {
		t.Errorf("fixed readers, 20 cases, power 0.9: %v", err)
	}
}
