package report

import (
	"os"
	"path/filepath"
	"sync"
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

// shared holds the reports several tests read and none changes, each
// written once for the package by the first test that asks for it, under
// shared.dir, which TestMain removes.
var shared struct {
	mu                            sync.Mutex
	dir                           string
	findings, readers, vocabulary sharedReport
}

// sharedReport is one report written once.
type sharedReport struct {
	once sync.Once
	out  string
	ok   bool
}

// get returns the report's directory, written by write under a new
// directory the first time; every later caller fails when that write
// failed (the test that wrote it says why).
func (s *sharedReport) get(t *testing.T, name string, write func(t *testing.T, tmp string) string) string {
	t.Helper()
	s.once.Do(func() {
		shared.mu.Lock()
		if shared.dir == "" {
			dir, err := os.MkdirTemp("", "chexpercept-report-test-")
			if err != nil {
				shared.mu.Unlock()
				t.Fatal(err)
			}
			shared.dir = dir
		}
		shared.mu.Unlock()
		tmp := filepath.Join(shared.dir, name)
		if err := os.Mkdir(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		s.out = write(t, tmp)
		s.ok = true
	})
	if !s.ok {
		t.Fatalf("the shared %s report could not be written (the test that wrote it says why)", name)
	}
	return s.out
}

// TestMain runs the tests, stops chrome and removes the shared reports.
func TestMain(m *testing.M) { chrome.Main(m, &shared.dir) }
