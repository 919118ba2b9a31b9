package phantom_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/phantom"
	"github.com/chexpercept/chexpercept/internal/source"
)

// TestManifestThroughBuilderPackages reads a generated manifest with the
// builder's own reader (§2.4 line checks), loads every positive's lungs and
// candidate mask, and runs §5–§6 on them: no line error, no case failure
// (in particular no component_outside_lungs for cardiomegaly hearts).
// The fastest PNG level writes the same pixels, which is all the builder
// reads.
func TestManifestThroughBuilderPackages(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("generates 28 phantom cases")
	}
	dir := t.TempDir()
	if _, err := phantom.Generate(context.Background(), phantom.Options{OutDir: dir, CasesPerLesion: 2, Seed: 3, Workers: 2, FastPNG: true}); err != nil {
		t.Fatal(err)
	}
	cfg := buildcfg.Default()
	cases, isCand, err := source.ReadSource(filepath.Join(dir, "manifest.jsonl"), cfg)
	if err != nil || isCand || len(cases) != 28 {
		t.Fatalf("ReadSource: %d cases, cand %v, err %v", len(cases), isCand, err)
	}
	ld, err := source.NewLoader(nil, cases, cfg, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.ImageID == nil || c.LungMasks == nil || c.HeartMask == "" {
			t.Errorf("%s: image_id/lung_masks/heart_mask missing", c.KeyID())
		}
		if !c.Positive() {
			continue
		}
		lu, err := ld.LoadLungs(c)
		if err != nil {
			t.Fatalf("%s: %v", c.KeyID(), err)
		}
		cand, err := ld.CandidateMask(c)
		if err != nil {
			t.Fatal(err)
		}
		p, err := anatomy.Prepare(cand, lu.Right, lu.Left, cfg.IsHeartLesion(c.Lesion), cfg)
		if err != nil {
			t.Errorf("%s: Prepare: %v", c.KeyID(), err)
			continue
		}
		if _, err := anatomy.BuildRegions(p, cfg.IsHeartLesion(c.Lesion)); err != nil {
			t.Errorf("%s: regions: %v", c.KeyID(), err)
		}
	}
}
