package deform

import (
	"image"
	"sync"
	"testing"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame/frametest"
	"github.com/chexpercept/chexpercept/internal/mask"
)

// newInput runs §5–§7 (prepare, regions, overlaps) on one case and
// returns the deformation input.
func newInput(gray *image.Gray, cand, right, left mask.Mask, heart bool, cfg buildcfg.Config) (*Input, error) {
	prep, err := anatomy.Prepare(cand, right, left, heart, cfg)
	if err != nil {
		return nil, err
	}
	regs, err := anatomy.BuildRegions(prep, heart)
	if err != nil {
		return nil, err
	}
	ov := anatomy.Overlaps(prep, regs, heart, cfg)
	return &Input{Gray: gray, Prep: prep, Regions: regs, Overlaps: ov, HeartType: heart, Cfg: cfg}, nil
}

// synthCache holds the synthetic inputs; the tests that share one run in
// parallel and only read it.
var synthCache struct {
	sync.Mutex
	in map[bool]*Input
}

// synthInput is the input of frametest's synthetic chest (lung-type, or
// heart-type with the heart as the lesion) under the default
// configuration, built once per type.
func synthInput(t testing.TB, heart bool) *Input {
	t.Helper()
	synthCache.Lock()
	defer synthCache.Unlock()
	if in, ok := synthCache.in[heart]; ok {
		return in
	}
	c := frametest.NewChest(heart)
	in, err := newInput(c.Gray, c.Lesion, c.Right, c.Left, heart, buildcfg.Default())
	if err != nil {
		t.Fatalf("synthetic chest (heart %v): %v", heart, err)
	}
	if synthCache.in == nil {
		synthCache.in = map[bool]*Input{}
	}
	synthCache.in[heart] = in
	return in
}

type imageGray = image.Gray

func newGray(w, h int) *image.Gray { return image.NewGray(image.Rect(0, 0, w, h)) }

func pt(x, y int) mask.Point { return mask.Point{X: x, Y: y} }

func ptr(x, y int) *mask.Point { p := pt(x, y); return &p }
