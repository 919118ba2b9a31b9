package report

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// readersReport writes two readers (provider human: one answers the
// truth, one misses T1 on every fifth record) and three models (first,
// random, and truth but for stage 3 and some T1s) in oracle mode none,
// and reports them: one report for the package, which its tests only
// read.
func readersReport(t *testing.T) string {
	t.Helper()
	return shared.readers.get(t, "readers", func(t *testing.T, tmp string) string { return writeReadersReport(t, tmp, true) })
}

// readersFixtureReport is readersReport, or with withReaders false the
// same report of the three models alone, written afresh in a directory
// of the test's own.
func readersFixtureReport(t *testing.T, withReaders bool) string {
	t.Helper()
	return writeReadersReport(t, t.TempDir(), withReaders)
}

// writeReadersReport writes readersFixtureReport's report under tmp.
func writeReadersReport(t *testing.T, tmp string, withReaders bool) string {
	t.Helper()
	recs := benchtest.Full(4)
	index := map[string]int{}
	for i, r := range recs {
		index[r.KeyID] = i
	}
	runs := []*analysistest.Run{
		{Provider: "human", Label: "reader1", Oracle: "none", Policy: analysistest.Oracle},
		{Provider: "human", Label: "reader2", Oracle: "none", Policy: domainPolicy(index, 0, false)},
		{Provider: "opensource", Label: "first", Oracle: "none", Policy: analysistest.First},
		{Provider: "opensource", Label: "random", Oracle: "none", Policy: analysistest.Random(3)},
		{Provider: "opensource", Label: "weak3", Oracle: "none", Policy: func(rec *benchmark.Record, p protocol.PlannedTurn) string {
			return domainPolicy(index, 1, true)(rec, p)
		}},
	}
	if !withReaders {
		runs = runs[2:]
	}
	dir := fixture(t, tmp, recs, runs...)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 300}}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadersAndModels: the report over two readers and three models has
// the readers-and-models part (the readers' mean with its interval, each
// model's difference, κ per question type, reading time per stage) and
// claim 3 with its rule, in report.md and in index.html (Chromium).
func TestReadersAndModels(t *testing.T) {
	t.Parallel()
	out := readersReport(t)
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, want := range []string{"## Readers and models", "Oracle none, study not recorded, unaided: 2 reader(s): reader1, reader2 (runs human_reader1, human_reader2).",
		"| Comparison | Path | Stage | Readers | Records | Estimate | 95 % CI | SE | df | p |",
		"| readers (mean) | revision_required | 1 | 2 |", "| opensource_first − readers | revision_required | 1 | 2 |", "| opensource_weak3 − readers | lesion_free | 1 | 2 |",
		"Fleiss' κ", "| T1 detection |", "Reading time per stage", "| 1 detection |",
		"**Claim 3 (models fall short of expert readers).**", "Claim 3 rule:", "- Oracle none, study not recorded, unaided: **" + analysis.Undecided + "**. too few readers for a verdict (2; at least 4 are needed); the numbers: 2 readers, 3 model(s)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// Readers are no models: claim 1 is assessed on the three models
	// alone, and claim 2, without domain groups, is not assessed.
	if !strings.Contains(md, "**Claim 1") || !strings.Contains(md, "claim 2 (medical vs general): not assessed") {
		t.Error("claim 1 is not assessed on the models, or claim 2 not said to be unassessed")
	}
	for _, row := range readCSV(t, filepath.Join(out, "ext_domain.csv"))[1:] {
		if row[0] != "all" || row[4] != "3" {
			t.Errorf("ext_domain.csv row %q: want the group all of the three models only", row)
		}
	}
	if strings.Contains(md, "Does the model help the readers?") {
		t.Error("an aided part without an aided study")
	}
	if os.Getenv("CHX_DUMP") != "" {
		t.Log(md)
	}
	// The first policy answers "yes": far below the readers on the
	// lesion-free path, ahead of them at detection on revision_required,
	// where reader2 misses some records.
	rows := readersSection(t, md)
	if c := rows["opensource_first − readers|revision_required|1"]; len(c) < 6 || !strings.HasPrefix(c[5], "+") {
		t.Errorf("first − readers, revision_required stage 1: %q", c)
	}
	if c := rows["opensource_first − readers|lesion_free|1"]; len(c) < 6 || !strings.HasPrefix(c[5], "-") {
		t.Errorf("first − readers, lesion_free stage 1: %q", c)
	}

	ctx := newBrowser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.ToSlash(filepath.Join(out, "index.html"))),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatal(err)
	}
	check := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := check(`(document.querySelector("#readers h2") || {}).textContent || ""`); got != "Readers and models" {
		t.Errorf("readers section heading %q", got)
	}
	if n, _ := strconv.Atoi(check(`String(document.querySelectorAll("#readers table tbody tr").length)`)); n < 4+benchmark.NumQuestions+4 {
		t.Errorf("readers tables have %d rows", n)
	}
	kappa := check(`Array.from(document.querySelectorAll("#readers table tbody tr")).filter(r => r.textContent.includes("T1 detection")).map(r => r.textContent).join("")`)
	if !strings.Contains(kappa, "records)") {
		t.Errorf("no κ for T1 in the page: %q", kappa)
	}
	claim := check(`Array.from(document.querySelectorAll("#findings .claim")).map(c => c.textContent).join("\n")`)
	if !strings.Contains(claim, "Claim 3 (models fall short of expert readers)") || !strings.Contains(claim, "Oracle none, study not recorded, unaided:") {
		t.Errorf("claim 3 not in the page: %q", claim)
	}
	if w := check(`String(document.documentElement.scrollWidth <= window.innerWidth)`); w != "true" {
		t.Error("the report is wider than the window")
	}
	if dir := os.Getenv("CHEXPERCEPT_SCREENSHOTS"); dir != "" {
		if b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
			os.WriteFile(filepath.Join(dir, "report-readers.png"), b, 0o644)
		}
	}
}

// readersSection is report.md's readers-and-models part: its table rows
// by their first cell, or for an MRMC row by "label|path|stage" (each
// occurs once there with one oracle mode and one aided study).
func readersSection(t *testing.T, md string) map[string][]string {
	t.Helper()
	_, part, ok := strings.Cut(md, "\n## Readers and models\n")
	if !ok {
		t.Fatal("report.md has no readers part")
	}
	part, _, _ = strings.Cut(part, "\n## ")
	rows := map[string][]string{}
	for _, line := range strings.Split(part, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		key := cells[0]
		if len(cells) == len(mrmcHeader) {
			key += "|" + cells[1] + "|" + cells[2]
		}
		rows[key] = cells
	}
	return rows
}

// csvFloat reads a float cell written with f6.
func csvFloat(t *testing.T, s string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("float %q: %v", s, err)
	}
	return x
}

// TestReadersCSV: with readers, the report writes the readers' data
// files with their headers, and every row gives the number its table
// cell in report.md prints; without readers it writes none of them.
func TestReadersCSV(t *testing.T) {
	t.Parallel()
	out := readersReport(t)
	rows := readersSection(t, string(read(t, filepath.Join(out, "report.md"))))
	cases := []struct {
		file   string
		header string
		// cell gives a row's table row label, column and expected text.
		cell func(ct *csvTable, row []string) (string, int, string)
	}{
		{"ext_reader_mrmc.csv", "comparison,oracle_mode,study,arm,pooled,path,stage,n_readers,n_records,estimate,se,df,ci_low,ci_high,p_value,na_reason,scores_file",
			func(ct *csvTable, row []string) (string, int, string) {
				r := mrmcRowOf(t, ct, row)
				return mrmcLabel(&r) + "|" + string(r.Path) + "|" + itoa(int(r.Stage)), 5, strings.Join(mrmcCells(&r)[4:], " | ")
			}},
		{"ext_reader_agreement.csv", "oracle_mode,study,arm,pooled,question,turn,n_readers,n_records,kappa",
			func(ct *csvTable, row []string) (string, int, string) {
				want := NAText
				if k := ct.get(row, "kappa"); k != NA {
					want = fmt.Sprintf("%.3f (%s records)", csvFloat(t, k), ct.get(row, "n_records"))
				}
				return ct.get(row, "turn") + " " + ct.get(row, "question"), 1, want
			}},
		{"ext_reader_time.csv", "oracle_mode,study,arm,pooled,stage,n_readers,n_records,time_s_mean,time_s_median",
			func(ct *csvTable, row []string) (string, int, string) {
				k, _ := strconv.Atoi(ct.get(row, "stage"))
				want := NAText
				if n := ct.get(row, "n_records"); n != "0" {
					want = fmt.Sprintf("mean %.1f, median %.1f (%s records)", csvFloat(t, ct.get(row, "time_s_mean")), csvFloat(t, ct.get(row, "time_s_median")), n)
				}
				return fmt.Sprintf("%d %s", k, benchmark.Stage(k).Name()), 1, want
			}},
	}
	if len(cases) != len(readersCSVs) {
		t.Errorf("%d cases for %d files %v", len(cases), len(readersCSVs), readersCSVs)
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			ct := readCSVTable(t, filepath.Join(out, c.file))
			if got := strings.Join(ct.header, ","); got != c.header {
				t.Errorf("header %s, want %s", got, c.header)
			}
			if len(ct.rows) == 0 {
				t.Fatal("no rows")
			}
			valid := 0
			for i, row := range ct.rows {
				if ct.get(row, "oracle_mode") != "none" {
					t.Errorf("row %d: oracle_mode %q", i+2, ct.get(row, "oracle_mode"))
				}
				label, col, want := c.cell(ct, row)
				cells, ok := rows[label]
				if !ok || col >= len(cells) {
					t.Errorf("row %d: no table row %q with column %d", i+2, label, col)
					continue
				}
				if c.file == "ext_reader_mrmc.csv" {
					cells = []string{strings.Join(cells[col:], " | ")}
					col = 0
				}
				if cells[col] != want {
					t.Errorf("row %d: the table prints %q, the file gives %q", i+2, cells[col], want)
				}
				if want != NAText {
					valid++
				}
			}
			if valid == 0 {
				t.Error("no row with a value")
			}
		})
	}

	// The models' rows name runs that samples.csv has in the mode.
	samples := readCSVTable(t, filepath.Join(out, SamplesCSV))
	runs := map[[2]string]bool{}
	for _, r := range samples.rows {
		runs[[2]string{samples.get(r, "run"), samples.get(r, "oracle_mode")}] = true
	}
	mr := readCSVTable(t, filepath.Join(out, "ext_reader_mrmc.csv"))
	for i, row := range mr.rows {
		if run, ok := strings.CutPrefix(mr.get(row, "comparison"), analysis.ComparisonModel); ok && !runs[[2]string{run, mr.get(row, "oracle_mode")}] {
			t.Errorf("ext_reader_mrmc.csv row %d: run %s is not in samples.csv", i+2, run)
		}
	}

	none := readersFixtureReport(t, false)
	for _, f := range readersCSVs {
		if _, err := os.Stat(filepath.Join(none, f)); !os.IsNotExist(err) {
			t.Errorf("without readers, %s: %v (want no file)", f, err)
		}
	}
}

// mrmcRowOf reads a row of ext_reader_mrmc.csv back.
func mrmcRowOf(t *testing.T, ct *csvTable, row []string) analysis.MRMCRow {
	t.Helper()
	num := func(col string) float64 {
		switch v := ct.get(row, col); v {
		case NA:
			return math.NaN()
		case "inf":
			return math.Inf(1)
		default:
			return csvFloat(t, v)
		}
	}
	count := func(col string) int {
		n, err := strconv.Atoi(ct.get(row, col))
		if err != nil {
			t.Fatalf("%s %q: %v", col, ct.get(row, col), err)
		}
		return n
	}
	text := func(col string) string {
		if v := ct.get(row, col); v != NA {
			return v
		}
		return ""
	}
	r := analysis.MRMCRow{Comparison: ct.get(row, "comparison"), OracleMode: ct.get(row, "oracle_mode"), Study: text("study"), Arm: text("arm"), Pooled: ct.get(row, "pooled") == "true",
		Path: benchmark.Path(ct.get(row, "path")), Stage: benchmark.Stage(count("stage")), NReaders: count("n_readers"), NRecords: count("n_records"),
		Estimate: num("estimate"), SE: num("se"), DF: num("df"), Lo: num("ci_low"), Hi: num("ci_high"), P: num("p_value"), NA: text("na_reason")}
	r.Model, _ = strings.CutPrefix(r.Comparison, analysis.ComparisonModel)
	return r
}
