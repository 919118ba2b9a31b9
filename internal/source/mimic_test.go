package source

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/mask"
)

const fx = "testdata/mimic"

func fromFixture(t *testing.T, cfg buildcfg.Config) ([]*Case, *MIMICStats) {
	t.Helper()
	cases, st, err := FromMIMIC(context.Background(), fx, fx+"/mimic_ils_instruction_answer.json", fx+"/lesion_mask", fx+"/chexmask_mimic.csv", "", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cases, st
}

// TestFromMIMICStops: once ctx ends (the command's signal) the reading
// stops between studies with ctx's error and returns no case.
func TestFromMIMICStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cases, _, err := FromMIMIC(ctx, fx, fx+"/mimic_ils_instruction_answer.json", fx+"/lesion_mask", fx+"/chexmask_mimic.csv", "", buildcfg.Default())
	if !errors.Is(err, context.Canceled) || cases != nil {
		t.Errorf("%d cases, err %v; want none and context.Canceled", len(cases), err)
	}
}

func TestFromMIMIC(t *testing.T) {
	cases, st := fromFixture(t, buildcfg.Default())
	var got []string
	for _, c := range cases {
		got = append(got, c.KeyID()+"/"+c.SourceType)
	}
	// Document order; per study: global positives, basic fallbacks, then
	// global negatives (§3).
	want := []string{
		"cardiomegaly_s50000001_positive_0/global",
		"effusion_s50000001_positive_1/global",
		"atelectasis_s50000001_positive_3/basic",
		"edema_s50000001_negative_6/global",
		"consolidation_s50000002_positive_1/global",
		"cardiomegaly_s50000002_negative_3/global",
		"effusion_s50000002_negative_4/global",
		"edema_s50000002_negative_5/global",
		"edema_s50000003_positive_0/global",
		"opacity_s50000003_positive_1/global",
		"consolidation_s50000003_negative_2/global",
		"atelectasis_s50000003_negative_3/global",
		"pneumonia_s50000004_positive_0/global",
		"cardiomegaly_s50000004_negative_1/global",
		"edema_s50000004_negative_2/global",
		"atelectasis_s50000005_positive_0/global",
		"pneumonia_s50000005_positive_2/basic",
		"effusion_s50000005_negative_3/global",
		"opacity_s50000005_negative_4/global",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("cases:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st.Studies != 5 || st.NoLesionMask["opacity"] != 1 || st.NoLesionMask["pneumonia"] != 1 || st.DuplicatePositive["effusion"] != 1 {
		t.Errorf("stats %+v", st)
	}
	c := cases[1]
	abs, _ := filepath.Abs(fx)
	if c.Image != filepath.Join(abs, "files/p10/p10000001/s50000001/0a1b2c3d-10000001-20000001-30000001-40000001.jpg") ||
		*c.ImageID != "0a1b2c3d-10000001-20000001-30000001-40000001" ||
		len(c.LesionMasks) != 1 || c.LesionMasks[0] != filepath.Join(abs, "lesion_mask/s50000001/s50000001_effusion_1.png") ||
		c.Chexmask == nil || !c.Chexmask.SizeCheck || c.Chexmask.ID != *c.ImageID ||
		c.Report != "Synthetic report text for s50000001." || strings.Join(c.LocationHints, "|") != "right lung base" {
		t.Errorf("case fields: %+v", c)
	}
	if string(c.Source) != `{"dataset":"mimic-ils","split":"train","study_id":"s50000001","subject_id":"p10000001","pair_type":"global","sent_idx":"1"}` {
		t.Errorf("source %s", c.Source)
	}

	// The lesions filter reads only wanted targets.
	cfg := buildcfg.Default()
	cfg.Lesions = []string{"edema"}
	only, _ := fromFixture(t, cfg)
	if len(only) != 4 {
		t.Errorf("edema only: %d cases, want 4", len(only))
	}
	// flat_png layout: <DIR>/<dicom>.png and size_check false.
	cfg = buildcfg.Default()
	cfg.MimicLayout = "flat_png"
	flat, _ := fromFixture(t, cfg)
	if filepath.Base(flat[0].Image) != "0a1b2c3d-10000001-20000001-30000001-40000001.png" || flat[0].Chexmask.SizeCheck {
		t.Errorf("flat_png case: %s size_check %v", flat[0].Image, flat[0].Chexmask.SizeCheck)
	}
}

func TestFromMIMICErrors(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "files"), 0o755) // a MIMIC-CXR-JPG root
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	study := func(pairs string) string {
		return `{"train": {"s1": {"dicom_id": "d1", "image_path": "p10/p1/s1/d1.jpg",
"instruction_answer_pairs": ` + pairs + `}}}`
	}
	cases := []struct{ name, json, want string }{
		{"not object", `[1]`, ":1: the top level must be an object"},
		{"bad pair id", study(`{"positive_pairs": [{"pair_id": "s1_pos_0", "type": "global", "target": "edema", "seg_mask_path": "m.png"}]}`), ":2: study s1 (positive_pairs): case_id \"s1_pos_0\" does not match"},
		{"polarity", study(`{"negative_pairs": [{"pair_id": "s1_positive_0", "type": "global", "target": "edema"}]}`), "is a positive id but label is \"negative\""},
		{"bad target", study(`{"negative_pairs": [{"pair_id": "s1_negative_0", "type": "global", "target": "mass"}]}`), ""},
		{"wrong type", `{"train": {"s1": {"dicom_id": 5}}}`, "study s1: field dicom_id has the wrong type"},
		{"syntax", "{\"train\": {\n\"s1\": {,}}}", ":2: invalid JSON"},
		{"no split", `{"val": {}}`, "no split \"train\""},
		// Caps: a token or a study over its cap stops the read, even in a
		// split that is skipped (encoding/json would hold it whole).
		{"long string in skipped split", "{\"val\": {\"s0\":\n {\"section_content\": \"" + strings.Repeat("x", MaxILSTokenBytes) + "\"}},\n \"train\": {}}", ":2: JSON token longer than 1048576 bytes"},
		{"long number", "{\"val\": [\n" + strings.Repeat("7", MaxILSTokenBytes+1) + "]}", ":2: JSON token longer than 1048576 bytes"},
		{"long study", "{\"train\": {\n\"s1\": {\"x\": [" + strings.Repeat("\"abcdefg\",", MaxILSStudyBytes/10+1) + "]}}}", ":2: study longer than 16777216 bytes"},
		{"escaping image", `{"train": {"s1": {"dicom_id": "d1", "image_path": "../../etc/x.jpg"}}}`, "must be a relative path inside files/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := write("ils.json", c.json)
			_, _, err := FromMIMIC(context.Background(), dir, p, dir, filepath.Join(dir, "x.csv"), "", buildcfg.Default())
			if c.want == "" {
				if err != nil {
					t.Fatalf("want no error (target outside the filter is skipped), got %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want prefix %s and %q", err, p, c.want)
			}
		})
	}
	// The errors about the lung sources name what is missing, not the
	// command's flags (the command adds them).
	if _, _, err := FromMIMIC(context.Background(), dir, write("a.json", `{}`), dir, "", "", buildcfg.Default()); !errors.Is(err, ErrNoLungSource) || strings.Contains(err.Error(), "--") {
		t.Errorf("no lung source: %v", err)
	}
	if _, _, err := FromMIMIC(context.Background(), dir, write("a.json", `{}`), dir, "", "lungs/{image_id}.png", buildcfg.Default()); err == nil ||
		!strings.Contains(err.Error(), `lung PNG pattern "lungs/{image_id}.png" must contain {image_id} and {side}`) {
		t.Errorf("pattern without {side}: %v", err)
	}
}

// The fixture's positives must be buildable: lungs in the right places,
// lesion masks inside the lungs (or touching them, for the heart) and big
// enough; the landmark row and the size-mismatch row behave as designed.
func TestMIMICFixtureLungsAndMasks(t *testing.T) {
	cases, _ := fromFixture(t, buildcfg.Default())
	var warn bytes.Buffer
	l, err := NewLoader(nil, cases, buildcfg.Default(), "", &warn)
	if err != nil {
		t.Fatal(err)
	}
	if notes := l.Notes(); len(notes) != 1 || !strings.Contains(notes[0], "1 duplicate id row") {
		t.Errorf("notes %q", notes)
	}
	for _, c := range cases {
		if !c.Positive() {
			continue
		}
		t.Run(c.KeyID(), func(t *testing.T) {
			lu, err := l.LoadLungs(c)
			if c.CaseID == "s50000004_positive_0" {
				var ce *frame.CaseError
				if !errors.As(err, &ce) || ce.Reason != "chexmask_size_mismatch" || !strings.Contains(ce.Detail, "1024×1024") || !strings.Contains(ce.Detail, "1200×1000") {
					t.Fatalf("want chexmask_size_mismatch, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if lu.HasSecondary || lu.Heart == nil || !mask.Equal(lu.Right, lu.ChexRight) {
				t.Errorf("single source: HasSecondary %v heart %v", lu.HasSecondary, lu.Heart != nil)
			}
			rx, _ := centroid(lu.Right)
			lx, _ := centroid(lu.Left)
			if lu.Right.Count() < 60000 || lu.Left.Count() < 60000 || rx >= lx {
				t.Errorf("lungs: right %d px at x %.0f, left %d px at x %.0f", lu.Right.Count(), rx, lu.Left.Count(), lx)
			}
			cm, err := l.CandidateMask(c)
			if err != nil {
				t.Fatal(err)
			}
			lungs := mask.Or(lu.Right, lu.Left)
			for _, comp := range mask.Components(cm, 8, 0) {
				n := comp.Count()
				if n < 3000 {
					t.Errorf("component of %d px < 3000", n)
				}
				in := mask.CountAnd(comp, lungs)
				if c.Lesion == "cardiomegaly" {
					if !mask.Intersects(mask.Dilate(comp, mask.Disc(2), 1), lu.Right) || !mask.Intersects(mask.Dilate(comp, mask.Disc(2), 1), lu.Left) {
						t.Errorf("heart component does not touch both lungs")
					}
				} else if in*100 < n*95 {
					t.Errorf("component: only %d of %d px inside the lungs", in, n)
				}
			}
			if d := MaskSHA256(cm); len(d) != 64 {
				t.Errorf("digest %q", d)
			}
		})
	}
	if warn.Len() != 0 {
		t.Errorf("unexpected warning %q", warn.String())
	}
}

func centroid(m mask.Mask) (float64, float64) {
	var sx, sy, n float64
	for y := 0; y < m.H; y++ {
		for x := 0; x < m.W; x++ {
			if m.Pix[y*m.W+x] != 0 {
				sx += float64(x)
				sy += float64(y)
				n++
			}
		}
	}
	if n == 0 {
		return -1, -1
	}
	return sx / n, sy / n
}

func TestMIMICSampleDeterminism(t *testing.T) {
	cases, st := fromFixture(t, buildcfg.Default())
	cfg := buildcfg.Default()
	a, rep, _ := Sample(context.Background(), cases, cfg, 3)
	rep.MergeMIMIC(st)
	b, _, _ := Sample(context.Background(), cases, cfg, 3)
	if !bytes.Equal(MarshalCandidates(a, ""), MarshalCandidates(b, "")) {
		t.Fatal("same seed, different candidates")
	}
	// The images of s50000002 and s50000004 are cardiomegaly negatives
	// (cardiomegaly comes first in lesion order), so their edema negatives
	// are dropped.
	var edemaNeg, cardioNeg int
	for _, c := range a {
		if c.Lesion == "edema" && !c.Positive() {
			edemaNeg++
			if c.CaseID == "s50000004_negative_2" || c.CaseID == "s50000002_negative_5" {
				t.Error("edema negative on an image already used by cardiomegaly")
			}
		}
		if c.Lesion == "cardiomegaly" && !c.Positive() {
			cardioNeg++
		}
	}
	if edemaNeg != 1 || cardioNeg != 2 {
		t.Errorf("edema negatives %d, cardiomegaly negatives %d; want 1 and 2", edemaNeg, cardioNeg)
	}
	var buf bytes.Buffer
	rep.Print(&buf)
	for _, s := range []string{"effusion", "duplicate_positive 1", "no_lesion_mask 1", "image already used 2"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, buf.String())
		}
	}
}

func TestFromMIMICPatternAndHints(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "files"), 0o755) // a MIMIC-CXR-JPG root
	os.MkdirAll(filepath.Join(dir, "masks", "s1"), 0o755)
	os.WriteFile(filepath.Join(dir, "masks", "s1", "m.png"), []byte("x"), 0o644)
	ils := `{"train": {"s1": {"dicom_id": "d1", "image_path": "p10/p1/s1/d1.jpg", "instruction_answer_pairs": {
"positive_pairs": [
 {"pair_id": "s1_positive_0", "type": "global", "target": "edema", "location": ["a"], "reported_location": ["b", "c"], "seg_mask_path": "s1/m.png"},
 {"pair_id": "s1_positive_1", "type": "global", "target": "opacity", "location": "left", "seg_mask_path": "s1/m.png"}],
"negative_pairs": [{"pair_id": "s1_negative_2", "type": "global", "target": "effusion", "reported_location": null, "location": ["x"]}]}}}}`
	p := filepath.Join(dir, "ils.json")
	os.WriteFile(p, []byte(ils), 0o644)
	cases, _, err := FromMIMIC(context.Background(), dir, p, filepath.Join(dir, "masks"), "", "lungs/{image_id}_{side}.png", buildcfg.Default())
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	got := []string{}
	for _, c := range cases {
		got = append(got, strings.Join(c.LocationHints, "+"))
		if c.Chexmask != nil || c.LungMasks == nil || c.LungMasks.Right != filepath.Join(wd, "lungs/d1_right.png") || c.LungMasks.Left != filepath.Join(wd, "lungs/d1_left.png") {
			t.Errorf("%s: lung source %+v %+v", c.KeyID(), c.LungMasks, c.Chexmask)
		}
	}
	if strings.Join(got, ",") != "b+c,left,x" {
		t.Errorf("hints %v, want reported_location before location", got)
	}
	if _, _, err := FromMIMIC(context.Background(), dir, p, dir, "", "lungs/{side}.png", buildcfg.Default()); err == nil || !strings.Contains(err.Error(), "{image_id}") {
		t.Errorf("pattern without {image_id}: %v", err)
	}
}
