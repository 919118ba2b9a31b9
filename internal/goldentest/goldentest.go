// Package goldentest compares test output with golden files and rewrites
// them when the test binary runs with -update. Only tests import it.
//
// It registers the -update flag on flag.CommandLine, so every test binary
// that imports it accepts `go test -update`; a test package that imports
// it must not define its own "update" flag (the flag package panics with
// "flag redefined: update" at start-up if it does).
package goldentest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite golden files with the output of the tests that run")

// Check compares got with the golden file at path (relative to the
// package directory, usually under testdata/). With -update it first
// writes got to path, creating the directory if needed. A missing golden
// file stops the test; a differing one fails it and lets it go on, so one
// run reports every golden that changed.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	check(t, path, got, *update)
}

func check(t testing.TB, path string, got []byte, rewrite bool) {
	t.Helper()
	if rewrite {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden %s: %v", path, err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("golden %s: %v", path, err)
		}
		t.Logf("golden %s rewritten (%d bytes)", path, len(got))
	}
	want, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			t.Fatalf("golden %s does not exist; create it with: %s", path, updateCommand(t))
		}
		t.Fatalf("golden %s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from golden %s: %s\nif the change is intended, rewrite it with: %s\nand review `git diff %s`",
			path, diff(want, got), updateCommand(t), path)
	}
}

// diff describes where got first departs from want: the line and both
// versions of it for text, the byte offset for binary data (such as PNG).
// It returns "" when they are equal.
func diff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	n := 0
	for n < len(want) && n < len(got) && want[n] == got[n] {
		n++
	}
	sizes := fmt.Sprintf("golden %d bytes, output %d bytes", len(want), len(got))
	if !isText(want) || !isText(got) {
		return fmt.Sprintf("first difference at byte %d (%s)", n, sizes)
	}
	line := bytes.Count(want[:n], []byte("\n")) + 1
	return fmt.Sprintf("first difference at line %d (%s)\n  golden: %s\n  output: %s",
		line, sizes, lineAt(want, n), lineAt(got, n))
}

// lineAt is the line containing byte offset i, quoted and shortened so a
// long JSON line does not flood the log; a line cut short by the end of
// the data is marked "(end of file)".
func lineAt(b []byte, i int) string {
	start := bytes.LastIndexByte(b[:i], '\n') + 1
	if i >= len(b) {
		if start >= len(b) {
			return "(end of file)"
		}
		return fmt.Sprintf("%q (end of file)", b[start:])
	}
	end := len(b)
	if k := bytes.IndexByte(b[i:], '\n'); k >= 0 {
		end = i + k
	}
	const limit = 160
	if end-start > limit {
		// Keep the first difference in view.
		if i-start > limit/2 {
			start = i - limit/2
		}
		if end-start > limit {
			end = start + limit
		}
	}
	return fmt.Sprintf("%q", b[start:end])
}

func isText(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }

// updateCommand is the go test command that reruns t's top-level test with
// -update, naming the package by its path from the module root.
func updateCommand(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return fmt.Sprintf("go test -run '^%s$' %s -update", name, packageArg())
}

// packageArg is "./dir" for the current directory (go test runs a
// package's tests in its directory) relative to the enclosing go.mod, or
// "." if there is none.
func packageArg() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}
