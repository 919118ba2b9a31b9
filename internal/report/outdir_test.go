package report

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// TestReportRefusesForeignDirectory: a report into a directory it did not
// write (a run directory, someone's folder, a file) fails with a one-line
// error naming it and changes no byte or modification time there.
func TestReportRefusesForeignDirectory(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	results := fixture(t, tmp, benchtest.Sample(), &analysistest.Run{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle})
	runDir := filepath.Join(results, "baseline_oracle", "oracle_none")
	mine := filepath.Join(tmp, "mine")
	if err := os.MkdirAll(filepath.Join(mine, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, "index.html"), []byte("my home page"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ out, want string }{
		{runDir, `it holds "all_results.json"`},
		{mine, `it holds "index.html" (and 1 more entry)`},
		{file, "is not a directory"},
	} {
		before := outdirtest.Snapshot(t, tmp)
		_, err := Generate(context.Background(), Config{Load: runset.Loader([]string{results}, runset.Options{}), Out: tc.out, Analysis: analysis.Options{Bootstrap: 20}})
		var r *outdir.Refused
		if !errors.As(err, &r) || !strings.Contains(err.Error(), tc.out) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want a one-line refusal: %s", tc.out, err, tc.want)
		}
		outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, tmp))
	}
}

// TestReportRewritesOwnDirectory: a report reruns into its own earlier
// output; without the marker the same files are a foreign folder
// (index.html, report.md and summary.json alone do not make a folder a
// report's).
func TestReportRewritesOwnDirectory(t *testing.T) {
	t.Parallel()
	tmp, out := sampleReport(t, Config{})
	if _, err := os.Stat(filepath.Join(out, MarkerName)); err != nil {
		t.Fatalf("no marker: %v", err)
	}
	first := read(t, filepath.Join(out, "report.md"))
	cfg := Config{Load: runset.Loader([]string{filepath.Join(tmp, "results")}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 200}, Report: Options{Version: "test"}}
	if _, err := Generate(context.Background(), cfg); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if err := os.Remove(filepath.Join(out, MarkerName)); err != nil {
		t.Fatal(err)
	}
	if string(read(t, filepath.Join(out, "report.md"))) != string(first) {
		t.Error("report.md differs between runs")
	}
	before := outdirtest.Snapshot(t, out)
	var r *outdir.Refused
	if _, err := Generate(context.Background(), cfg); !errors.As(err, &r) {
		t.Fatalf("rerun into a report without the marker: %v, want a refusal", err)
	}
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, out))
}

// TestReportRefusesLinksInside: an earlier report in
// which report.md is a link to an outside file and data/ a link to an
// outside directory is refused before anything is written; neither the
// report nor the outside changes.
func TestReportRefusesLinksInside(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, entry string }{
		{"report.md", "report.md"},
		{"data", "data"},
		{"fifo", "ext_depth.csv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp, out := sampleReport(t, Config{})
			outside := filepath.Join(tmp, "outside")
			if err := os.MkdirAll(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, "precious.txt"), []byte("precious"), 0o644); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(out, tc.entry)
			if err := os.RemoveAll(victim); err != nil {
				t.Fatal(err)
			}
			var err error
			switch tc.name {
			case "report.md":
				err = os.Symlink(filepath.Join(outside, "precious.txt"), victim)
			case "data":
				err = os.Symlink(outside, victim)
			case "fifo":
				err = syscall.Mkfifo(victim, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			before := outdirtest.Snapshot(t, tmp)
			cfg := Config{Load: runset.Loader([]string{filepath.Join(tmp, "results")}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 20}}
			_, err = Generate(context.Background(), cfg)
			var r *outdir.Refused
			if !errors.As(err, &r) || r.Entry != tc.entry || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want a one-line refusal naming %s", err, tc.entry)
			}
			outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, tmp))
		})
	}
}

// TestReportRefusesUnmarkedLookalike: a folder holding
// only index.html, report.md and summary.json, with no marker, is not a
// report's; all three stay as they were.
func TestReportRefusesUnmarkedLookalike(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	results := fixture(t, tmp, benchtest.Sample(), baselineRuns()...)
	mine := filepath.Join(tmp, "mine")
	for _, n := range []string{"index.html", "report.md", "summary.json"} {
		if err := os.MkdirAll(mine, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mine, n), []byte("mine: "+n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := outdirtest.Snapshot(t, mine)
	_, err := Generate(context.Background(), Config{Load: runset.Loader([]string{results}, runset.Options{}), Out: mine, Analysis: analysis.Options{Bootstrap: 20}})
	var r *outdir.Refused
	if !errors.As(err, &r) || !strings.Contains(err.Error(), MarkerName) {
		t.Fatalf("err = %v, want a refusal naming the marker", err)
	}
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, mine))
}

// TestReportAfterInterruptedReport: what a report killed part-way leaves
// — the marker alone, cut short (written first, in place), and the
// temporary files of the writes then in flight — is recognised by the
// rerun as its own: the rerun completes, removes those temporary files
// and writes what an uninterrupted report writes.
func TestReportAfterInterruptedReport(t *testing.T) {
	t.Parallel()
	tmp, ref := sampleReport(t, Config{})
	cfg := Config{Load: runset.Loader([]string{filepath.Join(tmp, "results")}, runset.Options{}), Analysis: analysis.Options{Bootstrap: 200}, Report: Options{Version: "test"}}
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"marker cut short", map[string]string{MarkerName: ""}},
		{"plots in flight", map[string]string{MarkerName: markerText, "plot_depth.png.tmp-123": "half", "data/x.json.tmp-9": "half", "summary.json": "{"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "report")
			for rel, s := range tc.files {
				p := filepath.Join(out, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg.Out = out
			if _, err := Generate(context.Background(), cfg); err != nil {
				t.Fatalf("rerun after an interrupted report: %v", err)
			}
			err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
				if err == nil && strings.Contains(d.Name(), ".tmp-") {
					t.Errorf("left behind: %s", p)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"report.md", "summary.json"} {
				if string(read(t, filepath.Join(out, f))) != string(read(t, filepath.Join(ref, f))) {
					t.Errorf("%s differs from an uninterrupted report's", f)
				}
			}
		})
	}
}

// TestReportRerunRemovesEarlierFiles: a report folder holds one report. A
// rerun over fewer runs removes the earlier report's files it does not
// write (the left-out model's plots), keeps the files it writes again and
// every file the earlier report did not list (a note of the user's, a
// file from a report written before the list), and lists what it wrote.
func TestReportRerunRemovesEarlierFiles(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	bench := benchtest.Sample()
	both := fixture(t, filepath.Join(tmp, "both"), bench,
		&analysistest.Run{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "baseline", Label: "first", Oracle: "none", Policy: analysistest.First})
	one := fixture(t, filepath.Join(tmp, "one"), bench,
		&analysistest.Run{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle})
	out := filepath.Join(tmp, "report")
	gen := func(results string) {
		t.Helper()
		if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{results}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 20}}); err != nil {
			t.Fatal(err)
		}
	}
	gen(both)
	firstOnly, err := filepath.Glob(filepath.Join(out, "plot_*baseline_first*"))
	if err != nil || len(firstOnly) == 0 {
		t.Fatalf("the two-run report drew no plot of baseline_first (%v)", err)
	}
	for name, data := range map[string]string{"notes.md": "mine\n", "old_unlisted.csv": "a report before the list\n"} {
		if err := os.WriteFile(filepath.Join(out, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen(one)
	for _, p := range firstOnly {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s of the earlier report is still there", filepath.Base(p))
		}
	}
	for _, kept := range []string{"notes.md", "old_unlisted.csv", "report.md", "summary.json", "index.html"} {
		if _, err := os.Lstat(filepath.Join(out, kept)); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	marker := string(read(t, filepath.Join(out, MarkerName)))
	if !strings.HasPrefix(marker, markerText) || !strings.Contains(marker, "\nreport.md\n") || strings.Contains(marker, "notes.md") || strings.Contains(marker, "baseline_first") {
		t.Errorf("marker does not list what the second report wrote:\n%.400s", marker)
	}
}

// TestEndedContext: a report whose context has ended stops with its
// error and writes nothing; one stopped while writing (Write) stops
// before its next file, and the same report run again writes it whole.
func TestEndedContext(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	results := fixture(t, tmp, benchtest.Sample(), &analysistest.Run{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle})
	out := filepath.Join(tmp, "report")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := Config{Load: runset.Loader([]string{results}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 20}}
	if _, err := Generate(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("Generate after the end: %v, want context.Canceled", err)
	}
	if _, err := os.Lstat(out); err == nil {
		t.Fatal("the stopped report made its folder")
	}
	res, err := Generate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := Write(ctx, res, out, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write after the end: %v, want context.Canceled", err)
	}
	if names := files(t, out); len(names) != 1 || names[0] != MarkerName {
		t.Errorf("the stopped report holds %q, want its marker only", names)
	}
	if err := Write(context.Background(), res, out, Options{}); err != nil {
		t.Fatalf("the same report again: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err != nil {
		t.Errorf("the report written again: %v", err)
	}
}

// files lists the names below dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
