package results_test

import (
	"testing"

	"github.com/chexpercept/chexpercept/internal/results"
)

// BenchmarkRecordCodec measures writing and reading one released-size
// run's results.jsonl lines (2,100 records): decoding dominates a
// report's run time, encoding an evaluation's and a rescore's.
func BenchmarkRecordCodec(b *testing.B) {
	dir := b.TempDir()
	recs := syntheticRun(b, dir, syntheticBench(b, dir, 100), "explicit", "reference", 1)
	lines := make([][]byte, len(recs))
	size := 0
	for i, r := range recs {
		l, err := r.MarshalLine()
		if err != nil {
			b.Fatal(err)
		}
		lines[i] = l
		size += len(l)
	}
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(size))
		for b.Loop() {
			for _, r := range recs {
				if _, err := r.MarshalLine(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(size))
		for b.Loop() {
			for _, l := range lines {
				if _, err := results.UnmarshalLine(l); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
