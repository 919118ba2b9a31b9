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
