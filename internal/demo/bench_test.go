package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/eval"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/registry"
)

// BenchmarkEvalRate is the concurrency sweep of scripts/bench.sh:
// the evaluator's call rate against serve-baseline with 50 ms latency at
// concurrency 1, 8, 32 and 64, beside the ideal rate calls ÷ makespan,
// where the ideal makespan is max(calls × latency ÷ concurrency, longest
// record's turns × latency). The benchmark has small images (flat 1024²
// PNGs), so latency and scheduling, not bytes, bound the rate; the client
// is the real openai provider over HTTP.
//
// Environment: CHX_BENCH_ENDPOINT, a serve-baseline URL started with
// --latency 50ms in another process (default: one in this process);
// CHX_BENCH_PER_CELL, records per lesion and path (default 15: 315
// records); CHX_BENCH_CONCURRENCY, the list (default 1,8,32,64).
func BenchmarkEvalRate(b *testing.B) {
	const latency = 50 * time.Millisecond
	perCell := envInt(b, "CHX_BENCH_PER_CELL", 15)
	concs := []int{1, 8, 32, 64}
	if s := os.Getenv("CHX_BENCH_CONCURRENCY"); s != "" {
		concs = nil
		for _, f := range strings.Split(s, ",") {
			c, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || c < 1 {
				b.Fatalf("CHX_BENCH_CONCURRENCY %q: %q is not a concurrency", s, f)
			}
			concs = append(concs, c)
		}
	}

	dir := b.TempDir()
	if err := benchtest.Write(dir, benchtest.Full(perCell), false); err != nil {
		b.Fatal(err)
	}
	bench, err := benchdir.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	calls, longest := 0, 0
	for _, r := range bench.Records {
		calls += r.Questions()
		longest = max(longest, r.Questions())
	}

	url := os.Getenv("CHX_BENCH_ENDPOINT")
	if url == "" {
		u, _, stop, err := fakemodel.StartServer(context.Background(), fakemodel.ServerConfig{Policy: "random", Latency: latency})
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
		url = u
	}
	reg, err := registry.Default()
	if err != nil {
		b.Fatal(err)
	}
	prices, err := registry.LoadPrices("")
	if err != nil {
		b.Fatal(err)
	}
	m, _, err := eval.ResolveModel(reg, prices, "openai", "baseline-random-over-http", false)
	if err != nil {
		b.Fatal(err)
	}
	kf := filepath.Join(dir, "key")
	if err := os.WriteFile(kf, []byte("placeholder\n"), 0o600); err != nil {
		b.Fatal(err)
	}

	for _, conc := range concs {
		b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) {
			ideal := max(time.Duration(calls)*latency/time.Duration(conc), time.Duration(longest)*latency)
			var rate float64
			for i := 0; i < b.N; i++ {
				s, err := eval.Run(context.Background(), eval.Options{BenchDir: dir, OutDir: b.TempDir(), Model: m,
					Endpoints: []string{url}, APIKeyFile: kf, Concurrency: conc, NoCache: true,
					Timeout: time.Minute, PriceFileSHA256: prices.SHA256})
				if err != nil {
					b.Fatal(err)
				}
				if c := s.Results.Counts; c.RecordsOK != s.Selected || c.Calls != calls {
					b.Fatalf("counts %+v, want %d records ok and %d calls", c, s.Selected, calls)
				}
				rate += float64(calls) / s.CallPhase.Seconds()
			}
			rate /= float64(b.N)
			b.ReportMetric(rate, "calls/s")
			b.ReportMetric(float64(calls)/ideal.Seconds(), "ideal-calls/s")
			b.ReportMetric(rate*ideal.Seconds()/float64(calls), "ideal-frac")
			b.ReportMetric(float64(calls), "calls")
			b.ReportMetric(float64(len(bench.Records)), "records")
			b.ReportMetric(maxRSSMiB(), "maxrss-MiB")
		})
	}
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		b.Fatalf("%s %q: want a positive integer", name, s)
	}
	return v
}

// maxRSSMiB is the peak resident set of this process so far (Linux
// reports KiB).
func maxRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}
