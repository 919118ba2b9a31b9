package report

import (
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
)

// fixture writes a benchmark and runs under tmp and returns the results
// folder.
func fixture(t testing.TB, tmp string, recs []*benchmark.Record, runs ...*analysistest.Run) string {
	t.Helper()
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
	return dir
}

func baselineRuns() []*analysistest.Run {
	cost := 0.001
	return []*analysistest.Run{
		{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle},
		{Provider: "baseline", Label: "random", Oracle: "none", Policy: analysistest.Random(0), Cost: &cost},
		{Provider: "baseline", Label: "first", Oracle: "implicit", Policy: analysistest.First},
	}
}
