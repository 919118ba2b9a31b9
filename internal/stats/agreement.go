package stats

import "math"

// CohenKappa is Cohen's (1960) κ of two raters over paired ratings:
// a[i] and b[i] are the categories (0 ≤ c < k) the two raters gave item
// i. κ = (po − pe)/(1 − pe), po the share of items on which they agree
// and pe = Σ_j pa_j·pb_j the agreement expected from each rater's own
// category shares. NaN when it is undefined: no items, series of
// different lengths, a category outside [0, k), or pe = 1 (both raters
// used one and the same category throughout).
func CohenKappa(a, b []int, k int) float64 {
	n := len(a)
	if n == 0 || n != len(b) {
		return math.NaN()
	}
	ca, cb := make([]float64, k), make([]float64, k)
	agree := 0
	for i := range a {
		ia, ib := a[i], b[i]
		if ia < 0 || ia >= k || ib < 0 || ib >= k {
			return math.NaN()
		}
		ca[ia]++
		cb[ib]++
		if ia == ib {
			agree++
		}
	}
	po := float64(agree) / float64(n)
	pe := 0.0
	for j := range ca {
		pe += float64(ca[j]/float64(n)) * float64(cb[j]/float64(n))
	}
	if pe >= 1 {
		return math.NaN()
	}
	return (po - pe) / (1 - pe)
}

// FleissKappa is Fleiss' (1971) κ for N items each rated by the same
// number m ≥ 2 of raters, not necessarily the same raters: counts[i][j]
// is how many raters put item i in category j, every row with the same
// number of categories. κ = (P̄ − P̄e)/(1 − P̄e), P̄ the mean over items
// of the share of agreeing rater pairs and P̄e = Σ_j p_j² from the
// overall category shares p_j. NaN when it is undefined: no items, fewer
// than two raters, rows of different rater or category counts, or every
// rating in one category.
func FleissKappa(counts [][]int) float64 {
	N := len(counts)
	if N == 0 {
		return math.NaN()
	}
	m := 0
	for _, c := range counts[0] {
		m += c
	}
	if m < 2 {
		return math.NaN()
	}
	colSum := make([]float64, len(counts[0]))
	pBar := 0.0
	for _, row := range counts {
		if len(row) != len(colSum) {
			return math.NaN()
		}
		s, sq := 0, 0
		for j, c := range row {
			s += c
			sq += c * c
			colSum[j] += float64(c)
		}
		if s != m {
			return math.NaN()
		}
		pBar += float64(sq-m) / float64(m*(m-1))
	}
	pBar /= float64(N)
	pe := 0.0
	for _, c := range colSum {
		p := c / float64(N*m)
		pe += float64(p * p)
	}
	if pe >= 1 {
		return math.NaN()
	}
	return (pBar - pe) / (1 - pe)
}
