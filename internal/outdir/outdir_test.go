package outdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
		{"only the marker's temporary file", func(t *testing.T, root string) string {
			write(t, root, marker+".tmp-317187146", "m")
			return root
		}, Empty, nil, ""},
		{"the marker's temporary file and more", func(t *testing.T, root string) string {
			write(t, root, marker+".tmp-317187146", "m")
			write(t, root, "a", "x")
			return root
		}, Other, []string{".mark.tmp-317187146", "a"}, ""},
		{"a lookalike of the marker's temporary file", func(t *testing.T, root string) string {
			write(t, root, marker+".tmp-x", "m")
			return root
		}, Other, []string{".mark.tmp-x"}, ""},
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

// TestWriteNeverThroughLinks: writes below an output
// directory refuse a symbolic link, a FIFO or a file met on the way, and
// CheckTree finds them before anything is written; the outside is left
// as it was.
func TestWriteNeverThroughLinks(t *testing.T) {
	root := t.TempDir()
	out, outside := filepath.Join(root, "out"), filepath.Join(root, "outside")
	write(t, outside, "precious.txt", "precious")
	write(t, out, "ok/kept.txt", "kept")
	os.Symlink(filepath.Join(outside, "precious.txt"), filepath.Join(out, "report.md"))
	os.Symlink(outside, filepath.Join(out, "data"))
	if err := syscall.Mkfifo(filepath.Join(out, "fifo.csv"), 0o644); err != nil {
		t.Skip(err)
	}
	write(t, out, "file", "x")
	before := outdirtest.Snapshot(t, root)
	for rel, entry := range map[string]string{
		"report.md":     "report.md",
		"data/c0.js":    "data",
		"fifo.csv":      "fifo.csv",
		"file/x.txt":    "file",
		"data/sub/x.js": "data",
	} {
		err := WriteFile(nil, out, rel, []byte("new"))
		var r *Refused
		if !errors.As(err, &r) || r.Entry != entry {
			t.Errorf("WriteFile(%s) = %v, want a refusal naming %s", rel, err, entry)
		}
		if _, err := Create(nil, out, rel); !errors.As(err, &r) {
			t.Errorf("Create(%s) = %v, want a refusal", rel, err)
		}
	}
	if _, err := MkdirAll(out, "data/sub"); err == nil {
		t.Error("MkdirAll through a link")
	}
	if err := CheckTree(out); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("CheckTree = %v", err)
	}
	if err := CheckTree(filepath.Join(out, "ok")); err != nil {
		t.Errorf("CheckTree of a clean tree: %v", err)
	}
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, root))
	if err := WriteFile(nil, out, "ok/new/deep.txt", []byte("new")); err != nil {
		t.Errorf("a clean write: %v", err)
	}
	if err := WriteFile(nil, out, "../escape", nil); err == nil {
		t.Error("a path outside the directory was written")
	}
}

// TestSameFile: an output that names an input (here a SQLite database
// given with its -wal, -shm and -journal files) is found whatever its
// spelling: relative or absolute, through a link, or a hard link.
func TestSameFile(t *testing.T) {
	root := t.TempDir()
	write(t, root, "ex/rv.sqlite", "db")
	write(t, root, "ex/rv.sqlite-wal", "wal")
	write(t, root, "other.jsonl", "x")
	os.Link(filepath.Join(root, "ex/rv.sqlite"), filepath.Join(root, "hard"))
	os.Symlink("ex", filepath.Join(root, "lnk"))
	t.Chdir(root)
	db := filepath.Join(root, "ex", "rv.sqlite")
	for out, want := range map[string]bool{
		"ex/rv.sqlite-wal":       true,
		"ex/rv.sqlite-shm":       true, // absent: by path
		"ex/./rv.sqlite-journal": true,
		"lnk/rv.sqlite":          true,
		"hard":                   true,
		"other.jsonl":            false,
		"ex/rv.sqlite-wal2":      false,
	} {
		if _, got := SameFile(out, db, db+"-wal", db+"-shm", db+"-journal"); got != want {
			t.Errorf("SameFile(%s, %s) = %v, want %v", out, db, got, want)
		}
	}
}
