//go:build unix

package results

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

	unlock, err := LockRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockRun(dir); err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), dir) {
		t.Errorf("second writer: %v, want an in-use error naming %s", err, dir)
	}
	if _, err := ReadLockRun(dir); err == nil || !strings.Contains(err.Error(), "being written") || !errors.Is(err, ErrBusy) {
		t.Errorf("reader during a write: %v, want a being-written error", err)
	}
	unlock()

	r1, err := ReadLockRun(dir)
	if err != nil {
		t.Fatalf("first reader: %v", err)
	}
	r2, err := ReadLockRun(dir)
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	if _, err := LockRun(dir); err == nil {
		t.Error("a writer got the lock while the directory was being read")
	}
	r1()
	r2()
	unlock, err = LockRun(dir)
	if err != nil {
		t.Fatalf("writer after the readers left: %v", err)
	}
	unlock()

	// A source that was never written by a live process needs no lock
	// file, and reading it must not create one (it may be read-only).
	fresh := t.TempDir()
	r, err := ReadLockRun(fresh)
	if err != nil {
		t.Fatal(err)
	}
	r()
	if _, err := os.Stat(filepath.Join(fresh, LockFile)); !os.IsNotExist(err) {
		t.Errorf("ReadLockRun created %s (stat: %v)", LockFile, err)
	}
}

// The offline tools refuse a source that an eval is still writing and a
// target that another process holds.
func TestToolsRespectRunLocks(t *testing.T) {
	b := sampleBenchmark(t)
	out := t.TempDir()
	src := filepath.Join(out, "opensource_glm-4v", "oracle_none")
	writeSourceRun(t, src, b, `[]`)

	unlock, err := LockRun(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RescoreRun(src, RescoreOptions{Mode: "strict", Bench: b, Engine: &fakeEngine{}}); err == nil || !strings.Contains(err.Error(), "being written") {
		t.Errorf("rescore of a run being written: %v", err)
	}
	unlock()

	shard := filepath.Join(out, "sharded", "opensource_glm-4v", "oracle_none", "shard-1-of-2")
	writeSourceRun(t, shard, b, `[]`)
	unlock, err = LockRun(shard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Merge([]string{shard}, MergeOptions{Out: t.TempDir(), Engine: &fakeEngine{}}); err == nil || !strings.Contains(err.Error(), "being written") || !strings.Contains(err.Error(), shard) {
		t.Errorf("merge of a shard being written: %v", err)
	}
	unlock()

	dst := filepath.Join(out, "opensource_glm-4v_strict", "oracle_none")
	os.MkdirAll(dst, 0o755)
	unlock, err = LockRun(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RescoreRun(src, RescoreOptions{Mode: "strict", Bench: b, Engine: &fakeEngine{}}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("rescore into a locked target: %v", err)
	}
	unlock()
	if _, err := RescoreRun(src, RescoreOptions{Mode: "strict", Bench: b, Engine: &fakeEngine{}}); err != nil {
		t.Errorf("rescore once the locks are gone: %v", err)
	}
}
