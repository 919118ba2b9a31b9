package runs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// copyAsShard copies the run in src to dir with selection.shard set to
// i/n in its manifest (the records are left as they are).
func copyAsShard(t *testing.T, src, dir string, i, n int) {
	t.Helper()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Selection.Shard = &results.Shard{I: i, N: n}
	b, _ := m.Marshal()
	if err := os.WriteFile(filepath.Join(dir, rundir.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rescore and merge refuse a results.jsonl without one readable record
// (naming the file and the line) instead of writing an empty run.
func TestNoRecordsRefused(t *testing.T) {
	bench := protocoltest.Bench(t)
	src := scriptedRun(t, bench, t.TempDir(), glmModel())
	tests := []struct {
		name    string
		results *string // nil: no results.jsonl
		want    string
	}{
		{"torn line only", ptr("not json"), "results.jsonl: line 1: not a complete record"},
		{"torn line after blank lines", ptr("\n\nnot json"), "results.jsonl: line 3: not a complete record"},
		{"bad line", ptr("not json\n"), "results.jsonl: line 1:"},
		{"empty", ptr(""), "results.jsonl: empty"},
		{"missing", nil, "results.jsonl: no such file"},
	}
	write := func(t *testing.T, dir string, content *string) {
		t.Helper()
		if content == nil {
			os.Remove(filepath.Join(dir, rundir.ResultsFile))
		} else if err := os.WriteFile(filepath.Join(dir, rundir.ResultsFile), []byte(*content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range tests {
		t.Run("rescore/"+tc.name, func(t *testing.T) {
			out := t.TempDir()
			dir := filepath.Join(out, "opensource_glm-4v", "oracle_none")
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			write(t, dir, tc.results)
			_, err := Rescore(context.Background(), dir, RescoreOptions{Mode: "strict", Bench: bench})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(out, "opensource_glm-4v_strict")); !os.IsNotExist(err) {
				t.Errorf("the rescored run directory exists (stat: %v)", err)
			}
		})
		t.Run("merge/"+tc.name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "opensource_glm-4v", "oracle_none")
			for i := 1; i <= 2; i++ {
				d := filepath.Join(run, "shard-"+strconv.Itoa(i)+"-of-2")
				copyAsShard(t, src, d, i, 2)
				write(t, d, tc.results)
			}
			out := t.TempDir()
			_, err := Merge(context.Background(), []string{run}, MergeOptions{Out: out})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if ents, _ := os.ReadDir(out); len(ents) != 0 {
				t.Errorf("a run was written: %v", ents)
			}
		})
	}
}

func ptr(s string) *string { return &s }
