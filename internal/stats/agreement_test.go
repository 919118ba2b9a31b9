package stats

import (
	"math"
	"testing"
)

// ratings spells paired ratings as runs: {n, a, b} is n items rated a by
// the first rater and b by the second.
func ratings(runs ...[3]int) (a, b []int) {
	for _, r := range runs {
		for range r[0] {
			a, b = append(a, r[1]), append(b, r[2])
		}
	}
	return a, b
}

func TestCohenKappa(t *testing.T) {
	tests := []struct {
		name string
		runs [][3]int
		k    int
		want float64
	}{
		// 50 items, yes = 0 and no = 1: 20 yes/yes, 5 yes/no, 10 no/yes,
		// 15 no/no. po = 0.7, pe = 0.5·0.6 + 0.5·0.4 = 0.5, κ = 0.4.
		{"two categories", [][3]int{{20, 0, 0}, {5, 0, 1}, {10, 1, 0}, {15, 1, 1}}, 2, 0.4},
		{"perfect", [][3]int{{1, 0, 0}, {1, 1, 1}, {1, 2, 2}}, 3, 1},
		// po = 0, pe = 0.5 → κ = −1.
		{"opposite", [][3]int{{1, 0, 1}, {1, 1, 0}}, 2, -1},
		// a: 0 0 2, b: 0 2 2. po = 2/3; pe = (2/3)(1/3) + (1/3)(2/3) = 4/9;
		// κ = (6/9 − 4/9)/(5/9) = 0.4.
		{"unused category", [][3]int{{1, 0, 0}, {1, 0, 2}, {1, 2, 2}}, 3, 0.4},
		{"one category only", [][3]int{{5, 0, 0}}, 3, math.NaN()},
		{"category out of range", [][3]int{{1, 0, 3}, {1, 1, 1}}, 3, math.NaN()},
		{"negative category", [][3]int{{1, -1, 0}, {1, 1, 1}}, 3, math.NaN()},
		{"empty", nil, 3, math.NaN()},
	}
	for _, tc := range tests {
		a, b := ratings(tc.runs...)
		if got := CohenKappa(a, b, tc.k); !sameOrBothNaN(got, tc.want, 1e-12) {
			t.Errorf("%s: κ = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := CohenKappa([]int{0, 1}, []int{0}, 2); !math.IsNaN(got) {
		t.Errorf("series of different lengths: κ = %v, want NaN", got)
	}
}

func TestFleissKappa(t *testing.T) {
	tests := []struct {
		name   string
		counts [][]int
		want   float64
		tol    float64 // 0: 1e-12
	}{
		// The worked example of 10 items, 14 raters and 5 categories
		// published with Fleiss' κ: P̄ = 0.378, P̄e = 0.213, κ = 0.210.
		{"10 items, 14 raters", [][]int{
			{0, 0, 0, 0, 14}, {0, 2, 6, 4, 2}, {0, 0, 3, 5, 6}, {0, 3, 9, 2, 0}, {2, 2, 8, 1, 1},
			{7, 7, 0, 0, 0}, {3, 2, 6, 3, 0}, {2, 5, 3, 2, 2}, {6, 5, 2, 1, 0}, {0, 2, 2, 3, 7},
		}, 0.210, 5e-4},
		// P_i = 1, 1/3, 1, 1/3 → P̄ = 2/3; p = (1/2, 1/2) → P̄e = 1/2; κ = 1/3.
		{"4 items, 3 raters", [][]int{{3, 0}, {2, 1}, {0, 3}, {1, 2}}, 1.0 / 3, 0},
		// P_i = 1, 1, 1/3, 0 → P̄ = 7/12; p = 6/12, 5/12, 1/12 → P̄e = 62/144;
		// κ = (84/144 − 62/144)/(82/144) = 11/41.
		{"three categories", [][]int{{3, 0, 0}, {0, 3, 0}, {2, 1, 0}, {1, 1, 1}}, 11.0 / 41, 0},
		{"perfect", [][]int{{3, 0, 0}, {0, 3, 0}, {0, 0, 3}}, 1, 0},
		// Two raters always split: P̄ = 0, P̄e = 1/2 → κ = −1.
		{"split", [][]int{{1, 1, 0}, {1, 1, 0}}, -1, 0},
		{"no items", nil, math.NaN(), 0},
		{"one rater", [][]int{{1, 0}}, math.NaN(), 0},
		{"one category", [][]int{{2, 0}, {2, 0}}, math.NaN(), 0},
		{"uneven raters", [][]int{{2, 0}, {1, 0}}, math.NaN(), 0},
		{"uneven categories", [][]int{{2, 0}, {1, 0, 1}}, math.NaN(), 0},
	}
	for _, tc := range tests {
		tol := tc.tol
		if tol == 0 {
			tol = 1e-12
		}
		if got := FleissKappa(tc.counts); !sameOrBothNaN(got, tc.want, tol) {
			t.Errorf("%s: κ = %v, want %v", tc.name, got, tc.want)
		}
	}
}
