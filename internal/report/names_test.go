package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// TestHostileRunNames: a run folder whose name
// holds a bidi override, a newline and a '|', and one of 250 characters,
// are reported like any other: names are escaped (textsafe.OneLine) in
// report.md, its table rows stay one line each, index.html and the CSVs
// hold no raw control or format character, and every plot file name fits.
func TestHostileRunNames(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	evil := "ev\u202eil|x\ny"
	long := strings.Repeat("m", 250-len("baseline_"))
	dir := fixture(t, tmp, benchtest.Sample(),
		&analysistest.Run{Provider: "baseline", Label: evil, Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "baseline", Label: long, Oracle: "none", Policy: analysistest.Random(0)},
		&analysistest.Run{Provider: "baseline", Label: "l" + long[1:], Oracle: "none", Policy: analysistest.Random(1)})
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 20}, Report: Options{Version: "test"}}); err != nil {
		t.Fatalf("report: %v", err)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	if !strings.Contains(md, `baseline_ev\u202eil\|x\ny`) {
		t.Errorf("report.md does not show the escaped name")
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasSuffix(line, " |") {
			t.Errorf("table row split: %q", line)
		}
	}
	err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if len(d.Name()) > 200 {
			t.Errorf("file name of %d bytes: %s", len(d.Name()), d.Name())
		}
		ext := filepath.Ext(p)
		if d.IsDir() || (ext != ".md" && ext != ".html" && ext != ".csv") { // summary.json keeps the exact path of each input
			return nil
		}
		b := read(t, p)
		if strings.ContainsRune(string(b), '\u202e') {
			t.Errorf("%s holds a raw U+202E", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b := PlotName("lesion_stage", "none", "baseline_"+long), PlotName("lesion_stage", "none", "baseline_l"+long[1:])
	if a == b || len(a) > 160 || PlotName("k", "none", "a b") == PlotName("k", "none", "a_b") {
		t.Errorf("plot names collide or are too long: %s %s", a, b)
	}
}

// TestRunNamesAreNotMarkup: a run whose name is an HTML tag or a character
// reference shows as typed in report.md; a Markdown viewer would
// otherwise render the tag (an <img onerror=…>) or turn "&#x202E;" into a
// bidi override.
func TestRunNamesAreNotMarkup(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dir := fixture(t, tmp, benchtest.Sample(),
		&analysistest.Run{Provider: "baseline", Label: "<img src=x onerror=alert(1)>", Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "baseline", Label: "a&#x202E;b", Oracle: "none", Policy: analysistest.Random(0)})
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 20}, Report: Options{Version: "test"}}); err != nil {
		t.Fatalf("report: %v", err)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, raw := range []string{"<img", "&#x202E;"} {
		for _, line := range strings.Split(md, "\n") {
			if i := strings.Index(line, raw); i >= 0 && (i == 0 || line[i-1] != '\\') {
				t.Errorf("report.md holds markup %q unescaped: %q", raw, line)
				break
			}
		}
	}
	if !strings.Contains(md, `baseline_\<img src=x onerror=alert(1)>`) {
		t.Errorf("report.md does not show the name as typed (escaped)")
	}
}
