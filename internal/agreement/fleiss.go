// Package agreement measures how much raters agree beyond chance: Fleiss'
// κ, shared by the review app (reviewers' decisions) and the report
// (readers' answers per question type).
package agreement

import "math"

// Fleiss is Fleiss' κ for items each rated by the same number m ≥ 2 of
// raters; counts[i][j] is how many raters put item i in category j (every
// row has the same number of categories). NaN when it is undefined: no
// items, fewer than two raters, rows of different rater counts, or every
// rating in one category.
func Fleiss(counts [][]int) float64 {
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
