package reading

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/browsertest"
	"github.com/chexpercept/chexpercept/internal/protocol"
)

// browser starts headless Chromium and returns a function that opens a
// cookie-isolated context of the given window size.
func browser(t *testing.T) func(w, h int64) context.Context {
	return browsertest.Browser(t, 300*time.Second)
}

func screenshot(ctx context.Context, name string) { browsertest.Screenshot(ctx, name) }

func signInBrowser(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	browsertest.SignIn(t, ctx, base, token)
}

// pageState is "done", or "pos/seq" of the question on screen.
const pageState = `document.querySelector("[data-done]") ? "done" :
	(document.querySelector("[data-submit]") && document.querySelector("input[name=pos]") ?
	 document.querySelector("input[name=pos]").value + "/" + document.querySelector("input[name=seq]").value : "")`

// layoutCheck is "" when the page is no wider than the window and every
// radiograph is loaded, inside the window and not covered at its centre.
const layoutCheck = `(() => {
	const w = window.innerWidth, h = window.innerHeight;
	if (document.documentElement.scrollWidth > w) return "page " + document.documentElement.scrollWidth + " px wide in a " + w + " px window";
	const imgs = Array.from(document.querySelectorAll(%q));
	if (imgs.length === 0) return "no radiograph";
	for (const img of imgs) {
		if (!img.complete || img.naturalWidth === 0) return "radiograph not loaded";
		const vp = img.closest(".viewport").getBoundingClientRect();
		if (vp.width < 100 || vp.height < 100) return "viewer " + vp.width + "×" + vp.height;
		if (vp.left < 0 || vp.right > w + 0.5) return "viewer outside the window: " + vp.left + "–" + vp.right;
		const r = img.getBoundingClientRect();
		const x = Math.max(vp.left, Math.min(vp.right, r.left + r.width / 2)) - 1, y = Math.max(vp.top, Math.min(vp.bottom, r.top + r.height / 2)) - 1;
		if (y >= 0 && y < h) {
			const top = document.elementFromPoint(x, y);
			if (!top || !top.closest(".viewport")) return "radiograph covered by " + (top ? top.outerHTML.slice(0, 80) : "nothing");
		}
	}
	return "";
})()`

// CheckLayout fails when the page is wider than the window or a
// radiograph (matched by sel) is not visible.
func checkLayout(t *testing.T, ctx context.Context, sel, what string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`Array.from(document.querySelectorAll(`+strconv.Quote(sel)+`)).every(i => i.complete && i.naturalWidth > 0)`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("%s: images did not load: %v", what, err)
	}
	msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(layoutCheck, sel)))
	if err != nil {
		t.Fatal(err)
	}
	if msg != "" {
		t.Errorf("%s: %s", what, msg)
	}
}

// readAll works through every record of a reader in the browser, by the
// automation contract: data-option, data-submit, data-done.
func (st *study) readAll(t *testing.T, ctx context.Context, reader string, gt bool) int {
	t.Helper()
	answered := 0
	prev := ""
	for {
		// The page navigates after a submit: poll until the next page is
		// there (an evaluation cut by the navigation is tried again).
		var state string
		deadline := time.Now().Add(20 * time.Second)
		for {
			s, err := chromedp.Run(ctx, chromedp.Evaluate[string](pageState))
			if err == nil && s != "" && s != prev {
				state = s
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s after %d answers (was %s): state %q, %v", reader, answered, prev, s, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if state == "done" {
			return answered
		}
		var tp turnPage
		fmt.Sscanf(state, "%d/%d", &tp.pos, &tp.seq)
		opts := []int{1}
		if gt {
			opts = st.gtAnswer(reader, tp)
		}
		// Click the options and submit in one step on the page whose
		// state was read (a click cut by a navigation would be lost).
		js := fmt.Sprintf(`(() => { if ((%s) !== %q) return false;
			for (const o of %s) document.querySelector('[data-option="' + o + '"]').click();
			document.querySelector("[data-submit]").click(); return true; })()`, pageState, state, jsList(opts))
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil || !ok {
			t.Fatalf("%s: answering %v at %s: %v %v", reader, opts, state, ok, err)
		}
		prev = state
		answered++
	}
}

// TestBrowserReading: two readers work through records of all three
// paths in each oracle mode in Chromium — one always picks option 1, the
// other the ground truth — and the export scores the first exactly like
// eval's first policy and the second at 100 %; no response the pages got
// holds an answer. The page fits 1400×1000 and 390×844 windows with the
// radiograph visible.
func TestBrowserReading(t *testing.T) {
	newCtx := browser(t)
	bench := testBench(t)
	for _, oracle := range []protocol.OracleMode{protocol.OracleNone, protocol.OracleImplicit, protocol.OracleExplicit} {
		t.Run(string(oracle), func(t *testing.T) {
			st := newStudy(t, bench, oracle)
			base := st.srv.URL
			r1 := newCtx(1400, 1000)
			signInBrowser(t, r1, base, st.creds["reader1"])
			if err := chromedp.Do(r1, chromedp.WaitVisible(chromedp.CSS("[data-submit]"))); err != nil {
				t.Fatal(err)
			}
			checkLayout(t, r1, "img.radiograph", "reading page at 1400×1000")
			screenshot(r1, "read-1400-"+string(oracle))
			n1 := st.readAll(t, r1, "reader1", false)

			r2 := newCtx(390, 844)
			signInBrowser(t, r2, base, st.creds["reader2"])
			if err := chromedp.Do(r2, chromedp.WaitVisible(chromedp.CSS("[data-submit]"))); err != nil {
				t.Fatal(err)
			}
			checkLayout(t, r2, "img.radiograph", "reading page at 390×844")
			screenshot(r2, "read-390-"+string(oracle))
			n2 := st.readAll(t, r2, "reader2", true)
			if n1 < 2*len(bench.Records) || n2 < 2*len(bench.Records) {
				t.Fatalf("answered %d and %d turns", n1, n2)
			}
			st.checkExport(t, oracle)
			st.checkNoLeak(t)
		})
	}
}

func jsList(xs []int) string {
	b := "["
	for i, x := range xs {
		if i > 0 {
			b += ","
		}
		b += strconv.Itoa(x)
	}
	return b + "]"
}
