package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
)

// TestRunJobHelperProcess is the child of TestRunJob: it starts an atomic
// write into $CHX_INTERRUPT_DIR inside runJob, says "ready" on stdout and
// then either waits for the job's context to end and writes "returned"
// before it returns (CHX_INTERRUPT_WORK=returns), or computes forever
// without looking at it (=ignores). It says "stopped" once the job has
// taken the first signal.
func TestRunJobHelperProcess(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("CHX_INTERRUPT_DIR")
	if dir == "" {
		t.Skip("helper process for TestRunJob")
	}
	hook := func(point, _ string) {
		if point == "stopped" {
			os.Stdout.WriteString("stopped\n")
		}
	}
	err := runJob(context.Background(), job.Options{Hook: hook}, "test", func(j *job.Job) error {
		f, err := atomicfile.Create(j, filepath.Join(dir, "plot.png"))
		if err != nil {
			return err
		}
		if _, err := f.WriteString("half a plot"); err != nil {
			return err
		}
		os.Stdout.WriteString("ready\n")
		if os.Getenv("CHX_INTERRUPT_WORK") == "ignores" {
			select {} // a long computation that never looks at the context
		}
		<-j.Context().Done()
		if err := os.WriteFile(filepath.Join(dir, "returned"), nil, 0o644); err != nil {
			return err
		}
		return j.Context().Err()
	})
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	os.Exit(3)
}

// TestRunJob: SIGINT or SIGTERM during a command's work ends its job's
// context and waits for the work to return: then the process ends with
// status 130, one line saying so, and the temporary files of the writes
// in flight removed, which no rerun would remove. A work that never looks
// at the context is waited for until a second signal (or the grace), and
// the line says it was given up.
func TestRunJob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		work string
		sig  syscall.Signal
	}{
		{"returns", syscall.SIGINT},
		{"returns", syscall.SIGTERM},
		{"ignores", syscall.SIGINT},
		{"ignores", syscall.SIGTERM},
	} {
		t.Run(tc.work+"/"+tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestRunJobHelperProcess$")
			cmd.Env = append(os.Environ(), "CHX_INTERRUPT_DIR="+dir, "CHX_INTERRUPT_WORK="+tc.work)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewReader(out)
			if line, err := lines.ReadString('\n'); err != nil || line != "ready\n" {
				cmd.Process.Kill()
				t.Fatalf("child said %q (%v)", line, err)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Fatalf("the write in flight left %d entries, want its temporary file", len(ents))
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if line, err := lines.ReadString('\n'); err != nil || line != "stopped\n" {
				cmd.Process.Kill()
				t.Fatalf("child said %q (%v), want stopped", line, err)
			}
			if tc.work == "ignores" {
				// The first signal did not end the process: a second
				// gives the work up at once.
				if err := cmd.Process.Signal(tc.sig); err != nil {
					t.Fatal(err)
				}
			}
			err = cmd.Wait()
			var xe *exec.ExitError
			if !errors.As(err, &xe) || xe.ExitCode() != 130 {
				t.Errorf("exit %v, want status 130", err)
			}
			msg := withoutStoppingNotice(stderr.String())
			if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "interrupted") || strings.Contains(msg, "given up") != (tc.work == "ignores") {
				t.Errorf("stderr %q, want one line saying it was interrupted (given up: %v)", msg, tc.work == "ignores")
			}
			var names []string
			ents, _ = os.ReadDir(dir)
			for _, e := range ents {
				names = append(names, e.Name())
			}
			want := ""
			if tc.work == "returns" {
				want = "returned" // the work ran to its return before the process ended
			}
			if got := strings.Join(names, " "); got != want {
				t.Errorf("left %q, want %q", got, want)
			}
		})
	}
}
