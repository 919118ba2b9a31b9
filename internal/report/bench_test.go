package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// BenchmarkReport14x2100 measures `report` on 14 runs × 2,100 items
// (synthetic random-policy runs over a released-size benchmark): loading,
// every metric with B = 2,000 bootstrap replicates, all CSVs, report.md,
// the plots (PNG and SVG) and index.html with its 2,100 sidecar files.
// Without --embed-images and without pairwise comparisons (spec target:
// under 5 s on a 2-core machine).
func BenchmarkReport14x2100(b *testing.B) {
	tmp := b.TempDir()
	var runs []*analysistest.Run
	for i := 0; i < 14; i++ {
		runs = append(runs, &analysistest.Run{Provider: "openai", Label: fmt.Sprintf("vision-model-%02d", i), Oracle: "none", Policy: analysistest.Random(i)})
	}
	// CHX_BENCH_FIXTURE=DIR keeps the (slow to generate) fixture between
	// benchmark invocations.
	root := os.Getenv("CHX_BENCH_FIXTURE")
	if root == "" {
		root = tmp
	}
	dir := filepath.Join(root, "results")
	if _, err := os.Stat(filepath.Join(dir, "openai_vision-model-13")); err != nil {
		dir = fixture(b, root, benchtest.Full(100), runs...)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		n++
		out := filepath.Join(tmp, fmt.Sprintf("report-%d", n))
		res, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{}})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Runs) != 14 || len(res.Warnings) != 0 {
			b.Fatalf("runs %d warnings %q", len(res.Runs), res.Warnings)
		}
	}
	// CPU seconds per report: on a shared machine the wall time above
	// also counts other processes' load.
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(n), "cpu-s/op")
}
