package anatomy

import (
	"strconv"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// Keys of lesion_overlap entries (§7).
const (
	KeyZones       = "zones"
	KeyLungRegions = "lung_regions"
)

// Overlap is a component's coverage of one zone or lung region (§7).
type Overlap struct {
	Name       string
	Key        string  // KeyZones or KeyLungRegions
	Inter      int     // |m ∧ R|
	Area       int     // |R|
	Ratio      float64 // float64(Inter) / float64(Area); 0 when Area = 0
	HasOverlap bool
	Promoted   bool // HasOverlap set by the promotion rule, not the threshold
}

// LungOverlap is a component's coverage of one augmented lung (§7).
type LungOverlap struct {
	Inter      int // |m ∧ L|
	Area       int // |L|
	Ratio      float64
	HasOverlap bool // Ratio ≥ lung_overlap_min
	Size       int  // Inter if HasOverlap, else 0 (the stored "size")
}

// ComponentOverlap is the §7 record of one optimal component.
type ComponentOverlap struct {
	ID          int
	Size        int // |m|
	Left, Right LungOverlap
	Zones       []Overlap // 6, canonical order
	LungRegions []Overlap // 20, canonical order; nil for heart-type lesions
}

// Overlaps computes the §7 records of every optimal component, in id order.
func Overlaps(p *Prepared, r *Regions, heartType bool, cfg buildcfg.Config) []ComponentOverlap {
	out := make([]ComponentOverlap, len(p.Components))
	areaR, areaL := p.LungRight.Count(), p.LungLeft.Count()
	for id, m := range p.Components {
		c := ComponentOverlap{ID: id}
		// Walk the component's pixels once and test every region there,
		// instead of intersecting 28 full frames.
		pix := m.Points()
		c.Size = len(pix)
		c.Right = lungOverlap(countAt(pix, p.LungRight), areaR, cfg.LungOverlapMin)
		c.Left = lungOverlap(countAt(pix, p.LungLeft), areaL, cfg.LungOverlapMin)
		c.Zones = regionOverlaps(pix, r.Zones, KeyZones, cfg.RegionOverlapMin)
		if !heartType {
			c.LungRegions = regionOverlaps(pix, r.LungRegions, KeyLungRegions, cfg.RegionOverlapMin)
		}
		out[id] = c
	}
	return out
}

func countAt(pix []mask.Point, m mask.Mask) int {
	n := 0
	for _, q := range pix {
		n += int(m.Pix[q.Y*m.W+q.X])
	}
	return n
}

func ratio(inter, area int) float64 {
	if area == 0 {
		return 0
	}
	return float64(inter) / float64(area)
}

func lungOverlap(inter, area int, min float64) LungOverlap {
	o := LungOverlap{Inter: inter, Area: area, Ratio: ratio(inter, area)}
	o.HasOverlap = o.Ratio >= min
	if o.HasOverlap {
		o.Size = inter
	}
	return o
}

// regionOverlaps measures one region family and applies the promotion rule:
// if no entry reaches the threshold, the largest ratio (first in canonical
// order on ties) is marked, provided it is > 0.
func regionOverlaps(pix []mask.Point, regs []Region, key string, min float64) []Overlap {
	ov := make([]Overlap, len(regs))
	any := false
	for i, reg := range regs {
		inter := countAt(pix, reg.Mask)
		o := Overlap{Name: reg.Name, Key: key, Inter: inter, Area: reg.Area, Ratio: ratio(inter, reg.Area)}
		o.HasOverlap = o.Ratio >= min
		any = any || o.HasOverlap
		ov[i] = o
	}
	if !any {
		best := -1
		for i, o := range ov {
			if o.Ratio > 0 && (best < 0 || o.Ratio > ov[best].Ratio) {
				best = i
			}
		}
		if best >= 0 {
			ov[best].HasOverlap = true
			ov[best].Promoted = true
		}
	}
	return ov
}

// LesionOverlap lists the component's zones then lung regions with
// has_overlap, in canonical order (§7 lesion_overlap).
func (c ComponentOverlap) LesionOverlap() []Overlap {
	var out []Overlap
	for _, fam := range [][]Overlap{c.Zones, c.LungRegions} {
		for _, o := range fam {
			if o.HasOverlap {
				out = append(out, o)
			}
		}
	}
	return out
}

// LesionOverlapJSON is LesionOverlap as the JSON object
// {<name>: {"overlap_ratio": r, "key": "zones"|"lung_regions"}, …}.
func (c ComponentOverlap) LesionOverlapJSON() *ojson.Value {
	o := ojson.NewObject()
	for _, e := range c.LesionOverlap() {
		o.Set(e.Name, ojson.NewObject().
			Set("overlap_ratio", ojson.Float(e.Ratio)).
			Set("key", ojson.Str(e.Key)))
	}
	return o
}

// GeometricalMaskInfos is the geometrical_mask_infos array of §7/§11: one
// object per component, {"mask_component_id": "<i>", "overlap": {"left
// lung", "right lung", "zones", "lung_regions"}}, names in canonical order;
// "lung_regions" is absent when the records have none (heart-type).
func GeometricalMaskInfos(ov []ComponentOverlap) *ojson.Value {
	arr := ojson.Arr()
	for _, c := range ov {
		o := ojson.NewObject().
			Set("left lung", lungJSON(c.Left)).
			Set("right lung", lungJSON(c.Right)).
			Set("zones", familyJSON(c.Zones))
		if c.LungRegions != nil {
			o.Set("lung_regions", familyJSON(c.LungRegions))
		}
		arr.A = append(arr.A, ojson.NewObject().
			Set("mask_component_id", ojson.Str(strconv.Itoa(c.ID))).
			Set("overlap", o))
	}
	return arr
}

func lungJSON(l LungOverlap) *ojson.Value {
	return ojson.NewObject().
		Set("has_overlap", ojson.Bool(l.HasOverlap)).
		Set("overlap_ratio", ojson.Float(l.Ratio)).
		Set("size", ojson.Int(int64(l.Size)))
}

func familyJSON(fam []Overlap) *ojson.Value {
	o := ojson.NewObject()
	for _, e := range fam {
		o.Set(e.Name, ojson.NewObject().
			Set("has_overlap", ojson.Bool(e.HasOverlap)).
			Set("overlap_ratio", ojson.Float(e.Ratio)))
	}
	return o
}

// InspectJSON is the overlaps.json of the inspect view (§12): per component
// and entry the intersection, region size, ratio, has_overlap and promoted.
func InspectJSON(ov []ComponentOverlap) *ojson.Value {
	entry := func(name string, inter, area int, r float64, has, promoted bool) *ojson.Value {
		return ojson.NewObject().
			Set("name", ojson.Str(name)).
			Set("intersection_px", ojson.Int(int64(inter))).
			Set("region_px", ojson.Int(int64(area))).
			Set("ratio", ojson.Float(r)).
			Set("has_overlap", ojson.Bool(has)).
			Set("promoted", ojson.Bool(promoted))
	}
	arr := ojson.Arr()
	for _, c := range ov {
		lungs := ojson.Arr(
			entry("left lung", c.Left.Inter, c.Left.Area, c.Left.Ratio, c.Left.HasOverlap, false),
			entry("right lung", c.Right.Inter, c.Right.Area, c.Right.Ratio, c.Right.HasOverlap, false))
		fam := func(f []Overlap) *ojson.Value {
			a := ojson.Arr()
			for _, e := range f {
				a.A = append(a.A, entry(e.Name, e.Inter, e.Area, e.Ratio, e.HasOverlap, e.Promoted))
			}
			return a
		}
		o := ojson.NewObject().
			Set("component", ojson.Str(ComponentName(c.ID))).
			Set("size_px", ojson.Int(int64(c.Size))).
			Set("lungs", lungs).
			Set("zones", fam(c.Zones))
		if c.LungRegions != nil {
			o.Set("lung_regions", fam(c.LungRegions))
		}
		arr.A = append(arr.A, o)
	}
	return arr
}
