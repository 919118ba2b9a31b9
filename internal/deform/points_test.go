package deform

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame/frametest"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// flatEngine is an engine on a w×h flat grey image with both lungs full.
func flatEngine(t *testing.T, w, h int, cfg buildcfg.Config) *engine {
	t.Helper()
	g := &Geometry{Gray: newGray(w, h), LungRight: fullMask(w, h), LungLeft: fullMask(w, h), Regions: map[string]mask.Mask{}}
	e, err := newEngine(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestBallFlatImage(t *testing.T) {
	t.Parallel()
	cfg := buildcfg.Default()
	e := flatEngine(t, 200, 120, cfg)
	// Flat image: P = 0, so ĝ = 0 and the cost is 1 everywhere.
	for i, c := range e.cost {
		if c != 1 {
			t.Fatalf("cost[%d] = %v, want 1 on a flat image", i, c)
		}
	}
	m := mask.New(200, 120)
	for y := 0; y < 120; y++ {
		for x := 100; x < 200; x++ {
			m.Pix[y*200+x] = 1
		}
	}
	p := mask.Point{X: 90, Y: 60}
	pix, bl, ok := e.ball(rng.New("ball"), m, 1, p, nil)
	if !ok {
		t.Fatal("ball failed")
	}
	if bl.DT != 10 {
		t.Errorf("d_T = %v, want 10 (ten unit steps to x = 100)", bl.DT)
	}
	if bl.RhoMax != 1.25*10+1.5*16 {
		t.Errorf("ρ_max = %v, want 36.5", bl.RhoMax)
	}
	in := map[int32]bool{}
	for _, i := range pix {
		in[i] = true
	}
	at := func(x, y int) bool { return in[int32(y*200+x)] }
	// D ≤ k_r·d_T = 12.5 is always inside; D > ρ_max never.
	for _, tc := range []struct {
		x, y int
		want bool
	}{{90, 60, true}, {102, 60, true}, {78, 60, true}, {90, 72, true}, {90 - 37, 60, false}, {90 + 37, 60, false}, {90, 60 - 37, false}} {
		if got := at(tc.x, tc.y); got != tc.want {
			t.Errorf("ball contains (%d,%d) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
	// A point already in T: d_T = 0.
	_, bl, _ = e.ball(rng.New("ball"), m, 1, mask.Point{X: 150, Y: 60}, nil)
	if bl.DT != 0 || bl.RhoMax != 24 {
		t.Errorf("point in T: d_T = %v, ρ_max = %v, want 0, 24", bl.DT, bl.RhoMax)
	}
	// Window exhausted: the target is farther than W.
	cfg.GeoWindow = 5
	e2 := flatEngine(t, 200, 120, cfg)
	r := rng.New("unreach")
	if _, bl, ok := e2.ball(r, m, 1, p, nil); ok || !bl.Unreachable {
		t.Errorf("window 5: ball ok=%v, want point_unreachable", ok)
	}
	if r.U64() != rng.New("unreach").U64() {
		t.Error("an unreachable point must not draw from the RNG")
	}
}

func discMask(w, h, cx, cy, r int) mask.Mask {
	return frametest.Ellipse(w, h, float64(cx), float64(cy), float64(r), float64(r))
}

func TestPointsCall(t *testing.T) {
	t.Parallel()
	cfg := buildcfg.Default()
	e := flatEngine(t, 400, 400, cfg)
	m := discMask(400, 400, 200, 200, 70)
	all := fullMask(400, 400)
	for _, op := range []Op{Expansion, Contraction} {
		ring1 := e.pointRing(m, op, 1)
		ring2 := e.pointRing(m, op, 2)
		for seed := 0; seed < 30; seed++ {
			label := "pts" + string(rune('A'+seed)) + op.String()
			pts, widths, ok := e.pointsCall(rng.New(label), m, all, op, 2, nil, 50, cfg.PointWidths)
			pts2, widths2, ok2 := e.pointsCall(rng.New(label), m, all, op, 2, nil, 50, cfg.PointWidths)
			if !slices.Equal(pts, pts2) || !slices.Equal(widths, widths2) || ok != ok2 {
				t.Fatalf("%s: not deterministic", label)
			}
			if !ok {
				t.Fatalf("%s: failed on a plain disc: widths %v pts %v", label, widths, pts)
			}
			w1, w2 := widths[0], widths[1]
			if w1 < 2 || w1 > 4 || w2 < 2 || (w1 > 2 && w2 > w1-1) || (w1 == 2 && w2 != 2) {
				t.Errorf("%s: widths %v break the width rule", label, widths)
			}
			if len(pts) != w1+w2 {
				t.Fatalf("%s: %d points for widths %v", label, len(pts), widths)
			}
			first := pts[:w1]
			for i, p := range first {
				if !slices.Contains(ring1, p) {
					t.Errorf("%s: depth-1 point %v not on ring 1", label, p)
				}
				for _, q := range first[:i] {
					if mask.Dist2(p, q) < 900 {
						t.Errorf("%s: depth-1 points %v %v closer than 30", label, p, q)
					}
				}
			}
			for _, p := range pts[w1:] {
				if !slices.Contains(ring2, p) {
					t.Errorf("%s: depth-2 point %v not on ring 2", label, p)
				}
			}
			// The second point is the ring point nearest to the first among
			// those ≥ 30 px away: nothing lies strictly between.
			d2 := mask.Dist2(first[1], first[0])
			for _, c := range ring1 {
				if dd := mask.Dist2(c, first[0]); dd >= 900 && dd < d2 {
					t.Errorf("%s: %v is nearer to the first point than the second %v", label, c, first[1])
					break
				}
			}
		}
	}
	// Avoid set: no point closer than sep to an avoided point.
	avoid := []mask.Point{pt(200, 98), pt(302, 200), pt(200, 302)}
	for seed := 0; seed < 10; seed++ {
		pts, _, ok := e.pointsCall(rng.New("avoid"+string(rune('a'+seed))), m, all, Expansion, 2, avoid, 50, cfg.PointWidths)
		if !ok {
			continue
		}
		for _, p := range pts {
			for _, a := range avoid {
				if mask.Dist2(p, a) < 2500 {
					t.Errorf("point %v within 50 px of avoided %v", p, a)
				}
			}
		}
	}
	// An empty region: widths are still drawn, the call fails.
	if pts, widths, ok := e.pointsCall(rng.New("empty"), m, mask.New(400, 400), Expansion, 2, nil, 50, cfg.PointWidths); ok || len(pts) != 0 || len(widths) != 2 {
		t.Errorf("empty region: ok=%v pts=%v widths=%v, want failure with 2 widths", ok, pts, widths)
	}
}

func TestValidateThresholds(t *testing.T) {
	t.Parallel()
	cfg := buildcfg.Default()
	e := flatEngine(t, 400, 400, cfg)
	rect := func(x0, y0, x1, y1 int) mask.Mask {
		m := mask.New(400, 400)
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				m.Pix[y*400+x] = 1
			}
		}
		return m
	}
	small := rect(100, 100, 200, 200) // 10 000 px: needed max(1500, 300) = 1500
	big := rect(50, 50, 250, 350)     // 60 000 px: needed max(1500, 1800) = 1800
	grow := func(m mask.Mask, extra int) mask.Mask {
		n := m.Clone()
		for i := 0; extra > 0; i++ {
			if n.Pix[i] == 0 {
				n.Pix[i] = 1
				extra--
			}
		}
		return n
	}
	yes, no := true, false
	for _, tc := range []struct {
		name   string
		n, old mask.Mask
		exp    []mask.Point
		con    []mask.Point
		centre *mask.Point
		cop    Op
		reason string
		cc     *bool
	}{
		{"change 1499", grow(small, 1499), small, nil, nil, nil, Expansion, "min_change", nil},
		{"change 1500", grow(small, 1500), small, nil, nil, nil, Expansion, "", nil},
		{"frac: 1799 of 60000", grow(big, 1799), big, nil, nil, nil, Expansion, "min_change", nil},
		{"iou 60000/61800 > 0.97", grow(big, 1800), big, nil, nil, nil, Expansion, "max_iou", nil},
		{"iou 60000/61900 ≤ 0.97", grow(big, 1900), big, nil, nil, nil, Expansion, "", nil},
		{"exp point outside", grow(small, 2000), small, []mask.Point{pt(300, 300)}, nil, nil, Expansion, "points", nil},
		{"con point inside", grow(small, 2000), small, nil, []mask.Point{pt(150, 150)}, nil, Contraction, "points", nil},
		{"centre in added area", grow(small, 2000), small, nil, nil, ptr(0, 0), Expansion, "", &yes},
		{"centre in old mask", grow(small, 2000), small, nil, nil, ptr(150, 150), Expansion, "center_not_in_change", &no},
		{"contraction centre removed", rect(100, 100, 200, 180), small, nil, nil, ptr(150, 190), Contraction, "", &yes},
		{"contraction centre kept", rect(100, 100, 200, 180), small, nil, nil, ptr(150, 150), Contraction, "center_not_in_change", &no},
	} {
		v := e.validate(wrapFull(tc.n), tc.old, tc.exp, tc.con, tc.centre, tc.cop)
		if v.Reason != tc.reason || v.Valid != (tc.reason == "") {
			t.Errorf("%s: reason %q valid %v, want %q", tc.name, v.Reason, v.Valid, tc.reason)
		}
		if (tc.cc == nil) != (v.CenterCheck == nil) || tc.cc != nil && *tc.cc != *v.CenterCheck {
			t.Errorf("%s: centre check %v, want %v", tc.name, v.CenterCheck, tc.cc)
		}
	}
}

func TestSelectLung(t *testing.T) {
	t.Parallel()
	cfg := buildcfg.Default()
	e := flatEngine(t, 50, 50, cfg)
	ov := ComponentOverlap{RightRatio: 0.2, LeftRatio: 0.9, LesionOverlap: []Overlap{
		{Name: "right mid zone lung", Key: "zones", Ratio: 0.3},
		{Name: "right lung base", Key: "zones", Ratio: 0.3},
		{Name: "right costophrenic angle", Key: "lung_regions", Ratio: 0.6},
		{Name: "left costophrenic angle", Key: "lung_regions", Ratio: 0.9},
		{Name: "right medial lung & right mid zone lung", Key: "lung_regions", Ratio: 0.3},
		{Name: "right lateral lung & right mid zone lung", Key: "lung_regions", Ratio: 0.8},
		{Name: "right peripheral lung & right lung base", Key: "lung_regions", Ratio: 0.6},
	}}
	for seed := 0; seed < 40; seed++ {
		label := "sel" + string(rune('a'+seed))
		r := rng.New(label)
		sels, sl := e.selectLung(r, ov)
		// Reference draw sequence: 2 coins + choice(2), 2 coins + choice(2).
		ref := rng.New(label)
		c := []bool{ref.Coin(), ref.Coin()}
		k1 := ref.UintN(2)
		c = append(c, ref.Coin(), ref.Coin())
		k2 := ref.UintN(2)
		if r.U64() != ref.U64() {
			t.Fatalf("%s: wrong draw sequence", label)
		}
		if len(sels) != 2 || len(sl.Zones) != 2 {
			t.Fatalf("%s: %d selections, want 2", label, len(sels))
		}
		mid := []string{"right medial lung & right mid zone lung", "right lateral lung & right mid zone lung"}
		midOps := []Op{Expansion, Contraction} // ratio 0.3 ≤ 0.5; 0.8 ≥ 0.75
		if sels[0].Name != mid[k1] || sels[0].Op != midOps[k1] || sels[0].Depth != 2 {
			t.Errorf("%s: mid selection %+v, want %s %v", label, sels[0], mid[k1], midOps[k1])
		}
		// Base: the same-side CPA is appended after the regions; the left
		// CPA is never a candidate. Both ratios 0.6 → the coin decides.
		base := []string{"right peripheral lung & right lung base", "right costophrenic angle"}
		wantOp := Contraction
		if c[2+k2] {
			wantOp = Expansion
		}
		if sels[1].Name != base[k2] || sels[1].Op != wantOp {
			t.Errorf("%s: base selection %+v, want %s %v", label, sels[1], base[k2], wantOp)
		}
		if sl.Zones[0].Candidates[1].Why != whyForceCon || sl.Zones[0].Candidates[0].Why != whyForceExp || sl.Zones[1].Candidates[0].Why != whyCoin {
			t.Errorf("%s: why log %+v", label, sl.Zones)
		}
	}
	// Same-side lung ratio ≥ 0.7 forces contraction everywhere.
	ov.RightRatio = 0.7
	sels, sl := e.selectLung(rng.New("lung"), ov)
	for _, s := range sels {
		if s.Op != Contraction {
			t.Errorf("lung ratio 0.7: %s got %v", s.Name, s.Op)
		}
	}
	if sl.Zones[0].Candidates[0].Why != whyLungForceCon {
		t.Errorf("lung override not logged: %+v", sl.Zones[0].Candidates[0])
	}
}

func TestSelectHeart(t *testing.T) {
	t.Parallel()
	cfg := buildcfg.Default()
	e := flatEngine(t, 50, 50, cfg)
	e.g.HeartType = true
	var lo []Overlap
	for _, z := range Zones {
		lo = append(lo, Overlap{Name: z, Key: "zones", Ratio: 0.3})
	}
	for seed := 0; seed < 20; seed++ {
		label := "heart" + string(rune('a'+seed))
		sels, _ := e.selectAnatomies(rng.New(label), ComponentOverlap{LesionOverlap: lo})
		ref := rng.New(label)
		k := ref.IntRange(1, 3)
		zs := rng.Sample(ref, Zones, k)
		if len(sels) != k {
			t.Fatalf("%s: %d zones, want %d", label, len(sels), k)
		}
		for i, s := range sels {
			op := Contraction
			if ref.Coin() {
				op = Expansion
			}
			if s.Name != zs[i] || s.Op != op || s.Depth != 1 {
				t.Errorf("%s: selection %d = %+v, want %s %v depth 1", label, i, s, zs[i], op)
			}
		}
	}
	// Fewer zones than k: all of them, in ZONES order, no Sample draw.
	two := []Overlap{{Name: "left lung base", Key: "zones", Ratio: 0.4}, {Name: "right lung base", Key: "zones", Ratio: 0.4}}
	r := rng.New("two")
	sels, _ := e.selectAnatomies(r, ComponentOverlap{LesionOverlap: two})
	ref := rng.New("two")
	if k := ref.IntRange(1, 3); k >= 2 {
		if len(sels) != 2 || sels[0].Name != "right lung base" || sels[1].Name != "left lung base" {
			t.Errorf("k=%d: got %+v, want both bases in ZONES order", k, sels)
		}
	}
}

// TestBucketSearchMatches compares the bucket search with the heap-ordered
// mask.Geodesic search on rough cost fields: same d_T, ρ_max, ball pixels
// and RNG consumption.
func TestBucketSearchMatches(t *testing.T) {
	t.Parallel()
	cfg := buildcfg.Default()
	w, h := 160, 140
	for trial := 0; trial < 6; trial++ {
		g := newGray(w, h)
		src := rng.New(fmt.Sprintf("field%d", trial))
		for i := range g.Pix {
			g.Pix[i] = uint8(src.UintN(256))
		}
		if trial%2 == 1 { // blocky field with plateaus and many ties
			for i := range g.Pix {
				g.Pix[i] = uint8((i/w/9 + i%w/13) % 3 * 100)
			}
		}
		cfg.GeoWindow = []int{256, 40, 60}[trial%3]
		geo := &Geometry{Gray: g, LungRight: fullMask(w, h), LungLeft: mask.New(w, h), Regions: map[string]mask.Mask{}}
		e, err := newEngine(geo, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if e.search == nil {
			t.Fatal("bucket search not enabled")
		}
		m := discMask(w, h, 80, 70, 25)
		for k := 0; k < 12; k++ {
			p := pt(int(src.UintN(uint64(w))), int(src.UintN(uint64(h))))
			tv := uint8(k % 2)
			label := fmt.Sprintf("b%d-%d", trial, k)
			r1, r2 := rng.New(label), rng.New(label)
			got, gl, ok1 := e.ball(r1, m, tv, p, nil)
			s := e.search
			e.search = nil
			want, wl, ok2 := e.ball(r2, m, tv, p, nil)
			e.search = s
			if ok1 != ok2 || gl != wl {
				t.Fatalf("%s: bucket %+v ok=%v, heap %+v ok=%v", label, gl, ok1, wl, ok2)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: ball pixels differ (%d vs %d)", label, len(got), len(want))
			}
			if r1.U64() != r2.U64() {
				t.Fatalf("%s: RNG consumption differs", label)
			}
			// The searches themselves: identical (pixel, distance) sets up
			// to ρ_max, including the pixels right at the boundary.
			rad := func(dT float64) float64 { return 1.25*dT + 24 }
			p1, d1, rm1, f1 := e.search.run(p, m.Pix, tv, rad, nil)
			p2, d2, rm2, f2 := e.heapSearch(p, m, tv, rad, nil)
			if f1 != f2 || f1 && (d1 != d2 || rm1 != rm2) {
				t.Fatalf("%s: search found=%v d_T=%v vs found=%v d_T=%v", label, f1, d1, f2, d2)
			}
			if f1 {
				cmp := func(a, b popped) int { return int(a.i) - int(b.i) }
				slices.SortFunc(p1, cmp)
				slices.SortFunc(p2, cmp)
				if !slices.Equal(p1, p2) {
					t.Fatalf("%s: popped sets differ (%d vs %d)", label, len(p1), len(p2))
				}
			}
		}
	}
}
