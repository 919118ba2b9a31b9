package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMistypedFlagSuggested: a mistyped flag gets the nearest of the
// command's flags, as a mistyped command gets the nearest command; a
// flag with nothing near gets no suggestion.
func TestMistypedFlagSuggested(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--benchmrk", "x"}, "unknown flag: --benchmrk; did you mean --benchmark?"},
		{[]string{"read", "init", "--reders", "2"}, "unknown flag: --reders; did you mean --readers?"},
		{[]string{"report", "--out=r", "--embed-image"}, "unknown flag: --embed-image; did you mean --embed-images?"},
		{[]string{"eval", "--zzzzzzzz"}, "unknown flag: --zzzzzzzz"},
	} {
		stdout, stderr, code := runCLIEnv(t, nil, tc.args...)
		if code != 2 || stdout != "" || stderr != "chexpercept: "+tc.want+"\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// TestVersionFlag: --version prints what the command version prints.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	cmdOut, _, code1 := runCLIEnv(t, nil, "version")
	flagOut, stderr, code2 := runCLIEnv(t, nil, "--version")
	if code1 != 0 || code2 != 0 || cmdOut == "" || flagOut != cmdOut {
		t.Errorf("version: exit %d %q; --version: exit %d %q %s", code1, cmdOut, code2, flagOut, stderr)
	}
}

// TestEvalChecksItsFoldersFirst: a benchmark folder that does not exist,
// or holds no benchmark, is the one thing eval says: no notice about the
// model or its price comes before it.
func TestEvalChecksItsFoldersFirst(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nonexistent")
	for _, tc := range []struct{ dir, want string }{
		{missing, "chexpercept: --benchmark " + missing + ": no such folder\n"},
		{empty, "chexpercept: --benchmark " + empty + " holds no chexpercept.json: it is not a benchmark folder\n"},
	} {
		out := filepath.Join(t.TempDir(), "results")
		stdout, stderr, code := runCLIEnv(t, nil, "eval", "--benchmark", tc.dir, "--provider", "openai", "--model", "gpt-9", "--out", out)
		if code != 2 || stdout != "" || stderr != tc.want {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and only %q", code, stdout, stderr, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("a refused eval created %s", out)
		}
	}
}

// TestReadersWarning: read init warns below the readers an analysis and
// a verdict need, and not from there on.
func TestReadersWarning(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{
		1: "--readers 1: a reader study needs at least 2 readers for its analysis",
		3: "--readers 3: the report analyses the readers, but a verdict on them needs at least 4 readers",
		4: "",
	} {
		if got := readersWarning(n); (want == "") != (got == "") || !strings.HasPrefix(got, want) {
			t.Errorf("readersWarning(%d) = %q, want %q…", n, got, want)
		}
	}
	if !strings.Contains(readersWarning(1), "at least 4 for a verdict") {
		t.Errorf("the warning for one reader does not say what a verdict needs: %q", readersWarning(1))
	}
	db := filepath.Join(t.TempDir(), "one.sqlite")
	_, stderr, code := runCLIEnv(t, nil, "read", "init", "--benchmark", genBench, "--db", db, "--readers", "1")
	if code != 0 || !strings.Contains(stderr, "warning: "+readersWarning(1)) ||
		!strings.Contains(stderr, "for each of 1 reader,") || !strings.Contains(stderr, "next: chexpercept read serve --db "+db) {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
