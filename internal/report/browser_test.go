package report

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/browsertest"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// chrome is the package's one Chromium (TestMain closes it).
var chrome browsertest.Shared

// newBrowser opens a page context of 1400×1000 in chrome for t.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	return chrome.Open(t, 1400, 1000, 90*time.Second)
}

// TestBrowserLargeInteractive checks the 2-second interactivity target on
// a big report: set CHX_LARGE_REPORT to a report directory (for example
// one written from the BenchmarkReport14x2100 fixture). It measures the
// time from navigation start until the item browser is ready, and the
// time to open an item.
func TestBrowserLargeInteractive(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("CHX_LARGE_REPORT")
	if dir == "" {
		t.Skip("set CHX_LARGE_REPORT=REPORT_DIR to time a large report in Chromium")
	}
	ctx := newBrowser(t)
	abs, _ := filepath.Abs(dir)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.ToSlash(filepath.Join(abs, "index.html"))),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatal(err)
	}
	ready, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.readyMs`))
	if err != nil {
		t.Fatal(err)
	}
	open, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`new Promise(res => { const t0 = performance.now(); CHX.open(2099); const h = setInterval(() => { if (document.querySelectorAll("#item-view tbody tr").length) { clearInterval(h); res(performance.now() - t0); } }, 5); })`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("interactive after %s ms; item 2100 opened in %.0f ms", ready, open)
	if ms, _ := strconv.Atoi(ready); ms > 2000 {
		t.Errorf("interactive after %d ms, want < 2000", ms)
	}
}

// openSmallReport writes the report of a small run and opens it from
// disk in headless Chromium (stopped when t ends), ready.
func openSmallReport(t *testing.T) context.Context {
	t.Helper()
	browsertest.Chromium(t)
	tmp := t.TempDir()
	dir := fixture(t, tmp, benchtest.Sample(), baselineRuns()...)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 100}}); err != nil {
		t.Fatal(err)
	}
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate("file://"+filepath.ToSlash(filepath.Join(out, "index.html"))),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)),
	); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// TestBrowser drives headless Chromium against the report of a small run
// opened from disk: the leaderboard renders, a filter narrows the item
// list, an item opens with its images loaded; a screenshot is saved.
func TestBrowser(t *testing.T) {
	t.Parallel()
	ctx := openSmallReport(t)
	eval := func(expr string) int { t.Helper(); return evalInt(t, ctx, expr) }
	if n := eval(`document.querySelectorAll("#leaderboard table.leaderboard tbody tr").length`); n < 1 {
		t.Errorf("leaderboard has %d rows", n)
	}
	allRows := eval(`document.querySelectorAll("#item-list tbody tr").length`)
	// Filter on cardiomegaly (lesion 0).
	cardioRows := eval(`(() => { const s = document.getElementById("f-lesion"); s.value = "0"; s.dispatchEvent(new Event("change")); return document.querySelectorAll("#item-list tbody tr").length; })()`)
	count, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("item-count")))
	if err != nil {
		t.Fatal(err)
	}
	if allRows != 7 || cardioRows != 2 || !strings.HasPrefix(count, "2 of 7") {
		t.Errorf("filter: %d rows before, %d after (%q); want 7 and 2", allRows, cardioRows, count)
	}
	// The outcome filter: the oracle run (model 1) has no incorrect item.
	sel := func(id, v string) string {
		return `(() => { const s = document.getElementById("` + id + `"); s.value = "` + v + `"; s.dispatchEvent(new Event("change")); return document.querySelectorAll("#item-list tbody tr").length; })()`
	}
	eval(sel("f-model", "1"))
	if n := eval(sel("f-correct", "incorrect")); n != 0 {
		t.Errorf("oracle run: %d incorrect cardiomegaly items", n)
	}
	if n := eval(sel("f-correct", "correct")); n != 2 {
		t.Errorf("oracle run: %d correct cardiomegaly items, want 2", n)
	}
	eval(sel("f-stage", "3")) // stage 3 applies to the cardiomegaly RR item only
	if n := eval(sel("f-correct", "all")); n != 1 {
		t.Errorf("stage 3 filter: %d items, want 1", n)
	}
	eval(sel("f-stage", "0"))
	eval(sel("f-model-b", "2")) // side by side with the random run
	// Open the first cardiomegaly item (a revision-required record with
	// its five images) and wait until every image has finished loading.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#item-list tbody tr`))); err != nil {
		t.Fatal(err)
	}
	const imgs = `Array.from(document.querySelectorAll("#item-view img"))`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](imgs+`.length > 0 && `+imgs+`.every(i => i.complete)`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("item-view").outerHTML.slice(0, 2000)`))
		t.Fatalf("item view did not show loaded images: %v; view: %s", err, state)
	}
	if n := eval(`document.querySelectorAll("#item-view thead th").length`); n != 3 {
		t.Errorf("side by side: %d header cells, want 3 (question, model A, model B)", n)
	}
	nImg := eval(`document.querySelectorAll("#item-view img").length`)
	broken := eval(`Array.from(document.querySelectorAll("#item-view img")).filter(i => !(i.naturalWidth > 0)).length`)
	if nImg < 3 || broken != 0 {
		t.Errorf("item view: %d images, %d not loaded", nImg, broken)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(80))
	if err != nil {
		t.Fatal(err)
	}
	artifact := os.Getenv("CHEXPERCEPT_ARTIFACTS")
	if artifact == "" {
		artifact = t.TempDir()
	}
	name := filepath.Join(artifact, "report_browser.jpg")
	if err := os.WriteFile(name, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", name, len(shot))
	view, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID("item-view")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifact, "report_item.png"), view, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserFindings opens a report with domain groups in Chromium: the
// findings section renders its verdicts, tables and plot, and the
// navigation links to it.
func TestBrowserFindings(t *testing.T) {
	t.Parallel()
	browsertest.Chromium(t)
	out := findingsReport(t)
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate("file://"+filepath.ToSlash(filepath.Join(out, "index.html"))),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#findings`)),
		chromedp.ScrollIntoView(chromedp.CSS(`#findings figure img`)),
	); err != nil {
		t.Fatal(err)
	}
	eval := func(expr string) int { t.Helper(); return evalInt(t, ctx, expr) }
	if n := eval(`document.querySelectorAll("#findings .verdict").length`); n != 2 {
		t.Errorf("%d verdicts, want 2 (one per claim, one oracle mode)", n)
	}
	if n := eval(`Array.from(document.querySelectorAll("#findings .verdict")).filter(v => v.textContent === "undecided at this sample size").length`); n != 2 {
		t.Errorf("%d undecided verdicts shown, want 2 (3 vs 3 models; pooled decay interval straddles 0.5)", n)
	}
	if n := eval(`document.querySelectorAll("#findings table.data tbody tr").length`); n < 10 {
		t.Errorf("findings tables have %d rows", n)
	}
	if n := eval(`document.querySelectorAll('nav a[href="#findings"]').length`); n != 1 {
		t.Errorf("%d navigation links to the findings", n)
	}
	const img = `document.querySelector("#findings figure img")`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](img+`.complete && `+img+`.naturalWidth > 0`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Errorf("findings plot did not load: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("findings")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "Medical − general") || !strings.Contains(text, "Claim 2 (Medical vs general).") {
		t.Errorf("findings text: %.400s", text)
	}
	artifact := os.Getenv("CHEXPERCEPT_ARTIFACTS")
	if artifact == "" {
		artifact = t.TempDir()
	}
	if shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID("findings"))); err == nil {
		os.WriteFile(filepath.Join(artifact, "report_findings.png"), shot, 0o644)
	}
}

// evalInt evaluates the JavaScript expression expr in the page of ctx,
// failing the test when it does not give a number.
func evalInt(t *testing.T, ctx context.Context, expr string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return n
}
