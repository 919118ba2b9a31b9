package eval

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
)

// TestRunDirRule: eval writes a run only into a run directory that is new,
// empty, holds a run already, or holds only debris of an interrupted write;
// a directory holding other files (a summary.json of someone else's, notes)
// is refused before anything in it is touched.
func TestRunDirRule(t *testing.T) {
	tests := []struct {
		name    string
		files   []string // created in the run directory before the run
		refused string   // the entry named in the refusal; "" = the run goes ahead
	}{
		{"new", nil, ""},
		{"debris only", []string{results.LockFile, "results.jsonl.tmp-12"}, ""},
		{"foreign summary", []string{results.SummaryFile}, results.SummaryFile},
		{"notes", []string{"a-notes.txt", results.LockFile}, "a-notes.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(sampleBench, t.TempDir(), model(t, "baseline", "first"))
			limit := 2
			o.Selection.Limit, o.Oracle = &limit, protocol.OracleNone
			dir := RunDir(o.OutDir, "baseline_first", o.Oracle, nil)
			if tc.files != nil {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for _, f := range tc.files {
					if err := os.WriteFile(filepath.Join(dir, f), []byte("not chexpercept's\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			before := outdirtest.Snapshot(t, o.OutDir)
			_, err := Run(context.Background(), o)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if !outdir.IsRegular(filepath.Join(dir, results.ManifestFile)) {
					t.Fatalf("no manifest in %s", dir)
				}
				return
			}
			var ref *outdir.Refused
			if !errors.As(err, &ref) || ref.Entry != tc.refused || !strings.Contains(err.Error(), dir) {
				t.Fatalf("Run = %v, want a refusal naming %s and %q", err, dir, tc.refused)
			}
			outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, o.OutDir))
		})
	}
}
