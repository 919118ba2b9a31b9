package qagen

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
)

var optionsBlockRE = regexp.MustCompile(`^([^\n]+(?:\n[^\n]+)*)\n\nOptions:((?:\n\(\d+\) [^\n]+)+)$`)

// checkQuestion checks format.md §3.6 and §7 for one question text.
func checkQuestion(t *testing.T, what, q string, options []string) {
	t.Helper()
	m := optionsBlockRE.FindStringSubmatch(q)
	if m == nil {
		t.Fatalf("%s: not instruction + blank line + Options block:\n%s", what, q)
	}
	lines := strings.Split(strings.TrimPrefix(m[2], "\n"), "\n")
	if len(lines) != len(options) {
		t.Fatalf("%s: %d option lines, want %d", what, len(lines), len(options))
	}
	for k, l := range lines {
		if want := "(" + strconv.Itoa(k+1) + ") " + options[k]; l != want {
			t.Errorf("%s: line %q, want %q", what, l, want)
		}
	}
	checkNoLeak(t, what, m[1])
}

// leakRE matches what must never reach a model (format.md §7): file names,
// mask names and tokens, JSON field words, and the word "answer".
var leakRE = regexp.MustCompile(`(?i)answer|\.png|optimal_|suboptimal|component_|default_|_mask|_exp\d|_cont\d|fake|relative_path|[{}]`)

func checkNoLeak(t *testing.T, what, s string) {
	t.Helper()
	if m := leakRE.FindString(s); m != "" {
		t.Errorf("%s contains %q:\n%s", what, m, s)
	}
	if strings.HasSuffix(s, "\n") || strings.Contains(s, "  ") {
		t.Errorf("%s has a trailing newline or double space: %q", what, s)
	}
}

func TestTemplatesRenderEveryQuestion(t *testing.T) {
	cfg := buildcfg.Default()
	for _, lesion := range benchmark.DefaultLesions().Names() {
		w := NewWording(lesion, cfg)
		yn := []string{"Yes", "No"}
		pts := []string{"red point", "orange point", "None"}
		checkQuestion(t, lesion+" detection", Question(w.Detection(), yn), yn)
		checkQuestion(t, lesion+" contour eval", Question(w.ContourEval(), yn), yn)
		checkQuestion(t, lesion+" expansion", Question(w.Expansion(), pts), pts)
		checkQuestion(t, lesion+" contraction", Question(w.Contraction(), pts), pts)
		rv := []string{"1st mask", "2nd mask", "3rd mask", "4th mask"}
		checkQuestion(t, lesion+" revision", Question(w.RevisionResult(), rv), rv)
		checkNoLeak(t, lesion+" initial context", w.InitialContext())
		dist := []string{"1 zone", "2 zones", "3 zones", "4 zones or more"}
		checkQuestion(t, lesion+" distribution", Question(w.Distribution(), dist), dist)
		loc := []string{"the left costophrenic angle", "the intersection of the right lateral lung and the right mid zone lung", "the left costophrenic angle", "None of the above (options 1-3)"}
		checkQuestion(t, lesion+" location", Question(w.Location(), loc), loc)
		for _, lung := range []string{"left lung", "right lung"} {
			q, opts := w.Severity(lung)
			checkQuestion(t, lesion+" severity", Question(q, opts), opts)
			if len(opts) != 3 || !strings.Contains(q, lung) {
				t.Errorf("severity for %s: %q %v", lung, q, opts)
			}
			for _, o := range opts {
				if !strings.Contains(o, lung) {
					t.Errorf("severity option %q does not name %s", o, lung)
				}
				checkNoLeak(t, "severity option", o)
			}
		}
		q, opts := w.Comparison()
		checkQuestion(t, lesion+" comparison", Question(q, opts), opts)
		if len(opts) != 4 {
			t.Errorf("comparison options %v", opts)
		}
		// The lesion appears as its bare name.
		if !strings.Contains(w.Detection(), lesion) || !strings.Contains(w.ContourEval(), lesion) {
			t.Errorf("%s: lesion name missing", lesion)
		}
	}
}

func TestWordingRules(t *testing.T) {
	cfg := buildcfg.Default()
	heartNote := "lies over the heart"
	lung := NewWording("effusion", cfg)
	heart := NewWording("cardiomegaly", cfg)
	for _, s := range []string{lung.ContourEval(), lung.InitialContext()} {
		if !strings.Contains(s, heartNote) {
			t.Errorf("lung-type text lacks the heart note: %q", s)
		}
	}
	for _, s := range []string{heart.ContourEval(), heart.InitialContext()} {
		if strings.Contains(s, heartNote) {
			t.Errorf("heart-type text has the heart note: %q", s)
		}
	}
	if !strings.Contains(NewWording("opacity", cfg).Detection(), "see any opacity") ||
		!strings.Contains(NewWording("consolidation", cfg).Detection(), "see any consolidation") ||
		!strings.Contains(lung.Detection(), "suggests\neffusion") && !strings.Contains(lung.Detection(), "suggests effusion") {
		t.Errorf("detection phrasings: %q / %q", NewWording("opacity", cfg).Detection(), lung.Detection())
	}
	// The counting rules carry the configured thresholds.
	if !strings.Contains(lung.Distribution(), "at least 20%") || !strings.Contains(lung.Location(), "at least 20%") {
		t.Errorf("default region threshold missing")
	}
	q, _ := lung.Comparison()
	sq, _ := lung.Severity("left lung")
	if !strings.Contains(q, "at least 1%") || !strings.Contains(q, "1.5 times") || !strings.Contains(q, "last option") || !strings.Contains(q, "heart") {
		t.Errorf("comparison rules missing: %q", q)
	}
	if !strings.Contains(sq, "heart") || !strings.Contains(sq, "1%") {
		t.Errorf("severity rules missing: %q", sq)
	}
	cfg.RegionOverlapMin, cfg.LungOverlapMin = 0.25, 0.015
	cfg.DirectPhrasingLesions = []string{"effusion"}
	w := NewWording("effusion", cfg)
	q, _ = w.Comparison()
	if !strings.Contains(w.Distribution(), "at least 25%") || !strings.Contains(w.Location(), "25%") || !strings.Contains(q, "1.5%") {
		t.Errorf("configured thresholds not used:\n%s\n%s", w.Distribution(), q)
	}
	if !strings.Contains(w.Detection(), "see any effusion") {
		t.Errorf("direct_phrasing_lesions not honoured: %q", w.Detection())
	}
}

func TestPercent(t *testing.T) {
	for f, want := range map[float64]string{0.2: "20%", 0.01: "1%", 0.125: "12.5%", 0.07: "7%", 1: "100%", 0.333: "33.3%"} {
		if got := percent(f); got != want {
			t.Errorf("percent(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestTemplatesVersion(t *testing.T) {
	v := TemplatesVersion()
	if !regexp.MustCompile(`^ours-\d+\+[0-9a-f]{8}$`).MatchString(v) {
		t.Errorf("version %q", v)
	}
}

func TestParseTemplatesErrors(t *testing.T) {
	good := string(templatesYAML)
	for name, tc := range map[string]struct{ data, want string }{
		"unknown key":         {good + "\nextra: x\n", "extra"},
		"unknown placeholder": {strings.Replace(good, "see any {lesion}", "see any {disease}", 1), "{disease}"},
		"empty field":         {strings.Replace(good, "version: ours-1", "version: \"\"", 1), "version is empty"},
		"severity options":    {strings.Replace(good, "    - \"two thirds or more of the {lung}\"\n", "", 1), "severity.options"},
	} {
		if _, err := parseTemplates([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, tc.want)
		}
	}
	if _, err := parseTemplates(templatesYAML); err != nil {
		t.Fatal(err)
	}
}
