package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
)

func TestReportCommand(t *testing.T) {
	tmp := t.TempDir()
	b, err := analysistest.WriteBench(filepath.Join(tmp, "bench"), benchtest.Sample())
	if err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(tmp, "results")
	for _, r := range []*analysistest.Run{
		{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle},
		{Provider: "baseline", Label: "first", Oracle: "none", Policy: analysistest.First},
	} {
		if _, err := r.Write(results, b); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(tmp, "report")
	cmd := findCommand(t, "report")
	stdout, stderr, err := runCommand(t, cmd, results, filepath.Join(tmp, "nope"), "--out", out, "--bootstrap", "100", "--compare", "baseline_oracle,baseline_first")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "report: 2 run(s) (2 scored), 1 warning(s)") || !strings.Contains(stderr, "warning: ") {
		t.Errorf("stdout %q stderr %q", stdout, stderr)
	}
	for _, f := range []string{"index.html", "report.md", "summary.json", "ext_pairwise.csv", "all_models_oracle_none/all_models_summary.csv", "plot_stage_accuracy_oracle_none.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if p, _ := os.ReadFile(filepath.Join(out, "ext_pairwise.csv")); strings.Count(string(p), "\n") < 10 {
		t.Errorf("no comparisons written:\n%s", p)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{results, "--out", out, "--compare", "a"}, "want two run names"},
		{[]string{results, "--out", out, "--compare", "", "--error-policy", "maybe"}, "--compare"},
		{[]string{results, "--out", out, "--bootstrap", "0", "--compare", "a,b"}, "--bootstrap 0"},
		{[]string{filepath.Join(tmp, "nope"), "--out", out, "--bootstrap", "10"}, "no usable run directory"},
	} {
		// Flags persist on the command object between Execute calls.
		cmd.Flags().Lookup("compare").Value.(pflag.SliceValue).Replace(nil)
		cmd.Flags().Set("error-policy", "exclude")
		_, _, err := runCommand(t, cmd, tc.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want exit 2 with %q", tc.args, err, tc.want)
		}
	}
}
