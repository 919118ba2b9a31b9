package build

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// failRenames is a rename that fails on the calls whose 1-based numbers
// are in fail (with EIO); n is the number of calls made so far.
func failRenames(fail ...int) (rename renameFunc, n *int) {
	n = new(int)
	return func(from, to string) error {
		*n++
		for _, f := range fail {
			if f == *n {
				return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EIO}
			}
		}
		return os.Rename(from, to)
	}, n
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, s := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestReplaceDirKeepsOldFolder: whichever rename fails, the folder in
// place is the old one or the new one, never none; a folder left aside
// is restored by the next build's cleanLeftovers.
func TestReplaceDirKeepsOldFolder(t *testing.T) {
	t.Parallel()
	old := map[string]string{"a.png": "old", "sub/b.png": "old b"}
	nw := map[string]string{"a.png": "new"}
	for _, tc := range []struct {
		name    string
		fail    []int
		wantErr bool
		want    map[string]string // final after replaceDir
		cleaned map[string]string // final after cleanLeftovers
	}{
		{"no fault", nil, false, nw, nw},
		{"old aside fails", []int{1}, true, old, old},
		{"new into place fails", []int{2}, true, old, old},
		{"new into place and roll-back fail", []int{2, 3}, true, nil, old},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			final := filepath.Join(dir, "case_1")
			writeTree(t, final, old)
			stage := filepath.Join(dir, ".staging-case_1-"+randSuffix())
			writeTree(t, stage, nw)
			rename, _ := failRenames(tc.fail...)
			err := replaceDir(rename, stage, final)
			if (err != nil) != tc.wantErr {
				t.Fatalf("replaceDir: %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, syscall.EIO) {
				t.Errorf("error %v does not wrap the cause", err)
			}
			if tc.want == nil {
				if _, err := os.Lstat(final); err == nil {
					t.Fatal("final in place although both renames failed")
				}
			} else if got := readTree(t, final); !equalMaps(got, tc.want) {
				t.Fatalf("after replaceDir: %v, want %v", got, tc.want)
			}
			if err := cleanLeftovers(dir, os.Rename); err != nil {
				t.Fatal(err)
			}
			if got := readTree(t, final); !equalMaps(got, tc.cleaned) {
				t.Fatalf("after cleanLeftovers: %v, want %v", got, tc.cleaned)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Errorf("entries left: %v", ents)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestFolderWriter: an unchanged folder is not touched; a changed one (a
// file differs, one is missing or one is extra) is replaced whole.
func TestFolderWriter(t *testing.T) {
	t.Parallel()
	old := map[string]string{"a.png": "A", "d/b.png": "B"}
	for _, tc := range []struct {
		name    string
		write   map[string]string
		renames int
	}{
		{"unchanged", map[string]string{"a.png": "A", "d/b.png": "B"}, 0},
		{"one differs", map[string]string{"a.png": "A", "d/b.png": "C"}, 2},
		{"one fewer", map[string]string{"a.png": "A"}, 2},
		{"one more", map[string]string{"a.png": "A", "d/b.png": "B", "e.png": "E"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			final := filepath.Join(dir, "k")
			writeTree(t, final, old)
			rename, n := failRenames()
			w := newFolderWriter(final, rename)
			for _, rel := range []string{"a.png", "d/b.png", "e.png"} {
				if s, ok := tc.write[rel]; ok {
					if err := w.add(rel, []byte(s)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := w.commit(); err != nil {
				t.Fatal(err)
			}
			if *n != tc.renames {
				t.Errorf("%d renames, want %d", *n, tc.renames)
			}
			if got := readTree(t, final); !equalMaps(got, tc.write) {
				t.Errorf("folder holds %v, want %v", got, tc.write)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("entries left: %v", ents)
			}
		})
	}
}
