package demo

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkDemo runs the whole demo from scratch once per iteration, for
// profiling (go test -bench Demo -benchtime 1x -cpuprofile cpu.out).
func BenchmarkDemo(b *testing.B) {
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(b.TempDir(), "demo")
		if _, err := Run(context.Background(), Options{Out: dir}); err != nil {
			b.Fatal(err)
		}
	}
}
