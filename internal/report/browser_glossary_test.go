package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/browsertest"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// longSamplingReport is the report of the baseline runs, one of them
// with long generation settings in its manifest.
func longSamplingReport(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	dir := fixture(t, tmp, benchtest.Sample(), baselineRuns()...)
	name := filepath.Join(dir, "baseline_random", "oracle_none", rundir.ManifestFile)
	mb := read(t, name)
	mb = bytes.Replace(mb, []byte(`"run_name"`), []byte(`"sampling": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 8192, "seed": 12345, "extra_body": {"top_k": 20, "min_p": 0.05, "repetition_penalty": 1.05, "chat_template_kwargs": {"enable_thinking": true}, "stop": ["<|im_end|>", "<|endoftext|>", "Observation:"]}}, "run_name"`), 1)
	if err := os.WriteFile(name, mb, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 20}}); err != nil {
		t.Fatal(err)
	}
	if md := string(read(t, filepath.Join(out, "report.md"))); !strings.Contains(md, "repetition_penalty") {
		t.Fatal("the fixture's sampling is not in report.md")
	}
	return out
}

// TestBrowserGlossaryFits opens reports with several runs (six models,
// the oracle baseline first) and with readers and models at 1400×1000:
// no table is wider than its box (nothing to scroll sideways), every
// listed term and code has a definition in the page's glossary, every
// link to a definition lands on one, and each plot is shown once.
func TestBrowserGlossaryFits(t *testing.T) {
	t.Parallel()
	browsertest.Chromium(t)
	planted, _ := plantedReport(t)
	reports := []struct{ name, dir string }{
		{"six runs", planted},
		{"readers and models", readersReport(t)},
		{"long sampling", longSamplingReport(t)},
		{"findings", findingsReport(t)},
	}
	terms := []string{"Oracle mode", "oracle none", "oracle implicit", "oracle explicit", "Error policy",
		"RR, RF, LF", "Stages 1–4", "T1–T9", "E2E", "Depth", "n and the per-stage counts",
		"D2, D3, D5, D6", "A4", "B2", "Parse: reference, strict", "Rehearsal", "Sampling", "Item-health flags"}
	for _, r := range reports {
		t.Run(r.name, func(t *testing.T) {
			ctx := newBrowser(t)
			if err := chromedp.Do(ctx,
				chromedp.EmulateViewport(1400, 1000),
				chromedp.Navigate("file://"+filepath.ToSlash(filepath.Join(r.dir, "index.html"))),
				chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)),
			); err != nil {
				t.Fatal(err)
			}
			if n := evalInt(t, ctx, `document.querySelectorAll("table").length`); n < 5 {
				t.Fatalf("%d tables in the page", n)
			}
			wide, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("table")).filter(tb => {
				const box = tb.closest(".table-wrap") || document.documentElement;
				return tb.getBoundingClientRect().width > Math.min(box.clientWidth, document.documentElement.clientWidth) + 1;
			}).map(tb => (tb.closest(".table-wrap")?.querySelector("h3")?.textContent || tb.id || "table") + " " + Math.round(tb.getBoundingClientRect().width) + " px")`))
			if err != nil {
				t.Fatal(err)
			}
			if len(wide) > 0 {
				t.Errorf("tables wider than their box at 1400 px: %s", strings.Join(wide, "; "))
			}
			defined, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("dl#glossary > dt")).filter(dt => (dt.nextElementSibling?.textContent || "").length > 20).map(dt => dt.textContent)`))
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(defined, "\n")
			for _, term := range terms {
				if !strings.Contains(all, term) {
					t.Errorf("the glossary defines no %q; it has:\n%s", term, all)
				}
			}
			broken, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('a[href^="#"]')).map(a => a.getAttribute("href")).filter(h => !document.getElementById(h.slice(1)))`))
			if err != nil {
				t.Fatal(err)
			}
			if len(broken) > 0 {
				t.Errorf("links to no element: %v", broken)
			}
			// Every oracle mode heading links to its mode's definition.
			if n := evalInt(t, ctx, `Array.from(document.querySelectorAll("#tables h2")).filter(h => !h.querySelector('a[href^="#g-oracle-"]:not([href="#g-oracle-mode"])')).length`); n > 0 {
				t.Errorf("%d oracle mode heading(s) without a link to the mode's definition", n)
			}
			if r.name == "findings" && evalInt(t, ctx, `document.querySelectorAll('#findings figure img[src^="plot_domain_groups"]').length`) == 0 {
				t.Error("the findings show no domain-groups plot")
			}
			dup, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => { const seen = {}, dup = []; document.querySelectorAll("figure img").forEach(i => { const s = i.getAttribute("src"); if (seen[s]) dup.push(s); seen[s] = 1; }); return dup; })()`))
			if err != nil {
				t.Fatal(err)
			}
			if len(dup) > 0 {
				t.Errorf("plots shown more than once: %v", dup)
			}
		})
	}
}
