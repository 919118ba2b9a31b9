package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
)

// TestReportRefusesForeignDirectory: a report into a directory it did not
// write (a run directory, someone's folder, a file) fails with a one-line
// error naming it and changes no byte or modification time there.
func TestReportRefusesForeignDirectory(t *testing.T) {
	tmp := t.TempDir()
	results := fixture(t, tmp, benchtest.Sample(), &analysistest.Run{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle})
	runDir := filepath.Join(results, "baseline_oracle", "oracle_none")
	mine := filepath.Join(tmp, "mine")
	if err := os.MkdirAll(filepath.Join(mine, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, "index.html"), []byte("my home page"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ out, want string }{
		{runDir, `it holds "all_results.json"`},
		{mine, `it holds "index.html" (and 1 more entry)`},
		{file, "is not a directory"},
	} {
		before := outdirtest.Snapshot(t, tmp)
		_, err := Generate(Config{Inputs: []string{results}, Out: tc.out, Analysis: analysis.Options{Bootstrap: 20}})
		var r *outdir.Refused
		if !errors.As(err, &r) || !strings.Contains(err.Error(), tc.out) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want a one-line refusal: %s", tc.out, err, tc.want)
		}
		outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, tmp))
	}
}

// TestReportRewritesOwnDirectory: a report reruns into its own earlier
// output, marked or (written before the marker existed) not.
func TestReportRewritesOwnDirectory(t *testing.T) {
	tmp, out := sampleReport(t, Config{})
	if _, err := os.Stat(filepath.Join(out, MarkerName)); err != nil {
		t.Fatalf("no marker: %v", err)
	}
	first := read(t, filepath.Join(out, "report.md"))
	cfg := Config{Inputs: []string{filepath.Join(tmp, "results")}, Out: out, Analysis: analysis.Options{Bootstrap: 200}, Report: Options{Version: "test"}}
	if _, err := Generate(cfg); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if err := os.Remove(filepath.Join(out, MarkerName)); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(cfg); err != nil {
		t.Fatalf("rerun into a report without the marker: %v", err)
	}
	if string(read(t, filepath.Join(out, "report.md"))) != string(first) {
		t.Error("report.md differs between runs")
	}
}
