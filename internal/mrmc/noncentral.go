package mrmc

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

// The noncentral χ², F and t distributions of the power calculation.
// gonum has their central forms only. Each noncentral distribution is a
// Poisson mixture of central ones (Johnson, Kotz & Balakrishnan, Continuous
// Univariate Distributions vol. 2, ch. 29–31):
//
//	χ²(k, λ): P(X ≤ x) = Σ_j w_j · P(k/2 + j, x/2)            (regularized gamma)
//	F(d1, d2, λ): P(F ≤ f) = Σ_j w_j · I_y(d1/2 + j, d2/2),    y = d1·f/(d1·f + d2)
//
// with w_j the Poisson(λ/2) probabilities, and the noncentral t of Lenth
// (1989, Applied Statistics 38, algorithm AS 243) a pair of such mixtures.
// The sum starts at the Poisson mode and walks both ways (Benton &
// Krishnamoorthy 2003, Computational Statistics & Data Analysis 43,
// 249–267): the central function is computed once there, its neighbours by
// the recurrence P_{j+1} = P_j − g_j on the gap g_j between consecutive
// terms, and the walk stops when a bound on the Poisson mass left out falls
// below mixtureTolerance. Both tails are summed from their own central
// functions, so an upper tail (a power) carries no cancellation from 1 − P.

// mixtureTolerance bounds the Poisson weight left out of a mixture, and so
// the truncation error of a probability.
const mixtureTolerance = 1e-16

// maxMixtureTerms stops a walk that the tolerance cannot end (a
// noncentrality beyond any study's): the result is then NaN.
const maxMixtureTerms = 10_000_000

// mixtureFamily is a family of distribution functions P_j (lower tail) and
// Q_j = 1 − P_j (upper tail), j = 0, 1, ..., with P_{j+1} = P_j − g_j.
type mixtureFamily struct {
	lower, upper func(j int) float64 // P_j and Q_j, each computed directly
	logGap       func(j int) float64 // ln g_j
	gapRatio     func(j int) float64 // g_{j+1} / g_j
}

// poissonMixture returns Σ_j w_j P_j and Σ_j w_j Q_j with the weights
// w_j = e^{−μ} μ^{j+s} / Γ(j+s+1): the Poisson(μ) probabilities for s = 0,
// the half-integer weights of the noncentral t for s = ½ (their total is
// P(½, μ), below 1).
func poissonMixture(mu, s float64, f mixtureFamily) (lower, upper float64) {
	if mu == 0 && s == 0 {
		return f.lower(0), f.upper(0)
	}
	logWeight := func(j int) float64 {
		return -mu + (float64(j)+s)*math.Log(mu) - lgamma(float64(j)+s+1)
	}
	m := int(math.Max(0, math.Floor(mu-s)))
	if float64(m) > maxMixtureTerms {
		return math.NaN(), math.NaN()
	}
	gap := func(j int) float64 { return math.Exp(f.logGap(j)) }

	wm, pm, qm, gm := math.Exp(logWeight(m)), f.lower(m), f.upper(m), gap(m)
	lower, upper = wm*pm, wm*qm

	// Down from the mode: P_j = P_{j+1} + g_j, with g_j = g_{j+1} / ratio(j).
	w, p, q, g := wm, pm, qm, gm
	for j := m - 1; j >= 0; j-- {
		w *= float64(j+1) + s
		w /= mu
		if g == 0 {
			g = gap(j)
		} else {
			g /= f.gapRatio(j)
		}
		p, q = math.Min(p+g, 1), math.Max(q-g, 0)
		lower += w * p
		upper += w * q
		// The weights below j fall at least by r = (j+s)/μ per step.
		if r := (float64(j) + s) / mu; r < 1 && w*r/(1-r) < mixtureTolerance {
			break
		}
	}

	// Up from the mode: P_{j+1} = P_j − g_j, g_{j+1} = g_j · ratio(j).
	w, p, q, g = wm, pm, qm, gm
	for j := m; ; j++ {
		if j-m > maxMixtureTerms {
			return math.NaN(), math.NaN()
		}
		p, q = math.Max(p-g, 0), math.Min(q+g, 1)
		if g == 0 {
			g = gap(j + 1)
		} else {
			g *= f.gapRatio(j)
		}
		w *= mu / (float64(j+1) + s)
		lower += w * p
		upper += w * q
		// The weights above j+1 fall at least by r = μ/(j+2+s) per step.
		if r := mu / (float64(j+2) + s); r < 1 && w*r/(1-r) < mixtureTolerance {
			break
		}
	}
	return clamp01(lower), clamp01(upper)
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}

func clamp01(x float64) float64 { return math.Min(math.Max(x, 0), 1) }

// betaFamily is P_j = I_x(a+j, b), the regularized incomplete beta, with
// 1 − x given exactly as xc.
func betaFamily(a, b, x, xc float64) mixtureFamily {
	return mixtureFamily{
		lower: func(j int) float64 { return mathext.RegIncBeta(a+float64(j), b, x) },
		upper: func(j int) float64 { return mathext.RegIncBeta(b, a+float64(j), xc) },
		logGap: func(j int) float64 {
			aj := a + float64(j)
			return aj*math.Log(x) + b*math.Log(xc) - math.Log(aj) - mathext.Lbeta(aj, b)
		},
		gapRatio: func(j int) float64 {
			aj := a + float64(j)
			return x * (aj + b) / (aj + 1)
		},
	}
}

// gammaFamily is P_j = P(a+j, y), the regularized lower incomplete gamma.
func gammaFamily(a, y float64) mixtureFamily {
	return mixtureFamily{
		lower: func(j int) float64 { return mathext.GammaIncReg(a+float64(j), y) },
		upper: func(j int) float64 { return mathext.GammaIncRegComp(a+float64(j), y) },
		logGap: func(j int) float64 {
			aj := a + float64(j)
			return aj*math.Log(y) - y - lgamma(aj+1)
		},
		gapRatio: func(j int) float64 { return y / (a + float64(j) + 1) },
	}
}

// noncentralChi2 is the χ² distribution on K degrees of freedom with
// noncentrality Lambda (the sum of the squared means of its K normals).
type noncentralChi2 struct{ K, Lambda float64 }

func (d noncentralChi2) valid() bool {
	return d.K > 0 && !math.IsInf(d.K, 1) && d.Lambda >= 0 && !math.IsInf(d.Lambda, 1)
}

// survival is P(X > x).
func (d noncentralChi2) survival(x float64) float64 { _, u := d.tails(x); return u }

// tails are P(X ≤ x) and P(X > x).
func (d noncentralChi2) tails(x float64) (lower, upper float64) {
	switch {
	case !d.valid() || math.IsNaN(x):
		return math.NaN(), math.NaN()
	case x <= 0:
		return 0, 1
	case math.IsInf(x, 1):
		return 1, 0
	}
	return poissonMixture(d.Lambda/2, 0, gammaFamily(d.K/2, x/2))
}

// noncentralF is the F distribution on D1 and D2 degrees of freedom with
// noncentrality Lambda in its numerator; D2 = +Inf is the limit χ²(D1,
// Lambda)/D1.
type noncentralF struct{ D1, D2, Lambda float64 }

// survival is P(F > x).
func (d noncentralF) survival(x float64) float64 { _, u := d.tails(x); return u }

// tails are P(F ≤ x) and P(F > x).
func (d noncentralF) tails(x float64) (lower, upper float64) {
	switch {
	case !(d.D1 > 0) || math.IsInf(d.D1, 1) || !(d.D2 > 0) || !(d.Lambda >= 0) || math.IsInf(d.Lambda, 1) || math.IsNaN(x):
		return math.NaN(), math.NaN()
	case math.IsInf(d.D2, 1):
		return noncentralChi2{d.D1, d.Lambda}.tails(d.D1 * x)
	case x <= 0:
		return 0, 1
	case math.IsInf(x, 1):
		return 1, 0
	}
	if d.D2 > largeDF {
		return d.largeDFTails(x)
	}
	num, den := d.D1*x, d.D1*x+d.D2
	return poissonMixture(d.Lambda/2, 0, betaFamily(d.D1/2, d.D2/2, num/den, d.D2/den))
}

// largeDF is the denominator df above which the incomplete beta function
// loses digits (its log-beta prefactor is a difference of two log-gammas
// near 10¹⁰ at 10⁸ df): beyond it an F is computed as below.
const largeDF = 1e6

// largeDFTails is P(F ≤ x) and P(F > x) for a large D2, from
// F = (χ²(D1, λ)/D1) / U with U = χ²_{D2}/D2 independent, of mean 1 and
// variance 2/D2: the expectation over U of the χ² tails at D1·x·U, by
// Gauss–Hermite quadrature with U taken as normal. The normal's missing
// skewness (third central moment 8/D2²) moves the result by O(1/D2²),
// below 1e-11 here; the χ² limit itself would be off by O(1/D2).
func (d noncentralF) largeDFTails(x float64) (lower, upper float64) {
	nodes, weights := hermiteRule()
	sd := math.Sqrt(2 / d.D2)
	chi := noncentralChi2{d.D1, d.Lambda}
	for i, z := range nodes {
		l, u := chi.tails(d.D1 * x * (1 + sd*math.Sqrt2*z))
		lower += weights[i] * l
		upper += weights[i] * u
	}
	return clamp01(lower / math.SqrtPi), clamp01(upper / math.SqrtPi)
}

// hermiteRule is a 16-point Gauss–Hermite rule (weight e^{−z²}).
var hermiteRule = sync.OnceValues(func() ([]float64, []float64) {
	x, w := make([]float64, 16), make([]float64, 16)
	quad.Hermite{}.FixedLocations(x, w, math.Inf(-1), math.Inf(1))
	return x, w
})

// noncentralT is Student's t on Nu degrees of freedom with noncentrality
// Delta: (Z + Delta)/√(χ²_Nu/Nu); Nu = +Inf is the normal N(Delta, 1).
type noncentralT struct{ Nu, Delta float64 }

// survival is P(T > x). For x ≥ 0 (Lenth 1989, with the mixture's upper
// tails):
//
//	P(T > x) = ½ Σ_j p_j (1 − I_y(j + ½, ν/2)) + ½ sign(δ) Σ_j v_j (1 − I_y(j + 1, ν/2)),
//
// y = x²/(x² + ν), p_j the Poisson(δ²/2) probabilities and v_j the
// half-integer weights of the same mean. At x = 0 it is Φ(δ).
func (d noncentralT) survival(x float64) float64 {
	switch {
	case !(d.Nu > 0) || math.IsNaN(d.Delta) || math.IsInf(d.Delta, 0) || math.IsNaN(x):
		return math.NaN()
	case math.IsInf(d.Nu, 1):
		return normalSurvival(x - d.Delta)
	case x < 0:
		return 1 - noncentralT{d.Nu, -d.Delta}.survival(-x)
	case math.IsInf(x, 1):
		return 0
	}
	mu := d.Delta * d.Delta / 2
	num, den := x*x, x*x+d.Nu
	y, yc := num/den, d.Nu/den
	_, even := poissonMixture(mu, 0, betaFamily(0.5, d.Nu/2, y, yc))
	odd := 0.0
	if mu > 0 {
		_, odd = poissonMixture(mu, 0.5, betaFamily(1, d.Nu/2, y, yc))
	}
	if d.Delta < 0 {
		odd = -odd
	}
	return clamp01(0.5*even + 0.5*odd)
}

// normalSurvival is P(Z > x) of the standard normal, accurate in the
// upper tail.
func normalSurvival(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) }

// fUpper is the upper α point of the central F on d1 and d2 degrees of
// freedom (d2 = +Inf: of χ²(d1)/d1).
func fUpper(alpha, d1, d2 float64) float64 {
	if math.IsInf(d2, 1) {
		return chi2Upper(alpha, d1) / d1
	}
	y := mathext.InvRegIncBeta(d1/2, d2/2, 1-alpha)
	f := d2 * y / (d1 * (1 - y))
	if d2 <= 1e4 {
		return f
	}
	// The inverse loses digits for a large d2 (1e-10 at 1e5, 1e-8 at
	// 1e8); Newton steps on the survival function, which stays accurate,
	// restore them.
	dist := distuv.F{D1: d1, D2: d2}
	for range 3 {
		p := dist.Prob(f)
		if !(p > 0) {
			break
		}
		f += (noncentralF{d1, d2, 0}.survival(f) - alpha) / p
	}
	return f
}

// chi2Upper is the upper α point of the central χ² on k degrees of
// freedom.
func chi2Upper(alpha, k float64) float64 {
	return 2 * mathext.GammaIncRegCompInv(k/2, alpha)
}
