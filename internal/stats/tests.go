package stats

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// binomial is the binomial coefficient C(n, k) as a float, rounded to the
// nearest integer (exact below 2⁵³); 0 outside 0 ≤ k ≤ n.
func binomial(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return math.Round(c)
}

// BinomialTail is the upper tail P(X ≥ k) of X ~ Bin(n, p), summed term
// by term: Σ_{j=k..n} C(n, j) pʲ (1−p)ⁿ⁻ʲ. 1 when k ≤ 0; 0 when k > n.
func BinomialTail(n int, p float64, k int) float64 {
	tail := 0.0
	for j := max(k, 0); j <= n; j++ {
		tail += binomial(n, j) * math.Pow(p, float64(j)) * math.Pow(1-p, float64(n-j))
	}
	return tail
}

// McNemarP is the exact two-sided McNemar test of paired binary outcomes
// (McNemar 1947; the exact form in Agresti 2013, §11.1): with b and c the
// discordant counts, twice the smaller tail of Bin(b + c, 1/2), capped at
// 1; 1 when there is no discordant pair. No continuity correction or
// normal approximation is involved.
func McNemarP(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	m := min(b, c)
	lf := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	tail := 0.0
	for i := 0; i <= m; i++ {
		tail += math.Exp(lf(n) - lf(i) - lf(n-i) - float64(n)*math.Ln2)
	}
	return min(1, 2*tail)
}

// Pearson is the sample (Pearson 1896) correlation of xs and ys, paired
// by index: Σ dx·dy / √(Σ dx² · Σ dy²). NaN when there are fewer than 3
// pairs or either side is constant.
func Pearson(xs, ys []float64) float64 {
	n := float64(len(xs))
	if len(xs) < 3 {
		return math.NaN()
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// CorrelationLowerP is the one-sided p-value of a sample correlation r
// over n pairs against no association, in the direction of a negative
// correlation: P(T ≤ t) for Student's t with n − 2 degrees of freedom,
// t = r·√((n−2)/(1−r²)) (the exact null distribution under bivariate
// normality; Fisher 1915). NaN when r is NaN or n < 3.
func CorrelationLowerP(r float64, n int) float64 {
	if math.IsNaN(r) || n < 3 {
		return math.NaN()
	}
	df := float64(n - 2)
	if r <= -1 {
		return 0
	}
	if r >= 1 {
		return 1
	}
	t := r * math.Sqrt(df/(1-r*r))
	tail := 0.5 * mathext.RegIncBeta(df/2, 0.5, df/(df+t*t)) // P(T ≤ −|t|)
	if t < 0 {
		return tail
	}
	return 1 - tail
}

// ChiSquareP is the upper tail P(X ≥ x) of a chi-square with df degrees
// of freedom: the regularized upper incomplete gamma Q(df/2, x/2). NaN
// when df < 1 or x is NaN; 1 when x ≤ 0.
func ChiSquareP(x float64, df int) float64 {
	if df < 1 || math.IsNaN(x) {
		return math.NaN()
	}
	if x <= 0 {
		return 1
	}
	return mathext.GammaIncRegComp(float64(df)/2, x/2)
}

// Homogeneity is Pearson's (1900) chi-square statistic of homogeneity for
// a 2×K table given as its two count rows a and b (same length):
// Σ (observed − expected)²/expected with expected = row total × column
// total / grand total, over the columns with a non-zero total; df is the
// number of those columns − 1. NaN and 0 when a row is empty.
func Homogeneity(a, b []int) (chi2 float64, df int) {
	var na, nb float64
	for i := range a {
		na += float64(a[i])
		nb += float64(b[i])
	}
	if na == 0 || nb == 0 {
		return math.NaN(), 0
	}
	n := na + nb
	chi, cols := 0.0, 0
	for i := range a {
		col := float64(a[i] + b[i])
		if col == 0 {
			continue
		}
		cols++
		for _, o := range []struct{ obs, row float64 }{{float64(a[i]), na}, {float64(b[i]), nb}} {
			e := o.row * col / n
			chi += (o.obs - e) * (o.obs - e) / e
		}
	}
	return chi, cols - 1
}
