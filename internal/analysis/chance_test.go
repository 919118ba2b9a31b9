package analysis

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
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

// The random baseline's accuracy agrees with the chance level of every
// question type (lesion all). A 95 % interval misses the true value in one
// cell of twenty, so the test allows twice the interval's half-width
// (about four standard errors): a wrong chance level (1/4 instead of 1/8
// for location, 1/2 instead of 1/3 for a three-option question) still
// fails it.
func TestRandomNearChance(t *testing.T) {
	tmp := t.TempDir()
	b, err := analysistest.WriteBench(filepath.Join(tmp, "bench"), benchtest.Full(10))
	if err != nil {
		t.Fatal(err)
	}
	run := &analysistest.Run{Provider: "baseline", Label: "random", Oracle: "none", Policy: analysistest.Random(1)}
	if _, err := run.Write(filepath.Join(tmp, "results"), b); err != nil {
		t.Fatal(err)
	}
	set, err := Load([]string{filepath.Join(tmp, "results")}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Analyze(set, Options{Bootstrap: 500})
	if err != nil {
		t.Fatal(err)
	}
	rr := res.Runs[0]
	checked, outside := 0, 0
	for _, path := range benchmark.Paths {
		for _, q := range benchmark.Questions {
			if !benchmark.Applies(path, false, q) {
				continue
			}
			name := q.Name()
			c := rr.SubOf(path, "all", q)
			ch := res.Chance.Get(path, "all", name)
			if c.Acc.N != ch.N {
				t.Errorf("%s/%s: n %d vs chance n %d", path, name, c.Acc.N, ch.N)
			}
			if ch.Uniform < c.Acc.Lo || ch.Uniform > c.Acc.Hi {
				outside++
			}
			if half := (c.Acc.Hi - c.Acc.Lo) / 2; math.Abs(ch.Uniform-c.Acc.Value) > 2*half {
				t.Errorf("%s/%s: chance %.3f outside [%.3f, %.3f] (acc %.3f)", path, name, ch.Uniform, c.Acc.Lo, c.Acc.Hi, c.Acc.Value)
			}
			checked++
		}
		d, ch := rr.DepthOf(path, "all"), res.Chance.Get(path, "all", "depth")
		if half := (d.Hi - d.Lo) / 2; math.Abs(ch.Uniform-d.Mean) > 2*half {
			t.Errorf("%s depth: chance %.3f outside [%.3f, %.3f]", path, ch.Uniform, d.Lo, d.Hi)
		}
	}
	t.Logf("%d of %d question cells hold the chance level inside the 95%% interval", checked-outside, checked)
	if checked != 16 {
		t.Errorf("checked %d cells", checked)
	}
}
