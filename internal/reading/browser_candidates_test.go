package reading

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/browsertest"
	"github.com/chexpercept/chexpercept/internal/protocol"
)

// patchedNotice is the implicit oracle's notice on the page: "" when there
// is none, else its one line (the summary), whether it is open, and the
// number of notices.
const patchedNotice = `(() => { const n = document.querySelectorAll(".oracle.implicit"); if (n.length === 0) return "";
	const d = n[0]; return n.length + "|" + (d.open ? "open" : "closed") + "|" + d.querySelector("summary").textContent.trim(); })()`

// noticeLine is the notice's one line in the page's words: question
// numbers and options as the page shows them.
var noticeLine = regexp.MustCompile(`^1\|closed\|Oracle: (question \d+ is answered for you as \(\d+\) [^()]+|questions \d+(, \d+)* and \d+ are answered for you)$`)

// toCandidates answers in the browser — the ground truth, or option 1
// when first is set — until the page shows a question with several
// images of its own (the candidates of a revision result), and returns
// its state and the number of pages that showed the implicit oracle's
// notice (each checked against noticeLine).
func (st *study) toCandidates(t *testing.T, ctx context.Context, reader string, first bool) (string, int) {
	t.Helper()
	prev, notices := "", 0
	for {
		state := nextState(t, ctx, prev)
		if state == "done" {
			t.Fatalf("%s: no question with candidates met", reader)
		}
		notice, err := chromedp.Run(ctx, chromedp.Evaluate[string](patchedNotice))
		if err != nil {
			t.Fatal(err)
		}
		if notice != "" {
			notices++
			if !noticeLine.MatchString(notice) {
				t.Errorf("%s at %s: oracle notice %q", reader, state, notice)
			}
		}
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.getElementById("candidates")`)); err != nil {
			t.Fatal(err)
		} else if ok {
			return state, notices
		}
		var tp turnPage
		fmt.Sscanf(state, "%d/%d", &tp.pos, &tp.seq)
		opts := []int{1}
		if !first {
			opts = st.gtAnswer(reader, tp)
		}
		js := fmt.Sprintf(`(() => { if ((%s) !== %q) return false;
			for (const o of %s) document.querySelector('[data-option="' + o + '"]').click();
			document.querySelector("[data-submit]").click(); return true; })()`, pageState, state, jsList(opts))
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil || !ok {
			t.Fatalf("answering at %s: %v %v", state, ok, err)
		}
		prev = state
	}
}

// candidateLayout describes the candidates and the answer controls on
// screen: each candidate's label and the box of its label and viewer, the
// option labels, and the boxes of the options and the submit button, all
// in window coordinates at the page's scroll position.
const candidateLayout = `(() => {
	const box = e => { const r = e.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
	return {
		w: window.innerWidth, h: window.innerHeight, scrollW: document.documentElement.scrollWidth, scrollY: window.scrollY,
		candidates: Array.from(document.querySelectorAll("#candidates .figure")).map(f => ({
			label: f.querySelector(".figno").textContent.trim(), labelBox: box(f.querySelector(".figno")),
			viewer: box(f.querySelector(".viewport")), loaded: f.querySelector("img").complete && f.querySelector("img").naturalWidth > 0,
			alt: f.querySelector("img").alt})),
		options: Array.from(document.querySelectorAll("label.option")).map(l => ({text: l.textContent.trim().replace(/\s+/g, " "), box: box(l)})),
		submit: box(document.querySelector("[data-submit]")),
	};
})()`

type layoutBox struct{ L, T, R, B float64 }

func (b layoutBox) inside(w, h float64) bool {
	return b.L >= 0 && b.T >= 0 && b.R <= w+0.5 && b.B <= h+0.5 && b.R > b.L && b.B > b.T
}

type candidatesOnScreen struct {
	W, H, ScrollW, ScrollY float64
	Candidates             []struct {
		Label    string
		LabelBox layoutBox `json:"labelBox"`
		Viewer   layoutBox
		Loaded   bool
		Alt      string
	}
	Options []struct {
		Text string
		Box  layoutBox
	}
	Submit layoutBox
}

func readCandidates(t *testing.T, ctx context.Context) candidatesOnScreen {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`Array.from(document.querySelectorAll("#candidates img")).every(i => i.complete && i.naturalWidth > 0)`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("candidates did not load: %v", err)
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[candidatesOnScreen](candidateLayout))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Candidates) < 2 || len(v.Candidates) != len(v.Options) {
		t.Fatalf("%d candidates, %d options", len(v.Candidates), len(v.Options))
	}
	for i, c := range v.Candidates {
		// "(1) 1st mask" above the image, "(1) 1st mask" beside the radio.
		if !c.Loaded || c.Label != v.Options[i].Text || !strings.HasPrefix(c.Label, fmt.Sprintf("(%d) ", i+1)) || !strings.Contains(c.Alt, c.Label) {
			t.Errorf("candidate %d: label %q, alt %q, loaded %v; option %q", i+1, c.Label, c.Alt, c.Loaded, v.Options[i].Text)
		}
	}
	if v.ScrollW > v.W {
		t.Errorf("page %v px wide in a %v px window", v.ScrollW, v.W)
	}
	return v
}

// TestBrowserCandidatesSideBySide: on a revision-result question of a
// phantom benchmark, at 1400×900 every candidate, with its label (the
// option's words), and every option with the submit button are in the
// window at once, the candidates two by two beside the panel; at 390×844
// they stand one under another, each under its label. Every candidate is
// a viewer of its own that zooms. The implicit oracle's notice is one
// closed line in the page's words. The page has no serious or critical
// axe-core violation.
func TestBrowserCandidatesSideBySide(t *testing.T) {
	t.Parallel()
	newCtx := browser(t)
	axe := browsertest.AxeScript(t)
	st := newStudy(t, own(phantomBench(t)), protocol.OracleImplicit)
	st.noBodies()

	ctx := newCtx(1400, 900)
	signInBrowser(t, ctx, st.srv.URL, st.creds["reader1"])
	// Option 1 throughout: wrong answers, replaced by the oracle, and
	// its notice on the later questions.
	_, notices := st.toCandidates(t, ctx, "reader1", true)
	if notices == 0 {
		t.Error("no page showed the implicit oracle's notice")
	}
	v := readCandidates(t, ctx)
	screenshot(ctx, "read-candidates-1400x900")
	if v.ScrollY != 0 {
		t.Errorf("the page opened scrolled by %v px", v.ScrollY)
	}
	for i, c := range v.Candidates {
		if !c.Viewer.inside(v.W, v.H) || !c.LabelBox.inside(v.W, v.H) {
			t.Errorf("1400×900: candidate %d (%s) at %+v, label at %+v: not in the window", i+1, c.Label, c.Viewer, c.LabelBox)
		}
		if c.Viewer.B-c.Viewer.T < 300 || c.Viewer.R-c.Viewer.L < 300 {
			t.Errorf("1400×900: candidate %d viewer %+v, smaller than 300 px", i+1, c.Viewer)
		}
	}
	for _, o := range v.Options {
		if !o.Box.inside(v.W, v.H) {
			t.Errorf("1400×900: option %q at %+v: not in the window", o.Text, o.Box)
		}
	}
	if !v.Submit.inside(v.W, v.H) {
		t.Errorf("1400×900: submit button at %+v: not in the window", v.Submit)
	}
	// Side by side: the first two share a row, the candidates sit left of
	// the options.
	if c := v.Candidates; len(c) >= 2 && (c[0].Viewer.T != c[1].Viewer.T || c[1].Viewer.L <= c[0].Viewer.R) {
		t.Errorf("1400×900: candidates 1 and 2 not side by side: %+v, %+v", c[0].Viewer, c[1].Viewer)
	}
	for i, c := range v.Candidates {
		if c.Viewer.R > v.Options[0].Box.L {
			t.Errorf("1400×900: candidate %d reaches under the options (%v > %v)", i+1, c.Viewer.R, v.Options[0].Box.L)
		}
	}
	// Each candidate zooms in its own viewer, the others staying as they
	// are.
	for i := range v.Candidates {
		js := fmt.Sprintf(`(() => { const f = document.querySelectorAll("#candidates .figure"), st = () => Array.from(f).map(x => x.querySelector(".stage").style.transform);
			const before = st(); f[%d].querySelector('[data-zoom="in"]').click(); const after = st();
			return after.map((s, k) => s !== before[k] ? k : -1).filter(k => k >= 0).join(","); })()`, i)
		changed, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatal(err)
		}
		if changed != fmt.Sprint(i) {
			t.Errorf("zoom in on candidate %d changed the viewers %q", i+1, changed)
		}
	}
	browsertest.CheckAxe(t, ctx, axe, "revision-result question")

	phone := newCtx(390, 844)
	signInBrowser(t, phone, st.srv.URL, st.creds["reader2"])
	st.toCandidates(t, phone, "reader2", false)
	p := readCandidates(t, phone)
	screenshot(phone, "read-candidates-390x844")
	for i, c := range p.Candidates {
		if c.Viewer.R-c.Viewer.L < 300 || c.Viewer.L < 0 || c.Viewer.R > p.W+0.5 {
			t.Errorf("390×844: candidate %d viewer %+v", i+1, c.Viewer)
		}
		if c.LabelBox.B > c.Viewer.T || c.LabelBox.L < c.Viewer.L-1 {
			t.Errorf("390×844: candidate %d's label %+v is not above its viewer %+v", i+1, c.LabelBox, c.Viewer)
		}
		if i > 0 && c.LabelBox.T < p.Candidates[i-1].Viewer.B {
			t.Errorf("390×844: candidate %d (label at %v) not under candidate %d (ending at %v)", i+1, c.LabelBox.T, i, p.Candidates[i-1].Viewer.B)
		}
	}
	browsertest.CheckAxe(t, phone, axe, "revision-result question at 390 px")
}
