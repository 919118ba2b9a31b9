package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// The Sampling table of each oracle mode shows each run's generation
// settings as its manifest records them (eval --temperature,
// --extra-body…), so that runs made with different settings are told
// apart; a run without a manifest shows N/A. The leaderboard leaves them
// out, to fit a desktop window.
func TestSamplingTable(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dir := fixture(t, tmp, benchtest.Sample(), baselineRuns()...)
	random := filepath.Join(dir, "baseline_random", "oracle_none")
	name := filepath.Join(random, rundir.ManifestFile)
	mb := read(t, name)
	mb = bytes.Replace(mb, []byte(`"run_name"`),
		[]byte(`"sampling": {"temperature": 0.2, "max_tokens": 512, "seed": 7, "extra_body": {"top_k": 20, "stop": ["a|b"]}}, "run_name"`), 1)
	if err := os.WriteFile(name, mb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "baseline_oracle", "oracle_none", rundir.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out}); err != nil {
		t.Fatal(err)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	board := md[strings.Index(md, "### Leaderboard"):]
	board = board[:strings.Index(board[1:], "###")+1]
	if strings.Contains(board, "Sampling |") || strings.Contains(board, "temperature=") {
		t.Errorf("the leaderboard shows the sampling:\n%s", board)
	}
	for _, want := range []string{
		"### Sampling (oracle none)",
		"| baseline_oracle | N/A |",
		"| baseline_first | none |",
		`| baseline_random | temperature=0.2 max_tokens=512 seed=7 stop=["a\|b"] top_k=20 |`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}
