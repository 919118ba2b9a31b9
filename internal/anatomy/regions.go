package anatomy

import (
	"fmt"
	"strings"

	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/mask"
)

// ZoneNames are the 6 ZONES of §6 in canonical order.
var ZoneNames = [6]string{
	"right upper zone lung", "right mid zone lung", "right lung base",
	"left upper zone lung", "left mid zone lung", "left lung base",
}

// baseRegionNames are the §6 base regions in the order the lung regions
// are built from them.
var baseRegionNames = [6]string{
	"right medial lung", "left medial lung",
	"right lateral lung", "left lateral lung",
	"right peripheral lung", "left peripheral lung",
}

// LungRegionNames are the 20 lung regions of §6 in canonical order.
var LungRegionNames = func() [20]string {
	var n [20]string
	n[0], n[1] = "right costophrenic angle", "left costophrenic angle"
	k := 2
	for _, b := range baseRegionNames {
		zs := ZoneNames[3:6]
		if b[:5] == "right" {
			zs = ZoneNames[0:3]
		}
		for _, z := range zs {
			n[k] = b + " & " + z
			k++
		}
	}
	return n
}()

// Region is one named reference region with its pixel count.
type Region struct {
	Name string
	Mask mask.Mask
	Area int
}

// LungGeometry is the per-lung geometry behind the regions, kept for the
// inspect view (§12). Rows and columns are pixel indices of the augmented
// lung.
type LungGeometry struct {
	Y0, Y1 int // first and last row of the lung
	B1, B2 int // zone boundaries: upper y ≤ B1 < mid ≤ B2 < base
	// MinX, MaxX span the lung; MidX = (MinX+MaxX) div 2 splits medial and
	// lateral (right lung: medial x ≥ MidX; left lung: medial x < MidX).
	MinX, MaxX, MidX int
	// Lung-type lesions only (zero otherwise):
	Core       mask.Mask  // band core: eroded lungs ∧ this lung, largest 8-component
	Top        mask.Point // core extreme points used to cut the band
	Bottom     mask.Point
	Peripheral mask.Mask // "<side> peripheral lung"
	CPACut     int       // CPA keeps band rows y ≥ CPACut
	CPA        mask.Mask // "<side> costophrenic angle"
}

// Regions holds the §6 reference regions of one case.
type Regions struct {
	// Zones are the 6 ZONES in canonical order (ZoneNames).
	Zones []Region
	// LungRegions are the 20 lung regions in canonical order
	// (LungRegionNames); nil for heart-type lesions.
	LungRegions []Region
	// Medial/lateral halves in baseRegionNames order (right medial, left
	// medial, right lateral, left lateral); for the inspect view.
	Halves []Region
	Right  LungGeometry
	Left   LungGeometry
	// Erosion is the side e of the square eroding the lungs for the
	// peripheral band (0 for heart-type lesions).
	Erosion int
}

// Describe is a few lines of text on the geometry behind the regions, for
// the inspect view's summary.
func (r *Regions) Describe() string {
	var b strings.Builder
	for _, s := range []struct {
		name string
		g    LungGeometry
	}{{"right", r.Right}, {"left", r.Left}} {
		g := s.g
		fmt.Fprintf(&b, "%s lung: rows %d..%d, zone rows upper ≤ %d < mid ≤ %d < base, columns %d..%d, mid_x %d",
			s.name, g.Y0, g.Y1, g.B1, g.B2, g.MinX, g.MaxX, g.MidX)
		if r.Erosion > 0 {
			fmt.Fprintf(&b, ", band core %d px from (%d, %d) to (%d, %d), band %d px, CPA rows ≥ %d (%d px)",
				g.Core.Count(), g.Top.X, g.Top.Y, g.Bottom.X, g.Bottom.Y, g.Peripheral.Count(), g.CPACut, g.CPA.Count())
		}
		b.WriteByte('\n')
	}
	if r.Erosion > 0 {
		lo, hi := r.ErosionOffsets()
		fmt.Fprintf(&b, "peripheral band erosion: %d×%d square (from the right lung's widths), offsets %d … %d on each axis (scikit-image: even sizes reach one pixel further down/right), image edges reflected\n",
			r.Erosion, r.Erosion, lo, hi)
	}
	return b.String()
}

// ErosionOffsets is the offset range lo … hi, on each axis, of the e×e
// square eroding the lungs for the peripheral band: −((e−1) div 2) … e div 2,
// where scikit-image's erosion puts an even-sized footprint (§6 step 2).
// Both are 0 for heart-type lesions.
func (r *Regions) ErosionOffsets() (lo, hi int) {
	if r.Erosion == 0 {
		return 0, 0
	}
	return -((r.Erosion - 1) / 2), r.Erosion / 2
}

// Lookup returns the zone or lung region with the given canonical name.
func (r *Regions) Lookup(name string) (Region, bool) {
	for _, z := range r.Zones {
		if z.Name == name {
			return z, true
		}
	}
	for _, z := range r.LungRegions {
		if z.Name == name {
			return z, true
		}
	}
	return Region{}, false
}

// BuildRegions computes §6 on the augmented lungs of p. Heart-type lesions
// get only the zones (and the medial/lateral geometry): they use no lung
// regions, so the peripheral band is neither built nor able to fail them.
func BuildRegions(p *Prepared, heartType bool) (*Regions, error) {
	R, L := p.LungRight, p.LungLeft
	reg := &Regions{}
	var ok bool
	if reg.Right, ok = lungGeometry(R); !ok {
		return nil, frame.Fail(ReasonLungEmpty, "right lung mask is empty")
	}
	if reg.Left, ok = lungGeometry(L); !ok {
		return nil, frame.Fail(ReasonLungEmpty, "left lung mask is empty")
	}

	zr := zones(R, reg.Right)
	zl := zones(L, reg.Left)
	for i, z := range append(zr[:], zl[:]...) {
		reg.Zones = append(reg.Zones, newRegionRows(ZoneNames[i], z.m, z.y0, z.y1))
	}

	// Medial/lateral halves.
	rMed, rLat := splitColumns(R, reg.Right.MidX) // x ≥ mid, x < mid
	lLat, lMed := splitColumns(L, reg.Left.MidX)  // x ≥ mid is lateral on the left
	reg.Halves = []Region{
		newRegionRows(baseRegionNames[0], rMed, reg.Right.Y0, reg.Right.Y1),
		newRegionRows(baseRegionNames[1], lMed, reg.Left.Y0, reg.Left.Y1),
		newRegionRows(baseRegionNames[2], rLat, reg.Right.Y0, reg.Right.Y1),
		newRegionRows(baseRegionNames[3], lLat, reg.Left.Y0, reg.Left.Y1),
	}
	if heartType {
		return reg, nil
	}

	if err := peripheral(R, L, reg); err != nil {
		return nil, err
	}

	bases := [6]mask.Mask{rMed, lMed, rLat, lLat, reg.Right.Peripheral, reg.Left.Peripheral}
	reg.LungRegions = make([]Region, 0, 20)
	reg.LungRegions = append(reg.LungRegions,
		newRegionRows(LungRegionNames[0], reg.Right.CPA, reg.Right.CPACut, reg.Right.Y1),
		newRegionRows(LungRegionNames[1], reg.Left.CPA, reg.Left.CPACut, reg.Left.Y1))
	k := 2
	for bi, b := range bases {
		zs := zl
		if bi%2 == 0 { // right-side bases sit at even positions
			zs = zr
		}
		for _, z := range zs {
			// base ∧ zone: a zone is a band of rows of its lung, and every
			// base lies in the same lung, so copying those rows is the AND.
			m := mask.New(b.W, b.H)
			if z.y0 <= z.y1 {
				copy(m.Pix[z.y0*b.W:(z.y1+1)*b.W], b.Pix[z.y0*b.W:(z.y1+1)*b.W])
			}
			reg.LungRegions = append(reg.LungRegions, newRegionRows(LungRegionNames[k], m, z.y0, z.y1))
			k++
		}
	}
	return reg, nil
}

// newRegionRows makes a Region of m, whose pixels all lie in rows y0..y1.
func newRegionRows(name string, m mask.Mask, y0, y1 int) Region {
	n := 0
	if y0 <= y1 {
		for _, v := range m.Pix[y0*m.W : (y1+1)*m.W] {
			n += int(v)
		}
	}
	return Region{Name: name, Mask: m, Area: n}
}

// lungGeometry finds the row span, zone rows and mid column of a lung.
func lungGeometry(l mask.Mask) (LungGeometry, bool) {
	minX, minY, maxX, maxY, ok := l.Bounds()
	if !ok {
		return LungGeometry{}, false
	}
	h := maxY - minY + 1
	return LungGeometry{
		Y0: minY, Y1: maxY,
		B1: minY + h/3, B2: minY + (2*h)/3,
		MinX: minX, MaxX: maxX, MidX: (minX + maxX) / 2,
	}, true
}

// zoneRows is one zone: its mask and its rows y0..y1 (empty when y0 > y1).
type zoneRows struct {
	m      mask.Mask
	y0, y1 int
}

// zones splits a lung into upper (y ≤ B1), mid (B1 < y ≤ B2), base (y > B2).
func zones(l mask.Mask, g LungGeometry) [3]zoneRows {
	z := [3]zoneRows{{y0: g.Y0, y1: g.B1}, {y0: g.B1 + 1, y1: g.B2}, {y0: g.B2 + 1, y1: g.Y1}}
	for i := range z {
		z[i].m = mask.New(l.W, l.H)
		if z[i].y0 <= z[i].y1 {
			copy(z[i].m.Pix[z[i].y0*l.W:(z[i].y1+1)*l.W], l.Pix[z[i].y0*l.W:(z[i].y1+1)*l.W])
		}
	}
	return z
}

// splitColumns returns (l ∧ x ≥ mid, l ∧ x < mid).
func splitColumns(l mask.Mask, mid int) (ge, lt mask.Mask) {
	ge, lt = mask.New(l.W, l.H), mask.New(l.W, l.H)
	for y := 0; y < l.H; y++ {
		row := l.Row(y)
		copy(lt.Row(y)[:mid], row[:mid])
		copy(ge.Row(y)[mid:], row[mid:])
	}
	return ge, lt
}

// peripheral builds both peripheral bands and CPAs (§6 steps 1–5).
func peripheral(R, L mask.Mask, reg *Regions) error {
	g := &reg.Right
	r1 := g.Y0 + (g.Y1-g.Y0)/3
	r2 := g.Y0 + 2*(g.Y1-g.Y0)/3
	w1, w2 := R.RowCount(r1), R.RowCount(r2)
	e := (w1 + w2) / 4
	if e < 3 {
		return frame.Fail(ReasonLungDegenerate, "right lung is %d and %d px wide at rows %d and %d, erosion size %d < 3",
			w1, w2, r1, r2, e)
	}
	reg.Erosion = e
	// scikit-image's square, not OpenCV's: for even e it reaches one pixel
	// further down/right than up/left (§6 step 2).
	eroded := mask.ErodeReflect(mask.Or(R, L), mask.SkimageSquare(e))

	for _, side := range []struct {
		name string
		lung mask.Mask
		g    *LungGeometry
		left bool
	}{{"right", R, &reg.Right, false}, {"left", L, &reg.Left, true}} {
		core := mask.Largest8(mask.And(eroded, side.lung))
		top, bottom, ok := coreEnds(core, side.left)
		if !ok {
			return frame.Fail(ReasonLungCoreEmpty, "%s lung has no pixel left after eroding the lungs with a %d×%d square", side.name, e, e)
		}
		band := cutBand(side.lung, core, side.g, top, bottom, side.left)
		side.g.Core, side.g.Top, side.g.Bottom, side.g.Peripheral = core, top, bottom, band
		side.g.CPACut = side.g.Y0 + (3*(side.g.Y1-side.g.Y0))/4 // = floor(0.75·(y1−y0)), exact
		cpa := band.Clone()
		clear(cpa.Pix[:side.g.CPACut*cpa.W])
		side.g.CPA = cpa
	}
	return nil
}

// coreEnds returns the core's top and bottom points: top = min y with ties
// min x (right) or max x (left); bottom = max y with ties min x on both
// sides (the reference's asymmetry, kept).
func coreEnds(core mask.Mask, left bool) (top, bottom mask.Point, ok bool) {
	_, minY, _, maxY, ok := core.Bounds()
	if !ok {
		return
	}
	lo, hi, _ := core.RowSpan(minY)
	top = mask.Point{X: lo, Y: minY}
	if left {
		top.X = hi
	}
	lo, _, _ = core.RowSpan(maxY)
	bottom = mask.Point{X: lo, Y: maxY}
	return top, bottom, true
}

// cutBand removes the core side of the lung row by row, leaving the lateral
// band (§6 steps 4–5).
func cutBand(lung, core mask.Mask, g *LungGeometry, top, bottom mask.Point, left bool) mask.Mask {
	band := lung.Clone()
	W := band.W
	// clearRight clears x > t (x ≥ t+1); clearLeft clears x < t.
	clearFrom := func(y, x0 int) {
		if x0 < W {
			clear(band.Row(y)[max(x0, 0):])
		}
	}
	clearBelow := func(y, x1 int) { // clears x < x1
		if x1 > 0 {
			clear(band.Row(y)[:min(x1, W)])
		}
	}
	for y := g.Y0; y <= top.Y; y++ {
		if left {
			clearBelow(y, top.X)
		} else {
			clearFrom(y, top.X+1)
		}
	}
	for y := top.Y + 1; y < bottom.Y; y++ {
		lo, hi, ok := core.RowSpan(y)
		if !ok {
			continue
		}
		if left {
			clearBelow(y, hi+1) // x ≤ hi
		} else {
			clearFrom(y, lo) // x ≥ lo
		}
	}
	for y := bottom.Y; y <= g.Y1; y++ {
		if left {
			clearBelow(y, bottom.X)
		} else {
			clearFrom(y, bottom.X+1)
		}
	}
	return band
}
