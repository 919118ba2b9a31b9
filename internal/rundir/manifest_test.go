package rundir_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/rundir"
)

// ReadManifest reads only a regular file of bounded size and names the
// file in every error.
func TestReadManifest(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("..", "results", "testdata", "manifest", "full.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		err   string // "" for success
	}{
		{"valid", func(t *testing.T, dir string) { write(t, dir, full) }, ""},
		{"missing", func(*testing.T, string) {}, "no manifest.json; not a run directory or shard folder"},
		{"a directory", func(t *testing.T, dir string) { mkdir(t, filepath.Join(dir, rundir.ManifestFile)) }, "not a regular file"},
		{"too large", func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, rundir.ManifestFile))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(rundir.MaxManifestBytes + 1); err != nil { // sparse: no disk used
				t.Fatal(err)
			}
		}, "more than the 16777216-byte limit"},
		{"wrong type", func(t *testing.T, dir string) { write(t, dir, []byte(`{"concurrency":"16"}`)) },
			"manifest.json: not a valid manifest: concurrency: a string, want a whole number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			m, err := rundir.ReadManifest(dir)
			if c.err == "" {
				if err != nil || m.RunName != "opensource_glm-4v_no_thinking_strict" {
					t.Errorf("got %v, %v", m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), dir) {
				t.Errorf("error %v, want one naming %s and containing %q", err, dir, c.err)
			}
			if c.name == "missing" && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("missing manifest: %v does not match fs.ErrNotExist", err)
			}
		})
	}
}

func write(t *testing.T, dir string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, rundir.ManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// WallTime reads summary.json's wall_time_s and is 0 for anything else.
func TestWallTime(t *testing.T) {
	for _, c := range []struct {
		name    string
		summary *string // nil: no summary.json
		want    float64
	}{
		{"none", nil, 0},
		{"number", ptr(`{"run":{},"wall_time_s":12.5}`), 12.5},
		{"no member", ptr(`{"run":{}}`), 0},
		{"string", ptr(`{"wall_time_s":"12.5"}`), 0},
		{"not JSON", ptr(`{"wall_time_s":`), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.summary != nil {
				if err := os.WriteFile(filepath.Join(dir, rundir.SummaryFile), []byte(*c.summary), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := rundir.WallTime(dir); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }
