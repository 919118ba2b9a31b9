package anatomy

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame/frametest"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// frame1024 is a synthetic 1024² case: elliptic lungs (right centred at
// x 300, left at x 724, rows 170..830; wider and more symmetric than
// frametest.NewChest's, and the figures below depend on them), a lesion in
// the right lower lung with a hole and a ragged edge, a lesion spilling
// over the left lung's lateral edge, and a speck below min_component_px.
func frame1024() (cand, right, left mask.Mask) {
	const n = frametest.Size
	right = frametest.Ellipse(n, n, 300, 500, 170, 330)
	left = frametest.Ellipse(n, n, 724, 500, 170, 330)
	cand = frametest.Ellipse(n, n, 250, 700, 70, 55)
	for y := 690; y < 700; y++ { // a hole
		for x := 240; x < 250; x++ {
			cand.Set(x, y, false)
		}
	}
	for x := 180; x < 320; x += 6 { // a ragged top edge: 2 px teeth
		cand.Set(x, 645, true)
		cand.Set(x, 644, true)
	}
	frametest.PaintEllipse(cand, 880, 450, 50, 40)
	frametest.PaintEllipse(cand, 500, 100, 10, 10) // ~300 px, dropped
	return cand, right, left
}

// analyse runs §5–§7 (prepare, regions, overlaps) on one case.
func analyse(tb testing.TB, cand, right, left mask.Mask, heart bool, cfg buildcfg.Config) (*Prepared, *Regions, []ComponentOverlap) {
	tb.Helper()
	p, err := Prepare(cand, right, left, heart, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	reg, err := BuildRegions(p, heart)
	if err != nil {
		tb.Fatal(err)
	}
	return p, reg, Overlaps(p, reg, heart, cfg)
}

func runCase(t testing.TB, cfg buildcfg.Config, label string) (*Prepared, *Regions, []ComponentOverlap, *AttributeAnswers) {
	cand, right, left := frame1024()
	p, reg, ov := analyse(t, cand, right, left, false, cfg)
	a, err := Attributes(rng.New(label), ov, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, reg, ov, a
}

func TestIntegration1024(t *testing.T) {
	cfg := buildcfg.Default()
	p, reg, ov, a := runCase(t, cfg, "chexpercept/case/0/opacity_ph0001_positive_0")

	if len(p.Components) != 2 {
		t.Fatalf("%d components, want 2", len(p.Components))
	}
	c0, c1 := p.Components[0], p.Components[1]
	if !c0.At(245, 695) || !c0.At(250, 700) || !c1.At(920, 450) {
		t.Errorf("components in the wrong order or hole not filled")
	}
	if c0.At(200, 644) {
		t.Errorf("2 px teeth survived the opening")
	}
	if p.Combined.At(500, 100) {
		t.Errorf("speck kept")
	}

	// Augmented lungs: the right lesion lies inside the right lung; the
	// left one spills out laterally and extends the left lung to x 930.
	if !mask.Equal(p.LungRight, mask.Or(p.RawRight, c0)) || !mask.Equal(p.LungLeft, mask.Or(p.RawLeft, c1)) {
		t.Errorf("augmented lungs wrong")
	}
	gr, gl := reg.Right, reg.Left
	if gr.Y0 != 170 || gr.Y1 != 830 || gr.B1 != 170+661/3 || gr.B2 != 170+2*661/3 || gr.MinX != 130 || gr.MaxX != 470 || gr.MidX != 300 {
		t.Errorf("right geometry %+v", gr)
	}
	if gl.MaxX != 930 || gl.MinX != 554 || gl.MidX != (554+930)/2 || gl.CPACut != 170+3*660/4 {
		t.Errorf("left geometry %+v", gl)
	}
	r1, r2 := 170+660/3, 170+2*660/3
	if reg.Erosion != (p.LungRight.RowCount(r1)+p.LungRight.RowCount(r2))/4 || reg.Erosion < 150 {
		t.Errorf("erosion %d", reg.Erosion)
	}

	// Partition and containment properties.
	for side, pair := range map[string][2]mask.Mask{"right": {p.LungRight, mask.New(1024, 1024)}, "left": {p.LungLeft, mask.New(1024, 1024)}} {
		lung, union := pair[0], pair[1]
		for _, z := range reg.Zones {
			if z.Name[:len(side)] == side {
				union.OrWith(z.Mask)
			}
		}
		if !mask.Equal(union, lung) {
			t.Errorf("%s zones do not partition the lung", side)
		}
	}
	for _, lr := range reg.LungRegions {
		if lr.Area == 0 {
			t.Errorf("%s is empty", lr.Name)
		}
		lung := p.LungLeft
		if lr.Name[:5] == "right" {
			lung = p.LungRight
		}
		if mask.CountAnd(lr.Mask, lung) != lr.Area {
			t.Errorf("%s leaves its lung", lr.Name)
		}
	}
	for _, g := range []LungGeometry{gr, gl} {
		if mask.CountAnd(g.CPA, g.Peripheral) != g.CPA.Count() {
			t.Errorf("CPA outside band")
		}
		if _, minY, _, _, _ := g.CPA.Bounds(); minY < g.CPACut {
			t.Errorf("CPA starts at row %d < cut %d", minY, g.CPACut)
		}
		// The cut keeps the core's top and bottom points (rules "clear
		// x > top.x" etc.), so core pixels may remain only in those rows.
		in := mask.And(g.Peripheral, g.Core)
		for y := g.Top.Y + 1; y < g.Bottom.Y; y++ {
			if in.RowCount(y) != 0 {
				t.Fatalf("band holds core pixels in middle row %d", y)
			}
		}
	}
	// The right band is lateral: in the core's middle rows it lies left of
	// the core.
	for y := gr.Top.Y + 1; y < gr.Bottom.Y; y++ {
		lo, _, _ := gr.Core.RowSpan(y)
		if _, hi, ok := gr.Peripheral.RowSpan(y); ok && hi >= lo {
			t.Fatalf("row %d: right band reaches x %d ≥ core x %d", y, hi, lo)
		}
	}

	// Overlaps: component 0 sits in the right lower zone only.
	o := ov[0]
	if !o.Right.HasOverlap || o.Right.Size != c0.Count() || o.Left.Inter != 0 || o.Left.HasOverlap {
		t.Errorf("component 0 lungs %+v %+v", o.Right, o.Left)
	}
	if !ov[1].Left.HasOverlap || ov[1].Right.Inter != 0 {
		t.Errorf("component 1 lungs %+v %+v", ov[1].Right, ov[1].Left)
	}
	if a.Comparison.LeftSize != ov[1].Left.Size || a.Comparison.RightSize != ov[0].Right.Size ||
		!a.Comparison.LeftHasOverlap || !a.Comparison.RightHasOverlap {
		t.Errorf("comparison %+v", a.Comparison)
	}
	for _, z := range a.Distribution.AnswerZones {
		if z != "right lower zone lung" && z != "right mid zone lung" && z != "left upper zone lung" && z != "left mid zone lung" {
			t.Errorf("unexpected distribution zone %q", z)
		}
	}
	t.Logf("%s\n%s\n%s\n%s", a.Distribution.Derivation, a.Location.Derivation, a.Severity.Derivation, a.Comparison.Derivation)

	// Same inputs and seed ⇒ same bytes and answers.
	p2, _, ov2, a2 := runCase(t, cfg, "chexpercept/case/0/opacity_ph0001_positive_0")
	if !bytes.Equal(ojson.Marshal(GeometricalMaskInfos(ov)), ojson.Marshal(GeometricalMaskInfos(ov2))) ||
		!reflect.DeepEqual(a, a2) || !mask.Equal(p.Combined, p2.Combined) {
		t.Errorf("second run differs")
	}
}

// BenchmarkPrepareRegionsOverlaps1024 times §5–§7 on the synthetic 1024²
// case (target: well under 200 ms per case).
func BenchmarkPrepareRegionsOverlaps1024(b *testing.B) {
	cfg := buildcfg.Default()
	cand, right, left := frame1024()
	for b.Loop() {
		analyse(b, cand, right, left, false, cfg)
	}
}

func BenchmarkPrepare1024(b *testing.B) {
	cfg := buildcfg.Default()
	cand, right, left := frame1024()
	for b.Loop() {
		if _, err := Prepare(cand, right, left, false, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildRegions1024(b *testing.B) {
	cand, right, left := frame1024()
	p, _, _ := analyse(b, cand, right, left, false, buildcfg.Default())
	for b.Loop() {
		if _, err := BuildRegions(p, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOverlaps1024(b *testing.B) {
	cfg := buildcfg.Default()
	cand, right, left := frame1024()
	p, reg, _ := analyse(b, cand, right, left, false, cfg)
	for b.Loop() {
		Overlaps(p, reg, false, cfg)
	}
}
