package results_test

import (
	"testing"

	"github.com/chexpercept/chexpercept/internal/results"
)

// BenchmarkRefMetricsFromRecords measures the reference metrics of one
// released-size run (2,100 records), as a report computes them per run;
// via-export is the former route (build every record's export, then read
// it), kept for comparison.
func BenchmarkRefMetricsFromRecords(b *testing.B) {
	dir := b.TempDir()
	recs := syntheticRun(b, dir, syntheticBench(b, dir, 100), "explicit", "reference", 1)
	for _, c := range []struct {
		name string
		f    func([]*results.Record) *results.RefMetrics
	}{{"direct", results.RefMetricsFromRecords}, {"via-export", viaExport}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.f(recs)
			}
		})
	}
}
