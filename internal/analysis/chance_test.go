package analysis

import (
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
)

func TestChanceSample(t *testing.T) {
	b := &benchmark.Benchmark{Records: benchtest.Sample()}
	c := computeChance(b)
	if c.Majority[0] != "1" { // 5 of 7 records are "Yes" (option 1)
		t.Errorf("majority detection %q", c.Majority[0])
	}
	tests := []struct {
		path              benchmark.Path
		lesion, target    string
		n                 int
		uniform, majority float64
	}{
		{LF, "all", "detection", 2, 0.5, 0},
		{RF, "all", "detection", 2, 0.5, 1},
		// location: 3 non-None options → 1/8.
		{RR, "all", "location", 2, 0.125, -1},
		{RR, "cardiomegaly", "location", 0, -1, -1},
		// LF depth: expected = P(detection) = 1/2.
		{LF, "all", "depth", 2, 0.5, 0},
		{LF, "all", "e2e_1", 2, 0.5, 0},
	}
	for _, tc := range tests {
		row := c.Get(tc.path, tc.lesion, tc.target)
		if tc.n == 0 {
			if row != nil {
				t.Errorf("%s/%s/%s should not exist", tc.path, tc.lesion, tc.target)
			}
			continue
		}
		if row == nil || row.N != tc.n || !near(row.Uniform, tc.uniform, 1e-12) || (tc.majority >= 0 && row.MajorityAcc != tc.majority) {
			t.Errorf("%s/%s/%s = %+v", tc.path, tc.lesion, tc.target, row)
		}
	}
	// Cardiomegaly RF: stages 1 and 2 (two Yes/No questions), then +1:
	// expected depth = 1/2 + 1/4 + 1/4.
	if row := c.Get(RF, "cardiomegaly", "depth"); row == nil || !near(row.Uniform, 1, 1e-12) {
		t.Errorf("cardiomegaly RF depth %+v", row)
	}
	// e2e chance is the product of the stage chances.
	s1, s2, e2 := c.Get(RF, "pneumonia", "stage_1"), c.Get(RF, "pneumonia", "stage_2"), c.Get(RF, "pneumonia", "e2e_2")
	if !near(e2.Uniform, s1.Uniform*s2.Uniform, 1e-15) {
		t.Errorf("e2e_2 %v != %v·%v", e2.Uniform, s1.Uniform, s2.Uniform)
	}
}
