package report

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/browsertest"
	"github.com/chexpercept/chexpercept/internal/protocol"
)

// readersReport writes two readers (provider human: one answers the
// truth, one misses T1 on every fifth record) and three models (first,
// random, and truth but for stage 3 and some T1s) in oracle mode none,
// and reports them.
func readersReport(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	recs := benchtest.Full(4)
	index := map[string]int{}
	for i, r := range recs {
		index[r.KeyID] = i
	}
	runs := []*analysistest.Run{
		{Provider: "human", Label: "reader1", Oracle: "none", Policy: analysistest.Oracle},
		{Provider: "human", Label: "reader2", Oracle: "none", Policy: domainPolicy(index, 0, false)},
		{Provider: "opensource", Label: "first", Oracle: "none", Policy: analysistest.First},
		{Provider: "opensource", Label: "random", Oracle: "none", Policy: analysistest.Random(3)},
		{Provider: "opensource", Label: "weak3", Oracle: "none", Policy: func(rec *benchmark.Record, p protocol.PlannedTurn) string {
			return domainPolicy(index, 1, true)(rec, p)
		}},
	}
	dir := fixture(t, tmp, recs, runs...)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(Config{Inputs: []string{dir}, Out: out, Analysis: analysis.Options{Bootstrap: 300}}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadersAndModels: the report over two readers and three models has
// the readers-and-models part (the readers' mean with its interval, each
// model's difference, κ per question type, reading time per stage) and
// claim 3 with its rule, in report.md and in index.html (Chromium).
func TestReadersAndModels(t *testing.T) {
	out := readersReport(t)
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, want := range []string{"## Readers and models", "Oracle none: 2 reader(s): human_reader1, human_reader2.",
		"| readers (mean) |", "| opensource_first − readers |", "| opensource_weak3 − readers |", "Fleiss' κ", "| T1 detection |", "Reading time per stage", "| 1 detection |",
		"**Claim 3 (models fall short of expert readers).**", "Claim 3 rule:", "- Oracle none: **"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// Readers are no models: they are in no domain group and no claim 1/2.
	if strings.Contains(md, "**Claim 1") {
		t.Error("claims 1 and 2 appeared without domain groups")
	}
	if os.Getenv("CHX_DUMP") != "" {
		t.Log(md)
	}
	// The first policy answers "yes": far below the readers on the
	// lesion-free path (the last column), ahead of them at detection on
	// revision_required (the first), where reader2 misses some records.
	n := 0
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| opensource_first − readers |") {
			n++
			cells := strings.Split(strings.Trim(line, "| "), "|")
			if first, last := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[len(cells)-1]); !strings.HasPrefix(first, "+") || !strings.HasPrefix(last, "-") {
				t.Errorf("first − readers: RR s1 %q, LF s1 %q", first, last)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d rows for the first policy", n)
	}

	exe := browsertest.Chromium(t)
	ctx, cancel := newBrowser(t, exe, filepath.Join(t.TempDir(), "chrome-profile"))
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.ToSlash(filepath.Join(out, "index.html"))),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatal(err)
	}
	check := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := check(`(document.querySelector("#readers h2") || {}).textContent || ""`); got != "Readers and models" {
		t.Errorf("readers section heading %q", got)
	}
	if n, _ := strconv.Atoi(check(`String(document.querySelectorAll("#readers table tbody tr").length)`)); n < 4+benchmark.NumQuestions+4 {
		t.Errorf("readers tables have %d rows", n)
	}
	kappa := check(`Array.from(document.querySelectorAll("#readers table tbody tr")).filter(r => r.textContent.includes("T1 detection")).map(r => r.textContent).join("")`)
	if !strings.Contains(kappa, "records)") {
		t.Errorf("no κ for T1 in the page: %q", kappa)
	}
	claim := check(`Array.from(document.querySelectorAll("#findings .claim")).map(c => c.textContent).join("\n")`)
	if !strings.Contains(claim, "Claim 3 (models fall short of expert readers)") || !strings.Contains(claim, "Oracle none:") {
		t.Errorf("claim 3 not in the page: %q", claim)
	}
	if w := check(`String(document.documentElement.scrollWidth <= window.innerWidth)`); w != "true" {
		t.Error("the report is wider than the window")
	}
	if dir := os.Getenv("CHEXPERCEPT_SCREENSHOTS"); dir != "" {
		if b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
			os.WriteFile(filepath.Join(dir, "report-readers.png"), b, 0o644)
		}
	}
}
