package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
)

func TestReportCommand(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	b, _ := sampleBench.get(t)
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
	// A trailing separator on --out must not show up doubled in the path printed.
	stdout, stderr, err := runCommand(t, cmd, results, filepath.Join(tmp, "nope"), "--out", out+string(filepath.Separator), "--bootstrap", "100", "--compare", "baseline_oracle,baseline_first")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if want := "report: 2 run(s) (2 scored), 1 warning(s); wrote " + filepath.Join(out, "index.html") + "\n"; stdout != want || !strings.Contains(stderr, "warning: ") {
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
		{[]string{results, "--out", out, "--bootstrap", "10", "--domains", filepath.Join(tmp, "nope.yaml")}, "domains file"},
		{[]string{results, "--out", out, "--bootstrap", "10", "--models", filepath.Join(tmp, "nope-models.yaml")}, "nope-models.yaml"},
	} {
		_, _, err := runCommand(t, findCommand(t, "report"), tc.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want exit 2 with %q", tc.args, err, tc.want)
		}
	}
}

// An interrupted run is reported, with a warning on stderr that gives
// its numbers; a complete one gives none.
func TestReportCommandIncompleteRun(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	b, _ := sampleBench.get(t)
	for _, tc := range []struct {
		name     string
		finished int
		stdout   string
		stderr   string
	}{
		{"complete", 0, "report: 1 run(s) (1 scored), 0 warning(s)", ""},
		{"interrupted", 3, "report: 1 run(s) (1 scored), 1 warning(s)",
			"warning: run baseline_oracle/oracle_none: 3 of 7 selected records have results (run incomplete or still running); its figures cover only those 3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := filepath.Join(tmp, tc.name)
			r := &analysistest.Run{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle, Selected: 7, Finished: tc.finished}
			if _, err := r.Write(results, b); err != nil {
				t.Fatal(err)
			}
			cmd := findCommand(t, "report")
			stdout, stderr, err := runCommand(t, cmd, results, "--out", filepath.Join(tmp, tc.name+"-report"), "--bootstrap", "20", "--error-policy", "exclude")
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if !strings.HasPrefix(stdout, tc.stdout) || stderr != tc.stderr {
				t.Errorf("stdout %q stderr %q", stdout, stderr)
			}
		})
	}
}

// TestRunNameKeepsRunsApart: two runs of one model that differ only in a
// setting share a run name, so a report over both folders leaves the
// second out (and says how to avoid it); with --run-name (checked like
// every name, recorded in the manifest) both are reported.
func TestRunNameKeepsRunsApart(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	bench := "../../internal/benchmark/testdata/sample"
	eval := func(out string, extra ...string) {
		args := append([]string{"eval", "--benchmark", bench, "--provider", "baseline", "--model", "random", "--out", out, "--cache-dir", filepath.Join(tmp, "cache")}, extra...)
		if _, stderr, code := runCLIEnv(t, nil, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	a, b, c := filepath.Join(tmp, "results"), filepath.Join(tmp, "results_seed2"), filepath.Join(tmp, "results_same")
	eval(a)
	eval(b, "--policy-seed", "2", "--run-name", "baseline_random_seed2")
	eval(c, "--policy-seed", "2")
	man, err := os.ReadFile(filepath.Join(b, "baseline_random_seed2", "oracle_implicit", "manifest.json"))
	if err != nil || !strings.Contains(string(man), `"run_name": "baseline_random_seed2"`) {
		t.Errorf("manifest does not record the run name (%v):\n%.400s", err, man)
	}
	for _, tc := range []struct {
		name    string
		in      string
		runs    []string
		leftOut bool
	}{
		{"named apart", b, []string{"baseline_random", "baseline_random_seed2"}, false},
		{"same name", c, []string{"baseline_random"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "report")
			stdout, stderr, code := runCLIEnv(t, nil, "report", a, tc.in, "--out", out, "--bootstrap", "10")
			if code != 0 {
				t.Fatalf("report: exit %d\n%s%s", code, stdout, stderr)
			}
			sum, err := os.ReadFile(filepath.Join(out, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("report: %d run(s)", len(tc.runs)); !strings.HasPrefix(stdout, want) {
				t.Errorf("stdout %q, want %q…", stdout, want)
			}
			for _, r := range tc.runs {
				if !strings.Contains(string(sum), `"`+r+`"`) {
					t.Errorf("summary.json does not name run %s", r)
				}
			}
			if got := strings.Contains(stderr, "left out") && strings.Contains(stderr, "--run-name"); got != tc.leftOut {
				t.Errorf("a run left out with a --run-name hint: %v, want %v\n%s", got, tc.leftOut, stderr)
			}
		})
	}
	for _, bad := range []string{"../x", "a b", ".hidden", ""} {
		_, stderr, code := runCLIEnv(t, nil, "eval", "--benchmark", bench, "--provider", "baseline", "--model", "random",
			"--out", filepath.Join(tmp, "bad"), "--run-name", bad)
		if code != 2 || !strings.Contains(stderr, "--run-name") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("--run-name %q: exit %d\n%s", bad, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(tmp, "bad")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("--run-name %q: the results folder was created", bad)
		}
	}
}
