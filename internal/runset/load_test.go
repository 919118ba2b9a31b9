package runset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// The three paths, as the analysis tables name them.
const (
	RR = benchmark.RevisionRequired
	RF = benchmark.RevisionFree
	LF = benchmark.LesionFree
)

func writeRuns(t *testing.T, runs ...*analysistest.Run) (resultsDir string, b *benchmark.Benchmark) {
	t.Helper()
	tmp := t.TempDir()
	b, err := analysistest.WriteBench(filepath.Join(tmp, "bench"), benchtest.Sample())
	if err != nil {
		t.Fatal(err)
	}
	resultsDir = filepath.Join(tmp, "results")
	for _, r := range runs {
		if _, err := r.Write(resultsDir, b); err != nil {
			t.Fatal(err)
		}
	}
	return resultsDir, b
}

func hasWarning(ws []string, parts ...string) bool {
	for _, w := range ws {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(w, p)
		}
		if ok {
			return true
		}
	}
	return false
}

func TestOracleAndFirstRuns(t *testing.T) {
	dir, _ := writeRuns(t,
		&analysistest.Run{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "baseline", Label: "first", Oracle: "none", Policy: analysistest.First},
	)
	set, err := Load(context.Background(), []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Runs) != 2 || set.Runs[0].Name != "baseline_first" || set.Runs[1].Name != "baseline_oracle" || set.Bench == nil {
		t.Fatalf("runs %+v", set.Runs)
	}
	if len(set.Warnings) != 0 {
		t.Errorf("warnings: %q", set.Warnings)
	}
	res, err := analysis.Analyze(context.Background(), set, analysis.Options{Bootstrap: 200})
	if err != nil {
		t.Fatal(err)
	}
	oracle := res.Runs[1]
	for _, c := range oracle.Stages {
		if c.Applicable && c.E2E.Valid && (c.E2E.K != c.E2E.N || c.OP.K != c.OP.N || c.Cond.K != c.Cond.N) {
			t.Errorf("oracle below 100%% in %s/%s/stage %d: %+v", c.Path, c.Lesion, c.Stage, c)
		}
	}
	for _, d := range oracle.Depth {
		if d.Valid && (d.Mean != float64(d.Max) || d.Lo != d.Mean || d.Hi != d.Mean) {
			t.Errorf("oracle depth %+v", d)
		}
	}
	if d := oracle.DepthOf(RR, "all"); d.N != 3 {
		t.Errorf("sample RR records: %d", d.N)
	}
	// The reference metrics agree with ours for the oracle.
	if rows := oracle.Run.Ref.SummaryRows("oracle"); rows[0][3] != "1.0" || rows[0][7] != "4.0" {
		t.Errorf("reference rows %q", rows[0])
	}
	// "Answer: 1" is Yes for detection: LF all wrong, positives right.
	first := res.Runs[0]
	if c := first.Stage(LF, "all", 1); c.E2E.K != 0 || c.E2E.N != 2 {
		t.Errorf("first LF %+v", c.E2E)
	}
	if res.Chance == nil || len(res.Pairs) != 0 {
		t.Fatalf("chance %v pairs %d", res.Chance, len(res.Pairs))
	}
	if u := first.Usage; u.NItems != 7 || u.NOK != 7 || u.NCalls != 1+1+6+2+9+5+9 || !isNaN(u.Cost) {
		t.Errorf("usage %+v", u)
	}
}

func isNaN(f float64) bool { return f != f }

func TestBadInputs(t *testing.T) {
	dir, b := writeRuns(t,
		&analysistest.Run{Provider: "openai", Label: "m", Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "azure", Label: "m", Oracle: "none", Policy: analysistest.First},
		&analysistest.Run{Provider: "x", Label: "cut", Oracle: "none", Policy: analysistest.First},
		&analysistest.Run{Provider: "x", Label: "gone", Oracle: "none", Policy: analysistest.First},
		&analysistest.Run{Provider: "x", Label: "strange", Oracle: "none", Policy: analysistest.First},
	)
	// Half-written last line.
	cut := filepath.Join(dir, "x_cut", "oracle_none", rundir.ResultsFile)
	data, _ := os.ReadFile(cut)
	os.WriteFile(cut, data[:len(data)-40], 0o644)
	// Missing results.jsonl: only the reference CSVs remain.
	os.Remove(filepath.Join(dir, "x_gone", "oracle_none", rundir.ResultsFile))
	// A key that is not in the benchmark, and a garbage line.
	strange := filepath.Join(dir, "x_strange", "oracle_none", rundir.ResultsFile)
	data, _ = os.ReadFile(strange)
	first := data[:strings.IndexByte(string(data), '\n')+1]
	data = append(data, []byte(strings.Replace(string(first), `"key_id":"edema_s50414267_negative_3"`, `"key_id":"edema_s99999999_negative_0"`, 1))...)
	data = append(data, []byte("{not json\n")...)
	os.WriteFile(strange, data, 0o644)
	// A shard folder given directly, and a path that does not exist.
	shard := filepath.Join(dir, "x_cut", "oracle_none", "shard-1-of-2")
	os.MkdirAll(shard, 0o755)

	set, err := Load(context.Background(), []string{dir, shard, filepath.Join(dir, "nope")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := set.Warnings
	for _, want := range [][]string{
		{cut, "last line is incomplete"},
		{filepath.Join(dir, "x_gone", "oracle_none", rundir.ResultsFile), "missing"},
		{"x_gone", "only in the reference CSVs"},
		{strange, "not in the benchmark", "edema_s99999999_negative_0"},
		{strange, "line 9"},
		{"shard-1-of-2", "shard folder"},
		{"nope", "cannot read input"},
		{"azure_m, openai_m", `reference label "m"`},
	} {
		if !hasWarning(w, want...) {
			t.Errorf("no warning with %q in %q", want, w)
		}
	}
	byName := map[string]*analysis.Run{}
	for _, r := range set.Runs {
		byName[r.Name] = r
	}
	if r := byName["x_cut"]; r == nil || len(r.Records) != 6 {
		t.Errorf("x_cut should keep 6 records")
	}
	if r := byName["x_gone"]; r == nil || r.Records != nil || r.Ref == nil {
		t.Errorf("x_gone: %+v", r)
	}
	if r := byName["x_strange"]; r == nil || len(r.Records) != len(b.Records) {
		t.Errorf("x_strange should keep the benchmark's records")
	}
	res, err := analysis.Analyze(context.Background(), set, analysis.Options{Bootstrap: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range res.Runs {
		if rr.Run.Name == "x_gone" && (rr.Scored || len(rr.Headlines()) != 0) {
			t.Error("x_gone scored")
		}
	}
}

func TestMixedBenchmarksAndModes(t *testing.T) {
	tmp := t.TempDir()
	b1, err := analysistest.WriteBench(filepath.Join(tmp, "b1"), benchtest.Sample())
	if err != nil {
		t.Fatal(err)
	}
	b2, err := analysistest.WriteBench(filepath.Join(tmp, "b2"), benchtest.Sample()[:5])
	if err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(tmp, "results")
	(&analysistest.Run{Provider: "p", Label: "a", Oracle: "none", Policy: analysistest.Oracle}).Write(res, b1)
	(&analysistest.Run{Provider: "p", Label: "b", Oracle: "none", Parse: "strict", Policy: analysistest.First}).Write(res, b2)
	(&analysistest.Run{Provider: "p", Label: "a", Oracle: "implicit", Policy: analysistest.First}).Write(res, b1)
	// Runs of two benchmarks are refused side by side, in one line that
	// names both; allowed, the set says so.
	_, err = Load(context.Background(), []string{res}, Options{})
	if !errors.Is(err, ErrMixed) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--allow-mixed-benchmarks") ||
		!strings.Contains(err.Error(), b1.Identity.Short()+": p_a (oracle implicit), p_a (oracle none)") || !strings.Contains(err.Error(), b2.Identity.Short()+": p_b") {
		t.Fatalf("mixed benchmarks: %v", err)
	}
	set, err := Load(context.Background(), []string{res}, Options{AllowMixed: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Runs) != 3 || set.Bench.SHA256 != b1.SHA256 {
		t.Fatalf("runs %d bench %v", len(set.Runs), set.Bench.Dir)
	}
	if !strings.Contains(set.Mixed, "--allow-mixed-benchmarks") || !hasWarning(set.Warnings, "oracle mode none: runs differ in parse mode") {
		t.Errorf("mixed %q, warnings %q", set.Mixed, set.Warnings)
	}
	r, err := analysis.Analyze(context.Background(), set, analysis.Options{Bootstrap: 50, Compare: [][2]string{{"p_a", "p_b"}, {"p_a", "zzz"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(r.Warnings, "compared runs p_a and p_b", "parse mode") || !hasWarning(r.Warnings, `no scored run named "zzz"`) {
		t.Errorf("warnings %q", r.Warnings)
	}
	// Pairs only within oracle mode none; paired on the 5 common keys.
	for _, p := range r.Pairs {
		if p.OracleMode != "none" || p.ModelA != "p_a" {
			t.Fatalf("pair %+v", p)
		}
		if p.Path == RR && p.Lesion == "all" && p.Metric == "depth" && p.NPaired != 2 {
			t.Errorf("RR paired %d", p.NPaired)
		}
	}
	if len(r.Modes()) != 2 || r.Label(r.Runs[0]) != "p_a [implicit]" {
		t.Errorf("modes %v label %q", r.Modes(), r.Label(r.Runs[0]))
	}
}

func TestErrorPolicyEndToEnd(t *testing.T) {
	errs := map[string]bool{"pneumonia_s57001234_positive_0": true, "edema_s50414267_negative_3": true}
	dir, _ := writeRuns(t, &analysistest.Run{Provider: "p", Label: "o", Oracle: "none", Policy: analysistest.Oracle, Errors: errs})
	set, err := Load(context.Background(), []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy       string
		nLF, kLF     int
		nRF, depthRF float64
	}{
		{analysis.ErrorsExclude, 1, 1, 1, 3}, // the errors are left out
		{analysis.ErrorsWrong, 2, 1, 2, 1.5}, // the errors count as all wrong
	} {
		res, err := analysis.Analyze(context.Background(), set, analysis.Options{ErrorPolicy: tc.policy, Bootstrap: 20})
		if err != nil {
			t.Fatal(err)
		}
		rr := res.Runs[0]
		if rr.Usage.NError != 2 || rr.Usage.NOK != 5 {
			t.Errorf("%s: usage %+v", tc.policy, rr.Usage)
		}
		lf := rr.Stage(LF, "all", 1).E2E
		rf := rr.DepthOf(RF, "all")
		if lf.N != tc.nLF || lf.K != tc.kLF || float64(rf.N) != tc.nRF || rf.Mean != tc.depthRF {
			t.Errorf("%s: LF %d/%d, RF depth %v over %d", tc.policy, lf.K, lf.N, rf.Mean, rf.N)
		}
	}
	if _, err := analysis.Analyze(context.Background(), set, analysis.Options{ErrorPolicy: "maybe"}); err == nil {
		t.Error("bad error policy accepted")
	}
}

// A run with results for fewer records than its manifest selected is
// still loaded, but says so; error records are finished records.
func TestIncompleteRuns(t *testing.T) {
	errs := map[string]bool{"pneumonia_s57001234_positive_0": true, "edema_s50414267_negative_3": true}
	const partial = "run p_r/oracle_none: 2 of 7 selected records have results (run incomplete or still running); its figures cover only those 2"
	const live = "run p_r/oracle_none: 2 of 7 selected records have results (still running: an eval holds its lock); its figures cover only those 2"
	for _, tc := range []struct {
		name               string
		run                analysistest.Run
		lock               string // "": no lock file; "file": an unheld one; "held": held by a writer
		manifest           func(string) string
		want               string // the one expected warning, "" for none
		wantMore           string // a second expected warning
		selected, finished int
		live               bool
	}{
		{name: "complete", run: analysistest.Run{Selected: 7}, selected: 7, finished: 7},
		{name: "complete, lock file left", run: analysistest.Run{Selected: 7}, lock: "file", selected: 7, finished: 7},
		{name: "manifest without selected_records", run: analysistest.Run{Finished: 2}, finished: 2},
		{name: "errors are finished", run: analysistest.Run{Selected: 7, Errors: errs}, selected: 7, finished: 7},
		{name: "interrupted", run: analysistest.Run{Selected: 7, Finished: 2}, want: partial, selected: 7, finished: 2},
		{name: "interrupted, lock file left", run: analysistest.Run{Selected: 7, Finished: 2}, lock: "file", want: partial, selected: 7, finished: 2},
		{name: "still running", run: analysistest.Run{Selected: 7, Finished: 2}, lock: "held", want: live, selected: 7, finished: 2, live: true},
		{name: "selected_records not a number", run: analysistest.Run{Finished: 2},
			manifest: func(m string) string { return strings.Replace(m, `"run_name"`, `"selected_records":"7","run_name"`, 1) },
			// A manifest member of the wrong type makes the manifest
			// unusable, so its benchmark path is unknown too.
			want:     "manifest.json: not a valid manifest: selected_records: a string, want a whole number; run settings taken from the directory names",
			wantMore: "no benchmark directory known", finished: 2},
		{name: "selected_records negative", run: analysistest.Run{Finished: 2},
			manifest: func(m string) string { return strings.Replace(m, `"run_name"`, `"selected_records":-1,"run_name"`, 1) },
			want:     "manifest.json: selected_records -1 is negative", finished: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := tc.run
			run.Provider, run.Label, run.Oracle, run.Policy = "p", "r", "none", analysistest.Oracle
			dir, _ := writeRuns(t, &run)
			rdir := filepath.Join(dir, "p_r", "oracle_none")
			if tc.manifest != nil {
				mpath := filepath.Join(rdir, rundir.ManifestFile)
				m, err := os.ReadFile(mpath)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(mpath, []byte(tc.manifest(string(m))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			switch tc.lock {
			case "file":
				if err := os.WriteFile(filepath.Join(rdir, rundir.LockFile), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			case "held":
				unlock, err := rundir.Lock(rdir)
				if err != nil {
					t.Fatal(err)
				}
				defer unlock()
				if u, err := rundir.ReadLock(rdir); err == nil {
					u()
					t.Skip("no advisory locks on this platform")
				}
			}
			set, err := Load(context.Background(), []string{dir}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if tc.wantMore != "" {
				want = append(want, tc.wantMore)
			}
			ok := len(set.Warnings) == len(want)
			for i := 0; ok && i < len(want); i++ {
				ok = strings.Contains(set.Warnings[i], want[i])
			}
			if !ok {
				t.Errorf("warnings %q, want %q", set.Warnings, want)
			}
			r := set.Runs[0]
			if r.Selected != tc.selected || r.Finished != tc.finished || r.Live != tc.live || len(r.Records) != tc.finished {
				t.Errorf("selected %d finished %d live %v records %d", r.Selected, r.Finished, r.Live, len(r.Records))
			}
			if r.Partial() != (tc.finished < tc.selected) {
				t.Errorf("Partial() = %v", r.Partial())
			}
			// The probe must not keep the directory locked: a writer can
			// still take it (after ours is released).
			if tc.lock == "file" {
				unlock, err := rundir.Lock(rdir)
				if err != nil {
					t.Errorf("lock after the report: %v", err)
				} else {
					unlock()
				}
			}
		})
	}
}

// TestUnfinishedRunLeftOut: a run directory that a merge, rescore,
// import or export began and did not finish (rundir.UnfinishedFile) is
// never read as a run: it is left out with a warning, whatever files it
// already holds.
func TestUnfinishedRunLeftOut(t *testing.T) {
	dir, _ := writeRuns(t,
		&analysistest.Run{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "baseline", Label: "first", Oracle: "none", Policy: analysistest.First},
	)
	unfinished := filepath.Join(dir, "baseline_first", "oracle_none")
	if err := rundir.MarkUnfinished(unfinished); err != nil {
		t.Fatal(err)
	}
	set, err := Load(context.Background(), []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Runs) != 1 || set.Runs[0].Name != "baseline_oracle" {
		t.Errorf("runs read: %+v", set.Runs)
	}
	if !hasWarning(set.Warnings, unfinished, "unfinished run", "left out") {
		t.Errorf("warnings %q do not name the unfinished run", set.Warnings)
	}
}
