package reading

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/browsertest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// chrome is the package's one Chromium: each test's pages open in
// browser contexts of their own (their own cookies, storage and cache),
// and TestMain stops it.
var chrome browsertest.Shared

// browser returns a function that opens a cookie-isolated context of the
// given window size in chrome, closed when t ends and bounded by 300 s.
func browser(t *testing.T) func(w, h int64) context.Context {
	t.Helper()
	return chrome.Browser(t, 300*time.Second)
}

func screenshot(ctx context.Context, name string) { browsertest.Screenshot(ctx, name) }

func signInBrowser(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	browsertest.SignIn(t, ctx, base, token)
}

// shownRadiograph matches the radiographs of the viewers on screen (the
// reference viewer is hidden until a thumbnail opens it on questions with
// images of their own).
const shownRadiograph = ".figure:not([hidden]) img.radiograph"

// pageState is "done", or "pos/seq" of the question on screen.
const pageState = `!document.querySelector("html[data-ready]") ? "" : document.querySelector("[data-done]") ? "done" :
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

// readPageState polls pageState until the page is ready. A poll that
// lands while the page just submitted is replaced finds its JavaScript
// context gone (CDP error -32000); the new page's context is then asked,
// a bounded number of times.
func readPageState(ctx context.Context) (string, error) {
	for try := 0; ; try++ {
		state, err := chromedp.Run(ctx, chromedp.Poll[string](pageState, chromedp.WithPollingTimeout(20*time.Second)))
		if err == nil || try == 4 || !strings.Contains(err.Error(), "Cannot find context with specified id") {
			return state, err
		}
	}
}

// readAll works through every record of a reader in the browser, by the
// automation contract: data-option, data-submit, data-done.
func (st *study) readAll(t *testing.T, ctx context.Context, reader string, gt bool) int {
	t.Helper()
	answered := 0
	prev := ""
	for {
		// The page on screen, loaded (the first one by the caller, the
		// others by the submit below), says which question it shows once
		// its script has marked it ready.
		state, err := readPageState(ctx)
		if err != nil {
			t.Fatalf("%s after %d answers (was %s): no page state: %v", reader, answered, prev, err)
		}
		if state == prev {
			t.Fatalf("%s: still at %s after answering it", reader, state)
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
		// state was read, then wait for the page the submit loads.
		js := fmt.Sprintf(`(() => { if ((%s) !== %q) return false;
			for (const o of %s) document.querySelector('[data-option="' + o + '"]').click();
			document.querySelector("[data-submit]").click(); return true; })()`, pageState, state, jsList(opts))
		submit := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			ok, err := chromedp.Evaluate[bool](js)(ctx, tg)
			if err == nil && !ok {
				err = fmt.Errorf("the page no longer shows %s", state)
			}
			return chromedp.Void{}, err
		}
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		resp, err := chromedp.RunResponse(sctx, submit)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: answering %v at %s loaded no page within 20 s", reader, opts, state)
		}
		if err != nil {
			t.Fatalf("%s: answering %v at %s: %v", reader, opts, state, err)
		}
		if resp.Status != 200 {
			t.Fatalf("%s: answering %v at %s loaded a page with status %d", reader, opts, state, resp.Status)
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
	t.Parallel()
	newCtx := browser(t)
	bench := testBench(t)
	// The oracle modes run at once, each a study of its own in browser
	// contexts of its own: as subtests started together, not parallel
	// ones, which would wait for go test's parallel slots.
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, oracle := range []protocol.OracleMode{protocol.OracleNone, protocol.OracleImplicit, protocol.OracleExplicit} {
		wg.Go(func() {
			t.Run(string(oracle), func(t *testing.T) {
				st := newStudy(t, own(bench), oracle)
				base := st.srv.URL
				r1 := newCtx(1400, 1000)
				signInBrowser(t, r1, base, st.creds["reader1"])
				if err := chromedp.Do(r1, chromedp.WaitVisible(chromedp.CSS("[data-submit]"))); err != nil {
					t.Fatal(err)
				}
				checkLayout(t, r1, shownRadiograph, "reading page at 1400×1000")
				screenshot(r1, "read-1400-"+string(oracle))
				n1 := st.readAll(t, r1, "reader1", false)

				r2 := newCtx(390, 844)
				signInBrowser(t, r2, base, st.creds["reader2"])
				if err := chromedp.Do(r2, chromedp.WaitVisible(chromedp.CSS("[data-submit]"))); err != nil {
					t.Fatal(err)
				}
				checkLayout(t, r2, shownRadiograph, "reading page at 390×844")
				screenshot(r2, "read-390-"+string(oracle))
				n2 := st.readAll(t, r2, "reader2", true)
				if n1 < 2*len(bench.Records) || n2 < 2*len(bench.Records) {
					t.Fatalf("answered %d and %d turns", n1, n2)
				}
				st.checkExport(t, oracle)
				st.checkNoLeak(t)
			})
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

// viewerState describes the viewer: the number of visible, loaded
// radiographs inside the window, the reference viewer's image URL, and
// the thumbnails' URLs.
const viewerState = `(() => {
	const w = window.innerWidth;
	const shown = Array.from(document.querySelectorAll(".figure:not([hidden]) img.radiograph")).filter(img => {
		const vp = img.closest(".viewport").getBoundingClientRect();
		return img.complete && img.naturalWidth > 0 && vp.width >= 100 && vp.height >= 100 && vp.left >= 0 && vp.right <= w + 0.5;
	}).length;
	const ref = document.getElementById("ref-img");
	return {shown: shown, own: document.querySelectorAll(".figure:not(#ref) img.radiograph").length, ref: ref && !ref.closest(".figure").hidden ? new URL(ref.src).pathname : "",
		thumbs: Array.from(document.querySelectorAll(".thumb[data-src]")).map(b => b.dataset.src)};
})()`

type viewer struct {
	Shown  int      `json:"shown"`
	Own    int      `json:"own"` // images of the question itself
	Ref    string   `json:"ref"`
	Thumbs []string `json:"thumbs"`
}

// TestBrowserRadiographOnEveryTurn: a reader answers every turn of a
// revision-required record in Chromium and finds a visible radiograph in
// the viewer on each — the question's own images, or the detection
// radiograph in the reference viewer on questions without one. Every
// earlier image is a thumbnail that opens in the reference viewer, which
// pans by keyboard. The sign-in page, a turn and the end page have no
// serious or critical axe-core violation, and an empty multi-select
// submit says why nothing was sent.
func TestBrowserRadiographOnEveryTurn(t *testing.T) {
	t.Parallel()
	newCtx := browser(t)
	axe := browsertest.AxeScript(t)
	bench := testBench(t)
	st := newStudy(t, bench, protocol.OracleImplicit)
	ctx := newCtx(1400, 1000)
	if err := chromedp.Do(ctx, chromedp.Navigate(st.srv.URL+"/login"), chromedp.WaitVisible(chromedp.ID("token"))); err != nil {
		t.Fatal(err)
	}
	browsertest.CheckAxe(t, ctx, axe, "sign-in page")
	signInBrowser(t, ctx, st.srv.URL, st.creds["reader1"])
	// The reader's revision-required record and its position.
	items, err := st.store.Items(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	rrPos, asked := -1, 0
	for _, it := range items {
		if rec := bench.Records[it.BenchIndex]; rec.Path() == benchmark.RevisionRequired && rrPos < 0 {
			rrPos = it.Pos
			plan, err := protocol.Plan(rec, bench.Dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range plan {
				if p.Asked() {
					asked++
				}
			}
		}
	}
	if rrPos < 0 || asked < 4 {
		t.Fatalf("revision-required record at %d with %d asked turns", rrPos, asked)
	}
	// The turns of the other records are answered over HTTP (option 1),
	// in a session of the same reader, and the browser loads the page
	// that follows: it shows the record's turns and the end page.
	c := st.signIn("reader1")
	skip := func() {
		for {
			tp := c.current()
			if tp.done || tp.pos == rrPos {
				return
			}
			if code := c.answer(tp, 1); code != http.StatusSeeOther {
				t.Fatalf("answer at record %d turn %d: %d", tp.pos, tp.seq, code)
			}
		}
	}
	skip()
	if err := chromedp.Do(ctx, chromedp.Navigate(st.srv.URL+"/read")); err != nil {
		t.Fatal(err)
	}
	turns, imageless, multiChecked, axeDone, prev := 0, 0, false, false, ""
	for {
		state := nextState(t, ctx, prev)
		prev = state
		if state == "done" {
			browsertest.CheckAxe(t, ctx, axe, "end page")
			break
		}
		var tp turnPage
		fmt.Sscanf(state, "%d/%d", &tp.pos, &tp.seq)
		if tp.pos != rrPos {
			skip()
			if err := chromedp.Do(ctx, chromedp.Navigate(st.srv.URL+"/read")); err != nil {
				t.Fatal(err)
			}
			continue
		}
		turns++
		if checkViewer(t, ctx, tp) == 0 {
			imageless++
		}
		if !axeDone {
			browsertest.CheckAxe(t, ctx, axe, "reading page")
			axeDone = true
		}
		if multi, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector("input[type=checkbox][data-option]")`)); multi && !multiChecked {
			checkEmptySubmit(t, ctx, state)
			multiChecked = true
		}
		js := fmt.Sprintf(`(() => { if ((%s) !== %q) return false;
			document.querySelector('[data-option="1"]').click();
			document.querySelector("[data-submit]").click(); return true; })()`, pageState, state)
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil || !ok {
			t.Fatalf("answering at %s: %v %v", state, ok, err)
		}
	}
	if turns != asked {
		t.Errorf("the revision-required record showed %d turns, its plan asks %d", turns, asked)
	}
	if imageless == 0 {
		t.Error("no question without an image of its own met")
	}
	if !multiChecked {
		t.Error("no multi-select question met")
	}
}

// nextState waits for a page whose state (pageState) is set and differs
// from prev, across the navigation a submit starts, and returns it.
func nextState(t *testing.T, ctx context.Context, prev string) string {
	t.Helper()
	js := fmt.Sprintf(`(() => { const s = (%s); return s !== "" && s !== %q ? s : ""; })()`, pageState, prev)
	var err error
	for try := 0; try < 5; try++ {
		var s string
		// A poll cut by the navigation fails; the next one runs on the
		// new page.
		if s, err = chromedp.Run(ctx, chromedp.Poll[string](js, chromedp.WithPollingTimeout(20*time.Second))); err == nil && s != "" {
			return s
		}
	}
	t.Fatalf("no new page after %s: %v", prev, err)
	return ""
}

// checkViewer: on the turn on screen, at least one radiograph is visible;
// on a question without images, the reference viewer shows the record's
// first image (the detection radiograph); every thumbnail opens its image
// in the reference viewer, and the arrow keys pan it.
func checkViewer(t *testing.T, ctx context.Context, tp turnPage) (ownImages int) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`Array.from(document.querySelectorAll(`+strconv.Quote(shownRadiograph)+`)).every(i => i.complete && i.naturalWidth > 0)`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("record %d question %d: images did not load: %v", tp.pos, tp.seq+1, err)
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[viewer](viewerState))
	if err != nil {
		t.Fatal(err)
	}
	if v.Shown == 0 {
		diag, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("img.radiograph")).map(i => {
			const r = i.closest(".viewport").getBoundingClientRect();
			return (i.closest(".figure").hidden ? "hidden " : "") + i.getAttribute("src") + " complete=" + i.complete + " w=" + i.naturalWidth + " viewport " + [r.left, r.top, r.width, r.height].join(",");
		}).join("; ") + " window " + window.innerWidth`))
		t.Fatalf("record %d question %d: no visible radiograph (%s)", tp.pos, tp.seq+1, diag)
	}
	if v.Own == 0 && v.Ref != fmt.Sprintf("/image/%d/0/0", tp.pos) {
		t.Errorf("record %d question %d, without an image of its own: the viewer shows %q, not the detection radiograph", tp.pos, tp.seq+1, v.Ref)
	}
	if tp.seq > 0 && (len(v.Thumbs) == 0 || v.Thumbs[0] != fmt.Sprintf("/image/%d/0/0", tp.pos)) {
		t.Errorf("record %d question %d: thumbnails %v, want the detection radiograph first", tp.pos, tp.seq+1, v.Thumbs)
	}
	for i, u := range v.Thumbs {
		js := fmt.Sprintf(`document.querySelectorAll(".thumb[data-src]")[%d].click()`, i)
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
			t.Fatal(err)
		}
		// Wait for the clicked image itself: the one shown before is
		// already complete, so completeness alone would not wait.
		loaded := fmt.Sprintf(`(() => { const i = document.getElementById("ref-img"); return new URL(i.src).pathname === %q && i.complete && i.naturalWidth > 0 })()`, u)
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](loaded,
			chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			st, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`fetch(%q).then(r => r.status + " " + r.headers.get("content-type"))`, u), chromedp.EvalAwaitPromise))
			src, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const i = document.getElementById("ref-img"); return i.src + " complete=" + i.complete + " w=" + i.naturalWidth })()`))
			t.Fatalf("thumbnail %s did not load in the viewer: %v (the image now: %s; img %s)", u, err, st, src)
		}
		v, err := chromedp.Run(ctx, chromedp.Evaluate[viewer](viewerState))
		if err != nil {
			t.Fatal(err)
		}
		if v.Ref != u {
			t.Errorf("record %d question %d: thumbnail %s opened %q", tp.pos, tp.seq+1, u, v.Ref)
		}
	}
	if len(v.Thumbs) == 0 {
		return v.Own
	}
	// Keyboard pan on the reference viewer.
	const transform = `document.querySelector("#ref .stage").style.transform`
	before, err := chromedp.Run(ctx, chromedp.Evaluate[string](transform))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS("#ref .viewport")), chromedp.KeyEvent(kb.ArrowLeft)); err != nil {
		t.Fatal(err)
	}
	after, err := chromedp.Run(ctx, chromedp.Evaluate[string](transform))
	if err != nil {
		t.Fatal(err)
	}
	if before == after {
		t.Errorf("record %d question %d: the arrow key did not pan (%s)", tp.pos, tp.seq+1, before)
	}
	return v.Own
}

// checkEmptySubmit: a multi-select question submitted with nothing ticked
// stays on screen and says why, in a live region.
func checkEmptySubmit(t *testing.T, ctx context.Context, state string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("[data-submit]").click()`)); err != nil {
		t.Fatal(err)
	}
	msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const m = document.getElementById("choose");
		return m && m.getAttribute("aria-live") === "polite" && m.offsetParent !== null ? m.textContent : "" })()`))
	if err != nil {
		t.Fatal(err)
	}
	now, err := chromedp.Run(ctx, chromedp.Evaluate[string](pageState))
	if err != nil {
		t.Fatal(err)
	}
	if msg == "" || now != state {
		t.Errorf("empty multi-select submit: message %q, page %s (was %s)", msg, now, state)
	}
}

// aidState is pageState with the aided step: "pos/seq/unaided" or
// "pos/seq/final" (the page showing the model's answer).
const aidState = `(() => { const s = (` + pageState + `); if (s === "" || s === "done") return s;
	const st = document.querySelector("input[name=stage]"); return s + "/" + (st ? st.value : "");
})()`

// TestBrowserAidedStudy: an aided study end to end in Chromium. On every
// question the reader answers unaided (the ground truth), the page then
// shows the model's answer beside a visible radiograph with the reader's
// answer ticked, and the reader confirms it; the export writes the
// unaided and the aided run, both at 100 %, with their reading arms. The
// page with the model's answer has no serious or critical axe-core
// violation.
func TestBrowserAidedStudy(t *testing.T) {
	t.Parallel()
	newCtx := browser(t)
	axe := browsertest.AxeScript(t)
	bench := testBench(t)
	oracle := protocol.OracleExplicit
	aidDir := modelRun(t, bench, oracle)
	st := newAidedStudy(t, bench, oracle, aidDir)
	ctx := newCtx(1400, 1000)
	signInBrowser(t, ctx, st.srv.URL, st.creds["reader1"])
	prev, unaided, final, axeDone := "", 0, 0, false
	for {
		js := fmt.Sprintf(`(() => { const s = (%s); return s !== "" && s !== %q ? s : ""; })()`, aidState, prev)
		var state string
		var err error
		for try := 0; try < 5 && state == ""; try++ {
			state, err = chromedp.Run(ctx, chromedp.Poll[string](js, chromedp.WithPollingTimeout(20*time.Second)))
		}
		if state == "" {
			t.Fatalf("no new page after %s: %v", prev, err)
		}
		prev = state
		if state == "done" {
			break
		}
		var tp turnPage
		var stage string
		fmt.Sscanf(strings.ReplaceAll(state, "/", " "), "%d %d %s", &tp.pos, &tp.seq, &stage)
		var act string
		switch stage {
		case "unaided":
			if shown, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector("[data-aid]")`)); shown {
				t.Fatalf("%s: the model's answer is on the page before the unaided answer", state)
			}
			act = fmt.Sprintf(`for (const o of %s) document.querySelector('[data-option="' + o + '"]').click();`, jsList(st.gtAnswer("reader1", tp)))
			unaided++
		case "final":
			checkViewer(t, ctx, tp)
			aid, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const m = document.getElementById("aid-model"), u = document.getElementById("aid-unaided");
				return m && u && m.offsetParent !== null ? u.textContent + " | " + m.textContent : "" })()`))
			if err != nil || aid == "" || !strings.Contains(aid, "| (1) ") {
				t.Fatalf("%s: the model's answer is not shown (%q, %v)", state, aid, err)
			}
			if !axeDone {
				browsertest.CheckAxe(t, ctx, axe, "page with the model's answer")
				axeDone = true
			}
			final++ // confirm: the unaided answer is ticked
		default:
			t.Fatalf("%s: not an aided page", state)
		}
		submit := fmt.Sprintf(`(() => { if ((%s) !== %q) return false; %s document.querySelector("[data-submit]").click(); return true; })()`, aidState, state, act)
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](submit)); err != nil || !ok {
			t.Fatalf("answering at %s: %v %v", state, ok, err)
		}
	}
	if unaided != final || unaided < 2*len(bench.Records) {
		t.Fatalf("%d unaided and %d final answers", unaided, final)
	}
	runs, err := Export(context.Background(), nil, st.store, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs[:2] {
		m, err := rundir.ReadManifest(r.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if m.Reading == nil || m.Reading.Arm != r.Arm || m.Reading.Reader != "reader1" || m.Reading.AidRun == "" || r.Finished != len(bench.Records) {
			t.Errorf("run %s: %+v, reading %+v", r.Dir, r, m.Reading)
		}
		for key, rec := range readRun(t, r.Dir) {
			for _, tn := range rec.Turns {
				if tn.Status == results.TurnAsked && (tn.Correct == nil || !*tn.Correct) {
					t.Errorf("%s arm: %s %s not correct", r.Arm, key, tn.Turn)
				}
			}
		}
	}
	st.checkNoLeak(t)
}
