package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
)

// TestUntilInterruptedHelperProcess is the child of TestUntilInterrupted:
// it starts an atomic write into $CHX_INTERRUPT_DIR, says "ready" and
// waits inside untilInterrupted for a signal.
func TestUntilInterruptedHelperProcess(t *testing.T) {
	dir := os.Getenv("CHX_INTERRUPT_DIR")
	if dir == "" {
		t.Skip("helper process for TestUntilInterrupted")
	}
	err := untilInterrupted(context.Background(), "test", func(ctx context.Context) error {
		f, err := atomicfile.Create(filepath.Join(dir, "plot.png"))
		if err != nil {
			return err
		}
		if _, err := f.WriteString("half a plot"); err != nil {
			return err
		}
		os.Stdout.WriteString("ready\n")
		select {} // a long computation that never looks at ctx
	})
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	os.Exit(3)
}

// TestUntilInterrupted: SIGINT or SIGTERM during a command's work ends
// the process with status 130 and removes the temporary files of the
// writes in flight, which no rerun would remove.
func TestUntilInterrupted(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestUntilInterruptedHelperProcess$")
			cmd.Env = append(os.Environ(), "CHX_INTERRUPT_DIR="+dir)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
				cmd.Process.Kill()
				t.Fatalf("child said %q (%v)", line, err)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Fatalf("the write in flight left %d entries, want its temporary file", len(ents))
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			var xe *exec.ExitError
			if !errors.As(err, &xe) || xe.ExitCode() != 130 {
				t.Errorf("exit %v, want status 130", err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
		})
	}
}
