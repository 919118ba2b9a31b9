package benchmark_test

import (
	"fmt"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
)

// TestApplies: the applicability table of format.md §5 / protocol.md §2
// (turn table and §2.2 call counts), from the one rule.
func TestApplies(t *testing.T) {
	const (
		lf = benchmark.LesionFree
		rf = benchmark.RevisionFree
		rr = benchmark.RevisionRequired
	)
	// Per question T1…T9: the paths it applies to for lung-type records;
	// heart-type records lose T6–T9.
	want := [benchmark.NumQuestions]string{"LF RF RR", "RF RR", "RR", "RR", "RR", "RF RR", "RF RR", "RF RR", "RF RR"}
	for _, q := range benchmark.Questions {
		for _, heart := range []bool{false, true} {
			got := ""
			for _, p := range []benchmark.Path{lf, rf, rr} {
				if benchmark.Applies(p, heart, q) {
					got += " " + p.Short()
				}
			}
			w := " " + want[q]
			if heart && q.Stage() == benchmark.StageAttributeExtraction {
				w = ""
			}
			if got != w {
				t.Errorf("%s (%s) heart=%v: applies to%q, want%q", q.Turn(), q.Name(), heart, got, w)
			}
		}
		if back, ok := benchmark.QuestionOfStep(q.Step()); !ok || back != q {
			t.Errorf("QuestionOfStep(%s) = %v, %v", q.Step(), back, ok)
		}
		if back, ok := benchmark.QuestionOfTurn(q.Turn()); !ok || back != q || q.Turn() != fmt.Sprintf("T%d", q+1) {
			t.Errorf("QuestionOfTurn(%s) = %v, %v", q.Turn(), back, ok)
		}
	}
	for _, c := range []struct {
		p     benchmark.Path
		heart bool
		n     int
	}{{lf, false, 1}, {rf, false, 6}, {rr, false, 9}, {lf, true, 1}, {rf, true, 2}, {rr, true, 5}, {"other", false, 0}} {
		if got := benchmark.QuestionsFor(c.p, c.heart); got != c.n {
			t.Errorf("QuestionsFor(%s, %v) = %d, want %d", c.p, c.heart, got, c.n)
		}
	}
	if rr.MaxDepth() != 4 || rf.MaxDepth() != 3 || lf.MaxDepth() != 1 {
		t.Errorf("MaxDepth RR %d RF %d LF %d", rr.MaxDepth(), rf.MaxDepth(), lf.MaxDepth())
	}
	multi := ""
	for _, q := range benchmark.Questions {
		if q.Multi() {
			multi += q.Name() + " "
		}
	}
	if multi != "expansion contraction location " {
		t.Errorf("multi-select: %s", multi)
	}
	if _, ok := benchmark.QuestionOfStep("attribute_extraction_qa"); ok {
		t.Error("a stage key is not a step key")
	}
}

// TestKeyIDPattern: the key form of the format; the lesion part is any
// lesion name, and ParseKeyID holds it to the lesion set.
func TestKeyIDPattern(t *testing.T) {
	for _, tc := range []struct {
		key, lesion, pair string
		ok                bool
	}{
		{"effusion_s1_positive_0", "effusion", "s1_positive_0", true},
		{"cardiomegaly_ph0002_negative_12", "cardiomegaly", "ph0002_negative_12", true},
		{"pneumothorax_ph0002_negative_1", "", "", false}, // not a built-in lesion
		{"Effusion_s1_positive_0", "", "", false},
		{"effusion_s1_maybe_0", "", "", false},
		{"effusion_s1_positive_", "", "", false},
	} {
		l, p, err := benchmark.DefaultLesions().ParseKeyID(tc.key)
		if (err == nil) != tc.ok || l != tc.lesion || p != tc.pair {
			t.Errorf("ParseKeyID(%q) = %q, %q, %v", tc.key, l, p, err)
		}
	}
	set, err := benchmark.WithDefaults([]benchmark.LesionDef{{Name: "pneumothorax", Kind: benchmark.LungKind, Detection: benchmark.DirectWording}})
	if err != nil {
		t.Fatal(err)
	}
	if l, p, err := set.ParseKeyID("pneumothorax_ph0002_negative_1"); err != nil || l != "pneumothorax" || p != "ph0002_negative_1" {
		t.Errorf("declared lesion: %q %q %v", l, p, err)
	}
}

// TestIsHeartType: the record's own data says it (a positive with a null
// attribute object), whatever its lesion.
func TestIsHeartType(t *testing.T) {
	pos := func(lesion string, null bool) *benchmark.Record {
		r := &benchmark.Record{Lesion: lesion, Detection: benchmark.YesNoQA{Answer: "Yes"}, Contour: &benchmark.ContourQA{}, AttributesNull: null}
		if !null {
			r.Attributes = &benchmark.AttributeQA{}
		}
		return r
	}
	neg := &benchmark.Record{Lesion: "cardiomegaly", Detection: benchmark.YesNoQA{Answer: "No"}}
	for _, c := range []struct {
		r    *benchmark.Record
		want bool
		q    int
	}{{pos("cardiomegaly", true), true, 5}, {pos("edema", true), true, 5}, {pos("cardiomegaly", false), false, 9}, {pos("edema", false), false, 9}, {neg, false, 1}} {
		if c.r.IsHeartType() != c.want || c.r.Questions() != c.q {
			t.Errorf("%s (null %v, path %s): heart %v questions %d, want %v %d", c.r.Lesion, c.r.AttributesNull, c.r.Path(), c.r.IsHeartType(), c.r.Questions(), c.want, c.q)
		}
	}
}
