package outdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
)

func TestLook(t *testing.T) {
	const marker = ".mark"
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, root string) string // returns the directory to look at
		want    State
		entries []string
		refused string // substring of a Refused error
	}{
		{"absent", func(t *testing.T, root string) string { return filepath.Join(root, "new", "dir") }, Absent, nil, ""},
		{"empty", func(t *testing.T, root string) string { return root }, Empty, nil, ""},
		{"marked", func(t *testing.T, root string) string {
			write(t, root, marker, "m")
			write(t, root, "b", "x")
			return root
		}, Marked, []string{".mark", "b"}, ""},
		{"marker is a directory", func(t *testing.T, root string) string {
			os.Mkdir(filepath.Join(root, marker), 0o755)
			return root
		}, Other, []string{".mark"}, ""},
		{"marker is a link", func(t *testing.T, root string) string {
			write(t, root, "real", "m")
			os.Symlink("real", filepath.Join(root, marker))
			return root
		}, Other, []string{".mark", "real"}, ""},
		{"other", func(t *testing.T, root string) string {
			write(t, root, "z", "x")
			write(t, root, "a", "x")
			return root
		}, Other, []string{"a", "z"}, ""},
		{"link to a directory", func(t *testing.T, root string) string {
			os.Mkdir(filepath.Join(root, "d"), 0o755)
			write(t, root, "d/"+marker, "m")
			os.Symlink("d", filepath.Join(root, "l"))
			return filepath.Join(root, "l")
		}, Marked, []string{".mark"}, ""},
		{"a file", func(t *testing.T, root string) string {
			write(t, root, "f", "x")
			return filepath.Join(root, "f")
		}, 0, nil, "exists and is not a directory"},
		{"dangling link", func(t *testing.T, root string) string {
			os.Symlink("nowhere", filepath.Join(root, "l"))
			return filepath.Join(root, "l")
		}, 0, nil, "symbolic link that does not lead to a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t, t.TempDir())
			st, names, err := Look(dir, marker)
			if tc.refused != "" {
				var r *Refused
				if !errors.As(err, &r) || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("err = %v, want a refusal naming %s: %q", err, dir, tc.refused)
				}
				return
			}
			if err != nil || st != tc.want || strings.Join(names, ",") != strings.Join(tc.entries, ",") {
				t.Fatalf("Look = %v %v %v, want %v %v", st, names, err, tc.want, tc.entries)
			}
		})
	}
}

// TestRequireChangesNothing: a refused directory keeps every byte and
// modification time, and the error is one line naming it and an entry.
func TestRequireChangesNothing(t *testing.T) {
	root := t.TempDir()
	write(t, root, "thesis.tex", "precious")
	write(t, root, "sub/data.csv", "1,2")
	before := outdirtest.Snapshot(t, root)
	_, err := Require(root, "report", ".chexpercept-report")
	var r *Refused
	if !errors.As(err, &r) || r.Entry != "sub" || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v (%+v), want a one-line refusal naming the first entry", err, r)
	}
	for _, want := range []string{root, `"sub"`, "and 1 more entry", ".chexpercept-report", "chexpercept report"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, root))
	for _, dir := range []string{filepath.Join(root, "new"), t.TempDir()} {
		if _, err := Require(dir, "report", ".chexpercept-report"); err != nil {
			t.Errorf("%s refused: %v", dir, err)
		}
	}
}

func TestRealPathAndWithin(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "data", "images"), 0o755)
	os.Symlink(filepath.Join(root, "data"), filepath.Join(root, "link"))
	for _, tc := range []struct{ in, want string }{
		{filepath.Join(root, "link", "images"), filepath.Join(root, "data", "images")},
		{filepath.Join(root, "link", "images", "new", "deeper"), filepath.Join(root, "data", "images", "new", "deeper")},
		{filepath.Join(root, "missing", "x"), filepath.Join(root, "missing", "x")},
	} {
		got, err := RealPath(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("RealPath(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		path, dir string
		want      bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b/c", "/a/b", true},
		{"/a/bc", "/a/b", false},
		{"/a", "/a/b", false},
		{"/x", "/", true},
	} {
		if got := Within(tc.path, tc.dir); got != tc.want {
			t.Errorf("Within(%s, %s) = %v", tc.path, tc.dir, got)
		}
	}
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
