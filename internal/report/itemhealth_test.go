package report

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/browsertest"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// plantedReport writes the report of five fake models that answer the
// true label of one mislabeled item (plus the oracle baseline, which must
// not count) and returns the report directory and the planted key.
func plantedReport(t *testing.T) (string, string) {
	t.Helper()
	return plantedReportWith(t, false)
}

// plantedReportWith is plantedReport, with readers when withReaders is
// set: two who answer the true label, one the benchmark's (planted)
// label, all three answering alone, and an aided arm that must not be
// shown (it saw a model's answers).
func plantedReportWith(t *testing.T, withReaders bool) (string, string) {
	t.Helper()
	tmp := t.TempDir()
	recs := benchtest.Full(1)
	key, truth := analysistest.PlantMislabel(recs)
	runs := []*analysistest.Run{{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle}}
	for i := 1; i <= 5; i++ {
		runs = append(runs, &analysistest.Run{Provider: "fake", Label: fmt.Sprint("model", i), Oracle: "none", Policy: truth})
	}
	if withReaders {
		arm := func(reader, arm string) *results.ReadingArm {
			return &results.ReadingArm{Study: "s", Reader: reader, Arm: arm, AidRun: "fake_model1"}
		}
		runs = append(runs,
			&analysistest.Run{Provider: "human", Label: "ana_unaided", Oracle: "none", Policy: truth, Reading: arm("ana", results.ArmUnaided)},
			&analysistest.Run{Provider: "human", Label: "ana_aided", Oracle: "none", Policy: truth, Reading: arm("ana", results.ArmAided)},
			&analysistest.Run{Provider: "human", Label: "ben", Oracle: "none", Policy: truth},
			&analysistest.Run{Provider: "human", Label: "cy", Oracle: "none", Policy: analysistest.Oracle})
	}
	dir := fixture(t, tmp, recs, runs...)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 20}, Report: Options{Version: "test"}}); err != nil {
		t.Fatal(err)
	}
	return out, key
}

func TestItemHealthOutputs(t *testing.T) {
	t.Parallel()
	out, key := plantedReport(t)
	flagged := string(read(t, filepath.Join(out, FlaggedItemsFile)))
	lines := strings.Split(strings.TrimSuffix(flagged, "\r\n"), "\r\n")
	want := "none," + key + ",comparison,T9,unanimous_wrong,5,1.000000,1,4,0.000000,NA,"
	if len(lines) != 2 || lines[0] != strings.Join(FlaggedHeader, ",") || !strings.HasPrefix(lines[1], want) ||
		!strings.HasSuffix(lines[1], ",about the same in both lungs,present in one lung only,0,0,0") {
		t.Errorf("flagged_items.csv:\n%s\nwant one row starting %q", flagged, want)
	}
	stats := string(read(t, filepath.Join(out, ItemStatsFile)))
	if n := strings.Count(stats, "\r\n"); n < 100 || !strings.Contains(stats, "none,"+key+",") {
		t.Errorf("item_stats.csv: %d lines", n)
	}
	// An unflagged item's reason is the value none, never an empty cell;
	// the flagged one names its flag.
	if !strings.HasSuffix(stats, ","+NoFlag+"\r\n") || strings.Contains(stats, ",\r\n") || !strings.Contains(stats, ",unanimous_wrong\r\n") {
		t.Errorf("item_stats.csv: reasons not explicit:\n%.600s", stats)
	}
	if strings.Contains(stats, "baseline_oracle") {
		t.Error("a baseline run is named in item_stats.csv")
	}
	bias := string(read(t, filepath.Join(out, PositionBiasFile)))
	if !strings.Contains(bias, "none,detection,2,1,") {
		t.Errorf("item_position_bias.csv:\n%s", bias)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, s := range []string{"## Item health", "1 of ", "| " + key + " | T9 comparison | unanimous_wrong | 5 | 100.0 | 1 | 4 | 0.0 |", "Position bias"} {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}

// Baseline runs alone give no item-health section and header-only CSVs.
func TestItemHealthBaselinesOnly(t *testing.T) {
	t.Parallel()
	_, out := sampleReport(t, Config{})
	if md := string(read(t, filepath.Join(out, "report.md"))); strings.Contains(md, "Item health") {
		t.Error("report.md of baselines has an item-health section")
	}
	if got := string(read(t, filepath.Join(out, FlaggedItemsFile))); got != strings.Join(FlaggedHeader, ",")+"\r\n" {
		t.Errorf("flagged_items.csv = %q", got)
	}
}

// TestBrowserFlagged opens the planted report in Chromium: the flagged
// filter leaves exactly the mislabeled item, whose view shows the flag,
// the ground truth, every counted run's answer and the images.
func TestBrowserFlagged(t *testing.T) {
	t.Parallel()
	browsertest.Chromium(t)
	out, key := plantedReport(t)
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.ToSlash(filepath.Join(out, "index.html"))),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => { const s = document.getElementById("f-flag"); s.value = "flagged"; s.dispatchEvent(new Event("change"));
		return Array.from(document.querySelectorAll("#item-list tbody tr")).map(r => r.cells[1].textContent); })()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || !strings.HasPrefix(rows[0], key) || !strings.Contains(rows[0], "T9 unanimous_wrong") {
		t.Fatalf("flagged rows: %q, want only %s", rows, key)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#item-list tbody tr`))); err != nil {
		t.Fatal(err)
	}
	const imgs = `Array.from(document.querySelectorAll("#item-view img"))`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.getElementById("item-flags") && `+imgs+`.length > 0 && `+imgs+`.every(i => i.complete && i.naturalWidth > 0)`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("flagged item view: %v", err)
	}
	box, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("item-flags")))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#item-flags tbody tr").length`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(box, "unanimous_wrong") || !strings.Contains(box, "ground truth 1") || !strings.Contains(box, "modal answer 4") || runs != 5 || strings.Contains(box, "baseline_oracle") {
		t.Errorf("flag box (%d run rows): %q", runs, box)
	}
}

// Items that the control runs answer right are flagged
// answerable_without_image in flagged_items.csv, where that many right
// answers are unlikely by chance (three runs: items of at least three
// answers); the control runs are not counted among the models' runs.
func TestAnswerableWithoutImageFlagged(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	recs := benchtest.Full(1)
	var runs []*analysistest.Run
	for i := 1; i <= 3; i++ {
		runs = append(runs, &analysistest.Run{Provider: "fake", Label: fmt.Sprint("model", i), Oracle: "none", Policy: analysistest.Oracle},
			// Without the image each model answers option 1.
			&analysistest.Run{Provider: "fake", Label: fmt.Sprint("model", i), Oracle: "none", Policy: analysistest.First, Control: results.ControlTextOnly})
	}
	dir := fixture(t, tmp, recs, runs...)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 20}, Report: Options{Version: "test"}}); err != nil {
		t.Fatal(err)
	}
	flagged := readCSVTable(t, filepath.Join(out, FlaggedItemsFile))
	stats := readCSVTable(t, filepath.Join(out, ItemStatsFile))
	want := map[string]bool{}
	for _, row := range stats.rows {
		k, _ := strconv.Atoi(stats.get(row, "n_answers"))
		if stats.get(row, "n_runs") != "3" {
			t.Fatalf("item %s %s: n_runs %s, want the three models only", stats.get(row, "key_id"), stats.get(row, "question"), stats.get(row, "n_runs"))
		}
		if stats.get(row, "gt") == "1" && k >= 3 {
			want[stats.get(row, "key_id")+"/"+stats.get(row, "question")] = true
		}
	}
	got := map[string]bool{}
	for _, row := range flagged.rows {
		if strings.Contains(flagged.get(row, "reason"), analysis.FlagWithoutImage) {
			got[flagged.get(row, "key_id")+"/"+flagged.get(row, "question")] = true
		}
	}
	if len(want) == 0 || !maps.Equal(got, want) {
		t.Errorf("answerable_without_image on %d items %v, want %d %v", len(got), got, len(want), want)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	if !strings.Contains(md, "answerable_without_image") {
		t.Error("report.md does not explain answerable_without_image")
	}
}

// TestItemHealthReadersBeside: readers never change the flags (item
// health counts the models' runs only); the readers who answered alone
// are shown beside a flag, in flagged_items.csv and report.md: two of
// the three gave the models' modal answer (the true label), one the
// benchmark's label; an aided arm is not shown.
func TestItemHealthReadersBeside(t *testing.T) {
	t.Parallel()
	without, key := plantedReportWith(t, false)
	with, _ := plantedReportWith(t, true)
	flagged := func(dir string) []string {
		return strings.Split(strings.TrimSuffix(string(read(t, filepath.Join(dir, FlaggedItemsFile))), "\r\n"), "\r\n")
	}
	a, b := flagged(without), flagged(with)
	if len(a) != 2 || len(b) != 2 {
		t.Fatalf("flagged_items.csv rows: %d without readers, %d with", len(a)-1, len(b)-1)
	}
	if !strings.HasPrefix(b[1], "none,"+key+",") || !strings.HasSuffix(b[1], ",3,2,1") || strings.TrimSuffix(a[1], ",0,0,0") != strings.TrimSuffix(b[1], ",3,2,1") {
		t.Errorf("with readers the flag changed or shows no readers:\n%s\nwithout:\n%s", b[1], a[1])
	}
	md := string(read(t, filepath.Join(with, "report.md")))
	if !strings.Contains(md, "5 run(s): fake_model1, fake_model2, fake_model3, fake_model4, fake_model5. 1 of ") ||
		!strings.Contains(md, "Readers shown beside the flags, not counted: human_ana_unaided, human_ben, human_cy.") {
		t.Errorf("report.md's item health does not keep the readers apart:\n%s", md[strings.Index(md, "## Item health"):])
	}
}
