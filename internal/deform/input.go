package deform

import (
	"errors"
	"image"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// Input is one positive case as the anatomy package describes it.
type Input struct {
	Gray      *image.Gray
	Prep      *anatomy.Prepared
	Regions   *anatomy.Regions
	Overlaps  []anatomy.ComponentOverlap
	HeartType bool
	Cfg       buildcfg.Config
}

// Geometry converts the anatomy records into the engine's view.
func (in *Input) Geometry() (*Geometry, error) {
	if in == nil || in.Prep == nil || in.Regions == nil {
		return nil, errors.New("deform: incomplete input (prepared masks or regions missing)")
	}
	g := &Geometry{
		Gray:       in.Gray,
		Components: in.Prep.Components,
		LungRight:  in.Prep.LungRight,
		LungLeft:   in.Prep.LungLeft,
		Regions:    map[string]mask.Mask{},
		HeartType:  in.HeartType,
	}
	for _, fam := range [][]anatomy.Region{in.Regions.Zones, in.Regions.LungRegions} {
		for _, r := range fam {
			g.Regions[r.Name] = r.Mask
		}
	}
	for _, c := range in.Overlaps {
		co := ComponentOverlap{LeftRatio: c.Left.Ratio, RightRatio: c.Right.Ratio}
		for _, o := range c.LesionOverlap() {
			co.LesionOverlap = append(co.LesionOverlap, Overlap{Name: o.Name, Key: o.Key, Ratio: o.Ratio})
		}
		g.Overlaps = append(g.Overlaps, co)
	}
	return g, nil
}

// Run does the catalogue pass (§8.6) then the sequential pass (§8.7, with
// the fakes of §8.8), drawing from r in the order of §13. After each
// sequential retry's steps and marker check it calls finalize(attempt)
// (§9.4, §9.5, which draw from the same r); a non-nil error fails that
// retry, and after all retries the case fails with the last reason:
// deformation_failed (detail "catalogue component <i>" or "sequential") or
// finalize's error. On a case failure the returned Result is still non-nil
// and carries the Log for the inspect view.
func Run(r *rng.RNG, in *Input, finalize func(*Attempt) error) (*Result, error) {
	g, err := in.Geometry()
	if err != nil {
		return nil, err
	}
	return RunGeometry(r, g, in.Cfg, finalize)
}
