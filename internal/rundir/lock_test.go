//go:build unix

package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flock locks belong to open file descriptions, so two locks taken in one
// process conflict just as two processes' would.
func TestRunLocks(t *testing.T) {
	dir := t.TempDir()

	unlock, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Eval, merge, rescore and import-reference take this lock: the
	// message names no flag of theirs.
	if _, err := Lock(dir); err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), dir) ||
		!strings.HasSuffix(err.Error(), "wait for it or write to another directory") {
		t.Errorf("second writer: %v, want an in-use error naming %s", err, dir)
	}
	if _, err := ReadLock(dir); err == nil || !strings.Contains(err.Error(), "being written") || !errors.Is(err, ErrBusy) {
		t.Errorf("reader during a write: %v, want a being-written error", err)
	}
	unlock()

	r1, err := ReadLock(dir)
	if err != nil {
		t.Fatalf("first reader: %v", err)
	}
	r2, err := ReadLock(dir)
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	if _, err := Lock(dir); err == nil {
		t.Error("a writer got the lock while the directory was being read")
	}
	r1()
	r2()
	unlock, err = Lock(dir)
	if err != nil {
		t.Fatalf("writer after the readers left: %v", err)
	}
	unlock()

	// A source that was never written by a live process needs no lock
	// file, and reading it must not create one (it may be read-only).
	fresh := t.TempDir()
	r, err := ReadLock(fresh)
	if err != nil {
		t.Fatal(err)
	}
	r()
	if _, err := os.Stat(filepath.Join(fresh, LockFile)); !os.IsNotExist(err) {
		t.Errorf("ReadLock created %s (stat: %v)", LockFile, err)
	}
}
