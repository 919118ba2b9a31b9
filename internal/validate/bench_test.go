package validate

import (
	"context"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
)

// BenchmarkValidate2100 validates a benchmark of the released size (2,100
// records, 10,400 questions, 7,000 real 1024×1024 PNGs) with the default
// options (headers only). Target: well under 10 s per run on 2 cores.
func BenchmarkValidate2100(b *testing.B) {
	dir := b.TempDir()
	if err := benchtest.Write(dir, benchtest.Full(100), false); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rep, err := Run(context.Background(), dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Errors != 0 || rep.Records != 2100 || rep.Questions != 10400 || rep.Images != 7000 {
			b.Fatalf("unexpected report: %d errors, %d records, %d questions, %d images",
				rep.Errors, rep.Records, rep.Questions, rep.Images)
		}
	}
}
