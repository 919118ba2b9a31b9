//go:build unix

package outdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLock: a second holder of one output directory is refused at once,
// naming the folder and the holder's pid; after the first lets go the
// folder can be locked again. Each Lock opens its own descriptor, so two
// holders in one process conflict as two processes do.
func TestLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	unlock, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("Lock did not create %s: %v", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Lock(dir)
	want := fmt.Sprintf("output directory %s is being written by another chexpercept process (pid %d)", dir, os.Getpid())
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("second Lock: %v, want ErrBusy saying %q", err, want)
	}
	// Through another spelling of the same folder too.
	if _, err := Lock(dir + "/."); !errors.Is(err, ErrBusy) {
		t.Errorf("Lock(%s/.): %v, want ErrBusy", dir, err)
	}
	unlock()
	if _, err := os.Stat(filepath.Join(dir, "f")); err != nil {
		t.Errorf("unlock removed a folder that holds a file: %v", err)
	}
	again, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	again()
}

// TestLockCreatedFolders: the folders Lock created are removed when the
// command wrote nothing into them, and only those.
func TestLockCreatedFolders(t *testing.T) {
	base := t.TempDir()
	for _, tc := range []struct {
		name       string
		rel        string
		write      bool
		wantGone   string // removed at unlock
		wantRemain string // kept at unlock
	}{
		{"new, unused", "a/b/c", false, "a", "."},
		{"new, written", "a/b/c", true, "", "a/b/c/x"},
		{"existing, unused", ".", false, "", "."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(base, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, tc.rel)
			unlock, err := Lock(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tc.write {
				if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			unlock()
			if tc.wantGone != "" {
				if _, err := os.Lstat(filepath.Join(root, tc.wantGone)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s left behind: %v", tc.wantGone, err)
				}
			}
			if _, err := os.Lstat(filepath.Join(root, tc.wantRemain)); err != nil {
				t.Errorf("%s removed: %v", tc.wantRemain, err)
			}
		})
	}
}

// TestLockNotADirectory: a file in the folder's place is left to the
// command's own check: no lock, no error, the file untouched.
func TestLockNotADirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	unlock, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if b, _ := os.ReadFile(p); string(b) != "notes" {
		t.Errorf("the file became %q", b)
	}
}
