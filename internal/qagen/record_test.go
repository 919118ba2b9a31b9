package qagen

import (
	"bytes"
	"context"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/deform"
	"github.com/chexpercept/chexpercept/internal/goldentest"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/validate"
)

const S = 1024

// scaled returns the attempt with every mask resized to the 1024² frame.
func scaled(a *deform.Attempt) *deform.Attempt {
	for n, m := range a.Masks {
		a.Masks[n] = mask.ResizeNearest(m, S, S)
	}
	return a
}

func testGray() *image.Gray {
	g := image.NewGray(image.Rect(0, 0, S, S))
	for y := 0; y < S; y++ {
		for x := 0; x < S; x++ {
			g.Pix[y*S+x] = uint8((x/4 + y/8) % 256)
		}
	}
	return g
}

// rrAttempt is oneComponent with fake points, in the 1024² frame.
func rrAttempt() *deform.Attempt {
	b := oneComponent()
	c := &b.a.Components[0]
	c.Expansion[0].FakePointsExpansion = []mask.Point{p(700, 300), p(120, 900)}
	c.Expansion[0].FakePointsContraction = []mask.Point{p(800, 800)}
	c.Contraction[0].FakePointsExpansion = []mask.Point{p(500, 150)}
	return scaled(b.a)
}

// overlaps builds §7 records for one component touching two lung regions.
func overlaps() []anatomy.ComponentOverlap {
	c := anatomy.ComponentOverlap{ID: 0, Size: 20000}
	c.Right = anatomy.LungOverlap{Inter: 20000, Area: 150000, HasOverlap: true, Size: 20000}
	c.Right.Ratio = float64(c.Right.Inter) / float64(c.Right.Area)
	c.Left = anatomy.LungOverlap{Inter: 0, Area: 140000}
	for _, z := range anatomy.ZoneNames {
		c.Zones = append(c.Zones, anatomy.Overlap{Name: z, Key: anatomy.KeyZones})
	}
	for i, r := range anatomy.LungRegionNames {
		o := anatomy.Overlap{Name: r, Key: "lung_regions", Area: 10000}
		if i == 1 || i == 4 {
			o.Inter, o.Ratio, o.HasOverlap = 5000, 0.5, true
		}
		c.LungRegions = append(c.LungRegions, o)
	}
	return []anatomy.ComponentOverlap{c}
}

type builtCase struct {
	rec   *benchmark.Record
	masks map[string]mask.Mask
	lungs render.Lungs
	pool  *PointPool
}

// buildPositive runs §9.4, §9.5 and §10 in the spec's draw order and
// assembles the record.
func buildPositive(t testing.TB, keyID string, noDef bool, cfg buildcfg.Config) builtCase {
	lesion, pairID, err := benchmark.DefaultLesions().ParseKeyID(keyID)
	if err != nil {
		t.Fatal(err)
	}
	heart := cfg.IsHeartLesion(lesion)
	a := rrAttempt()
	lungs := render.Lungs{ChexRight: mask.ResizeNearest(lungR, S, S), ChexLeft: mask.ResizeNearest(lungL, S, S)}
	r := rng.New("chexpercept/case/0/" + keyID)
	pool, err := NewPointPool(r, a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := RevisionOptions(r, a, TokenContext{HeartType: heart, Overlaps: overlaps(), Lungs: lungs}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	qa := &QA{Points: pool, Revision: rev}
	if !heart {
		if qa.Attributes, err = anatomy.Attributes(r, overlaps(), nil, cfg); err != nil {
			t.Fatal(err)
		}
	}
	id := "img-" + pairID
	rec, err := AssembleRecord(Case{KeyID: keyID, PairID: pairID, Lesion: lesion, DicomID: &id, Positive: true, NoDeformation: noDef}, qa, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return builtCase{rec, a.Masks, lungs, pool}
}

func writeImages(t *testing.T, dir string, gray *image.Gray, bc builtCase, cfg buildcfg.Config) map[string]*image.RGBA {
	imgs, err := RenderRecordImages(gray, bc.rec, bc.masks, bc.lungs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for rel, img := range imgs {
		path := filepath.Join(dir, "chexpercept", bc.rec.KeyID, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := render.EncodePNG(&buf, img); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return imgs
}

// writeValidated writes recs as the benchmark in dir (whose images are
// already there) and fails the test on any validator finding above info.
func writeValidated(t *testing.T, dir string, recs []*benchmark.Record) *validate.Report {
	t.Helper()
	if err := benchdir.WriteJSON(nil, dir, recs); err != nil {
		t.Fatal(err)
	}
	rep, err := validate.Run(context.Background(), dir, validate.Options{Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Severity != validate.Info {
			t.Errorf("validator: %s", f)
		}
	}
	return rep
}

// A small benchmark built from synthetic attempts passes the validator
// with neither errors nor warnings, and its JSON matches the golden file.
func TestRecordsValidate(t *testing.T) {
	cfg := buildcfg.Default()
	dir := t.TempDir()
	gray := testGray()
	neg, err := AssembleRecord(Case{KeyID: "edema_ph0001_negative_0", PairID: "ph0001_negative_0", Lesion: "edema"}, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cases := []builtCase{{rec: neg}}
	cases = append(cases,
		buildPositive(t, "effusion_ph0002_positive_0", true, cfg),
		buildPositive(t, "effusion_ph0003_positive_0", false, cfg),
		buildPositive(t, "cardiomegaly_ph0004_positive_0", false, cfg),
		buildPositive(t, "opacity_ph0005_positive_0", false, cfg),
	)
	var recs []*benchmark.Record
	for _, bc := range cases {
		recs = append(recs, bc.rec)
		imgs := writeImages(t, dir, gray, bc, cfg)
		nOpt := 0
		if bc.rec.Contour != nil {
			nOpt = len(bc.rec.Contour.RevisionResult.AnswerOptions)
		}
		if want := benchmark.ImagesFor(bc.rec.Path(), nOpt); len(imgs) != want {
			t.Errorf("%s: %d images, want %d", bc.rec.KeyID, len(imgs), want)
		}
	}
	rep := writeValidated(t, dir, recs)
	if rep.Records != 5 {
		t.Errorf("validator saw %d records", rep.Records)
	}
	data, err := os.ReadFile(filepath.Join(dir, benchmark.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	goldentest.Check(t, "testdata/records.golden.json", data)

	// Record-level rules of §9.6.
	rf, rr, heart := cases[1].rec, cases[2].rec, cases[3].rec
	if !rf.Contour.NoDeformation || rf.Contour.ContourEval.Answer != "No" || rr.Contour.ContourEval.AnswerIndex != 1 {
		t.Error("contour-eval answers")
	}
	if rf.Contour.Expansion.Question == "" || len(rf.Contour.RevisionResult.AnswerOptions) != 4 {
		t.Error("RF must carry fully populated revision objects")
	}
	if !heart.AttributesNull || heart.Attributes != nil || rr.Attributes == nil {
		t.Error("attributes: null for heart-type, present for lung-type")
	}
	if strings.Contains(heart.Contour.ContourEval.Question, "heart") {
		t.Error("heart note in a heart-type question")
	}
	for _, rec := range recs {
		checkRecordText(t, rec)
	}
}

// checkRecordText applies the §3.6/§7 checks to every text a model sees.
func checkRecordText(t *testing.T, rec *benchmark.Record) {
	t.Helper()
	checkQuestion(t, rec.KeyID+" detection", rec.Detection.Question, rec.Detection.AnswerOptions)
	c := rec.Contour
	if c == nil {
		return
	}
	checkNoLeak(t, rec.KeyID+" initial context", c.InitialContext)
	checkQuestion(t, rec.KeyID+" eval", c.ContourEval.Question, c.ContourEval.AnswerOptions)
	var pts []string
	for _, o := range c.Expansion.AnswerOptions {
		if o.Point == nil {
			pts = append(pts, "None")
		} else {
			pts = append(pts, o.Color+" point")
		}
	}
	checkQuestion(t, rec.KeyID+" expansion", c.Expansion.Question, pts)
	checkQuestion(t, rec.KeyID+" contraction", c.Contraction.Question, pts)
	var ords []string
	for k := range c.RevisionResult.AnswerOptions {
		ords = append(ords, benchmark.OrdinalMask(k+1))
	}
	checkQuestion(t, rec.KeyID+" revision", c.RevisionResult.Question, ords)
	if a := rec.Attributes; a != nil {
		checkQuestion(t, rec.KeyID+" distribution", a.Distribution.Question, a.Distribution.AnswerOptions)
		checkQuestion(t, rec.KeyID+" location", a.Location.Question, a.Location.AnswerOptions)
		checkQuestion(t, rec.KeyID+" severity", a.Severity.Question, a.Severity.AnswerOptions)
		checkQuestion(t, rec.KeyID+" comparison", a.Comparison.Question, a.Comparison.AnswerOptions)
	}
}

// The images show what §9.6/§11 say: RR eval = before union, RF eval =
// after union, points image = before overlay plus discs, options = their unions.
func TestRecordImagesContent(t *testing.T) {
	cfg := buildcfg.Default()
	gray := testGray()
	rr := buildPositive(t, "effusion_ph0003_positive_0", false, cfg)
	rf := buildPositive(t, "effusion_ph0002_positive_0", true, cfg)
	tok := RecordTokens(rr.rec, rr.masks, rr.lungs, cfg)
	expect := func(img *image.RGBA, names []string, what string) {
		t.Helper()
		m, err := tok.Union(names)
		if err != nil {
			t.Fatal(err)
		}
		if want := render.Overlay(gray, m); !bytes.Equal(img.Pix, want.Pix) {
			t.Errorf("%s is not the overlay of %v", what, names)
		}
	}
	imgs, err := RenderRecordImages(gray, rr.rec, rr.masks, rr.lungs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(imgs[XrayPath].Pix, render.Gray2RGB(gray).Pix) {
		t.Error("xray image")
	}
	expect(imgs[EvalImagePath], rr.rec.Contour.RevisionBeforeMasks, "RR eval image")
	for _, o := range rr.rec.Contour.RevisionResult.AnswerOptions {
		expect(imgs[RevisionDir+"/"+o.RelativePath], o.Masks, o.RelativePath)
	}
	m, _ := tok.Union(rr.rec.Contour.RevisionBeforeMasks)
	want := render.Overlay(gray, m)
	if err := render.DrawPoints(want, rr.rec.Contour.Expansion.AnswerOptions); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(imgs[PointsImagePath].Pix, want.Pix) {
		t.Error("points image")
	}
	imgs, err = RenderRecordImages(gray, rf.rec, rf.masks, rf.lungs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	expect(imgs[EvalImagePath], rf.rec.Contour.RevisionAfterMasks, "RF eval image")
	if len(imgs) != 2 {
		t.Errorf("RF has %d images", len(imgs))
	}
	// The streaming walk yields the same images in RecordImagePaths order.
	var order []string
	err = EachRecordImage(gray, rr.rec, rr.masks, rr.lungs, cfg, func(rel string, img *image.RGBA) error {
		order = append(order, rel)
		m, _ := RenderRecordImages(gray, rr.rec, rr.masks, rr.lungs, cfg)
		if !bytes.Equal(m[rel].Pix, img.Pix) {
			t.Errorf("%s differs between EachRecordImage and RenderRecordImages", rel)
		}
		return nil
	})
	if err != nil || strings.Join(order, ",") != strings.Join(RecordImagePaths(rr.rec), ",") || len(order) != 7 {
		t.Errorf("walk order %v, err %v", order, err)
	}
	// Inspect renderers work on the same record.
	pts, opts, err := InspectImages(gray, rr.rec, rr.pool, rr.masks, rr.lungs, cfg)
	if err != nil || pts.Bounds().Dx() != S || opts.Bounds().Dx() < 4*S/2 {
		t.Errorf("inspect images: %v", err)
	}
	// A mask name the attempt does not have is an error naming it.
	bad := *rr.rec
	c := *bad.Contour
	c.RevisionBeforeMasks = []string{"suboptimal_component_9_exp1"}
	bad.Contour = &c
	if _, err := RenderRecordImages(gray, &bad, rr.masks, rr.lungs, cfg); err == nil || !strings.Contains(err.Error(), "suboptimal_component_9_exp1") {
		t.Errorf("missing mask: err = %v", err)
	}
}

func TestAssembleRecordErrors(t *testing.T) {
	cfg := buildcfg.Default()
	if _, err := AssembleRecord(Case{KeyID: "effusion_x_positive_0", Lesion: "effusion", Positive: true}, nil, cfg); err == nil {
		t.Error("positive without QA must fail")
	}
	a := rrAttempt()
	r := rng.New("e")
	pool, _ := NewPointPool(r, a, cfg)
	rev, _ := RevisionOptions(r, a, TokenContext{Overlaps: overlaps()}, cfg)
	if _, err := AssembleRecord(Case{KeyID: "effusion_x_positive_0", Lesion: "effusion", Positive: true}, &QA{Points: pool, Revision: rev}, cfg); err == nil {
		t.Error("lung-type positive without attributes must fail")
	}
	if _, err := AssembleRecord(Case{KeyID: "cardiomegaly_x_positive_0", Lesion: "cardiomegaly", Positive: true}, &QA{Points: pool, Revision: rev}, cfg); err != nil {
		t.Errorf("heart-type needs no attributes: %v", err)
	}
}
