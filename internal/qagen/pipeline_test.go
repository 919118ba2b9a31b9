package qagen

import (
	"image"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/deform"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/validate"
)

func ellipse(m mask.Mask, cx, cy, rx, ry float64) {
	for y := 0; y < m.H; y++ {
		for x := 0; x < m.W; x++ {
			dx, dy := (float64(x)-cx)/rx, (float64(y)-cy)/ry
			if dx*dx+dy*dy <= 1 {
				m.Pix[y*m.W+x] = 1
			}
		}
	}
}

// synthChest is a 1024² chest-like image with two elliptical lungs and a
// lesion (lung-type: in the right lung; heart-type: between the lungs).
func synthChest(heart bool) (*image.Gray, mask.Mask, mask.Mask, mask.Mask) {
	right, left, lesion := mask.New(S, S), mask.New(S, S), mask.New(S, S)
	ellipse(right, 330, 500, 150, 300)
	ellipse(left, 694, 500, 140, 290)
	if heart {
		ellipse(lesion, 520, 680, 150, 110)
	} else {
		ellipse(lesion, 300, 560, 80, 150)
	}
	g := image.NewGray(image.Rect(0, 0, S, S))
	for i := range g.Pix {
		x, y := i%S, i/S
		v := 200.0
		if right.Pix[i] != 0 || left.Pix[i] != 0 {
			v = 60 + 20*math.Sin(float64(x)/37)
			if int(float64(y)+0.25*float64(x))%70 < 14 {
				v += 70
			}
		}
		if lesion.Pix[i] != 0 {
			v += 40
		}
		g.Pix[i] = uint8(min(255, max(0, v)))
	}
	return g, right, left, lesion
}

// TestPipeline runs anatomy → deform (with the qagen finalize hook) →
// attributes → records → images on synthetic chests and validates the
// resulting benchmark: the QA code against real deform.Attempt values.
func TestPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the deformation engine")
	}
	cfg := buildcfg.Default()
	dir := t.TempDir()
	var recs []*benchmark.Record
	for _, tc := range []struct {
		key   string
		noDef bool
	}{{"effusion_syn1_positive_0", false}, {"cardiomegaly_syn2_positive_0", false}, {"effusion_syn3_positive_0", true}} {
		lesion, pairID, _ := benchmark.ParseKeyID(tc.key)
		heart := cfg.IsHeartLesion(lesion)
		gray, right, left, cand := synthChest(heart)
		prep, err := anatomy.Prepare(cand, right, left, heart, cfg)
		if err != nil {
			t.Fatal(err)
		}
		regs, err := anatomy.BuildRegions(prep, heart)
		if err != nil {
			t.Fatal(err)
		}
		ov := anatomy.Overlaps(prep, regs, heart, cfg)
		lungs := render.Lungs{ChexRight: right, ChexLeft: left}
		r := rng.New("chexpercept/case/0/" + tc.key)
		var retry Retry
		res, err := deform.Run(r, &deform.Input{Gray: gray, Prep: prep, Regions: regs, Overlaps: ov, HeartType: heart, Cfg: cfg},
			Finalizer(r, TokenContext{HeartType: heart, Overlaps: ov, Lungs: lungs}, cfg, &retry))
		if err != nil {
			t.Fatalf("%s: %v", tc.key, err)
		}
		qa := &QA{Points: retry.Points, Revision: retry.Revision}
		if !heart {
			if qa.Attributes, err = anatomy.Attributes(r, ov, prep, cfg); err != nil {
				t.Fatal(err)
			}
		}
		rec, err := AssembleRecord(Case{KeyID: tc.key, PairID: pairID, Lesion: lesion, Positive: true, NoDeformation: tc.noDef}, qa, cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Every GT point is a step centre inside the change it made (§8.5
		// check 4), so the points image shows it on the right side.
		for _, s := range res.Final.Steps() {
			if optionOf(retry.Points, s.Center) == 0 {
				t.Errorf("%s: centre of %s is not an option", tc.key, s.Name)
			}
		}
		checkRecordText(t, rec)
		writeImages(t, dir, gray, builtCase{rec: rec, masks: res.Final.Masks, lungs: lungs}, cfg)
		recs = append(recs, rec)
		t.Logf("%s: %d steps, %d point options, revision %v (candidates %d, duplicates %d)", tc.key,
			len(res.Final.Steps()), len(retry.Points.Options)-1, rec.Contour.FakeCombinations, retry.Revision.Candidates, retry.Revision.Duplicates)
	}
	if err := benchmark.WriteFile(dir, recs); err != nil {
		t.Fatal(err)
	}
	rep, err := validate.Run(dir, validate.Options{Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Severity != validate.Info {
			t.Errorf("validator: %s", f)
		}
	}
	if os.Getenv("QAGEN_KEEP") != "" {
		out := filepath.Join(os.TempDir(), "qagen-pipeline")
		os.RemoveAll(out)
		os.CopyFS(out, os.DirFS(dir))
		t.Logf("kept in %s", out)
	}
}
