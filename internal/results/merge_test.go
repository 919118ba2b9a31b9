package results

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/ojson"
)

func TestDiffJSON(t *testing.T) {
	ignore := map[string]bool{"created_at": true, "selection.shard": true, "dataset.path": true}
	for _, c := range []struct {
		name, a, b string
		want       []string
	}{
		{"equal", `{"a":1,"b":[1,2]}`, `{"a":1,"b":[1,2]}`, nil},
		{"ignored members", `{"created_at":"x","selection":{"shard":{"i":1,"n":3},"seed":0},"dataset":{"path":"/a","sha256":"h"}}`,
			`{"created_at":"y","selection":{"shard":{"i":2,"n":3},"seed":0},"dataset":{"path":"/b","sha256":"h"}}`, nil},
		{"nested scalar", `{"model":{"policy_seed":7}}`, `{"model":{"policy_seed":8}}`, []string{"model.policy_seed: 7 vs 8"}},
		{"number literal kept", `{"t":600.0}`, `{"t":600}`, []string{"t: 600.0 vs 600"}},
		{"absent member", `{"a":1}`, `{"a":1,"b":null}`, []string{"b: absent vs null"}},
		{"array", `{"e":["x"]}`, `{"e":["x","y"]}`, []string{`e: ["x"] vs ["x","y"]`}},
		{"kind change", `{"s":{"i":1}}`, `{"s":"1"}`, []string{`s: {"i":1} vs "1"`}},
		{"not ignored sibling", `{"dataset":{"path":"/a","sha256":"h1"}}`, `{"dataset":{"path":"/b","sha256":"h2"}}`, []string{`dataset.sha256: "h1" vs "h2"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := ojson.Parse([]byte(c.a))
			if err != nil {
				t.Fatal(err)
			}
			b, err := ojson.Parse([]byte(c.b))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			diffJSON("", a, b, ignore, &got)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestFindShards(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "baseline_random", "oracle_none")
	for _, d := range []string{"shard-1-of-2", "shard-2-of-2", "notes"} {
		if err := os.MkdirAll(filepath.Join(run, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)
	file := filepath.Join(root, "f")
	os.WriteFile(file, nil, 0o644)

	got, err := findShards([]string{run, filepath.Join(run, "shard-2-of-2")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(run, "shard-1-of-2"), filepath.Join(run, "shard-2-of-2")}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q (the same folder given twice counts once)", got, want)
	}
	for _, c := range []struct{ in, want string }{
		{empty, "neither a shard folder"},
		{file, "not a directory"},
		{filepath.Join(root, "nope"), "no such file"},
	} {
		if _, err := findShards([]string{c.in}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.in, err, c.want)
		}
	}
}

func TestMergeRefusesNonShard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shard-1-of-1")
	os.MkdirAll(dir, 0o755)
	m := `{"dataset":{"path":"/b","sha256":"h"},"selection":{"lesions":[],"shard":null},"run_name":"x_y","model":{},"oracle_mode":"none","parse_mode":"reference"}`
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(m), 0o644)
	_, err := Merge([]string{dir}, MergeOptions{Out: t.TempDir()})
	var re *RefusalError
	if err == nil || !strings.Contains(err.Error(), "has no shard") {
		t.Fatalf("error %v", err)
	}
	if !errors.As(err, &re) {
		t.Errorf("not a RefusalError: %T", err)
	}
}

// TestCheckRunTarget: the run directory of a merge or rescore is written when
// new, empty or holding only the debris of an interrupted write; a run is
// replaced only with force; anything else is refused, untouched.
func TestCheckRunTarget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string // entries to create ("/" suffix: directory)
		force bool
		want  string // error substring; "" accepted
	}{
		{"absent", nil, false, ""},
		{"empty", []string{}, false, ""},
		{"interrupted write", []string{LockFile, ManifestFile + ".tmp-123"}, false, ""},
		{"a run", []string{LockFile, ManifestFile, ResultsFile}, false, "pass --force"},
		{"a run with force", []string{ManifestFile, ResultsFile, SummaryFile}, true, ""},
		{"a run's manifest only", []string{ManifestFile}, false, "pass --force"},
		{"someone's summary", []string{SummaryFile}, true, `holds no run (no manifest.json or results.jsonl): it holds "summary.json"`},
		{"shard folders", []string{"shard-1-of-2/", "shard-2-of-2/", LockFile}, false, ""},
		{"shard folders and more", []string{"shard-1-of-2/", LockFile, "notes/"}, false, `it holds "notes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run", "oracle_none")
			if tc.files != nil {
				os.MkdirAll(dir, 0o755)
			}
			for _, f := range tc.files {
				if strings.HasSuffix(f, "/") {
					os.MkdirAll(filepath.Join(dir, f), 0o755)
				} else {
					os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644)
				}
			}
			err := CheckRunTarget(dir, tc.force)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if err := CheckRunTarget(file, true); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
}
