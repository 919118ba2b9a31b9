package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out.json")
	for _, write := range []func(string, []byte) error{WriteFile, WriteFileNoSync} {
		for _, content := range []string{"first", "second, longer content"} {
			if err := write(name, []byte(content)); err != nil {
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
	name := filepath.Join(t.TempDir(), "missing-dir", "out.json")
	err := WriteFile(name, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("error %v, want one naming %s", err, name)
	}
}

// Create writes a large output in pieces: the target keeps its old
// content until Commit, and Abort leaves it untouched and no debris.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out.csv")
	if err := os.WriteFile(name, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Create(name)
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

	f, err = Create(name)
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

	// A directory in the way: Commit fails naming the file and leaves no debris.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	os.Mkdir(filepath.Join(sub, "x"), 0o755)
	os.WriteFile(filepath.Join(sub, "x", "y"), nil, 0o644)
	f, err = Create(filepath.Join(sub, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err == nil || !strings.Contains(err.Error(), filepath.Join(sub, "x")) {
		t.Errorf("Commit over a non-empty directory: %v", err)
	}
	if entries, _ := os.ReadDir(sub); len(entries) != 1 {
		t.Errorf("leftover files: %v", entries)
	}
}
