package review

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// caseLayout is "" when the page is no wider than the window and the
// radiograph is loaded, inside the window and not covered at the centre
// of its visible part (the decision panel once covered it at 390 px).
const caseLayout = `(() => {
	const w = window.innerWidth, h = window.innerHeight;
	if (document.documentElement.scrollWidth > w) return "page " + document.documentElement.scrollWidth + " px wide in a " + w + " px window";
	const img = document.getElementById("cxr");
	if (!img || !img.complete || img.naturalWidth === 0) return "radiograph not loaded";
	const vp = document.getElementById("viewport").getBoundingClientRect();
	if (vp.width < 200 || vp.height < 200) return "viewer " + vp.width + "×" + vp.height;
	if (vp.left < 0 || vp.right > w + 0.5 || vp.top >= h) return "viewer outside the window: " + JSON.stringify(vp);
	const r = img.getBoundingClientRect();
	const x = Math.max(vp.left + 1, Math.min(vp.right - 1, r.left + r.width / 2));
	const y = Math.max(vp.top + 1, Math.min(Math.min(vp.bottom, h) - 1, r.top + r.height / 2));
	const top = document.elementFromPoint(x, y);
	if (!top || !top.closest("#viewport")) return "radiograph covered by " + (top ? top.outerHTML.slice(0, 80) : "nothing");
	return "";
})()`

// TestBrowserCaseLayout: the case page of the review app fits windows of
// 1400×1000 and 390×844 (a phone) with the radiograph visible, for a
// reviewer and for the admin.
func TestBrowserCaseLayout(t *testing.T) {
	t.Parallel()
	open := chrome.Browser(t, 120*time.Second)
	a := newAppSized(t, 3, 2, 6, 4)
	var positive string
	for _, k := range a.queueOf("r1") {
		if strings.Contains(k, "_positive_") {
			positive = k
			break
		}
	}
	if positive == "" {
		t.Fatal("no positive case in r1's queue")
	}
	for _, size := range [][2]int64{{1400, 1000}, {768, 1024}, {390, 844}} {
		for _, who := range []string{"r1", AdminName} {
			ctx := open(size[0], size[1])
			signInBrowser(t, ctx, a.srv.URL, a.tok[who])
			if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("who"))); err != nil {
				t.Fatal(err)
			}
			wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
			err := chromedp.Do(wctx, chromedp.Navigate(a.srv.URL+"/case/"+positive), chromedp.WaitVisible(chromedp.ID("viewport")))
			wcancel()
			if err != nil {
				html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " " + document.body.innerHTML.slice(0, 300)`))
				t.Logf("page: %s", html)
				t.Fatalf("%s %v: case page: %v", who, size, err)
			}
			waitImages(t, ctx)
			screenshot(t, ctx, fmt.Sprintf("case-%s-%dx%d", who, size[0], size[1]))
			msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](caseLayout))
			if err != nil {
				t.Fatal(err)
			}
			if msg != "" {
				t.Errorf("%s, %d×%d: %s", who, size[0], size[1], msg)
			}
		}
	}
}
