package eval

import (
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

// TestSameBenchmark: a run resumes only on the benchmark identity it was
// started on; a run whose manifest records none (written before
// identities were recorded) resumes on the chexpercept.json hash, which
// Differences compares.
func TestSameBenchmark(t *testing.T) {
	sums := &benchmark.Identity{File: "SHA256SUMS", SHA256: strings.Repeat("3b", 32)}
	rewritten := &benchmark.Identity{File: "SHA256SUMS", SHA256: strings.Repeat("00", 32)}
	json := &benchmark.Identity{File: benchmark.JSONName, SHA256: strings.Repeat("78", 32)}
	man := func(id *benchmark.Identity) *results.Manifest {
		return &results.Manifest{Dataset: results.Dataset{Path: "/data/bench", Identity: id}}
	}
	for _, tc := range []struct {
		name     string
		old, cur *benchmark.Identity
		want     string // "" : resumed
	}{
		{"same identity", sums, sums, ""},
		{"SHA256SUMS gone", sums, json, "was started on benchmark SHA256SUMS 3b3b3b3b3b3b…, but /data/bench is chexpercept.json 787878787878… now: refusing to mix two benchmarks in one run"},
		{"SHA256SUMS rewritten", sums, rewritten, "but /data/bench is SHA256SUMS 000000000000… now"},
		{"SHA256SUMS added", json, sums, "was started on benchmark chexpercept.json 787878787878…"},
		{"started before identities", nil, sums, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sameBenchmark("results/r/oracle_none", man(tc.old), man(tc.cur))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
				t.Errorf("err %v, want one line with %q", err, tc.want)
			}
		})
	}
}
