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
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// BenchmarkSamples14x2100 writes samples.csv and samples.parquet for 14
// runs × 2,100 records (random-policy runs over a released-size
// benchmark, the fixture of BenchmarkReport14x2100) and reports their
// sizes. The fixture's usage is constant, which would flatter the
// compression, so every asked turn gets seeded random token counts,
// latencies and a cost first (target: samples.parquet under 20 MB).
func BenchmarkSamples14x2100(b *testing.B) {
	tmp := b.TempDir()
	root := os.Getenv("CHX_BENCH_FIXTURE")
	if root == "" {
		root = tmp
	}
	dir := filepath.Join(root, "results")
	if _, err := os.Stat(filepath.Join(dir, "openai_vision-model-13")); err != nil {
		var runs []*analysistest.Run
		for i := 0; i < 14; i++ {
			runs = append(runs, &analysistest.Run{Provider: "openai", Label: fmt.Sprintf("vision-model-%02d", i), Oracle: "none", Policy: analysistest.Random(i)})
		}
		dir = fixture(b, root, benchtest.Full(100), runs...)
	}
	set, err := runset.Load(context.Background(), []string{dir}, runset.Options{})
	if err != nil {
		b.Fatal(err)
	}
	res := &analysis.Result{Set: set}
	rows := 0
	for _, r := range set.Runs {
		res.Runs = append(res.Runs, &analysis.RunResult{Run: r, Scored: true})
		for _, rec := range r.Records {
			rows += len(rec.Turns)
			sampleRandomUsage(r.Name, rec)
		}
	}
	b.ResetTimer()
	n := 0
	var pq, csv int64
	for b.Loop() {
		n++
		out := filepath.Join(tmp, fmt.Sprintf("samples-%d", n))
		if err := os.MkdirAll(out, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := writeSamples(context.Background(), nil, res, out, "bench"); err != nil {
			b.Fatal(err)
		}
		pq, csv = sampleFileSize(b, filepath.Join(out, SamplesParquet)), sampleFileSize(b, filepath.Join(out, SamplesCSV))
	}
	b.ReportMetric(float64(rows), "rows")
	b.ReportMetric(float64(pq)/1e6, "parquet-MB")
	b.ReportMetric(float64(csv)/1e6, "csv-MB")
	if pq >= 20e6 {
		b.Errorf("samples.parquet is %d bytes, over 20 MB", pq)
	}
}

// sampleRandomUsage gives each asked turn of rec seeded, realistic-looking
// token counts, latencies and cost.
func sampleRandomUsage(run string, rec *results.Record) {
	for i := range rec.Turns {
		t := &rec.Turns[i]
		if t.Status != results.TurnAsked {
			continue
		}
		r := rng.New("samples-bench/" + run + "/" + rec.KeyID + "/" + t.Turn)
		u := &results.TokenUse{InputTokens: int64(r.IntRange(800, 6000)), CachedInputTokens: int64(r.IntRange(0, 800)),
			OutputTokens: int64(r.IntRange(1, 2000)), ThinkingTokens: int64(r.IntRange(0, 8000))}
		u.TotalTokens = u.InputTokens + u.OutputTokens + u.ThinkingTokens
		cost := float64(u.InputTokens)*1.25e-6 + float64(u.OutputTokens+u.ThinkingTokens)*1e-5
		t.Usage, t.CostUSD = u, &cost
		t.LatencyMS = int64(r.IntRange(300, 60000))
		t.TotalMS = t.LatencyMS + int64(r.IntRange(0, 1))*int64(r.IntRange(0, 30000))
	}
}

func sampleFileSize(b *testing.B, name string) int64 {
	st, err := os.Stat(name)
	if err != nil {
		b.Fatal(err)
	}
	return st.Size()
}
