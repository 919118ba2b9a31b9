package agreement

import (
	"math"
	"testing"
)

func TestFleiss(t *testing.T) {
	// Fleiss (1971)'s worked example is larger; this one is checked by
	// hand: 4 items, 3 raters, 2 categories.
	// P_i: 1, 1/3, 1, 1/3 → P̄ = 2/3; p = (6/12, 6/12) → Pe = 1/2;
	// κ = (2/3 − 1/2) / (1 − 1/2) = 1/3.
	got := Fleiss([][]int{{3, 0}, {2, 1}, {0, 3}, {1, 2}})
	if math.Abs(got-1.0/3) > 1e-12 {
		t.Errorf("κ = %v, want 1/3", got)
	}
	for name, c := range map[string][][]int{
		"no items":        nil,
		"one rater":       {{1, 0}},
		"one category":    {{2, 0}, {2, 0}},
		"uneven raters":   {{2, 0}, {1, 0}},
		"uneven category": {{2, 0}, {1, 0, 1}},
	} {
		if k := Fleiss(c); !math.IsNaN(k) {
			t.Errorf("%s: κ = %v, want NaN", name, k)
		}
	}
	if k := Fleiss([][]int{{3, 0, 0}, {0, 3, 0}, {0, 0, 3}}); k != 1 {
		t.Errorf("perfect agreement: %v", k)
	}
}
