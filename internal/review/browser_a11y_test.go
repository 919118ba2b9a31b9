package review

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/browsertest"
)

// TestBrowserAccessibility: axe-core finds no serious or critical
// violation on the sign-in page, a reviewer's queue and case, the admin's
// progress and case views, and a re-review case.
func TestBrowserAccessibility(t *testing.T) {
	t.Parallel()
	axe := browsertest.AxeScript(t)
	open := chrome.Browser(t, 180*time.Second)
	a := newApp(t, 2, 1)
	round := itemRound(t)
	key := a.queueOf("r1")[0]
	flagged := round.queueOf("r1")[0]
	for _, tc := range []struct {
		name      string
		base, who string // who: "" for no session
		path      string
		ready     string // an element id the page shows when loaded
	}{
		{"sign-in", a.srv.URL, "", "/login", "token"},
		{"queue", a.srv.URL, "r1", "/queue", "queue"},
		{"case", a.srv.URL, "r1", "/case/" + key, "btn-accept"},
		{"admin", a.srv.URL, AdminName, "/admin", "kappa"},
		{"admin case", a.srv.URL, AdminName, "/case/" + key, "reviews"},
		{"re-review case", round.srv.URL, "r1", "/case/" + flagged, "btn-keep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := open(1280, 900)
			tok := a.tok[tc.who]
			if tc.base == round.srv.URL {
				tok = round.tok[tc.who]
			}
			if tc.who != "" {
				browsertest.SignIn(t, ctx, tc.base, tok)
			}
			if err := chromedp.Do(ctx, chromedp.Navigate(tc.base+tc.path), chromedp.WaitVisible(chromedp.ID(tc.ready))); err != nil {
				t.Fatal(err)
			}
			browsertest.CheckAxe(t, ctx, axe, tc.name)
		})
	}
}

// TestBrowserReReviewKeys: on a re-review case every decision button
// shows its key, the legend lists exactly those keys, each key saves its
// button's outcome, and the keys of a normal review save nothing.
func TestBrowserReReviewKeys(t *testing.T) {
	t.Parallel()
	open := chrome.Browser(t, 120*time.Second)
	round := itemRound(t)
	ctx := open(1280, 900)
	browsertest.SignIn(t, ctx, round.srv.URL, round.tok["r1"])
	if err := chromedp.Do(ctx, chromedp.Navigate(round.srv.URL+"/case/"+round.queueOf("r1")[0]), chromedp.WaitVisible(chromedp.ID("btn-keep"))); err != nil {
		t.Fatal(err)
	}
	pairs := evalString(t, ctx, `Array.from(document.querySelectorAll("#decide [data-decision]")).map(b => b.querySelector("kbd").textContent + "=" + b.dataset.decision).join(" ")`)
	if pairs != "k=keep f=fix d=drop u=unsure" {
		t.Errorf("buttons and their keys: %q", pairs)
	}
	legend := evalString(t, ctx, `document.getElementById("keys").textContent`)
	for _, want := range []string{"k keep", "f fix", "d drop", "u unsure"} {
		if !strings.Contains(legend, want) {
			t.Errorf("legend %q lacks %q", legend, want)
		}
	}
	for _, stale := range []string{"accept", "reject"} {
		if strings.Contains(legend, stale) {
			t.Errorf("legend %q names %q, which no button does", legend, stale)
		}
	}
	saved := func(outcome string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("status").textContent.startsWith("Saved: `+outcome+` ")`,
			chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("status after the key of %s: %q (%v)", outcome, evalString(t, ctx, `document.getElementById("status").textContent`), err)
		}
	}
	for _, k := range []struct{ key, outcome string }{{"d", "drop"}, {"k", "keep"}, {"f", "fix"}, {"u", "unsure"}, {"k", "keep"}} {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(k.key)); err != nil {
			t.Fatal(err)
		}
		saved(k.outcome)
	}
	// r and a are not keys here: the saved outcome stays keep.
	if err := chromedp.Do(ctx, chromedp.KeyEvent("r"), chromedp.KeyEvent("a")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#btn-keep.chosen"))); err != nil {
		t.Errorf("after r and a the saved outcome is no longer keep: %v", err)
	}
}
