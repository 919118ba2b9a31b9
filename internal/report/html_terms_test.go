package report

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
)

// TestHTMLExplainsItself checks index.html's words: every table of the
// findings and of the oracle-mode sections carries a note saying what its
// numbers are, every plot a caption sentence (not its file name), the
// item browser a legend of its marks, and the item-health summary is in
// the page with the flagged item.
func TestHTMLExplainsItself(t *testing.T) {
	t.Parallel()
	planted, key := plantedReport(t)
	for _, out := range []string{findingsReport(t), planted} {
		page := string(read(t, filepath.Join(out, "index.html")))
		tables := page[strings.Index(page, "<main>"):strings.Index(page, `<section id="plots">`)]
		h3 := regexp.MustCompile(`<h3>([^<]*)</h3>\n(<details class="note")?`)
		n := 0
		for _, m := range h3.FindAllStringSubmatch(tables, -1) {
			if strings.HasPrefix(m[1], "Claim") {
				continue
			}
			n++
			if m[2] == "" {
				t.Errorf("table %q has no note", m[1])
			}
		}
		if n < 10 {
			t.Errorf("%d tables found, want at least 10", n)
		}
		caps := regexp.MustCompile(`<figcaption>([^<]*)\(<a`).FindAllStringSubmatch(page, -1)
		if len(caps) == 0 {
			t.Error("no plot captions")
		}
		for _, c := range caps {
			if s := strings.TrimSpace(c[1]); strings.Contains(s, "plot_") || !strings.HasSuffix(s, ".") || len(s) < 40 {
				t.Errorf("caption %q is not a sentence", s)
			}
		}
		if !strings.Contains(page, `id="item-legend"`) || !strings.Contains(page, "✓</span> answered correctly") {
			t.Error("the item browser has no legend of its marks")
		}
	}
	page := string(read(t, filepath.Join(planted, "index.html")))
	i := strings.Index(page, `<section id="item-health">`)
	if i < 0 {
		t.Fatal("index.html has no item-health section")
	}
	health := page[i:strings.Index(page, `<section id="items">`)]
	for _, s := range []string{key, "unanimous_wrong", "1 of ", "Position bias", "A flag marks"} {
		if !strings.Contains(health, s) {
			t.Errorf("item-health section lacks %q", s)
		}
	}
}

// TestTableNotes: every table title the report builds has a note, so a
// renamed table cannot silently lose its explanation.
func TestTableNotes(t *testing.T) {
	t.Parallel()
	for _, title := range []string{"Leaderboard (oracle none)", "End-to-end accuracy (%), revision_required (oracle none)",
		"Oracle-passed accuracy (%), lesion_free (oracle none)", "Conditional accuracy (%), revision_free (oracle none)",
		"Depth by lesion, revision_free (oracle none)", "End-to-end accuracy (%) by lesion and path, x (oracle none)",
		"Parse failures and errors (oracle none)", "Usage (oracle none)"} {
		if tableNote(title) == "" {
			t.Errorf("no note for %q", title)
		}
	}
	if !strings.HasPrefix(tableNote("End-to-end accuracy (%) by lesion and path, x"), "End-to-end") || strings.Contains(tableNote("End-to-end accuracy (%) by lesion and path, x"), "Depth:") {
		t.Error("the by-lesion table gets the path tables' note")
	}
}

func TestPlotCaption(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, want string }{
		{PlotName("stage_accuracy", "none", ""), "End-to-end accuracy of each model, one bar per applicable stage"},
		{PlotName("depth_heatmap", "implicit", ""), "(oracle mode implicit)."},
		{PlotName("lesion_stage", "none", "a/b c"), ": a/b c (oracle mode none)."},
		{PlotName("lesion_stage", "none", "plain-run"), ": plain-run (oracle mode none)."},
		{"plot_unknown_oracle_none", "plot_unknown_oracle_none"},
	} {
		// The caption names the run as it is, whatever its plot's file name.
		runs := []*analysis.RunResult{{Run: &analysis.Run{Name: "a/b c"}}, {Run: &analysis.Run{Name: "plain-run"}}}
		if got := plotCaption(tc.name, runs); !strings.Contains(got, tc.want) {
			t.Errorf("plotCaption(%q) = %q, want it to contain %q", tc.name, got, tc.want)
		}
	}
}
