package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/goldentest"
	"github.com/chexpercept/chexpercept/internal/imagefile/imagefiletest"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// sampleReport writes the report of the baseline runs over the sample
// benchmark and returns the temporary root and the report directory.
func sampleReport(t *testing.T, cfg Config) (string, string) {
	t.Helper()
	tmp := t.TempDir()
	dir := fixture(t, tmp, benchtest.Sample(), baselineRuns()...)
	out := filepath.Join(tmp, "report")
	cfg.Load, cfg.Out = runset.Loader([]string{dir}, runset.Options{}), out
	if cfg.Analysis.Bootstrap == 0 {
		cfg.Analysis.Bootstrap = 200
	}
	cfg.Report.Version = "test"
	if _, err := Generate(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return tmp, out
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGolden pins the exact bytes of the tables, summary.json and
// report.md for the baseline runs over the sample benchmark.
func TestGolden(t *testing.T) {
	t.Parallel()
	tmp, out := sampleReport(t, Config{Analysis: analysis.Options{Compare: [][2]string{{"baseline_oracle", "baseline_random"}}}})
	for _, name := range []string{
		"all_models_oracle_none/all_models_summary.csv",
		"all_models_oracle_none/all_models_contour_revision_detail.csv",
		"all_models_oracle_none/all_models_attribute_extraction_detail.csv",
		"all_models_oracle_implicit/all_models_summary.csv",
		"ext_stage_accuracy.csv", "ext_depth.csv", "ext_subquestion.csv", "ext_parse.csv",
		"ext_usage.csv", "ext_chance.csv", "ext_pairwise.csv", "summary.json", "report.md",
	} {
		got := bytes.ReplaceAll(read(t, filepath.Join(out, name)), []byte(filepath.ToSlash(tmp)), []byte("$TMP"))
		golden := filepath.Join("testdata", "golden", strings.ReplaceAll(name, "/", "__"))
		goldentest.Check(t, golden, got)
	}
}

// The all-models CSVs equal what the reference computation gives on each
// run's all_results.json, with the reference's format.
func TestRefCSVsMatchAllResults(t *testing.T) {
	t.Parallel()
	tmp, out := sampleReport(t, Config{})
	var want [][]string
	for _, name := range []string{"baseline_oracle", "baseline_random"} {
		data := read(t, filepath.Join(tmp, "results", name, "oracle_none", rundir.AllResultsFile))
		v, err := ojson.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		var entries []*ojson.Value
		for _, m := range v.O {
			entries = append(entries, m.Value)
		}
		want = append(want, results.RefMetricsFromExport(entries).SummaryRows(results.RefLabel(name))...)
	}
	got := read(t, filepath.Join(out, "all_models_oracle_none", "all_models_summary.csv"))
	if !bytes.Equal(got, results.CSV(results.RefSummaryHeader, want)) {
		t.Errorf("all_models_summary.csv:\n%s", got)
	}
	lines := strings.Split(string(got), "\r\n")
	if len(lines) != 1+12+1 || lines[1] != "revision_required,oracle,end_to_end,1.0,1.0,1.0,1.0,4.0" || lines[5] != "lesion_free,oracle,end_to_end,1.0,0.0,0.0,0.0,1.0" {
		t.Errorf("rows: %q", lines)
	}
}

func TestExtTables(t *testing.T) {
	t.Parallel()
	_, out := sampleReport(t, Config{})
	stage := string(read(t, filepath.Join(out, "ext_stage_accuracy.csv")))
	if !strings.HasPrefix(stage, "run,model,provider,oracle_mode,parse_mode,path,lesion,stage,setting,applicable,n_records,n_correct,accuracy,ci_low,ci_high\r\n") {
		t.Errorf("header: %q", stage[:120])
	}
	for _, want := range []string{
		// Not applicable: counts 0, rates NA, never 0.0.
		"baseline_oracle,oracle,baseline,none,reference,lesion_free,all,2,end_to_end,false,0,0,NA,NA,NA\r\n",
		"baseline_oracle,oracle,baseline,none,reference,revision_required,cardiomegaly,4,end_to_end,false,0,0,NA,NA,NA\r\n",
		// Applicable without records: NA shares.
		"baseline_oracle,oracle,baseline,none,reference,lesion_free,pneumonia,1,end_to_end,true,0,0,NA,NA,NA\r\n",
		// Wilson for 3/3.
		"baseline_oracle,oracle,baseline,none,reference,revision_required,all,1,end_to_end,true,3,3,1.000000,0.438503,1.000000\r\n",
	} {
		if !strings.Contains(stage, want) {
			t.Errorf("ext_stage_accuracy.csv lacks %q", want)
		}
	}
	depth := string(read(t, filepath.Join(out, "ext_depth.csv")))
	for _, want := range []string{
		"baseline_oracle,oracle,baseline,none,reference,revision_required,all,3,4.000000,4.000000,4.000000,4,1.000000\r\n",
		"baseline_oracle,oracle,baseline,none,reference,lesion_free,pneumonia,0,NA,NA,NA,1,NA\r\n",
	} {
		if !strings.Contains(depth, want) {
			t.Errorf("ext_depth.csv lacks %q", want)
		}
	}
	if p := string(read(t, filepath.Join(out, "ext_pairwise.csv"))); p != "run_a,run_b,oracle_mode,path,lesion,metric,value_a,value_b,difference,ci_low,ci_high,n_paired\r\n" {
		t.Errorf("ext_pairwise.csv without comparisons: %q", p)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, want := range []string{"## Oracle mode: none", "(oracle none)", "| N/A |", "*chance*", "| baseline_oracle | 3 | 100.0 [43.9–100.0] |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(md, "0.0 [") && strings.Contains(md, "| 0.0 |") {
		t.Log("note: zero accuracies are legitimate for the first-option baseline")
	}
	// summary.json: §6 writer, model order, nulls for n = 0.
	sj := read(t, filepath.Join(out, "summary.json"))
	v, err := ojson.Parse(sj)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sj, ojson.Marshal(v)) {
		t.Error("summary.json is not in the §6 format")
	}
	var keys []string
	for _, m := range v.O {
		keys = append(keys, m.Key)
	}
	if !slices.Equal(keys, []string{"schema_version", "runs", "inputs", "warnings", "benchmark_build", "banners", "mixed_benchmarks"}) {
		t.Errorf("keys %v", keys)
	}
	var models []string
	for _, m := range v.Get("runs").A {
		models = append(models, m.Get("run").S+"/"+m.Get("model").S+"/"+m.Get("oracle_mode").S)
	}
	if !slices.Equal(models, []string{"baseline_first/first/implicit", "baseline_oracle/oracle/none", "baseline_random/random/none"}) {
		t.Errorf("models %v", models)
	}
	first := v.Get("runs").A[1].Get("metrics").A[0]
	if first.Get("path").S != "revision_required" || first.Get("metric").S != "e2e_1" || first.Get("value").N != "1.0" {
		t.Errorf("first metric %s", ojson.MarshalCompact(first))
	}
}

// Same inputs and seed give the same bytes at any parallelism.
func TestDeterministicAcrossWorkers(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dir := fixture(t, tmp, benchtest.Sample(), baselineRuns()...)
	outs := []string{filepath.Join(tmp, "r1"), filepath.Join(tmp, "r4")}
	for i, w := range []int{1, 4} {
		cfg := Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: outs[i], Analysis: analysis.Options{Bootstrap: 300, Workers: w, CompareBest: true}, Report: Options{Workers: w}}
		if _, err := Generate(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	filepath.WalkDir(outs[0], func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(outs[0], p)
		if !bytes.Equal(read(t, p), read(t, filepath.Join(outs[1], rel))) {
			t.Errorf("%s differs between 1 and 4 workers", rel)
		}
		n++
		return nil
	})
	if n < 30 {
		t.Errorf("compared only %d files", n)
	}
}

// Bad inputs still give a report that says what it left out.
func TestReportWithBadInputs(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dir := fixture(t, tmp, benchtest.Sample(),
		&analysistest.Run{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "x", Label: "broken", Oracle: "none", Policy: analysistest.First},
	)
	os.Remove(filepath.Join(dir, "x_broken", "oracle_none", rundir.ResultsFile))
	os.Remove(filepath.Join(dir, "x_broken", "oracle_none", rundir.AllResultsFile))
	out := filepath.Join(tmp, "report")
	res, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir, filepath.Join(tmp, "missing")}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 50}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 1 {
		t.Fatalf("runs %d", len(res.Runs))
	}
	sj := string(read(t, filepath.Join(out, "summary.json")))
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, want := range []string{"x_broken/oracle_none/results.jsonl: missing", "run left out", "missing: cannot read input"} {
		if !strings.Contains(sj, want) || !strings.Contains(md, want) {
			t.Errorf("summary.json / report.md do not say %q", want)
		}
	}
	// Nothing usable at all is an error.
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{filepath.Join(tmp, "missing")}, runset.Options{}), Out: out}); err == nil {
		t.Error("no error without any run")
	}
}

func TestEmbedImages(t *testing.T) {
	t.Parallel()
	_, out := sampleReport(t, Config{Report: Options{EmbedImages: true}})
	html := string(read(t, filepath.Join(out, "index.html")))
	if !strings.Contains(html, `"images":"img/"`) {
		t.Error("index does not point at img/")
	}
	thumb := filepath.Join(out, "img", "chexpercept", "opacity_ph0007_positive_0", "detection_qa", "xray.png")
	if fi, err := os.Stat(thumb); err != nil || fi.Size() == 0 {
		t.Errorf("thumbnail %s: %v", thumb, err)
	}
}

func TestLinkedImagesAndSidecars(t *testing.T) {
	t.Parallel()
	_, out := sampleReport(t, Config{})
	html := string(read(t, filepath.Join(out, "index.html")))
	if !strings.Contains(html, `"images":"../bench/"`) {
		t.Error("index does not link the benchmark relatively")
	}
	for _, bad := range []string{"http://", "https://", "<link "} {
		if strings.Contains(html, bad) {
			t.Errorf("index.html references an external asset (%q)", bad)
		}
	}
	js := string(read(t, filepath.Join(out, "data", "c0.js")))
	if !strings.HasPrefix(js, "CHX.chunk(0,[{") || !strings.HasSuffix(js, ");\n") {
		t.Errorf("sidecar: %.80q", js)
	}
}

func TestSafeImage(t *testing.T) {
	t.Parallel()
	tests := []struct{ key, rel, want string }{
		{"a_1", "chexpercept/a_1/detection_qa/xray.png", "chexpercept/a_1/detection_qa/xray.png"},
		{"a_1", "chexpercept/a_1/../b_2/x.png", ""},
		{"a_1", "chexpercept/b_2/x.png", ""},
		{"a_1", "/etc/passwd", ""},
		{"a_1", "chexpercept/a_1/x/./y.png", ""},
	}
	for _, tc := range tests {
		if got := safeImage(tc.key, tc.rel); got != tc.want {
			t.Errorf("safeImage(%q, %q) = %q, want %q", tc.key, tc.rel, got, tc.want)
		}
	}
}

// A run with results for only part of its selection is reported, marked
// in the leaderboard and named in every warnings list; complete runs,
// with or without error records, are reported exactly as before.
func TestIncompleteRunReport(t *testing.T) {
	t.Parallel()
	const warn = "run baseline_oracle/oracle_none: 2 of 7 selected records have results (run incomplete or still running); its figures cover only those 2"
	errs := map[string]bool{"pneumonia_s57001234_positive_0": true}
	for _, tc := range []struct {
		name   string
		edit   func(runs []*analysistest.Run)
		golden bool     // report.md and summary.json equal TestGolden's
		warn   string   // the one warning expected, "" for none
		rows   []string // report.md leaderboard rows (prefixes)
	}{
		{name: "complete", edit: func([]*analysistest.Run) {}, golden: true},
		{name: "interrupted", edit: func(runs []*analysistest.Run) { runs[0].Finished = 2 }, warn: warn,
			rows: []string{"| baseline_oracle (partial 2/7) | reference | 2 | 0 |", "| baseline_random | reference | 7 | 0 |"}},
		{name: "error records", edit: func(runs []*analysistest.Run) { runs[0].Errors = errs },
			rows: []string{"| baseline_oracle | reference | 7 | 1 |", "| baseline_random | reference | 7 | 0 |"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := baselineRuns()
			for _, r := range runs {
				r.Selected = 7 // every record of the sample benchmark
			}
			tc.edit(runs)
			tmp := t.TempDir()
			dir := fixture(t, tmp, benchtest.Sample(), runs...)
			out := filepath.Join(tmp, "report")
			res, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Report: Options{Version: "test"},
				Analysis: analysis.Options{Bootstrap: 200, Compare: [][2]string{{"baseline_oracle", "baseline_random"}}}})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if tc.warn != "" {
				want = []string{tc.warn}
			}
			if !slices.Equal(res.Warnings, want) {
				t.Errorf("warnings %q, want %q", res.Warnings, want)
			}
			md := string(read(t, filepath.Join(out, "report.md")))
			sj := string(read(t, filepath.Join(out, "summary.json")))
			html := string(read(t, filepath.Join(out, "index.html")))
			if tc.warn != "" {
				if !strings.Contains(md, "- "+tc.warn+"\n") || !strings.Contains(sj, tc.warn) || !strings.Contains(html, "<li>"+tc.warn+"</li>") {
					t.Error("the warning is missing from report.md, summary.json or index.html")
				}
				if !strings.Contains(html, `<th scope="row">baseline_oracle (partial 2/7)</th>`) {
					t.Error("index.html leaderboard does not mark the partial run")
				}
			}
			for _, row := range tc.rows {
				if !strings.Contains(md, "\n"+row) {
					t.Errorf("report.md lacks the row %q", row)
				}
			}
			if tc.golden {
				for _, name := range []string{"report.md", "summary.json"} {
					got := bytes.ReplaceAll(read(t, filepath.Join(out, name)), []byte(filepath.ToSlash(tmp)), []byte("$TMP"))
					if !bytes.Equal(got, read(t, filepath.Join("testdata", "golden", name))) {
						t.Errorf("%s of complete runs differs from the golden file", name)
					}
				}
			}
		})
	}
}

// TestThumbnailBounded: a decompression bomb, a FIFO or a symbolic link in
// the benchmark is an error naming the file; nothing is decoded or blocks.
func TestThumbnailBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bomb := filepath.Join(dir, "bomb.png")
	os.WriteFile(bomb, imagefiletest.BombPNG(100000, 100000), 0o644)
	fifo := filepath.Join(dir, "fifo.png")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	link := filepath.Join(dir, "link.png")
	os.Symlink("bomb.png", link)
	for src, want := range map[string]string{
		bomb: bomb + ": PNG size 100000×100000 outside 1…16384 per side",
		fifo: fifo + ": not a regular file (named pipe)",
		link: link + ": is a symbolic link",
	} {
		err := thumbnail(nil, src, filepath.Join(dir, "out"), filepath.Base(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("thumbnail(%s) = %v, want %q", filepath.Base(src), err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a thumbnail was written for a refused image")
	}
}
