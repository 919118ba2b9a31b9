package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
)

// TestCommitPointHelperProcess runs one scenario (CHX_COMMIT_CASE) of a
// signal that comes while runJob runs a work function writing
// CHX_COMMIT_DIR/out.txt with a commit point, and exits 0 when runJob
// returned nil, else with its exit status. The signal is sent by the
// process to itself at a point the scenario names; the job's "stopped"
// hook and channels order the steps, no sleep.
func TestCommitPointHelperProcess(t *testing.T) {
	t.Parallel()
	scenario := os.Getenv("CHX_COMMIT_CASE")
	if scenario == "" {
		t.Skip("helper process for TestInterruptAroundCommitPoint")
	}
	out := filepath.Join(os.Getenv("CHX_COMMIT_DIR"), "out.txt")
	signal := func() {
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			panic(err)
		}
	}
	stopped := make(chan struct{})
	hook := func(point, _ string) {
		if point == "stopped" {
			close(stopped)
		}
	}
	commitErr := make(chan error, 1)
	work := func(j *job.Job) error {
		switch scenario {
		case "after the commit point":
			// The work commits, then the signal comes, and only once
			// the job has taken it does the work write its last file
			// and return.
			if err := j.Commit(); err != nil {
				return err
			}
			signal()
			<-stopped
		case "before the commit point":
			// The signal comes and stops the job before the work
			// reaches its commit point, which it tries only then.
			signal()
			<-j.Context().Done()
			<-stopped
			err := j.Commit()
			commitErr <- err
			if err != nil {
				return err
			}
		}
		return atomicfile.WriteFile(j, out, []byte("whole\n"))
	}
	err := runJob(context.Background(), job.Options{Hook: hook}, "test", work)
	code := 0
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		code = 2
	}
	if scenario == "before the commit point" {
		if err := <-commitErr; !errors.Is(err, job.ErrStopped) {
			fmt.Fprintf(os.Stderr, "the commit point was passed after the interruption: %v\n", err)
			code = 3
		}
	}
	os.Exit(code)
}

// TestInterruptAroundCommitPoint: a signal that comes after the work has
// passed its commit point does not stop it: the command ends as it would
// have (exit 0, its output whole, no "interrupted" line), so the rerun it
// would otherwise recommend is never needed. A signal that comes before
// stops it (exit 130, one line) and closes the commit point, so the output
// stays unfinished for the rerun to redo.
func TestInterruptAroundCommitPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	tests := []struct {
		scenario    string
		code        int
		interrupted bool
		written     bool
	}{
		{"after the commit point", 0, false, true},
		{"before the commit point", 130, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestCommitPointHelperProcess$")
			cmd.Env = append(os.Environ(), "CHX_TEST_MAIN=1", "CHX_COMMIT_CASE="+tc.scenario, "CHX_COMMIT_DIR="+dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if got := strings.Contains(stderr.String(), "interrupted"); got != tc.interrupted {
				t.Errorf("says interrupted: %v, want %v; stderr:\n%s", got, tc.interrupted, stderr.String())
			}
			_, err = os.Stat(filepath.Join(dir, "out.txt"))
			if (err == nil) != tc.written {
				t.Errorf("output written: %v, want %v", err == nil, tc.written)
			}
			if tmp := temps(t, dir); len(tmp) > 0 {
				t.Errorf("left %q", tmp)
			}
		})
	}
}
