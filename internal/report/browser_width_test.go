package report

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/browsertest"
)

// TestBrowserWidth opens a report with an item-health flag and six runs
// (the first the oracle baseline) at a desktop and a phone size: no part
// of the page, with an item open, may make the page wider than the window
// (a wide table scrolls inside its own box instead), and the item browser
// opens on a model under test. CHX_WIDTH_REPORT=DIR checks another
// report the same way.
func TestBrowserWidth(t *testing.T) {
	t.Parallel()
	browsertest.Chromium(t)
	out, _ := plantedReport(t)
	if d := os.Getenv("CHX_WIDTH_REPORT"); d != "" {
		out = d
	}
	url := "file://" + filepath.ToSlash(filepath.Join(out, "index.html"))
	for _, size := range []struct{ w, h int }{{1400, 1000}, {390, 844}} {
		ctx := chrome.Open(t, int64(size.w), int64(size.h), 90*time.Second)
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(int64(size.w), int64(size.h)),
			chromedp.Navigate(url),
			chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)),
		); err != nil {
			t.Fatal(err)
		}
		// The item browser opens on a model under test, not on the oracle
		// baseline (run 0 of this fixture).
		if model, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(s => s.options[s.selectedIndex].textContent)(document.getElementById("f-model"))`)); model == "" || model == "baseline_oracle" {
			t.Errorf("%d×%d: the item browser opens on %q", size.w, size.h, model)
		}
		// Show the flagged items and open the first, side by side with a
		// second run: the widest state of the item browser.
		flagged := evalInt(t, ctx, `(() => { const s = document.getElementById("f-flag"); s.value = "flagged"; s.dispatchEvent(new Event("change")); const b = document.getElementById("f-model-b"); b.value = "1"; b.dispatchEvent(new Event("change")); return document.querySelectorAll("#item-list tbody tr").length; })()`)
		if flagged == 0 && os.Getenv("CHX_WIDTH_REPORT") == "" {
			t.Fatalf("%d×%d: the fixture has no flagged item", size.w, size.h)
		} else if flagged == 0 {
			evalInt(t, ctx, `(() => { const s = document.getElementById("f-flag"); s.value = "all"; s.dispatchEvent(new Event("change")); return 0; })()`)
		}
		evalInt(t, ctx, `(() => { const i = +document.querySelector("#item-list tbody tr").dataset.item; CHX.open(i); return i; })()`)
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("#item-view tbody tr").length > 0`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("%d×%d: item did not open: %v", size.w, size.h, err)
		}
		doc := evalInt(t, ctx, `document.documentElement.scrollWidth`)
		win := evalInt(t, ctx, `document.documentElement.clientWidth`)
		wide, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("body *")).filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !e.closest(".table-wrap, .scroll-x")).slice(0, 8).map(e => e.tagName + (e.id ? "#" + e.id : "") + (e.className ? "." + e.className : "") + " " + Math.round(e.getBoundingClientRect().right)).join(", ")`))
		if dir := os.Getenv("CHEXPERCEPT_ARTIFACTS"); dir != "" {
			if shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID("items"))); err == nil {
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("report_items_%dx%d.png", size.w, size.h)), shot, 0o644)
			}
		}
		t.Logf("%d×%d: document %d px, window %d px", size.w, size.h, doc, win)
		if doc > win {
			t.Errorf("%d×%d: the page is %d px wide in a %d px window; too wide: %s", size.w, size.h, doc, win, wide)
		}
	}
}
