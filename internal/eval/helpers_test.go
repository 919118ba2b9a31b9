package eval

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// sampleBench is the hand-made sample benchmark of package benchmark's
// tests.
const sampleBench = "../benchmark/testdata/sample"

var (
	genOnce sync.Once
	genDir  string
	genErr  error
)

// generatedBench writes (once per test binary) a valid synthetic benchmark
// of 42 records (benchtest.Full(2)) with flat 1024² PNGs.
func generatedBench(t testing.TB) string {
	t.Helper()
	genOnce.Do(func() {
		genDir, genErr = os.MkdirTemp("", "chx-eval-bench-")
		if genErr == nil {
			genErr = benchtest.Write(genDir, benchtest.Full(2), false)
		}
	})
	if genErr != nil {
		t.Fatal(genErr)
	}
	return genDir
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	if os.Getenv(serverEnv) != "" {
		os.Exit(serverMain())
	}
	// The image verification memo goes to the default cache directory
	// unless a test names one: keep it out of the user's home.
	cache, err := os.MkdirTemp("", "chx-eval-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	if genDir != "" {
		os.RemoveAll(genDir)
	}
	os.RemoveAll(cache)
	os.Exit(code)
}

// model resolves a model the way the CLI does.
func model(t testing.TB, prov, name string) runmodel.Model {
	t.Helper()
	reg, err := registry.Default()
	if err != nil {
		t.Fatal(err)
	}
	prices, err := registry.LoadPrices("")
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := ResolveModel(reg, prices, prov, name, false)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// baseOptions are quick settings for tests: short backoff, no cache.
func baseOptions(bench, out string, m runmodel.Model) Options {
	return Options{BenchDir: bench, OutDir: out, Model: m, Concurrency: 8, NoCache: true,
		RetryBase: 5 * time.Millisecond, RetryCap: 50 * time.Millisecond, Timeout: 5 * time.Second}
}

func run(t testing.TB, o Options) *Summary {
	t.Helper()
	s, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startServer serves a baseline policy over HTTP.
func startServer(t testing.TB, cfg fakemodel.ServerConfig) (string, *fakemodel.Server) {
	t.Helper()
	srv, err := fakemodel.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return hs.URL + "/v1", srv
}

// stripTiming drops the fields that legitimately differ between runs
// (§9.5 equality) and returns the lines sorted by key_id.
func stripTiming(t testing.TB, path string) []string {
	t.Helper()
	recs, err := rundir.ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range results.Latest(recs) {
		r.StartedAt, r.FinishedAt = "", ""
		for i := range r.Turns {
			r.Turns[i].LatencyMS, r.Turns[i].TotalMS, r.Turns[i].Attempts = 0, 0, 0
		}
		b, err := r.MarshalLine()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func countLines(t testing.TB, name string) int {
	return bytes.Count(readFile(t, name), []byte("\n"))
}

// expectedCalls is the number of questions of the benchmark's records.
func expectedCalls(t testing.TB, dir string) int {
	b, err := benchdir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range b.Records {
		n += r.Questions()
	}
	return n
}
