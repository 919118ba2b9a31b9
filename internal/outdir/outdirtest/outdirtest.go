// Package outdirtest helps tests check that a refused output directory
// is left exactly as it was. Imported by tests only.
package outdirtest

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Snapshot records every entry under root (root included): type and
// permissions, size, modification time, and the SHA-256 of a file's bytes
// or a link's target. Links are not followed.
func Snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		s := fmt.Sprintf("%v size=%d mtime=%d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			s += " -> " + target
		case fi.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			_ = f.Close() // read-only
			if err != nil {
				return err
			}
			s += fmt.Sprintf(" sha256=%x", h.Sum(nil))
		}
		snap[filepath.ToSlash(rel)] = s
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot of %s: %v", root, err)
	}
	return snap
}

// Unchanged fails the test for every entry added, removed or changed
// between two snapshots.
func Unchanged(t testing.TB, before, after map[string]string) {
	t.Helper()
	var diffs []string
	for p, b := range before {
		if a, ok := after[p]; !ok {
			diffs = append(diffs, "removed "+p)
		} else if a != b {
			diffs = append(diffs, fmt.Sprintf("changed %s: %s → %s", p, b, a))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, "added "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		if len(diffs) > 10 {
			diffs = append(diffs[:10], fmt.Sprintf("… %d more", len(diffs)-10))
		}
		t.Errorf("the directory changed:\n%s", strings.Join(diffs, "\n"))
	}
}

// CopyTree copies the directory src to dst (which must not exist),
// keeping symbolic links as links.
func CopyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		}
	})
	if err != nil {
		t.Fatalf("copying %s to %s: %v", src, dst, err)
	}
}

// ReadFiles maps the slash path, relative to root, of every regular file
// under root to its bytes (links and other entries are left out), for
// tests that compare whole outputs.
func ReadFiles(t testing.TB, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatalf("reading %s: %v", root, err)
	}
	return files
}
