package goldentest

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records what check reports. Fatalf ends the calling goroutine as
// testing.T's does, so code after a fatal report must not run.
type fakeTB struct {
	testing.TB // nil: calling anything not overridden here panics
	name       string
	errors     []string
	fatal      string
	logs       []string
}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return f.name }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runCheck runs check on a fake in its own goroutine (Goexit must not end
// the real test) and reports whether check returned normally.
func runCheck(f *fakeTB, path string, got []byte, rewrite bool) (returned bool) {
	done := make(chan bool)
	go func() {
		ok := false
		defer func() { done <- ok }()
		check(f, path, got, rewrite)
		ok = true
	}()
	return <-done
}

func TestCheck(t *testing.T) {
	const text = "{\n  \"a\": 1,\n  \"b\": 2\n}\n"
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")
	pngChanged := append([]byte(nil), png...)
	pngChanged[17] = 2
	tests := []struct {
		name      string
		golden    []byte // nil: no golden file
		subdir    string // golden under a directory that may not exist
		got       []byte
		rewrite   bool
		wantErr   []string // substrings of the single Errorf message
		wantFatal []string // substrings of the Fatalf message
		wantFile  []byte   // golden content afterwards
	}{
		{name: "equal text", golden: []byte(text), got: []byte(text), wantFile: []byte(text)},
		{name: "equal binary", golden: png, got: png, wantFile: png},
		{
			name: "text differs", golden: []byte(text), got: []byte(strings.Replace(text, "1", "3", 1)),
			wantErr: []string{"output differs from golden ", "x.golden", "first difference at line 2",
				`golden: "  \"a\": 1,"`, `output: "  \"a\": 3,"`,
				"go test -run '^TestCase$' ./internal/goldentest -update", "git diff "},
			wantFile: []byte(text),
		},
		{
			name: "output shorter", golden: []byte(text), got: []byte(text[:10]),
			wantErr:  []string{"first difference at line 2", fmt.Sprintf("golden %d bytes, output 10 bytes", len(text)), `output: "  \"a\": 1" (end of file)`},
			wantFile: []byte(text),
		},
		{
			name: "binary differs", golden: png, got: pngChanged,
			wantErr:  []string{"first difference at byte 17 (golden 20 bytes, output 20 bytes)", "-update"},
			wantFile: png,
		},
		{
			name: "missing", got: []byte(text),
			wantFatal: []string{"golden ", "x.golden does not exist; create it with: go test -run '^TestCase$' ./internal/goldentest -update"},
		},
		{name: "update rewrites", golden: []byte(text), got: []byte("new\n"), rewrite: true, wantFile: []byte("new\n")},
		{name: "update creates directory", subdir: "new/dir", got: png, rewrite: true, wantFile: png},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.subdir, "x.golden")
			if tc.golden != nil {
				if err := os.WriteFile(path, tc.golden, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f := &fakeTB{name: "TestCase/sub"}
			returned := runCheck(f, path, tc.got, tc.rewrite)

			if tc.wantFatal != nil {
				if returned || f.fatal == "" {
					t.Fatalf("check went on after a fatal problem (fatal %q)", f.fatal)
				}
				for _, s := range tc.wantFatal {
					if !strings.Contains(f.fatal, s) {
						t.Errorf("fatal message %q lacks %q", f.fatal, s)
					}
				}
			} else if !returned || f.fatal != "" {
				t.Fatalf("unexpected fatal: %s", f.fatal)
			}

			if tc.wantErr == nil && len(f.errors) != 0 {
				t.Errorf("unexpected errors: %q", f.errors)
			}
			if tc.wantErr != nil {
				if len(f.errors) != 1 {
					t.Fatalf("%d error reports, want 1: %q", len(f.errors), f.errors)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(f.errors[0], s) {
						t.Errorf("error message lacks %q:\n%s", s, f.errors[0])
					}
				}
			}

			b, err := os.ReadFile(path)
			switch {
			case tc.wantFile == nil:
				if !os.IsNotExist(err) {
					t.Errorf("golden file created without -update (err %v)", err)
				}
			case err != nil:
				t.Fatal(err)
			case string(b) != string(tc.wantFile):
				t.Errorf("golden file now %q, want %q", b, tc.wantFile)
			}
		})
	}
}

func TestLineAtKeepsDifferenceInView(t *testing.T) {
	long := []byte(strings.Repeat("a", 1000) + "XYZ" + strings.Repeat("b", 1000) + "\nnext")
	got := lineAt(long, 1000)
	if !strings.Contains(got, "XYZ") || len(got) > 170 {
		t.Errorf("lineAt = %q (%d chars), want a short excerpt with XYZ", got, len(got))
	}
	if got := lineAt(long, len(long)-2); got != `"next"` {
		t.Errorf("last line = %s", got)
	}
}

func TestUpdateFlagRegistered(t *testing.T) {
	f := flag.Lookup("update")
	if f == nil || f.DefValue != "false" {
		t.Fatalf("flag -update not registered on the command line flag set: %+v", f)
	}
}

// TestHelperCheck is run by TestCheckThroughTestBinary in a child process:
// the real Check with a real testing.T and the real -update flag.
func TestHelperCheck(t *testing.T) {
	path := os.Getenv("GOLDENTEST_HELPER_PATH")
	if path == "" {
		t.Skip("helper for TestCheckThroughTestBinary")
	}
	Check(t, path, []byte("output v2\n"))
}

func TestCheckThroughTestBinary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "testdata", "h.golden")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("output v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperCheck$", "-test.v"}, args...)...)
		cmd.Env = append(os.Environ(), "GOLDENTEST_HELPER_PATH="+path)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run()
	if err == nil || !strings.Contains(out, "--- FAIL: TestHelperCheck") ||
		!strings.Contains(out, "output differs from golden "+path) || !strings.Contains(out, "-update") {
		t.Fatalf("a differing golden did not fail the test (err %v):\n%s", err, out)
	}
	if out, err := run("-update"); err != nil {
		t.Fatalf("-update run failed: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(path); string(b) != "output v2\n" {
		t.Fatalf("-update left %q", b)
	}
	if out, err := run(); err != nil {
		t.Fatalf("after -update the golden still differs: %v\n%s", err, out)
	}
}
