// Package anatomy turns a positive case's candidate lesion mask and its lung
// pair into the geometry every later build step works on (build.md §5–§7,
// §10):
//
//   - Prepare cleans the candidate mask into the optimal components
//     (optimal_component_<i>, contiguous ids), checks the lungs, and builds
//     the lesion-augmented lungs L_right, L_left (§5).
//   - BuildRegions cuts the augmented lungs into the 6 zones and, for
//     lung-type lesions, the 20 lung regions (medial/lateral halves,
//     peripheral bands, costophrenic angles, intersected with the zones), and
//     keeps the intermediate geometry (zone rows, mid_x, band cores, CPA cut
//     rows) for the inspect view (§6, §12).
//   - Overlaps records, per component, the fraction of each lung, zone and
//     lung region the component covers, with the threshold flags and the
//     promotion rule (§7); GeometricalMaskInfos writes them as JSON.
//   - Attributes derives the answers of the four attribute questions from
//     those records, drawing from the case RNG for location then severity
//     (§10). Question wording lives elsewhere (internal/qagen).
//
// Everything is a pure function of its inputs and, for Attributes, of the
// RNG state; case failures are *frame.CaseError values with the §14 reason.
package anatomy

import (
	"fmt"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/mask"
)

// Failure reasons produced by this package (build.md §14).
const (
	ReasonNoComponent      = "no_component_ge_min_size"
	ReasonLungEmpty        = "lung_mask_empty"
	ReasonSidesSwapped     = "lung_sides_swapped"
	ReasonOutsideLungs     = "component_outside_lungs"
	ReasonLungDegenerate   = "lung_mask_degenerate"
	ReasonLungCoreEmpty    = "lung_core_empty"
	ReasonNoPositiveRegion = "no_positive_region"
)

// Prepared is the outcome of mask preparation (§5).
type Prepared struct {
	// Components are optimal_component_<i>, i = index, in §5 order.
	Components []mask.Mask
	// Combined is optimal_combined_mask, the union of Components.
	Combined mask.Mask
	// LungRight, LungLeft are the lesion-augmented lungs (§5 step 5) that
	// §6–§10 use.
	LungRight, LungLeft mask.Mask
	// RawRight, RawLeft are the input lungs, un-augmented (default tokens
	// of §9.5 and the outside-lung check).
	RawRight, RawLeft mask.Mask
	// TouchRight/TouchLeft[k] is true when the k-th 4-connected piece of
	// Combined (row-major label order, as mask.Label numbers them) touched
	// that lung and was added to it; for the inspect view only.
	TouchRight, TouchLeft []bool
}

// ComponentName is the mask name of optimal component i.
func ComponentName(i int) string { return fmt.Sprintf("optimal_component_%d", i) }

// Prepare runs §5 on a candidate mask and the resolved lung pair (right =
// patient's right lung, image left). All masks must share one size. The
// candidate is not modified. heartType only changes the wording of the
// component_outside_lungs detail (the component is then the heart).
//
// Failures, in the order of the spec's steps: no_component_ge_min_size,
// lung_mask_empty, lung_sides_swapped, component_outside_lungs.
func Prepare(candidate, right, left mask.Mask, heartType bool, cfg buildcfg.Config) (*Prepared, error) {
	if candidate.W != right.W || candidate.H != right.H || candidate.W != left.W || candidate.H != left.H {
		return nil, fmt.Errorf("anatomy: mask sizes differ: candidate %dx%d, right lung %dx%d, left lung %dx%d",
			candidate.W, candidate.H, right.W, right.H, left.W, left.H)
	}
	minPx := max(cfg.MinComponentPx, 1)
	if cfg.CleanupRadius < 0 || cfg.LungTouchPx < 0 {
		return nil, fmt.Errorf("anatomy: cleanup_radius %d and lung_touch_px %d must be ≥ 0", cfg.CleanupRadius, cfg.LungTouchPx)
	}

	// Steps 2–3: clean each large component on its own.
	disc := mask.Disc(cfg.CleanupRadius)
	var comps []mask.Mask
	for _, c := range mask.Components(candidate, 4, minPx) {
		if cl := cleanComponent(c, disc, cfg.CleanupRadius, minPx); !cl.Empty() {
			comps = append(comps, cl)
		}
	}
	if len(comps) == 0 {
		return nil, frame.Fail(ReasonNoComponent, "no 4-connected piece of the candidate mask (%d px) keeps %d px after clean-up",
			candidate.Count(), minPx)
	}
	combined := mask.New(candidate.W, candidate.H)
	for _, c := range comps {
		combined.OrWith(c)
	}

	// Step 4: the lung pair.
	nr, nl := right.Count(), left.Count()
	switch {
	case nr == 0 && nl == 0:
		return nil, frame.Fail(ReasonLungEmpty, "both lung masks are empty")
	case nr == 0:
		return nil, frame.Fail(ReasonLungEmpty, "right lung mask is empty")
	case nl == 0:
		return nil, frame.Fail(ReasonLungEmpty, "left lung mask is empty")
	}
	if err := checkSides(right, left); err != nil {
		return nil, err
	}

	// Step 5: lesion-augmented lungs.
	touchDisc := mask.Disc(cfg.LungTouchPx)
	nearR := mask.Dilate(right, touchDisc, 1)
	nearL := mask.Dilate(left, touchDisc, 1)
	lb := mask.Label(combined, 4)
	tr := make([]bool, lb.N())
	tl := make([]bool, lb.N())
	for i, l := range lb.Lab {
		if l != 0 {
			tr[l-1] = tr[l-1] || nearR.Pix[i] != 0
			tl[l-1] = tl[l-1] || nearL.Pix[i] != 0
		}
	}
	augR, augL := right.Clone(), left.Clone()
	for i, l := range lb.Lab {
		if l != 0 {
			if tr[l-1] {
				augR.Pix[i] = 1
			}
			if tl[l-1] {
				augL.Pix[i] = 1
			}
		}
	}

	// Step 6: every component must touch an un-augmented lung.
	for i, c := range comps {
		if !mask.Intersects(c, nearR) && !mask.Intersects(c, nearL) {
			if heartType {
				return nil, frame.Fail(ReasonOutsideLungs, "heart %s (%d px) touches neither lung within lung_touch_px %d; a larger lung_touch_px may be needed for this mask source",
					ComponentName(i), c.Count(), cfg.LungTouchPx)
			}
			return nil, frame.Fail(ReasonOutsideLungs, "%s (%d px) touches neither lung (lung_touch_px %d)",
				ComponentName(i), c.Count(), cfg.LungTouchPx)
		}
	}

	return &Prepared{
		Components: comps, Combined: combined,
		LungRight: augR, LungLeft: augL,
		RawRight: right, RawLeft: left,
		TouchRight: tr, TouchLeft: tl,
	}, nil
}

// checkSides applies the §1 rule: the right lung's centroid x must be
// smaller than the left lung's. Compared exactly as sxR/nR < sxL/nL ⇔
// sxR·nL < sxL·nR (both lungs are non-empty).
func checkSides(right, left mask.Mask) error {
	sx := func(m mask.Mask) (s, n int64) {
		for y := 0; y < m.H; y++ {
			for x, v := range m.Row(y) {
				if v != 0 {
					s += int64(x)
					n++
				}
			}
		}
		return
	}
	sr, nr := sx(right)
	sl, nl := sx(left)
	if sr*nl < sl*nr {
		return nil
	}
	return frame.Fail(ReasonSidesSwapped, "right-lung centroid x %.2f is not left of left-lung centroid x %.2f",
		float64(sr)/float64(nr), float64(sl)/float64(nl))
}

// cleanComponent runs the §5 step 2 clean-up of one component: fill holes,
// close then open with Disc(r), fill holes, drop 4-connected pieces < minPx.
//
// It works on a crop around the component. The crop keeps a margin of
// 2r+2 px (clamped at the image border, where the crop border is the image
// border), which makes it exact: every pixel a close/open can turn on lies
// within r of the component, every pixel an erosion then reads lies within
// 2r, and the background ring of the margin connects to the crop border just
// as the outside of the component's bounding box connects to the image
// border, so hole filling agrees as well.
func cleanComponent(c mask.Mask, disc mask.SE, r, minPx int) mask.Mask {
	x0, y0, x1, y1, ok := c.Bounds()
	if !ok {
		return c.Clone()
	}
	m := 2*r + 2
	x0, y0 = max(0, x0-m), max(0, y0-m)
	x1, y1 = min(c.W-1, x1+m), min(c.H-1, y1+m)
	sub := crop(c, x0, y0, x1, y1)
	sub = mask.FillHoles(sub)
	sub = mask.Close(sub, disc)
	sub = mask.Open(sub, disc)
	sub = mask.FillHoles(sub)
	sub = mask.DropSmall(sub, minPx)
	out := mask.New(c.W, c.H)
	for y := y0; y <= y1; y++ {
		copy(out.Row(y)[x0:x1+1], sub.Row(y-y0))
	}
	return out
}

// crop copies the inclusive rectangle [x0,x1]×[y0,y1] of m.
func crop(m mask.Mask, x0, y0, x1, y1 int) mask.Mask {
	out := mask.New(x1-x0+1, y1-y0+1)
	for y := y0; y <= y1; y++ {
		copy(out.Row(y-y0), m.Row(y)[x0:x1+1])
	}
	return out
}
