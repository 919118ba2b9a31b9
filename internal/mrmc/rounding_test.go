package mrmc

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// tQuantileExpansion is the Cornish–Fisher expansion of Student's t
// quantile in 1/ν to the fourth order (Abramowitz & Stegun 26.7.5): from
// ν = 100 on its error is below 10⁻¹⁰ at the 97.5 % point.
func tQuantileExpansion(z, nu float64) float64 {
	z2 := z * z
	g1 := z * (z2 + 1) / 4
	g2 := z * ((5*z2+16)*z2 + 3) / 96
	g3 := z * (((3*z2+19)*z2+17)*z2 - 15) / 384
	g4 := z * ((((79*z2+776)*z2+1482)*z2-1920)*z2 - 945) / 92160
	return z + g1/nu + g2/(nu*nu) + g3/(nu*nu*nu) + g4/(nu*nu*nu*nu)
}

// TestDistributionsAtLargeDF justifies MaxFiniteDF. Up to it, gonum's
// Student t agrees with the known expansion to 10⁻⁹ and its survival and
// quantile invert each other, and its F agrees with the χ² limit as
// closely as the limit predicts; beyond it, the t and F differ from the
// normal and χ² limits by less than every printed digit, so the limits
// lose nothing. (Past 10⁷ gonum's t drifts from the expansion: 10⁻⁸ at
// 10⁸, 10⁻⁶ at 10¹⁰, 0.0065 at 10¹³, 105 at 10²⁰: the reason for the
// bound; logged, not asserted.)
func TestDistributionsAtLargeDF(t *testing.T) {
	t.Parallel()
	for _, p := range []float64{0.975, 0.995, 0.9} {
		z := distuv.UnitNormal.Quantile(p)
		for nu := 100.0; nu <= MaxFiniteDF; nu *= math.Sqrt(10) {
			st := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}
			q := st.Quantile(p)
			if want := tQuantileExpansion(z, nu); math.Abs(q-want) > 1e-9 {
				t.Errorf("t quantile %v at %g df: %.12f, expansion %.12f", p, nu, q, want)
			}
			if s := st.Survival(q); math.Abs(s-(1-p)) > 1e-10 {
				t.Errorf("t survival of its %v quantile at %g df: %.12f", p, nu, s)
			}
		}
		// At the bound and beyond, the normal is within 10⁻⁵ of the t
		// quantile (the expansion's leading term z(z² + 1)/(4ν)).
		if d := tQuantileExpansion(z, MaxFiniteDF) - z; !(d > 0 && d < 1e-5) {
			t.Errorf("t quantile %v at %g df exceeds the normal's by %g", p, MaxFiniteDF, d)
		}
	}
	st := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: MaxFiniteDF}
	for _, x := range []float64{0.5, 1.96, 3, 5} {
		if d := math.Abs(st.Survival(x) - distuv.UnitNormal.Survival(x)); d > 2e-7 {
			t.Errorf("t survival at %g, %g df: %g from the normal's", x, MaxFiniteDF, d)
		}
	}
	for _, d1 := range []float64{1, 2, 3, 5} {
		for _, x := range []float64{0.5, 1, 2.6, 3.84, 10} {
			f := distuv.F{D1: d1, D2: MaxFiniteDF}.Survival(x)
			chi := distuv.ChiSquared{K: d1}.Survival(d1 * x)
			if math.Abs(f-chi) > 2e-6 {
				t.Errorf("F(%g, %g) survival at %g: %g, χ² limit %g", d1, MaxFiniteDF, x, f, chi)
			}
			if got := fSurvival(x, d1, math.Inf(1)); got != chi {
				t.Errorf("fSurvival at infinite df: %g, want the χ² limit %g", got, chi)
			}
		}
	}
	z := distuv.UnitNormal.Quantile(0.975)
	for _, nu := range []float64{1e7, 1e8, 1e10, 1e13, 1e20} {
		q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(0.975)
		t.Logf("gonum's t quantile at %g df: %.12g, expansion %.12g (off by %.2g)", nu, q, tQuantileExpansion(z, nu), q-tQuantileExpansion(z, nu))
	}
	if finiteDF(MaxFiniteDF) != MaxFiniteDF || !math.IsInf(finiteDF(math.Nextafter(MaxFiniteDF, math.Inf(1))), 1) {
		t.Error("finiteDF does not map exactly the degrees of freedom above MaxFiniteDF to +Inf")
	}
}

// TestZeroRules: a sum of squares of deviations within the tolerance is
// exactly 0, one with a deviation beyond it is kept whole.
func TestZeroRules(t *testing.T) {
	t.Parallel()
	tol := figureTol(4, 2, 2, 1)
	if got := sumSquaresOrZero([]float64{tol, -tol / 2, 0}, tol); got != 0 {
		t.Errorf("rounding residue: %g, want 0", got)
	}
	if got := sumSquaresOrZero([]float64{2 * tol, tol}, tol); got != 5*tol*tol {
		t.Errorf("signal: %g, want %g", got, 5*tol*tol)
	}
	if zeroWithin(-1e-20, covTol(10, 4, 0.01)) != 0 || zeroWithin(1e-10, covTol(10, 4, 0.01)) != 1e-10 {
		t.Error("zeroWithin")
	}
}
