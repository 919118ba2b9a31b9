package report

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/chexpercept/chexpercept/internal/browsertest"
)

// TestBrowserAccessibility: axe-core finds no serious or critical
// violation on the report, before and after an item is opened, and an
// item of the item browser opens from the keyboard (Tab to its row,
// Enter).
func TestBrowserAccessibility(t *testing.T) {
	t.Parallel()
	axe := browsertest.AxeScript(t)
	ctx := openSmallReport(t)
	if n := evalInt(t, ctx, `document.querySelectorAll("td.na").length`); n == 0 {
		t.Log("the report has no N/A cell")
	}
	browsertest.CheckAxe(t, ctx, axe, "report")
	// The keyboard reaches the second row of the item list and opens it.
	if err := chromedp.Do(ctx,
		chromedp.Focus(chromedp.CSS(`#item-list tbody tr:first-child`)),
		chromedp.KeyEvent(kb.Tab),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`#item-view tbody tr`)),
	); err != nil {
		t.Fatalf("open an item by keyboard: %v", err)
	}
	if got := evalInt(t, ctx, `+document.querySelector("#item-list tr.sel").dataset.item`); got != evalInt(t, ctx, `+document.querySelectorAll("#item-list tbody tr")[1].dataset.item`) {
		t.Errorf("Enter on the second row opened item %d", got)
	}
	browsertest.CheckAxe(t, ctx, axe, "report with an item open")
}
