package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/results"
)

// The leaderboard shows each run's generation settings as its manifest
// records them (eval --temperature, --extra-body…), so that runs made
// with different settings are told apart; a run without a manifest shows
// N/A.
func TestLeaderboardShowsSampling(t *testing.T) {
	tmp := t.TempDir()
	dir := fixture(t, tmp, benchtest.Sample(), baselineRuns()...)
	random := filepath.Join(dir, "baseline_random", "oracle_none")
	name := filepath.Join(random, results.ManifestFile)
	mb := read(t, name)
	mb = bytes.Replace(mb, []byte(`"run_name"`),
		[]byte(`"sampling": {"temperature": 0.2, "max_tokens": 512, "seed": 7, "extra_body": {"top_k": 20, "stop": ["a|b"]}}, "run_name"`), 1)
	if err := os.WriteFile(name, mb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "baseline_oracle", "oracle_none", results.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "report")
	if _, err := Generate(Config{Inputs: []string{dir}, Out: out}); err != nil {
		t.Fatal(err)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, want := range []string{
		"| baseline_random | reference | 7 | 0 |",
		` | temperature=0.2 max_tokens=512 seed=7 stop=["a\|b"] top_k=20 |`,
		"| baseline_first | reference | 7 | 0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, "| baseline_oracle | reference | 7 | 0 |") && !strings.HasSuffix(l, " | N/A |"),
			strings.HasPrefix(l, "| baseline_first | reference | 7 | 0 |") && !strings.HasSuffix(l, " | none |"),
			strings.HasPrefix(l, "| baseline_random | reference | 7 | 0 |") && !strings.HasSuffix(l, ` | temperature=0.2 max_tokens=512 seed=7 stop=["a\|b"] top_k=20 |`):
			t.Errorf("leaderboard row %q", l)
		}
	}
}
