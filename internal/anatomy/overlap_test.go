package anatomy

import (
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/goldentest"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

func TestRegionOverlapsPromotion(t *testing.T) {
	// Three 10×10 regions side by side and one empty region; the component
	// covers a chosen number of pixels of each.
	regs := []Region{
		newRegion("a", rect(40, 10, 0, 0, 9, 9)),
		newRegion("b", rect(40, 10, 10, 0, 19, 9)),
		newRegion("c", rect(40, 10, 20, 0, 29, 9)),
		newRegion("empty", mask.New(40, 10)),
	}
	cover := func(n [3]int) []mask.Point {
		var pts []mask.Point
		for r, k := range n {
			for i := 0; i < k; i++ {
				pts = append(pts, mask.Point{X: 10*r + i%10, Y: i / 10})
			}
		}
		return pts
	}
	tests := []struct {
		name     string
		n        [3]int
		has      [3]bool
		promoted int // index, -1 none
	}{
		{"threshold reached, no promotion", [3]int{20, 19, 0}, [3]bool{true, false, false}, -1},
		{"largest promoted", [3]int{5, 19, 10}, [3]bool{false, true, false}, 1},
		{"tie: first in order", [3]int{5, 15, 15}, [3]bool{false, true, false}, 1},
		{"nothing covered", [3]int{0, 0, 0}, [3]bool{}, -1},
		{"one pixel promoted", [3]int{0, 0, 1}, [3]bool{false, false, true}, 2},
		{"several reach", [3]int{100, 0, 21}, [3]bool{true, false, true}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ov := regionOverlaps(cover(tc.n), regs, KeyZones, 0.2)
			for i := 0; i < 3; i++ {
				o := ov[i]
				if o.Inter != tc.n[i] || o.Area != 100 || o.Ratio != float64(tc.n[i])/100 || o.Key != KeyZones {
					t.Errorf("%s: %+v", o.Name, o)
				}
				if o.HasOverlap != tc.has[i] || o.Promoted != (i == tc.promoted) {
					t.Errorf("%s: has %t promoted %t, want %t %t", o.Name, o.HasOverlap, o.Promoted, tc.has[i], i == tc.promoted)
				}
			}
			if e := ov[3]; e.Ratio != 0 || e.HasOverlap {
				t.Errorf("empty region: %+v", e)
			}
		})
	}
}

// rectCase is rectLungs with one component in the right lower lung
// (x 10..14, rows 31..39, 45 px) and one 5 px speck in the left lung.
func rectCase() (*Prepared, *Regions) {
	p := rectLungs()
	p.Components = []mask.Mask{rect(70, 50, 10, 31, 14, 39), rect(70, 50, 50, 20, 54, 20)}
	p.Combined = mask.Or(p.Components[0], p.Components[1])
	reg, err := BuildRegions(p, false)
	if err != nil {
		panic(err)
	}
	return p, reg
}

func TestOverlapsRectangles(t *testing.T) {
	p, reg := rectCase()
	ov := Overlaps(p, reg, false, buildcfg.Default())
	if len(ov) != 2 {
		t.Fatalf("%d records", len(ov))
	}
	c := ov[0]
	if c.ID != 0 || c.Size != 45 {
		t.Errorf("id %d size %d", c.ID, c.Size)
	}
	if c.Right != (LungOverlap{Inter: 45, Area: 600, Ratio: 0.075, HasOverlap: true, Size: 45}) {
		t.Errorf("right lung %+v", c.Right)
	}
	if c.Left != (LungOverlap{Area: 600}) {
		t.Errorf("left lung %+v", c.Left)
	}
	byName := map[string]Overlap{}
	for _, o := range append(append([]Overlap{}, c.Zones...), c.LungRegions...) {
		byName[o.Name] = o
	}
	want := map[string][2]int{ // inter, area
		"right lung base":                         {45, 180},
		"right mid zone lung":                     {0, 200},
		"right costophrenic angle":                {42, 42}, // the band's rows 31..33 stop at x 13
		"right lateral lung & right lung base":    {45, 81},
		"right peripheral lung & right lung base": {42, 42},
		"right medial lung & right lung base":     {0, 99},
	}
	for n, w := range want {
		o := byName[n]
		if o.Inter != w[0] || o.Area != w[1] || o.Ratio != float64(w[0])/float64(w[1]) || o.HasOverlap != (w[0] > 0) || o.Promoted {
			t.Errorf("%s: %+v, want inter %d area %d", n, o, w[0], w[1])
		}
	}
	lo := c.LesionOverlap()
	var names []string
	for _, o := range lo {
		names = append(names, o.Key+":"+o.Name)
	}
	wantLO := []string{"zones:right lung base", "lung_regions:right costophrenic angle",
		"lung_regions:right lateral lung & right lung base", "lung_regions:right peripheral lung & right lung base"}
	if len(names) != len(wantLO) {
		t.Fatalf("lesion_overlap %v, want %v", names, wantLO)
	}
	for i := range names {
		if names[i] != wantLO[i] {
			t.Errorf("lesion_overlap %v, want %v", names, wantLO)
		}
	}

	// The speck: 5 of 600 px of the left lung is below 1 %; every zone and
	// region ratio is below 0.2, so the largest one is promoted.
	s := ov[1]
	if s.Left.HasOverlap || s.Left.Size != 0 || s.Left.Inter != 5 {
		t.Errorf("speck left lung %+v", s.Left)
	}
	if z := s.Zones[3]; !z.HasOverlap || !z.Promoted || z.Name != "left upper zone lung" {
		t.Errorf("speck zone promotion %+v", z)
	}
	// The speck (x 50..54, row 20) lies in the left lateral half (x ≥ 49)
	// and upper zone: 5 of 121 px; the band (x ≥ 56 there) misses it.
	for _, o := range s.LungRegions {
		wantP := o.Name == "left lateral lung & left upper zone lung"
		if o.Promoted != wantP || o.HasOverlap != wantP {
			t.Errorf("speck %s: has %t promoted %t", o.Name, o.HasOverlap, o.Promoted)
		}
	}

	// One more pixel makes 6/600 = 0.01: the lung threshold is inclusive.
	p.Components[1].Set(55, 20, true)
	if ov := Overlaps(p, reg, false, buildcfg.Default()); !ov[1].Left.HasOverlap || ov[1].Left.Size != 6 {
		t.Errorf("6/600 not counted: %+v", ov[1].Left)
	}

	// Heart-type records carry no lung regions.
	if ov := Overlaps(p, reg, true, buildcfg.Default()); ov[0].LungRegions != nil || len(ov[0].Zones) != 6 {
		t.Errorf("heart-type record has lung regions")
	}
}

func TestGeometricalMaskInfos(t *testing.T) {
	p, reg := rectCase()
	ov := Overlaps(p, reg, false, buildcfg.Default())
	v := GeometricalMaskInfos(ov)
	goldentest.Check(t, "testdata/geometrical_mask_infos.golden.json", ojson.Marshal(v))

	// Structure checks independent of the golden bytes.
	if len(v.A) != 2 {
		t.Fatalf("%d entries", len(v.A))
	}
	e := v.A[1]
	if e.O[0].Key != "mask_component_id" || e.Get("mask_component_id").S != "1" {
		t.Errorf("mask_component_id %+v", e.O[0])
	}
	o := e.Get("overlap")
	var keys []string
	for _, m := range o.O {
		keys = append(keys, m.Key)
	}
	if len(keys) != 4 || keys[0] != "left lung" || keys[1] != "right lung" || keys[2] != "zones" || keys[3] != "lung_regions" {
		t.Errorf("overlap keys %v", keys)
	}
	if len(o.Get("zones").O) != 6 || len(o.Get("lung_regions").O) != 20 {
		t.Errorf("zone/region counts")
	}
	for i, m := range o.Get("lung_regions").O {
		if m.Key != LungRegionNames[i] {
			t.Errorf("lung region %d key %q", i, m.Key)
		}
	}
	l := o.Get("left lung")
	if l.O[0].Key != "has_overlap" || l.O[1].Key != "overlap_ratio" || l.O[2].Key != "size" ||
		l.Get("overlap_ratio").N != "0.008333333333333333" || l.Get("size").N != "0" {
		t.Errorf("left lung entry %s", ojson.MarshalCompact(l))
	}
	if z := o.Get("zones").Get("left upper zone lung"); !z.Get("has_overlap").B || z.Get("overlap_ratio").N != "0.022727272727272728" {
		t.Errorf("promoted zone entry %s", ojson.MarshalCompact(z))
	}

	heart := GeometricalMaskInfos(Overlaps(p, reg, true, buildcfg.Default()))
	if heart.A[0].Get("overlap").Has("lung_regions") {
		t.Errorf("heart-type record has lung_regions")
	}
	goldentest.Check(t, "testdata/lesion_overlap.golden.json", ojson.Marshal(ov[0].LesionOverlapJSON()))
}
