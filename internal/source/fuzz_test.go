package source

import (
	"context"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
)

// A manifest line of any content gives a case or an error, never a panic.
func FuzzParseLine(f *testing.F) {
	f.Add([]byte(okPos))
	f.Add([]byte(okNeg))
	f.Add([]byte(`{"case_id":"a_positive_0","lesion":"edema","label":"positive","image":"a","lesion_masks":[],"chexmask":{"csv":"c","id":""},"rank":1e99,"sample_seed":-1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		c, _, err := parseLine(line, "/m", nil)
		if err == nil && (c.CaseID == "" || c.Image == "") {
			t.Fatalf("accepted a line without case_id or image: %q", line)
		}
	})
}

func BenchmarkLoadLungsFixture(b *testing.B) {
	cases, _, err := FromMIMIC(context.Background(), fx, fx+"/mimic_ils_instruction_answer.json", fx+"/lesion_mask", fx+"/chexmask_mimic.csv", "", buildcfg.Default())
	if err != nil {
		b.Fatal(err)
	}
	l, err := NewLoader(nil, cases, buildcfg.Default(), "", nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := l.LoadLungs(cases[0]); err != nil {
			b.Fatal(err)
		}
		if _, err := l.CandidateMask(cases[0]); err != nil {
			b.Fatal(err)
		}
	}
}
