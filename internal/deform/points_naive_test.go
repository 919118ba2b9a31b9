package deform

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// naiveRing is Contour(dilate^k) / Contour(erode^k) on the full frame.
func naiveRing(m mask.Mask, dil bool, k int) []mask.Point {
	if dil {
		return mask.Contour(mask.Dilate(m, mask.Ellipse32(), k))
	}
	return mask.Contour(mask.Erode(m, mask.Ellipse32(), k))
}

// naivePoints is Points(M, R, op, D, avoid, sep, widths1) of §8.3, written
// line by line from the spec without the engine's caches.
func naivePoints(r *rng.RNG, m, R mask.Mask, op Op, D int, avoid []mask.Point, sep int, widths1 []int, cfg buildcfg.Config) ([]mask.Point, []int, bool) {
	var widths []int
	var pts, prev []mask.Point
	d2 := func(a, b mask.Point) int { return (a.X-b.X)*(a.X-b.X) + (a.Y-b.Y)*(a.Y-b.Y) }
	for d := 1; d <= D; d++ {
		var ring []mask.Point
		if op == Expansion {
			ring = naiveRing(m, true, d*cfg.RingIterationsExpansion)
		} else {
			ring = naiveRing(m, false, d*cfg.RingIterationsContraction)
		}
		var C []mask.Point
		for _, p := range ring {
			if R.At(p.X, p.Y) {
				C = append(C, p)
			}
		}
		var w int
		if d == 1 {
			w = rng.Choice(r, widths1)
		} else if widths[len(widths)-1] > 2 {
			w = r.IntRange(2, widths[len(widths)-1]-1)
		} else {
			w = 2
		}
		widths = append(widths, w)
		if len(C) == 0 {
			continue
		}
		var C2 []mask.Point
		for _, c := range C {
			ok := true
			for _, a := range avoid {
				if d2(c, a) < sep*sep {
					ok = false
				}
			}
			if ok {
				C2 = append(C2, c)
			}
		}
		C = C2
		if len(C) == 0 {
			continue
		}
		var nw []mask.Point
		if d == 1 {
			first := rng.Choice(r, C)
			nw = []mask.Point{first}
			for i := 0; i < w-1; i++ {
				var V []mask.Point
				for _, c := range C {
					if slices.Contains(nw, c) {
						continue
					}
					mn := -1
					for _, s := range nw {
						if mn < 0 || d2(c, s) < mn {
							mn = d2(c, s)
						}
					}
					if mn >= 30*30 {
						V = append(V, c)
					}
				}
				if len(V) == 0 {
					break
				}
				best := V[0]
				for _, c := range V[1:] {
					if d2(c, first) < d2(best, first) {
						best = c
					}
				}
				nw = append(nw, best)
			}
			pts = append(pts, nw...)
		} else {
			if len(prev) == 0 {
				continue
			}
			for _, q := range rng.Sample(r, prev, min(w, len(prev))) {
				found := false
				var best mask.Point
				for _, c := range C {
					if slices.Contains(pts, c) {
						continue
					}
					if !found || d2(c, q) < d2(best, q) {
						best, found = c, true
					}
				}
				if found {
					nw = append(nw, best)
					pts = append(pts, best)
				}
			}
			if len(nw) == 0 {
				continue
			}
		}
		prev = nw
	}
	sum := 0
	for _, w := range widths {
		sum += w
	}
	return pts, widths, len(pts) == sum && len(pts) > 0
}

// TestPointsMatchNaive compares pointsCall (cached, cropped rings) with a
// literal transcription of the §8.3 pseudo-code on full-frame rings: same
// points, widths, success and RNG state afterwards.
func TestPointsMatchNaive(t *testing.T) {
	t.Parallel()
	cfg := buildcfg.Default()
	const S = 300
	e := flatEngine(t, S, S, cfg)
	shapes := []mask.Mask{discMask(S, S, 150, 150, 60), discMask(S, S, 40, 150, 50)}
	half := mask.New(S, S)
	for y := 0; y < S; y++ {
		for x := 0; x < S/2+20; x++ {
			half.Pix[y*S+x] = 1
		}
	}
	regions := []mask.Mask{fullMask(S, S), half}
	avoids := [][]mask.Point{nil, {pt(150, 60), pt(240, 150)}}
	for si, m := range shapes {
		for ri, R := range regions {
			for ai, av := range avoids {
				for _, op := range []Op{Expansion, Contraction} {
					for _, D := range []int{1, 2, 3} {
						for seed := 0; seed < 6; seed++ {
							label := fmt.Sprintf("rv/%d/%d/%d/%v/%d/%d", si, ri, ai, op, D, seed)
							r1, r2 := rng.New(label), rng.New(label)
							p1, w1, ok1 := e.pointsCall(r1, m, R, op, D, av, 50, cfg.FakePointWidths)
							p2, w2, ok2 := naivePoints(r2, m, R, op, D, av, 50, cfg.FakePointWidths, cfg)
							if !slices.Equal(p1, p2) || !slices.Equal(w1, w2) || ok1 != ok2 || r1.U64() != r2.U64() {
								t.Fatalf("%s: engine %v %v %v, naive %v %v %v", label, p1, w1, ok1, p2, w2, ok2)
							}
						}
					}
				}
			}
		}
	}
}

// naiveFakePoints is the fake-point part of one §8.8 call, transcribed from
// the spec on full-frame rings.
func naiveFakePoints(r *rng.RNG, S, Rf, lungs mask.Mask, c mask.Point, op Op, D0 int, av, expFF, conFF []mask.Point) []mask.Point {
	d2 := func(a, b mask.Point) int { return (a.X-b.X)*(a.X-b.X) + (a.Y-b.Y)*(a.Y-b.Y) }
	farAll := func(p mask.Point, xs []mask.Point) bool {
		for _, a := range xs {
			if d2(p, a) < 100*100 {
				return false
			}
		}
		return true
	}
	var kept []mask.Point
	plan := [][2]int{{D0, 1}, {D0 + 1, 1}, {D0 + 1, 2}}
	for at := 0; at < 3 && len(kept) < 2; at++ {
		D, ipd := plan[at][0], plan[at][1]
		ring := naiveRing(S, op == Contraction, D*ipd)
		var C []mask.Point
		for _, p := range ring {
			if Rf.At(p.X, p.Y) && d2(p, c) >= 100*100 && farAll(p, av) {
				C = append(C, p)
			}
		}
		if len(C) == 0 {
			continue
		}
		picks := []mask.Point{rng.Choice(r, C)}
		for i := 0; i < 4; i++ {
			var V []mask.Point
			for _, p := range C {
				if !slices.Contains(picks, p) && farAll(p, picks) {
					V = append(V, p)
				}
			}
			if len(V) == 0 {
				break
			}
			picks = append(picks, rng.Choice(r, V))
		}
		for _, p := range picks {
			if farAll(p, kept) {
				kept = append(kept, p)
			}
		}
	}
	if len(kept) < 2 {
		avoid := append(append(append([]mask.Point(nil), kept...), expFF...), conFF...)
		var C []mask.Point
		for _, p := range lungs.Points() {
			if dd := d2(p, c); dd >= 100*100 && dd <= 300*300 && farAll(p, avoid) {
				C = append(C, p)
			}
		}
		kept = append(kept, rng.Sample(r, C, min(2-len(kept), len(C)))...)
	}
	return kept
}

// TestFakePointsMatchNaive compares fakePoints with the §8.8 transcription,
// including the fallback (a lung region that leaves few ring candidates).
func TestFakePointsMatchNaive(t *testing.T) {
	t.Parallel()
	cfg := buildcfg.Default()
	const S = 500
	fallbacks := 0
	for gi, lungs := range []mask.Mask{fullMask(S, S), discMask(S, S, 250, 250, 170), discMask(S, S, 250, 250, 112)} {
		g := &Geometry{Gray: newGray(S, S), LungRight: lungs, LungLeft: lungs, Regions: map[string]mask.Mask{}}
		e, err := newEngine(g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		sm := discMask(S, S, 250, 250, 90)
		ff := [2][]mask.Point{{pt(250, 130)}, {pt(370, 250), pt(250, 370)}}
		for _, c := range []mask.Point{pt(250, 160), pt(160, 250)} {
			for _, op := range []Op{Expansion, Contraction} {
				for seed := 0; seed < 8; seed++ {
					label := fmt.Sprintf("fp/%d/%v/%v/%d", gi, c, op, seed)
					r1, r2 := rng.New(label), rng.New(label)
					var fl fakeCallLog
					got := e.fakePoints(r1, sm, c, op, ff, &fl)
					want := naiveFakePoints(r2, sm, lungs, lungs, c, op, cfg.DepthLung, ff[op], ff[Expansion], ff[Contraction])
					if !slices.Equal(got, want) || r1.U64() != r2.U64() {
						t.Fatalf("%s: engine %v, naive %v", label, got, want)
					}
					if fl.Fallback != nil {
						fallbacks++
					}
				}
			}
		}
	}
	if fallbacks == 0 {
		t.Error("no case reached the fallback ring; the comparison does not cover it")
	}
}
