package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/job"
)

// TestInitPauseHelperProcess runs chexpercept (CHX_TEST_ARGS) with the
// database creation stopped at stage CHX_INIT_STAGE ("created": the
// temporary file exists, empty; "schema": it holds the schema): it writes
// the temporary file's name on descriptor 3 and waits there until the
// command's job is stopped by a signal (or the process is killed), then
// lets the command go on. Stage "tokens" stops it as it is about to print
// the sign-in tokens.
func TestInitPauseHelperProcess(t *testing.T) {
	stage := os.Getenv("CHX_INIT_STAGE")
	if stage == "" {
		t.Skip("helper process for TestInitInterrupted")
	}
	ready := os.NewFile(3, "ready")
	stopped := make(chan struct{})
	var once sync.Once
	hook := func(point, detail string) {
		switch point {
		case "stopped":
			once.Do(func() { close(stopped) })
		case stage, "db-" + stage:
			ready.WriteString(detail + "\n")
			<-stopped
		}
	}
	os.Args = append([]string{"chexpercept"}, strings.Split(os.Getenv("CHX_TEST_ARGS"), argSep)...)
	execute(newRootCmd(job.Options{Hook: hook}))
	os.Exit(0)
}

// TestInitInterrupted: `read init` and `review init` killed (SIGKILL)
// while the database is made — its file empty, or holding the schema, or
// whole with its tokens being printed — leave nothing at the database's
// name, and the same command run again succeeds and leaves only the
// database; interrupted (SIGINT, SIGTERM), they wait for their work to
// stop, remove what they made, print no token, and exit 130 with one
// line saying so (and, at the tokens, that they are void).
func TestInitInterrupted(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	man := reviewManifest(t)
	for _, app := range []string{"read", "review"} {
		for _, tc := range []struct {
			stage string
			sig   syscall.Signal
		}{
			{"created", syscall.SIGKILL},
			{"schema", syscall.SIGKILL},
			{"schema", syscall.SIGINT},
			{"created", syscall.SIGTERM},
			{"tokens", syscall.SIGKILL},
			{"tokens", syscall.SIGINT},
			{"tokens", syscall.SIGTERM},
		} {
			t.Run(app+"/"+tc.stage+"/"+tc.sig.String(), func(t *testing.T) {
				dir := t.TempDir()
				db := filepath.Join(dir, "study.sqlite")
				args := []string{"read", "init", "--benchmark", genBench, "--db", db, "--readers", "4"}
				if app == "review" {
					args = []string{"review", "init", "--source", man, "--review-db", db, "--reviewers", "2"}
				}
				code, stdout, stderr := stopInit(t, args, tc.stage, tc.sig)
				if tc.sig != syscall.SIGKILL {
					if lines := strings.Split(withoutStoppingNotice(stderr), "\n"); code != 130 || len(lines) != 1 || !strings.Contains(stderr, "interrupted;") {
						t.Errorf("after %v: exit %d, want 130 and one line saying so\n%s", tc.sig, code, stderr)
					}
					if strings.Contains(stderr, "given up") {
						t.Errorf("after %v the work was given up, not waited for\n%s", tc.sig, stderr)
					}
					if strings.Contains(stdout, "admin ") {
						t.Errorf("after %v the tokens were printed:\n%s", tc.sig, stdout)
					}
					if tc.stage == "tokens" && !strings.Contains(stderr, "tokens printed above, if any, are void") {
						t.Errorf("after %v at the tokens: stderr %q does not say the tokens are void", tc.sig, stderr)
					}
					if names := listDir(t, dir); len(names) != 0 {
						t.Errorf("after %v the folder holds %q, want nothing", tc.sig, names)
					}
				}
				if _, err := os.Lstat(db); err == nil {
					t.Errorf("the stopped init left %s", filepath.Base(db))
				}
				_, stderr, code = runCLI(t, args...)
				if code != 0 {
					t.Fatalf("rerun: exit %d\n%s", code, stderr)
				}
				if names := listDir(t, dir); len(names) != 1 || names[0] != "study.sqlite" {
					t.Errorf("after the rerun the folder holds %q, want study.sqlite only", names)
				}
			})
		}
	}
}

// stopInit runs chexpercept args in a child process stopped at the
// database creation's stage, sends it sig and returns its exit status
// (-1: killed), stdout and stderr.
func stopInit(t *testing.T, args []string, stage string, sig syscall.Signal) (int, string, string) {
	t.Helper()
	return stopChildOut(t, "TestInitPauseHelperProcess", "CHX_INIT_STAGE="+stage, args, sig)
}

// listDir lists the names in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestInitCollideHelperProcess runs chexpercept (CHX_TEST_ARGS) with a
// file written at CHX_INIT_COLLIDE just before the sign-in tokens are
// printed: the database cannot take its name after they are.
func TestInitCollideHelperProcess(t *testing.T) {
	path := os.Getenv("CHX_INIT_COLLIDE")
	if path == "" {
		t.Skip("helper process for TestInitTokensVoid")
	}
	hook := func(point, _ string) {
		if point == "tokens" {
			if err := os.WriteFile(path, []byte("not ours\n"), 0o600); err != nil {
				panic(err)
			}
		}
	}
	os.Args = append([]string{"chexpercept"}, strings.Split(os.Getenv("CHX_TEST_ARGS"), argSep)...)
	execute(newRootCmd(job.Options{Hook: hook}))
	os.Exit(0)
}

// TestInitTokensVoid: an init whose database cannot be published after
// its tokens were printed (a file appeared at its name) exits 2 with one
// line saying the tokens printed are void, and keeps the file it did not
// make.
func TestInitTokensVoid(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	man := reviewManifest(t)
	for _, app := range []string{"read", "review"} {
		t.Run(app, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "study.sqlite")
			args := []string{"read", "init", "--benchmark", genBench, "--db", db, "--readers", "4"}
			if app == "review" {
				args = []string{"review", "init", "--source", man, "--review-db", db, "--reviewers", "2"}
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestInitCollideHelperProcess$")
			cmd.Env = append(os.Environ(), "CHX_TEST_MAIN=1", "CHX_INIT_COLLIDE="+db, "CHX_TEST_ARGS="+strings.Join(args, argSep))
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if code := cmd.ProcessState.ExitCode(); code != 2 || len(lines) != 1 ||
				!strings.Contains(lines[0], "already exists") || !strings.HasSuffix(lines[0], "the sign-in tokens printed above are void (run init again)") {
				t.Errorf("exit %d, stderr %q; want 2 and one line saying the tokens are void", code, stderr.String())
			}
			if !strings.Contains(stdout.String(), "admin ") {
				t.Errorf("stdout %q: the tokens were not printed", stdout.String())
			}
			if b, err := os.ReadFile(db); err != nil || string(b) != "not ours\n" {
				t.Errorf("the file that appeared at the database's name: %q, %v", b, err)
			}
		})
	}
}
