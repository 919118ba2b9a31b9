package mrmc

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Zero by scale.
//
// A mean square or a difference of covariances that is 0 in exact
// arithmetic comes out of float64 as rounding residue, about 1e-17 of the
// numbers it was computed from, and a test or interval built on that
// residue reports noise as evidence (an F of r − 1 from mean squares of
// 1e-33). So each such quantity is compared with a bound on the rounding
// error of its own computation, and taken as exactly 0 when it is within
// it. The bounds are a few units of roundoff times the number of
// operations behind the quantity, times the magnitude of its inputs:
//
//   - A mean square is a sum of squared deviations of figures of merit
//     from their means (modality, reader, grand). Each mean of up to n
//     figures, summed left to right, is off by at most n·u·S, where u is
//     the unit roundoff (2⁻⁵³) and S the largest figure in magnitude; a
//     deviation combines up to four means. A mean square is 0 when every
//     deviation it sums is within figureTol = 4·(n + t + r)·u·S of 0.
//     A real deviation is well above that bound: a figure of merit is an
//     integer over D (accuracy: D = c; AUC: 2·n1·n0 ≤ c²/2), so a
//     deviation between means of figures that is not 0 is at least
//     1/(n·D), more than 5 times the bound even at the largest table
//     this package reads (MaxScoresBytes: n·c below 3·10⁷).
//
//   - A covariance of two figures is (c − 1)/c·Σ_k d_k·e_k over their
//     jackknife deviations, which are exact integers over integers (one
//     rounding each, and exactly 0 for a figure no case changes). By the
//     Cauchy–Schwarz inequality each product sum is at most the largest
//     jackknife variance V of the figures involved, so summing c products
//     and then averaging up to m pairs errs by at most (c + m + 8)·u·V in
//     each average. A difference of two such averages (Cov2 − Cov3,
//     Var − Cov1, and a one-modality Cov2, whose exact value may be 0) is
//     0 when within covTol = 4·(c + m + 8)·u·V of 0. What that bound can
//     hide is below 10⁻⁸ of V even at ten million cases: as a part of a
//     standard error, nothing; as all of it, an interval 10⁻⁴ the width
//     of one figure's, which the data cannot tell from none.
//
// Every rule applies to the quantities as computed; the figures
// themselves and Var, Cov1, Cov2 and Cov3 are reported as computed.

// unitRoundoff is u = 2⁻⁵³, the largest relative error of one rounded
// float64 operation.
const unitRoundoff = 0x1p-53

// figureTol is the largest rounding residue of a deviation between means
// of figures: n figures in all, t modalities, r readers, the largest
// figure scale in magnitude.
func figureTol(n, t, r int, scale float64) float64 {
	return 4 * float64(n+t+r) * unitRoundoff * scale
}

// covTol is the largest rounding residue of an average of m jackknife
// covariances over c cases, or of a difference of two, the largest
// jackknife variance involved being maxVar.
func covTol(c, m int, maxVar float64) float64 {
	return 4 * float64(c+m+8) * unitRoundoff * maxVar
}

// sumSquaresOrZero is Σ x² over deviations that are rounding residue
// when all of them lie within tol of 0: then it is exactly 0.
func sumSquaresOrZero(devs []float64, tol float64) float64 {
	var s float64
	signal := false
	for _, d := range devs {
		s += d * d
		if math.Abs(d) > tol {
			signal = true
		}
	}
	if !signal {
		return 0
	}
	return s
}

// zeroWithin is x, or exactly 0 when x lies within tol of 0.
func zeroWithin(x, tol float64) float64 {
	if math.Abs(x) <= tol {
		return 0
	}
	return x
}

// MaxFiniteDF is the largest number of degrees of freedom used as such;
// larger ones are taken as infinite (the normal and χ² limits). From
// 10⁶ on, the Student t quantile (at levels up to 99 %) and survival
// differ from the normal's by less than 10⁻⁵ and 2·10⁻⁷, and F from its
// χ² limit by less than 2·10⁻⁶, below the printed digits, while
// gonum's t and F lose accuracy past 10⁷ (10⁻⁶ off at 10¹⁰, wrong from
// 10¹³: a 97.5 % t quantile of 105 at 10²⁰). TestDistributionsAtLargeDF
// checks both sides.
const MaxFiniteDF = 1e6

// finiteDF maps degrees of freedom above MaxFiniteDF to +Inf.
func finiteDF(df float64) float64 {
	if df > MaxFiniteDF {
		return math.Inf(1)
	}
	return df
}

// tQuantile is Student's t quantile, the normal's for infinite df.
func tQuantile(p, df float64) float64 {
	if math.IsInf(df, 1) {
		return distuv.UnitNormal.Quantile(p)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// tSurvival is P(T > x), the normal's for infinite df.
func tSurvival(x, df float64) float64 {
	if math.IsInf(df, 1) {
		return distuv.UnitNormal.Survival(x)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(x)
}

// fSurvival is P(F > x) on df1 and df2 degrees of freedom, the χ²
// limit (df1·F ~ χ²(df1)) for infinite df2.
func fSurvival(x, df1, df2 float64) float64 {
	if math.IsInf(df2, 1) {
		return chi2Survival(df1*x, df1)
	}
	return distuv.F{D1: df1, D2: df2}.Survival(x)
}

func chi2Survival(x, df float64) float64 {
	return distuv.ChiSquared{K: df}.Survival(x)
}
