package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/appdb"
)

// TestInitPauseHelperProcess runs chexpercept (CHX_TEST_ARGS) with the
// database creation stopped at stage CHX_INIT_STAGE: it writes the
// temporary file's name on descriptor 3 and waits there for a signal.
// Stage "tokens" stops it as it is about to print the sign-in tokens.
func TestInitPauseHelperProcess(t *testing.T) {
	stage := os.Getenv("CHX_INIT_STAGE")
	if stage == "" {
		t.Skip("helper process for TestInitInterrupted")
	}
	ready := os.NewFile(3, "ready")
	tokensHook = func() {
		if stage == "tokens" {
			ready.WriteString("tokens\n")
			select {} // until a signal ends the process
		}
	}
	appdb.CreateHook = func(s, temp string) {
		if s == stage {
			ready.WriteString(temp + "\n")
			select {} // until a signal ends the process
		}
	}
	os.Args = append([]string{"chexpercept"}, strings.Split(os.Getenv("CHX_TEST_ARGS"), argSep)...)
	main()
	os.Exit(0)
}

// TestInitInterrupted: `read init` and `review init` killed (SIGKILL)
// while the database is made — its file empty, or holding the schema, or
// whole with its tokens being printed — leave nothing at the database's
// name, and the same command run again succeeds and leaves only the
// database; interrupted (SIGINT, SIGTERM), they remove what they made and
// exit 130 with one line saying so (and, at the tokens, that they are
// void).
func TestInitInterrupted(t *testing.T) {
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
				args := []string{"read", "init", "--benchmark", genBench, "--db", db, "--readers", "2"}
				if app == "review" {
					args = []string{"review", "init", "--source", man, "--review-db", db, "--reviewers", "2"}
				}
				code, stderr := stopInit(t, args, tc.stage, tc.sig)
				if tc.sig != syscall.SIGKILL {
					if code != 130 || !strings.Contains(stderr, "interrupted") {
						t.Errorf("after %v: exit %d, want 130 and a line saying so\n%s", tc.sig, code, stderr)
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
// (-1: killed) and stderr.
func stopInit(t *testing.T, args []string, stage string, sig syscall.Signal) (int, string) {
	t.Helper()
	return stopChild(t, "TestInitPauseHelperProcess", "CHX_INIT_STAGE="+stage, args, sig)
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
