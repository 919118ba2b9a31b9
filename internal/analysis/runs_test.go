package analysis_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// Tests of the analysis over runs written to disk and read back as
// report does (runset.Load): an external test package, since runset
// imports analysis.

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
	set, err := runset.Load(context.Background(), []string{filepath.Join(tmp, "results")}, runset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := analysis.Analyze(context.Background(), set, analysis.Options{Bootstrap: 500})
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

// analyzeRuns writes recs and the runs, then loads and analyses them.
func analyzeRuns(t *testing.T, recs []*benchmark.Record, runs ...*analysistest.Run) *analysis.Result {
	t.Helper()
	tmp := t.TempDir()
	b, err := analysistest.WriteBench(filepath.Join(tmp, "bench"), recs)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "results")
	for _, r := range runs {
		if _, err := r.Write(dir, b); err != nil {
			t.Fatal(err)
		}
	}
	set, err := runset.Load(context.Background(), []string{dir}, runset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := analysis.Analyze(context.Background(), set, analysis.Options{Bootstrap: 10})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The done-when check at the analysis level: five models that answer the
// true label of a mislabeled item flag exactly that item, unanimous_wrong;
// baselines never count.
func TestPlantedMislabel(t *testing.T) {
	recs := benchtest.Full(1)
	key, truth := analysistest.PlantMislabel(recs)
	runs := []*analysistest.Run{{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle}}
	for i := 1; i <= 5; i++ {
		runs = append(runs, &analysistest.Run{Provider: "fake", Label: fmt.Sprint("m", i), Oracle: "none", Policy: truth})
	}
	res := analyzeRuns(t, recs, runs...)
	if len(res.Health) != 1 || res.Health[0].Skipped != "" || len(res.Health[0].Runs) != 5 {
		t.Fatalf("health: %+v", res.Health)
	}
	flags := res.Health[0].Flags()
	if len(flags) != 1 || flags[0].Key != key || flags[0].Q != benchmark.QComparison || !slices.Equal(flags[0].Reasons, []string{analysis.FlagUnanimousWrong}) {
		for _, f := range flags {
			t.Logf("flag %s %s %v", f.Key, f.Q.Name(), f.Reasons)
		}
		t.Fatalf("want exactly %s comparison unanimous_wrong", key)
	}
	if f := flags[0]; f.Runs != 5 || f.ModalN != 5 || f.Modal == f.GT || f.PCorrect != 0 {
		t.Errorf("flag: %+v", *f)
	}
}

// Five random-policy runs (counted here as evidence) flag no more items
// than the stated false-flag rate allows: expected + 3 sd.
func TestRandomRunsFalseFlags(t *testing.T) {
	var runs []*analysistest.Run
	for i := 1; i <= 5; i++ {
		runs = append(runs, &analysistest.Run{Provider: "fake", Label: fmt.Sprint("random", i), Oracle: "none", Policy: analysistest.Random(i)})
	}
	res := analyzeRuns(t, benchtest.Full(2), runs...)
	h := res.Health[0]
	t.Logf("5 random runs: %d of %d items flagged; expected under random answering %.2f (sd %.2f)", h.Flagged, len(h.Items), h.Expected, h.SD)
	if h.Expected <= 0 || float64(h.Flagged) > h.Expected+3*h.SD {
		t.Errorf("%d flagged, bound %.2f + 3·%.2f", h.Flagged, h.Expected, h.SD)
	}
	if len(h.Bias) == 0 {
		t.Error("no position-bias table")
	}
	for _, b := range h.Bias {
		if b.NAn == 0 || b.DF < 1 || math.IsNaN(b.P) {
			t.Errorf("bias %s K=%d: %+v", b.Q.Name(), b.K, b)
		}
	}
}

func TestItemHealthNeedsRuns(t *testing.T) {
	res := analyzeRuns(t, benchtest.Sample(),
		&analysistest.Run{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "fake", Label: "a", Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "fake", Label: "b", Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "baseline", Label: "first", Oracle: "implicit", Policy: analysistest.First})
	if len(res.Health) != 1 || res.Health[0].Skipped == "" || res.Health[0].Items != nil {
		t.Errorf("two runs: %+v", res.Health)
	}
	if err := analysis.CheckFlagShare(0.5); err == nil {
		t.Error("share 0.5 accepted")
	}
	if _, err := analysis.Analyze(context.Background(), &analysis.Set{}, analysis.Options{FlagShare: 1.2}); err == nil {
		t.Error("share 1.2 accepted")
	}
}

// TestStopsWithContext: once the report's context ends (a signal), the
// runs are read no further and the analysis stops, each with the
// context's error rather than a result.
func TestStopsWithContext(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	b, err := analysistest.WriteBench(filepath.Join(tmp, "bench"), benchtest.Sample())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "results")
	for _, label := range []string{"a", "b"} {
		r := &analysistest.Run{Provider: "fake", Label: label, Oracle: "none", Policy: analysistest.Oracle}
		if _, err := r.Write(dir, b); err != nil {
			t.Fatal(err)
		}
	}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	if set, err := runset.Load(stopped, []string{dir}, runset.Options{}); !errors.Is(err, context.Canceled) || len(set.Runs) != 0 {
		t.Errorf("Load after the end: %d runs, err %v; want none and context.Canceled", len(set.Runs), err)
	}
	set, err := runset.Load(context.Background(), []string{dir}, runset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := analysis.Analyze(stopped, set, analysis.Options{Bootstrap: 10}); !errors.Is(err, context.Canceled) || res != nil {
		t.Errorf("Analyze after the end: %v, %v; want no result and context.Canceled", res, err)
	}
}
