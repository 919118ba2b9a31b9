package eval

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// TestRunDirRule: eval writes a run only into a run directory that is new,
// empty, holds a run already, or holds only debris of an interrupted write;
// a directory holding other files (a summary.json of someone else's, notes)
// is refused before anything in it is touched. The temporary files of its
// run files that a killed run left are removed by the run that goes ahead;
// a file that only resembles one stays.
func TestRunDirRule(t *testing.T) {
	tests := []struct {
		name    string
		files   []string // created in the run directory before the run
		refused string   // the entry named in the refusal; "" = the run goes ahead
		kept    []string // of files, those that are not a run's temporary files
	}{
		{"new", nil, "", nil},
		{"debris only", []string{rundir.LockFile, "results.jsonl.tmp-12"}, "", []string{rundir.LockFile}},
		{"killed renaming", []string{rundir.LockFile, "manifest.json.tmp-2386354097", "summary.json.tmp-1", "model_performance_summary.csv.tmp-4", "notes.txt.tmp-5", "results.jsonl.tmp-x"}, "", []string{rundir.LockFile, "notes.txt.tmp-5", "results.jsonl.tmp-x"}},
		{"foreign summary", []string{rundir.SummaryFile}, rundir.SummaryFile, nil},
		{"notes", []string{"a-notes.txt", rundir.LockFile}, "a-notes.txt", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(sampleBench, t.TempDir(), model(t, "baseline", "first"))
			limit := 2
			o.Selection.Limit, o.Oracle = &limit, protocol.OracleNone
			dir := rundir.Path(o.OutDir, "baseline_first", string(o.Oracle), nil)
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
				if !outdir.IsRegular(filepath.Join(dir, rundir.ManifestFile)) {
					t.Fatalf("no manifest in %s", dir)
				}
				for _, f := range tc.files {
					_, err := os.Lstat(filepath.Join(dir, f))
					if kept := slices.Contains(tc.kept, f); kept != (err == nil) {
						t.Errorf("%s: present %v after the run, want %v", f, err == nil, kept)
					}
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

// TestForeignResultsNotTruncated: a results.jsonl in a
// run directory without a manifest was not written by this run, so eval
// refuses it and changes no byte; a run that has its manifest repairs an
// unfinished last line only as far as a cut-short write of its own
// explains it, and never drops a complete record.
func TestForeignResultsNotTruncated(t *testing.T) {
	newOpts := func(t *testing.T) (Options, string) {
		o := baseOptions(sampleBench, t.TempDir(), model(t, "baseline", "first"))
		limit := 2
		o.Selection.Limit, o.Oracle = &limit, protocol.OracleNone
		return o, rundir.Path(o.OutDir, "baseline_first", string(o.Oracle), nil)
	}
	oneLine := `{"key_id":"x","note":"` + strings.Repeat("a", 26850) + `"}`
	for _, content := range []string{oneLine, "{\"a\":1}\n" + oneLine} {
		t.Run("no manifest", func(t *testing.T) {
			o, dir := newOpts(t)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, rundir.ResultsFile), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			before := outdirtest.Snapshot(t, o.OutDir)
			_, err := Run(context.Background(), o)
			var ref *outdir.Refused
			if !errors.As(err, &ref) || ref.Entry != rundir.ResultsFile || !strings.Contains(err.Error(), rundir.ManifestFile) {
				t.Fatalf("Run = %v, want a refusal naming %s", err, rundir.ResultsFile)
			}
			outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, o.OutDir))
		})
	}

	// A run of two records, then its last line is damaged in three ways.
	for _, tc := range []struct {
		name    string
		damage  func(data []byte) []byte
		refused bool
		lines   int // complete lines after the resumed run
	}{
		{"newline missing", func(d []byte) []byte { return d[:len(d)-1] }, false, 2},
		{"cut short", func(d []byte) []byte { return d[:len(d)-40] }, false, 2},
		{"foreign tail", func(d []byte) []byte { return append(d, "garbage, not ours"...) }, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, dir := newOpts(t)
			run(t, o)
			path := filepath.Join(dir, rundir.ResultsFile)
			orig := readFile(t, path)
			if err := os.WriteFile(path, tc.damage(slices.Clone(orig)), 0o644); err != nil {
				t.Fatal(err)
			}
			before := outdirtest.Snapshot(t, o.OutDir)
			var log strings.Builder
			o.Log = &log
			sum, err := Run(context.Background(), o)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "refusing to change the file") {
					t.Fatalf("Run = %v, want a refusal", err)
				}
				outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, o.OutDir))
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := readFile(t, path)
			if countLines(t, path) != tc.lines || !bytes.HasSuffix(got, []byte("\n")) {
				t.Fatalf("%d lines after the resumed run, want %d:\n%s", countLines(t, path), tc.lines, got)
			}
			if tc.name == "newline missing" && (!bytes.Equal(got, orig) || sum.AlreadyDone != 2) {
				t.Errorf("the complete record was not kept as it was (%d records already done)", sum.AlreadyDone)
			}
			if !strings.Contains(log.String(), "warning: "+path+": line 2") {
				t.Errorf("no warning about the repair in the log:\n%s", log.String())
			}
		})
	}
}
