package review

import (
	"math"
	"testing"
)

func rep(d string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestCohenKappa(t *testing.T) {
	tests := []struct {
		name string
		a, b []string
		want float64 // NaN = undefined
	}{
		// 4 both accept, 3 both reject, 2 accept/reject, 1 reject/accept:
		// po = 0.7, pe = 0.6·0.5 + 0.4·0.5 = 0.5, κ = 0.2/0.5 = 0.4.
		{"textbook", cat(rep("accept", 4), rep("reject", 3), rep("accept", 2), rep("reject", 1)),
			cat(rep("accept", 4), rep("reject", 3), rep("reject", 2), rep("accept", 1)), 0.4},
		{"perfect", []string{"accept", "reject", "unsure"}, []string{"accept", "reject", "unsure"}, 1},
		// po = 0, pe = 0.5·0.5 + 0.5·0.5 = 0.5 → κ = −1.
		{"opposite", []string{"accept", "reject"}, []string{"reject", "accept"}, -1},
		// a: A A U, b: A U U. po = 2/3; pe = (2/3)(1/3) + (1/3)(2/3) = 4/9;
		// κ = (6/9 − 4/9)/(5/9) = 0.4.
		{"with unsure", []string{"accept", "accept", "unsure"}, []string{"accept", "unsure", "unsure"}, 0.4},
		{"one category only", rep("accept", 5), rep("accept", 5), math.NaN()},
		{"empty", nil, nil, math.NaN()},
	}
	for _, tc := range tests {
		got := CohenKappa(tc.a, tc.b)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
			t.Errorf("%s: κ = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFleissKappa(t *testing.T) {
	tests := []struct {
		name   string
		counts [][3]int
		want   float64
	}{
		// P_i = 1, 1, 1/3, 0 → P̄ = 7/12; p = 6/12, 5/12, 1/12 → Pe = 62/144;
		// κ = (84/144 − 62/144)/(82/144) = 11/41.
		{"hand", [][3]int{{3, 0, 0}, {0, 3, 0}, {2, 1, 0}, {1, 1, 1}}, 11.0 / 41.0},
		{"perfect", [][3]int{{2, 0, 0}, {0, 2, 0}}, 1},
		// Two raters always split accept/reject: P̄ = 0, Pe = 0.5 → κ = −1.
		{"split", [][3]int{{1, 1, 0}, {1, 1, 0}}, -1},
		{"one category", [][3]int{{3, 0, 0}, {3, 0, 0}}, math.NaN()},
		{"one rater", [][3]int{{1, 0, 0}}, math.NaN()},
		{"unequal raters", [][3]int{{2, 0, 0}, {1, 2, 0}}, math.NaN()},
		{"none", nil, math.NaN()},
	}
	for _, tc := range tests {
		got := FleissKappa(tc.counts)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
			t.Errorf("%s: κ = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestComputeAgreement: pairs only over cases both decided; Fleiss over
// fully decided cases with the common overlap.
func TestComputeAgreement(t *testing.T) {
	act := func(d string) *Action { return &Action{Decision: d} }
	st := []*CaseState{
		{Assigned: []string{"r1", "r2"}, Latest: []*Action{act("accept"), act("accept")}},
		{Assigned: []string{"r1", "r2"}, Latest: []*Action{act("reject"), act("reject")}},
		{Assigned: []string{"r1", "r2"}, Latest: []*Action{act("accept"), act("reject")}},
		{Assigned: []string{"r1", "r2"}, Latest: []*Action{act("accept"), nil}},
		{Assigned: []string{"r2", "r10"}, Latest: []*Action{act("accept"), act("accept")}},
		{Assigned: []string{"r3"}, Latest: []*Action{act("accept")}},
	}
	ag := ComputeAgreement(st)
	if len(ag.Pairs) != 2 || ag.Pairs[0].A != "r1" || ag.Pairs[0].B != "r2" || ag.Pairs[1].A != "r2" || ag.Pairs[1].B != "r10" {
		t.Fatalf("pairs %+v", ag.Pairs)
	}
	p := ag.Pairs[0]
	// r1: A R A, r2: A R R → po = 2/3, pe = (2/3)(1/3) + (1/3)(2/3) = 4/9, κ = 0.4.
	if p.Shared != 4 || p.N != 3 || p.Agree != 2 || math.Abs(p.Kappa-0.4) > 1e-12 {
		t.Errorf("r1–r2 %+v", p)
	}
	if !math.IsNaN(ag.Pairs[1].Kappa) || ag.Pairs[1].N != 1 {
		t.Errorf("r2–r10 %+v", ag.Pairs[1])
	}
	// Fleiss over the 4 fully decided 2-rater cases: rows (2,0),(0,2),(1,1),(2,0):
	// P̄ = 3/4; p = 5/8, 3/8 → Pe = 34/64; κ = (48/64 − 34/64)/(30/64) = 14/30.
	if ag.FleissM != 2 || ag.FleissN != 4 || math.Abs(ag.FleissKappa-14.0/30.0) > 1e-12 {
		t.Errorf("fleiss M=%d N=%d κ=%v", ag.FleissM, ag.FleissN, ag.FleissKappa)
	}
}
