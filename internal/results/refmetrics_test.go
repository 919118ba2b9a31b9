package results

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// entry builds an all_results.json record; stages maps a stage key to
// nil ({}) or its correct flag with optional sub-objects.
type stage struct {
	correct bool
	subs    map[string]bool
}

func entry(key string, path benchmark.Path, stages map[string]*stage) *ojson.Value {
	o := ojson.NewObject().Set("key_id", ojson.Str(key)).Set("qa_path", ojson.Str(string(path)))
	for _, s := range refStageKeys {
		v := ojson.NewObject()
		if st := stages[s]; st != nil {
			v.Set("correct", ojson.Bool(st.correct))
			for _, k := range []string{"expansion", "contraction", "revision_result", "distribution", "severity/measurement", "comparison", "location"} {
				if c, ok := st.subs[k]; ok {
					v.Set(k, ojson.NewObject().Set("correct", ojson.Bool(c)))
				}
			}
		}
		o.Set(s, v)
	}
	return o
}

func ok(c bool, subs map[string]bool) *stage { return &stage{c, subs} }

var (
	revOK  = map[string]bool{"expansion": true, "contraction": true, "revision_result": true}
	attrOK = map[string]bool{"distribution": true, "severity/measurement": true, "comparison": true, "location": true}
)

// The expected figures below are worked out by hand from §10.1.
func TestRefMetricsQuirks(t *testing.T) {
	entries := []*ojson.Value{
		// RR, contour_eval {} (empty parse): skipped without breaking the
		// chain and not counted; wrong location.
		entry("effusion_a", benchmark.RevisionRequired, map[string]*stage{"detection_qa": ok(true, nil), "contour_revision_qa": ok(true, revOK),
			"attribute_extraction_qa": ok(false, map[string]bool{"distribution": true, "severity/measurement": true, "comparison": true, "location": false})}),
		// cardiomegaly RR, all correct: depth 3 + 1
		entry("cardiomegaly_b", benchmark.RevisionRequired, map[string]*stage{"detection_qa": ok(true, nil), "contour_evaluation_qa": ok(true, nil), "contour_revision_qa": ok(true, revOK)}),
		// RR, detection wrong, contraction wrong
		entry("edema_c", benchmark.RevisionRequired, map[string]*stage{"detection_qa": ok(false, nil), "contour_evaluation_qa": ok(true, nil),
			"contour_revision_qa": ok(false, map[string]bool{"expansion": true, "contraction": false, "revision_result": true}), "attribute_extraction_qa": ok(true, attrOK)}),
		// cardiomegaly RF: depth 2 + 1
		entry("cardiomegaly_d", benchmark.RevisionFree, map[string]*stage{"detection_qa": ok(true, nil), "contour_evaluation_qa": ok(true, nil)}),
		// LF right, LF unrecorded
		entry("opacity_e", benchmark.LesionFree, map[string]*stage{"detection_qa": ok(true, nil)}),
		entry("opacity_f", benchmark.LesionFree, map[string]*stage{}),
	}
	m := RefMetricsFromExport(entries)
	want := "path,model,setting,acc(stage1),acc(stage2),acc(stage3),acc(stage4),depth\r\n" +
		"revision_required,m,end_to_end,0.6666666666666666,0.5,0.6666666666666666,0.0,2.0\r\n" +
		"revision_required,m,oracle_passed,0.6666666666666666,1.0,0.6666666666666666,0.5,2.0\r\n" +
		"revision_free,m,end_to_end,1.0,1.0,0.0,0.0,3.0\r\n" +
		"revision_free,m,oracle_passed,1.0,1.0,0.0,0.0,3.0\r\n" +
		"lesion_free,m,end_to_end,0.5,0.0,0.0,0.0,0.5\r\n" +
		"lesion_free,m,oracle_passed,0.5,0.0,0.0,0.0,0.5\r\n"
	if got := string(CSV(RefSummaryHeader, m.SummaryRows("m"))); got != want {
		t.Errorf("summary CSV:\n%s\nwant:\n%s", got, want)
	}
	wantC := "path,model,acc(expansion),acc(contraction),acc(revision_result)\r\nrevision_required,m,1.0,0.6666666666666666,1.0\r\n"
	if got := string(CSV(RefContourHeader, m.ContourRows("m"))); got != wantC {
		t.Errorf("contour CSV:\n%q\nwant\n%q", got, wantC)
	}
	wantA := "path,model,acc(distribution),acc(location),acc(severity/measurement),acc(comparison)\r\nrevision_required+revision_free,m,1.0,0.5,1.0,1.0\r\n"
	if got := string(CSV(RefAttributeHeader, m.AttributeRows("m"))); got != wantA {
		t.Errorf("attribute CSV:\n%q\nwant\n%q", got, wantA)
	}
}

func TestRefMetricsEmptyRun(t *testing.T) {
	m := RefMetricsFromExport(nil)
	dir := t.TempDir()
	if err := WriteRefCSVs(nil, dir, "x", m); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, RefSummaryFile))
	want := "path,model,setting,acc(stage1),acc(stage2),acc(stage3),acc(stage4),depth\r\n" +
		"revision_required,x,end_to_end,0.0,0.0,0.0,0.0,0.0\r\nrevision_required,x,oracle_passed,0.0,0.0,0.0,0.0,0.0\r\n" +
		"revision_free,x,end_to_end,0.0,0.0,0.0,0.0,0.0\r\nrevision_free,x,oracle_passed,0.0,0.0,0.0,0.0,0.0\r\n" +
		"lesion_free,x,end_to_end,0.0,0.0,0.0,0.0,0.0\r\nlesion_free,x,oracle_passed,0.0,0.0,0.0,0.0,0.0\r\n"
	if string(b) != want {
		t.Errorf("got\n%q", b)
	}
}

func TestCSVQuoting(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a,b", `"a,b"`},
		{`say "hi"`, `"say ""hi"""`},
		{"two\nlines", "\"two\nlines\""},
		{" lead", " lead"}, // Python does not quote leading spaces
		{"", ""},
	} {
		got := string(CSV([]string{c.in}, nil))
		if got != c.want+"\r\n" {
			t.Errorf("CSV(%q) = %q, want %q", c.in, got, c.want+"\r\n")
		}
	}
}

func TestRefLabel(t *testing.T) {
	for in, want := range map[string]string{
		"azure_gpt-5.4":                        "gpt-5.4",
		"opensource_Qwen--Qwen2.5_no_thinking": "Qwen--Qwen2.5_no_thinking",
		"baseline_random_strict":               "random_strict",
		"noprefix":                             "noprefix",
	} {
		if got := RefLabel(in); got != want {
			t.Errorf("RefLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
