package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// runCLITimeout is runCLI that kills the child after d and reports it.
func runCLITimeout(t *testing.T, d time.Duration, args ...string) (stderr string, code int, hung bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRunToolsHelperProcess$")
	cmd.Env = append(os.Environ(), "CHX_TEST_MAIN=1", "CHX_TEST_ARGS="+strings.Join(args, argSep))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return errb.String(), -1, true
	}
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", args, err)
	}
	return errb.String(), code, false
}

// TestFIFOsNeverHang: a FIFO in place of a file of a
// run directory makes eval (resuming), rescore and merge fail at once and
// report leave it out with a warning, each naming the file, instead of
// waiting for a writer for ever; nothing in the results folder changes.
func TestFIFOsNeverHang(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	base := t.TempDir()
	evalArgs := func(out string) []string {
		return []string{"eval", "--benchmark", genBench, "--out", out, "--oracle", "none", "--limit", "2", "--no-cache",
			"--provider", "baseline", "--model", "first"}
	}
	if _, stderr, code := runCLI(t, evalArgs(filepath.Join(base, "results"))...); code != 0 {
		t.Fatalf("eval: exit %d\n%s", code, stderr)
	}
	for _, tc := range []struct {
		name, fifo string // fifo: the run file replaced by a FIFO
		args       func(results, runDir string) []string
	}{
		{"report/results.jsonl", rundir.ResultsFile, func(r, _ string) []string {
			return []string{"report", r, "--out", filepath.Join(filepath.Dir(r), "rep")}
		}},
		{"report/all_results.json", rundir.AllResultsFile, func(r, d string) []string {
			os.Remove(filepath.Join(d, rundir.ResultsFile))
			return []string{"report", r, "--out", filepath.Join(filepath.Dir(r), "rep")}
		}},
		{"eval/results.jsonl", rundir.ResultsFile, func(r, _ string) []string { return evalArgs(r) }},
		{"eval/.lock", rundir.LockFile, func(r, _ string) []string { return evalArgs(r) }},
		{"rescore/results.jsonl", rundir.ResultsFile, func(_, d string) []string { return []string{"rescore", d, "--parse-mode", "strict"} }},
		{"rescore/.lock", rundir.LockFile, func(_, d string) []string { return []string{"rescore", d, "--parse-mode", "strict"} }},
		{"merge/.lock", rundir.LockFile, func(r, d string) []string {
			return []string{"merge", d, "--benchmark", genBench, "--out", filepath.Join(filepath.Dir(r), "merged")}
		}},
		{"report/manifest.json", rundir.ManifestFile, func(r, _ string) []string {
			return []string{"report", r, "--out", filepath.Join(filepath.Dir(r), "rep")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			res := filepath.Join(root, "results")
			outdirtest.CopyTree(t, filepath.Join(base, "results"), res)
			runDir := filepath.Join(res, "baseline_first", "oracle_none")
			args := tc.args(res, runDir)
			fifo := filepath.Join(runDir, tc.fifo)
			os.Remove(fifo)
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skip(err)
			}
			before := outdirtest.Snapshot(t, res)
			stderr, code, hung := runCLITimeout(t, 20*time.Second, args...)
			if hung {
				t.Fatalf("%v hung on a FIFO %s", args, tc.fifo)
			}
			// report leaves the file out with a warning naming it; the
			// others refuse the run.
			if code == 0 && args[0] != "report" || !strings.Contains(stderr, tc.fifo) {
				t.Errorf("%v: exit %d, want a failure (report: a warning) naming %s:\n%s", args, code, tc.fifo, stderr)
			}
			outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, res))
		})
	}
}

// TestPlanFIFORefused: a FIFO given as read init's --plan is refused at
// once, named, and no study database is made.
func TestPlanFIFORefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "plan.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	db := filepath.Join(dir, "study.sqlite")
	stderr, code, hung := runCLITimeout(t, 20*time.Second, "read", "init", "--benchmark", genBench, "--db", db, "--readers", "4", "--plan", fifo)
	if hung {
		t.Fatal("read init waited on the --plan FIFO")
	}
	if code != 2 || !strings.Contains(stderr, "--plan "+fifo+": not a regular file") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming the FIFO", code, stderr)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a study database was made: %v", err)
	}
}
