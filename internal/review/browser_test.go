package review

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/browsertest"
)

// chrome is the package's one Chromium, shared by the browser tests.
var chrome browsertest.Shared

// TestMain runs the tests and stops chrome.
func TestMain(m *testing.M) { chrome.Main(m) }

// browser returns a function that opens a new, cookie-isolated browser
// context per user, in chrome.
func browser(t *testing.T) func() context.Context {
	open := chrome.Browser(t, 120*time.Second)
	return func() context.Context { return open(1280, 900) }
}

func screenshot(t *testing.T, ctx context.Context, name string) { browsertest.Screenshot(ctx, name) }

func signInBrowser(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	browsertest.SignIn(t, ctx, base, token)
}

// waitImages waits until every image of the case view has loaded.
func waitImages(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`Array.from(document.querySelectorAll("#stage img")).every(i => i.complete && i.naturalWidth === 1024)`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("images did not load: %v", err)
	}
}

func evalString(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return s
}

// TestBrowserReview: a reviewer signs in, accepts one case with the
// keyboard, rejects the next with the mouse, reloads and finds both kept;
// a second reviewer cannot open the first one's case; the admin sees κ for
// an overlapping pair.
func TestBrowserReview(t *testing.T) {
	t.Parallel()
	newCtx := browser(t)
	a := newAppSized(t, 3, 2, 6, 4)
	base := a.srv.URL
	q1 := a.queueOf("r1")
	positive := ""
	for _, k := range q1 {
		if strings.Contains(k, "_positive_") {
			positive = k
			break
		}
	}
	i := 0
	for i < len(q1) && q1[i] != positive {
		i++
	}
	if i+1 >= len(q1) {
		t.Fatal("r1's queue too short")
	}
	first, second := q1[i], q1[i+1]

	// --- reviewer r1 ---
	r1 := newCtx()
	signInBrowser(t, r1, base, a.tok["r1"])
	if err := chromedp.Do(r1, chromedp.WaitVisible(chromedp.ID("queue"))); err != nil {
		t.Fatal(err)
	}
	if got := evalString(t, r1, `document.getElementById("who").textContent`); got != "r1" {
		t.Errorf("signed in as %q", got)
	}
	if err := chromedp.Do(r1, chromedp.Navigate(base+"/case/"+first), chromedp.WaitVisible(chromedp.ID("btn-accept"))); err != nil {
		t.Fatal(err)
	}
	waitImages(t, r1)
	// Overlay controls: o hides the mask, c switches to the contour.
	chromedp.Do(r1, chromedp.KeyEvent("o"))
	if h := evalString(t, r1, `String(document.getElementById("mask").classList.contains("hidden"))`); h != "true" {
		t.Error("o did not hide the mask")
	}
	chromedp.Do(r1, chromedp.KeyEvent("o"), chromedp.KeyEvent("c"))
	if h := evalString(t, r1, `String(document.getElementById("contour").classList.contains("hidden")) + String(document.getElementById("mask").classList.contains("hidden"))`); h != "falsetrue" {
		t.Errorf("c did not show the contour only: %s", h)
	}
	chromedp.Do(r1, chromedp.KeyEvent("c"), chromedp.KeyEvent("+"))
	if tr := evalString(t, r1, `document.getElementById("stage").style.transform`); !strings.Contains(tr, "scale") {
		t.Errorf("zoom transform %q", tr)
	}
	screenshot(t, r1, "case-positive")
	// Accept with the keyboard.
	if err := chromedp.Do(r1, chromedp.KeyEvent("a"), chromedp.WaitVisible(chromedp.CSS("#btn-accept.chosen"))); err != nil {
		t.Fatalf("keyboard accept: %v", err)
	}
	if _, err := chromedp.Run(r1, chromedp.Poll[bool](`document.getElementById("status").textContent.startsWith("Saved: accept")`)); err != nil {
		t.Fatalf("status after accept: %v", err)
	}
	// Next case with the keyboard, reject with the mouse.
	if err := chromedp.Do(r1, chromedp.KeyEvent("n"), chromedp.WaitVisible(chromedp.CSS(`#case[data-key="`+second+`"]`))); err != nil {
		t.Fatalf("next: %v", err)
	}
	if err := chromedp.Do(r1, chromedp.Click(chromedp.ID("btn-reject")), chromedp.WaitVisible(chromedp.CSS("#btn-reject.chosen"))); err != nil {
		t.Fatalf("mouse reject: %v", err)
	}
	if _, err := chromedp.Run(r1, chromedp.Poll[bool](`document.getElementById("status").textContent.startsWith("Saved: reject")`)); err != nil {
		t.Fatalf("status after reject: %v", err)
	}
	screenshot(t, r1, "case-second")
	// Reload both: the decisions come back from the server.
	if err := chromedp.Do(r1, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#btn-reject.chosen"))); err != nil {
		t.Fatalf("after reload: %v", err)
	}
	if err := chromedp.Do(r1, chromedp.Navigate(base+"/case/"+first), chromedp.WaitVisible(chromedp.CSS("#btn-accept.chosen"))); err != nil {
		t.Fatalf("first case after reload: %v", err)
	}
	if err := chromedp.Do(r1, chromedp.Navigate(base+"/queue"), chromedp.WaitVisible(chromedp.ID("queue"))); err != nil {
		t.Fatal(err)
	}
	got := evalString(t, r1, `["`+first+`","`+second+`"].map(k => document.querySelector('tr[data-key="' + k + '"] td.decision').textContent).join(",")`)
	if got != "accept,reject" {
		t.Errorf("queue shows %q, want accept,reject", got)
	}
	screenshot(t, r1, "queue")

	// --- reviewer r2 cannot see r1's case ---
	foreign := a.onlyIn("r1", "r2")
	r2 := newCtx()
	signInBrowser(t, r2, base, a.tok["r2"])
	if err := chromedp.Do(r2, chromedp.WaitVisible(chromedp.ID("queue"))); err != nil {
		t.Fatal(err)
	}
	if n := evalString(t, r2, `String(document.querySelectorAll('tr[data-key="`+foreign+`"]').length)`); n != "0" {
		t.Error("r1's case is listed in r2's queue")
	}
	resp, err := chromedp.RunResponse(r2, chromedp.Navigate(base+"/case/"+foreign))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusNotFound {
		t.Errorf("r2 opening r1's case: HTTP %d", resp.Status)
	}
	if n := evalString(t, r2, `String(document.querySelectorAll("#cxr").length)`); n != "0" {
		t.Error("r2 sees r1's radiograph")
	}

	// --- the admin sees κ for an overlapping pair ---
	ctx := context.Background()
	revs, _ := a.store.Reviewers(ctx)
	ids := map[string]int64{}
	for _, r := range revs {
		ids[r.Name] = r.ID
	}
	in2 := map[string]bool{}
	for _, k := range a.queueOf("r2") {
		in2[k] = true
	}
	var shared []string
	for _, k := range a.queueOf("r1") {
		if in2[k] && k != first && k != second {
			shared = append(shared, k)
		}
	}
	if len(shared) < 4 {
		t.Fatalf("r1 and r2 share only %d cases", len(shared))
	}
	// r1: A A R R, r2: A R R R → po = 3/4, pe = ½·¼ + ½·¾ = ½, κ = 0.5.
	for j, k := range shared[:4] {
		c, _ := a.store.CaseByKey(ctx, k)
		a.store.Decide(ctx, ids["r1"], c, []string{"accept", "accept", "reject", "reject"}[j], "")
		a.store.Decide(ctx, ids["r2"], c, []string{"accept", "reject", "reject", "reject"}[j], "")
	}
	// The shared cases decided in the browser count only if r2 decided them
	// too; r2 did not, so the pair's κ is over exactly these four.
	ad := newCtx()
	signInBrowser(t, ad, base, a.tok[AdminName])
	if err := chromedp.Do(ad, chromedp.WaitVisible(chromedp.ID("kappa"))); err != nil {
		t.Fatal(err)
	}
	k := evalString(t, ad, `document.querySelector('tr[data-pair="r1-r2"] td.k').textContent`)
	if k != "0.500" {
		t.Errorf("admin sees κ(r1, r2) = %q, want 0.500", k)
	}
	if f := evalString(t, ad, `document.getElementById("fleiss").textContent`); !strings.Contains(f, "κ") {
		t.Errorf("no Fleiss' κ line: %q", f)
	}
	screenshot(t, ad, "admin")
}
