package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/job"
)

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := filepath.Join(dir, "out.json")
	for _, write := range []func(*job.Job, string, []byte) error{WriteFile, WriteFileNoSync} {
		for _, content := range []string{"first", "second, longer content"} {
			if err := write(nil, name, []byte(content)); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(name)
			if err != nil || string(got) != content {
				t.Fatalf("read back %q, %v; want %q", got, err, content)
			}
			st, _ := os.Stat(name)
			if st.Mode().Perm() != 0o644 {
				t.Errorf("mode %v, want 0644", st.Mode().Perm())
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("leftover files: %v", entries)
	}
}

func TestWriteFileErrorNamesFile(t *testing.T) {
	t.Parallel()
	name := filepath.Join(t.TempDir(), "missing-dir", "out.json")
	err := WriteFile(nil, name, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("error %v, want one naming %s", err, name)
	}
}

// Create writes a large output in pieces: the target keeps its old
// content until Commit, and Abort leaves it untouched and no debris.
func TestCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := filepath.Join(dir, "out.csv")
	if err := os.WriteFile(name, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Create(nil, name)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new ")
	f.WriteString("content")
	if got, _ := os.ReadFile(name); string(got) != "old" {
		t.Fatalf("before Commit the target reads %q", got)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // after Commit: a no-op
	if got, _ := os.ReadFile(name); string(got) != "new content" {
		t.Fatalf("after Commit the target reads %q", got)
	}
	if st, _ := os.Stat(name); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}

	f, err = Create(nil, name)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("discarded")
	f.Abort()
	if got, _ := os.ReadFile(name); string(got) != "new content" {
		t.Fatalf("after Abort the target reads %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("leftover files: %v", entries)
	}

	// A directory in the way: Create fails naming the file and leaves no debris.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	os.Mkdir(filepath.Join(sub, "x"), 0o755)
	os.WriteFile(filepath.Join(sub, "x", "y"), nil, 0o644)
	if _, err = Create(nil, filepath.Join(sub, "x")); err == nil || !strings.Contains(err.Error(), filepath.Join(sub, "x")+": not a regular file (directory)") {
		t.Errorf("Create over a non-empty directory: %v", err)
	}
	if entries, _ := os.ReadDir(sub); len(entries) != 1 {
		t.Errorf("leftover files: %v", entries)
	}
}

// TestRefusesLinksAndFIFOs: a symbolic link or a FIFO
// in the target's place is not replaced, and the link's target is left
// alone.
func TestRefusesLinksAndFIFOs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside.txt")
	os.WriteFile(outside, []byte("precious"), 0o644)
	link := filepath.Join(dir, "report.md")
	os.Symlink(outside, link)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	for name, want := range map[string]string{link: "is a symbolic link", fifo: "not a regular file (named pipe)"} {
		if err := WriteFile(nil, name, []byte("report")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WriteFile(%s) = %v, want %q", name, err, want)
		}
		if _, err := Create(nil, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Create(%s) = %v, want %q", name, err, want)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced")
	}
	if b, _ := os.ReadFile(outside); string(b) != "precious" {
		t.Errorf("the link's target reads %q", b)
	}
}

// TestWriteFileReportsDirectorySync: a durable write whose directory sync
// fails reports it, naming the file; WriteFileNoSync does not sync.
func TestWriteFileReportsDirectorySync(t *testing.T) {
	t.Parallel()
	for _, durable := range []bool{true, false} {
		dir := t.TempDir()
		name := filepath.Join(dir, "out.json")
		synced := 0
		syncDir := func(string) error { synced++; return syscall.EIO }
		if !durable {
			syncDir = nil
		}
		err := WriteSyncedBy(nil, name, []byte("data"), syncDir)
		if durable && (!errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), name)) {
			t.Errorf("durable write with a failed directory sync: %v, want EIO naming %s", err, name)
		}
		if !durable && (err != nil || synced != 0) {
			t.Errorf("WriteFileNoSync: %v, %d directory syncs", err, synced)
		}
	}
	if err := SyncDir(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("SyncDir of a missing directory succeeded")
	}
}

// TestStoppedJob: once the job is stopped, the temporary files of its
// writes in flight are removed (job.Job.RemoveTemps), a write whose
// temporary file was removed does not land, and a write started
// afterwards fails with job.ErrStopped instead of leaving one. Another
// job's writes go on.
func TestStoppedJob(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := job.New(context.Background(), job.Options{})
	f, err := Create(j, filepath.Join(dir, "plot.png"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("half"); err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(dir, "done.csv")
	if err := WriteFileNoSync(j, done, []byte("whole")); err != nil {
		t.Fatal(err)
	}
	if n := j.Pending(); n != 1 {
		t.Fatalf("%d temporary files registered, want the one in flight", n)
	}
	if !j.Stop() {
		t.Fatal("Stop before the commit point returned false")
	}
	j.RemoveTemps()
	for _, write := range []func() error{
		func() error { return WriteFileNoSync(j, filepath.Join(dir, "late.csv"), []byte("x")) },
		func() error { return WriteFile(j, filepath.Join(dir, "late.csv"), []byte("x")) },
		func() error { _, err := Create(j, filepath.Join(dir, "late.csv")); return err },
	} {
		if err := write(); !errors.Is(err, job.ErrStopped) {
			t.Errorf("write after Stop: %v, want job.ErrStopped", err)
		}
	}
	if f.Commit() == nil {
		t.Error("the write whose temporary file was removed committed")
	}
	other := job.New(context.Background(), job.Options{})
	if err := WriteFile(other, filepath.Join(dir, "other.csv"), []byte("y")); err != nil {
		t.Errorf("another job's write: %v", err)
	}
	var names []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "done.csv other.csv" {
		t.Errorf("entries %q, want only the finished files", got)
	}
}

// TestRenameHook: the job's hook sees the target of every write just
// before its rename, and a nil job writes without one.
func TestRenameHook(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var seen []string
	j := job.New(context.Background(), job.Options{Hook: func(point, detail string) {
		if point == "rename" {
			_, err := os.Stat(detail)
			seen = append(seen, fmt.Sprintf("%s exists=%v", filepath.Base(detail), err == nil))
		}
	}})
	if err := WriteFile(j, filepath.Join(dir, "a.json"), []byte("a")); err != nil {
		t.Fatal(err)
	}
	f, err := Create(j, filepath.Join(dir, "b.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, ", "); got != "a.json exists=false, b.csv exists=false" {
		t.Errorf("hook saw %q", got)
	}
}

// TestRemoveStale: only regular files named "<target>.tmp-<digits>" whose
// target the caller owns are removed, in every folder below the root; a
// link, a folder, a lookalike or another target's temporary file stays.
func TestRemoveStale(t *testing.T) {
	t.Parallel()
	files := []struct {
		rel     string
		removed bool
	}{
		{"a.csv.tmp-123", true},
		{"sub/b.png.tmp-4294967295", true},
		{"a.csv", false},
		{"a.csv.tmp-", false},
		{"a.csv.tmp-12x", false},
		{"a.csv.tmp-abc", false},
		{"notes.txt.tmp-1", false},
		{"sub/notes.txt.tmp-2", false},
		{"a.csv.tmp-1.bak", false},
	}
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, f.rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "mine.csv")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "a.csv.tmp-7")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "a.csv.tmp-8"), 0o755); err != nil {
		t.Fatal(err)
	}
	owns := func(rel string) bool { return strings.HasSuffix(rel, ".csv") || strings.HasSuffix(rel, ".png") }
	if err := RemoveStale(root, owns); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		_, err := os.Lstat(filepath.Join(root, f.rel))
		if gone := err != nil; gone != f.removed {
			t.Errorf("%s: removed %v, want %v", f.rel, gone, f.removed)
		}
	}
	for _, n := range []string{"a.csv.tmp-7", "a.csv.tmp-8"} {
		if _, err := os.Lstat(filepath.Join(root, n)); err != nil {
			t.Errorf("%s (a link or a folder) was removed", n)
		}
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Errorf("the link's target changed: %q, %v", b, err)
	}
	if err := RemoveStale(filepath.Join(root, "absent"), owns); err != nil {
		t.Errorf("an absent root: %v", err)
	}
}

// TestRemoveStaleBeside: the temporary files of name's own writes are
// removed from its folder, and nothing else.
func TestRemoveStaleBeside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, n := range []string{"r.jsonl", "r.jsonl.tmp-381945024", "r.jsonl.tmp-9", "r.jsonl.tmp-x", "rr.jsonl.tmp-1", "other.jsonl.tmp-2"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveStaleBeside(filepath.Join(dir, "r.jsonl")); err != nil {
		t.Fatal(err)
	}
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if got, want := strings.Join(left, " "), "other.jsonl.tmp-2 r.jsonl r.jsonl.tmp-x rr.jsonl.tmp-1"; got != want {
		t.Errorf("left %q, want %q", got, want)
	}
}
