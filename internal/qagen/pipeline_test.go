package qagen

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/deform"
	"github.com/chexpercept/chexpercept/internal/frame/frametest"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// TestPipeline runs anatomy → deform (with the qagen finalize hook) →
// attributes → records → images on frametest's synthetic chests (a lesion
// in the right lung, or a heart between the lungs) and validates the
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
		lesion, pairID, _ := benchmark.DefaultLesions().ParseKeyID(tc.key)
		heart := cfg.IsHeartLesion(lesion)
		c := frametest.NewChest(heart)
		prep, err := anatomy.Prepare(c.Lesion, c.Right, c.Left, heart, cfg)
		if err != nil {
			t.Fatal(err)
		}
		regs, err := anatomy.BuildRegions(prep, heart)
		if err != nil {
			t.Fatal(err)
		}
		ov := anatomy.Overlaps(prep, regs, heart, cfg)
		lungs := render.Lungs{ChexRight: c.Right, ChexLeft: c.Left}
		r := rng.New("chexpercept/case/0/" + tc.key)
		var retry Retry
		res, err := deform.Run(r, &deform.Input{Gray: c.Gray, Prep: prep, Regions: regs, Overlaps: ov, HeartType: heart, Cfg: cfg},
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
		writeImages(t, dir, c.Gray, builtCase{rec: rec, masks: res.Final.Masks, lungs: lungs}, cfg)
		recs = append(recs, rec)
		t.Logf("%s: %d steps, %d point options, revision %v (candidates %d, duplicates %d)", tc.key,
			len(res.Final.Steps()), len(retry.Points.Options)-1, rec.Contour.FakeCombinations, retry.Revision.Candidates, retry.Revision.Duplicates)
	}
	writeValidated(t, dir, recs)
	if os.Getenv("QAGEN_KEEP") != "" {
		out := filepath.Join(os.TempDir(), "qagen-pipeline")
		os.RemoveAll(out)
		os.CopyFS(out, os.DirFS(dir))
		t.Logf("kept in %s", out)
	}
}
