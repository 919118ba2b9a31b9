package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runCLIStdout runs chexpercept with args in a child process whose
// standard output is stdout, and returns its stderr and exit status.
func runCLIStdout(t *testing.T, stdout *os.File, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunToolsHelperProcess$")
	cmd.Env = append(os.Environ(), "CHX_TEST_MAIN=1", "CHX_TEST_ARGS="+strings.Join(args, argSep))
	var errb strings.Builder
	cmd.Stdout, cmd.Stderr = stdout, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return errb.String(), cmd.ProcessState.ExitCode()
}

// devFull opens /dev/full, where every write fails with ENOSPC.
func devFull(t *testing.T) *os.File {
	t.Helper()
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// closedPipe returns the write end of a pipe whose read end is closed:
// a write to it fails with EPIPE (and raises SIGPIPE).
func closedPipe(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	t.Cleanup(func() { w.Close() })
	return w
}

// wantStdoutFailure fails the test unless a command whose stdout could
// not be written exited 2 and said why in one line.
func wantStdoutFailure(t *testing.T, args []string, stderr string, code int) {
	t.Helper()
	const reason = ": no space left on device"
	last := stderr[strings.LastIndex(strings.TrimSuffix(stderr, "\n"), "\n")+1:]
	if code != 2 || !strings.HasPrefix(last, "chexpercept: ") || !strings.Contains(last, reason) {
		t.Errorf("%q with stdout on /dev/full: exit %d, stderr %q; want 2 and a last line saying %q", args, code, stderr, reason)
	}
}

// TestStdoutWriteFailure: a command that succeeds but cannot write its
// summary on standard output (here a full disk) exits 2 with one line
// saying so, not 0. An init whose tokens could not be printed removes the
// database no one could sign in to, so that its rerun is not refused.
func TestStdoutWriteFailure(t *testing.T) {
	t.Parallel()
	full := devFull(t)
	dir := t.TempDir()
	man := reviewManifest(t)
	for _, tc := range []struct {
		args []string
		db   string // the database an init makes
	}{
		{[]string{"version"}, ""},
		{[]string{"models"}, ""},
		{[]string{"validate", genBench}, ""},
		{[]string{"read", "init", "--benchmark", genBench, "--db", filepath.Join(dir, "r.sqlite"), "--readers", "1"}, filepath.Join(dir, "r.sqlite")},
		{[]string{"review", "init", "--source", man, "--review-db", filepath.Join(dir, "v.sqlite"), "--reviewers", "1"}, filepath.Join(dir, "v.sqlite")},
	} {
		stderr, code := runCLIStdout(t, full, tc.args...)
		wantStdoutFailure(t, tc.args, stderr, code)
		if tc.db != "" {
			if _, err := os.Lstat(tc.db); err == nil {
				t.Errorf("%q: the database whose tokens were lost is left", tc.args[:2])
			}
		}
		stdout, stderr, code := runCLI(t, tc.args...)
		if code != 0 || stdout == "" {
			t.Errorf("%q with a working stdout: exit %d, stdout %q; want 0 and a summary\n%s", tc.args, code, stdout, stderr)
		}
	}
}

// TestStdoutClosedPipe: with standard output a pipe whose reader has gone
// (`chexpercept … | head`), a command ends quietly with status 141 (a
// writer killed by SIGPIPE) rather than by the signal; an init, whose
// tokens could not be printed, publishes no database (its rerun works)
// and says so in one line, exit 2.
func TestStdoutClosedPipe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	man := reviewManifest(t)
	for _, tc := range []struct {
		args []string
		db   string // the database an init makes
	}{
		{[]string{"version"}, ""},
		{[]string{"validate", genBench}, ""},
		{[]string{"read", "init", "--benchmark", genBench, "--db", filepath.Join(dir, "r.sqlite"), "--readers", "4"}, filepath.Join(dir, "r.sqlite")},
		{[]string{"review", "init", "--source", man, "--review-db", filepath.Join(dir, "v.sqlite"), "--reviewers", "1"}, filepath.Join(dir, "v.sqlite")},
	} {
		stderr, code := runCLIStdout(t, closedPipe(t), tc.args...)
		if tc.db == "" {
			if code != exitBrokenPipe || strings.Contains(stderr, "chexpercept:") {
				t.Errorf("%q with stdout a closed pipe: exit %d, stderr %q; want %d and no error line", tc.args, code, stderr, exitBrokenPipe)
			}
			continue
		}
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "chexpercept: write the sign-in tokens: broken pipe") {
			t.Errorf("%q with stdout a closed pipe: exit %d, stderr %q; want 2 and one line saying the tokens could not be written", tc.args[:2], code, stderr)
		}
		if _, err := os.Lstat(tc.db); err == nil {
			t.Errorf("%q: the database whose tokens were lost is published", tc.args[:2])
		}
		stdout, stderr, code := runCLI(t, tc.args...)
		if code != 0 || stdout == "" {
			t.Errorf("%q rerun: exit %d, stdout %q; want 0 and the tokens\n%s", tc.args[:2], code, stdout, stderr)
		}
	}
}
