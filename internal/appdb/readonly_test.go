package appdb

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestExplainReadOnly: the errors a read-only file system gives SQLite
// (it cannot open the file for writing, nor make its -shm) are said as
// such; the same codes elsewhere, and other codes, pass as they are.
func TestExplainReadOnly(t *testing.T) {
	const path = "/mnt/ro/study.sqlite"
	for _, tc := range []struct {
		name string
		err  error
		ro   bool
		want string
	}{
		{"CANTOPEN on a read-only fs", codeErr(14), true, "study.sqlite is on a read-only file system: SQLite can neither write it nor make its -wal and -shm files beside it; copy it to a writable folder or remount the file system read-write (sqlite error (14))"},
		{"READONLY on a read-only fs", codeErr(8), true, "study.sqlite is on a read-only file system"},
		{"CANTOPEN elsewhere", codeErr(14), false, ""},
		{"BUSY on a read-only fs", codeErr(5), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := explainReadOnly(path, tc.err, func(dir string) bool {
				if dir != filepath.Dir(path) {
					t.Errorf("asked of %s", dir)
				}
				return tc.ro
			})
			if tc.want == "" {
				if got != tc.err {
					t.Errorf("got %v, want the error as it is", got)
				}
				return
			}
			if !strings.HasPrefix(got.Error(), tc.want) || !onReadOnlyFS(got) || !errors.Is(got, tc.err) {
				t.Errorf("got %v, want %q unwrapping to the code", got, tc.want)
			}
		})
	}
}

// TestOpenOnReadOnlyFS: a database on a file system mounted read-only
// (a tmpfs remounted ro; skipped where mounting is not allowed) is said
// to be there when opened for writing, not "unable to open database
// file (14)" after "cannot read it".
func TestOpenOnReadOnlyFS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a file system needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	p := filepath.Join(dir, "app.sqlite")
	c, err := Create(nil, p, testSpec(testSchema, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(); err != nil {
		t.Fatal(err)
	}
	if err := c.DB().Close(); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot remount read-only: %v %s", err, out)
	}
	if err := syscall.Access(dir, 2); !errors.Is(err, syscall.EROFS) {
		t.Skipf("the remount is not read-only here: %v", err)
	}
	_, err = Open(p, testSpec(testSchema, "FULL"), ReadWrite)
	want := "test db " + p + ": app.sqlite is on a read-only file system"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "cannot read it") || strings.Contains(err.Error(), "\n") {
		t.Errorf("open on a read-only file system: %v\nwant one line starting %q", err, want)
	}
	t.Logf("%v", err)
}
