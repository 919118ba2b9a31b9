package main

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
)

// TestRenamePauseHelperProcess runs chexpercept (CHX_TEST_ARGS) with the
// atomic write of the file named CHX_PAUSE_RENAME stopped just before its
// rename: it writes the name on descriptor 3 and waits there until the
// command's signal handler has stopped the writes (atomicfile.Stop).
func TestRenamePauseHelperProcess(t *testing.T) {
	base := os.Getenv("CHX_PAUSE_RENAME")
	if base == "" {
		t.Skip("helper process for TestWritersInterrupted")
	}
	ready := os.NewFile(3, "ready")
	// The write goes on only once the command's handler has taken the
	// signal and stopped its writes (or let them finish, past the commit
	// point): going on at the signal itself would race the handler.
	stopped := make(chan struct{})
	var once sync.Once
	atomicfile.StopHook = func() { once.Do(func() { close(stopped) }) }
	atomicfile.RenameHook = func(name string) {
		if filepath.Base(name) == base {
			ready.WriteString(name + "\n")
			<-stopped
		}
	}
	os.Args = append([]string{"chexpercept"}, strings.Split(os.Getenv("CHX_TEST_ARGS"), argSep)...)
	main()
	os.Exit(0)
}

// TestWritersInterrupted: every command that writes files catches SIGINT
// and SIGTERM that come while a file is being written: the temporary
// files are removed, one line says it was interrupted, the exit status is
// 130, and the same command run again completes, leaving no temporary
// file. A signal that comes while the last file of a review export
// --reviews is written, past its commit point, lets the export end as
// without it (exit 0): its rerun would refuse the file without --force.
func TestWritersInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	man := reviewManifest(t)
	dbDir := t.TempDir()
	db := filepath.Join(dbDir, "review.db")
	if _, stderr, code := runCLI(t, "review", "init", "--source", man, "--review-db", db, "--reviewers", "1"); code != 0 {
		t.Fatalf("review init: exit %d\n%s", code, stderr)
	}
	tests := []struct {
		name  string
		args  func(out string) []string
		pause string // the file whose rename the signal comes before
		sig   syscall.Signal
		code  int // 130, or 0 past the commit point
	}{
		{"review pack", func(out string) []string {
			return []string{"review", "pack", "--source", man, "--out", out, "--reviewers", "2", "--workers", "1"}
		}, "review_sheet.csv", syscall.SIGINT, 130},
		{"review export --csv", func(out string) []string {
			return []string{"review", "export", "--review-db", db, "--csv", out}
		}, "negative.csv", syscall.SIGINT, 130},
		{"review export --reviews", func(out string) []string {
			return []string{"review", "export", "--review-db", db, "--reviews", filepath.Join(out, "r.jsonl")}
		}, "r.jsonl", syscall.SIGTERM, 0},
		{"mrmc", func(out string) []string {
			return []string{"mrmc", "--scores", vanDykeScores, "--fom", "auc", "--out", out}
		}, "mrmc.json", syscall.SIGINT, 130},
		{"phantom", func(out string) []string {
			return []string{"phantom", "--out", out, "--cases-per-lesion", "1", "--phantom-seed", "1", "--workers", "1"}
		}, "manifest.jsonl", syscall.SIGTERM, 130},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			if strings.Contains(tc.name, "--reviews") {
				if err := os.Mkdir(out, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			args := tc.args(out)
			code, stderr := stopAtRename(t, args, tc.pause, tc.sig)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			switch {
			case tc.code == 130 && (code != 130 || len(lines) != 1 || !strings.Contains(lines[0], "interrupted")):
				t.Errorf("after %v: exit %d, want 130 and one line saying so; stderr:\n%s", tc.sig, code, stderr)
			case tc.code == 0 && (code != 0 || strings.Contains(stderr, "interrupted") || !outdirHasFile(out, tc.pause)):
				t.Errorf("after %v past the commit point: exit %d, want 0 and %s written, not a word of an interruption; stderr:\n%s", tc.sig, code, tc.pause, stderr)
			}
			if tmp := temps(t, out); len(tmp) > 0 {
				t.Errorf("the interrupted command left %q", tmp)
			}
			if tc.code != 0 {
				if _, stderr, code := runCLI(t, args...); code != 0 {
					t.Fatalf("plain rerun: exit %d\n%s", code, stderr)
				}
			}
			if tmp := temps(t, out); len(tmp) > 0 {
				t.Errorf("the rerun left %q", tmp)
			}
		})
	}
}

// stopAtRename runs chexpercept args in a child process stopped before
// the rename of the file named base, sends it sig and returns its exit
// status (-1: ended by the signal) and stderr.
func stopAtRename(t *testing.T, args []string, base string, sig syscall.Signal) (int, string) {
	t.Helper()
	return stopChild(t, "TestRenamePauseHelperProcess", "CHX_PAUSE_RENAME="+base, args, sig)
}

// stopChild runs chexpercept args in a child process, the test function
// named child with the variable env set, which writes a line on
// descriptor 3 once it has stopped where the test wants the signal; then
// it sends the child sig and returns its exit status (-1: ended by the
// signal) and stderr.
func stopChild(t *testing.T, child, env string, args []string, sig syscall.Signal) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$")
	cmd.Env = append(os.Environ(), "CHX_TEST_MAIN=1", env, "CHX_TEST_ARGS="+strings.Join(args, argSep))
	cmd.ExtraFiles = []*os.File{w}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		cmd.Wait()
		t.Fatalf("%v did not reach the point to stop (%s): %v\n%s", args[:2], env, err, stderr.String())
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// temps lists the "*.tmp-*" files below root.
func temps(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(d.Name(), ".tmp-") {
			found = append(found, p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return found
}

// outdirHasFile reports whether a regular file named base is in dir.
func outdirHasFile(dir, base string) bool {
	fi, err := os.Lstat(filepath.Join(dir, base))
	return err == nil && fi.Mode().IsRegular()
}
