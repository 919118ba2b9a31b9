package deform

import (
	"fmt"
	"slices"

	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// fakeCall is one call of §8.8 after a valid step st: fake points, then
// up to fake_masks_per_call fake masks, both for operation op. forFake
// holds the points of exp_for_fake / con_for_fake; prev0 is the
// component's cumulative real points (all_exp ∪ all_con).
func (e *engine) fakeCall(r *rng.RNG, st *Step, op Op, forFake [2][]mask.Point, prev0 []mask.Point) fakeCallLog {
	fl := fakeCallLog{Op: op.String()}
	pts := e.fakePoints(r, st.Mask, st.Center, op, forFake, &fl)
	fl.FakePoints = ptsJSON(pts)
	if op == Contraction {
		st.FakePointsExpansion = pts // ring outside the step mask
	} else {
		st.FakePointsContraction = pts
	}
	fakes := e.fakeMasks(r, st, op, prev0, &fl)
	for _, f := range fakes {
		fl.Fakes = append(fl.Fakes, f.Name)
	}
	st.Fakes = append(st.Fakes, fakes...)
	return fl
}

// fakePoints places the fake points of one call (§8.8, with our fix: the
// fallback always applies the avoid filter).
func (e *engine) fakePoints(r *rng.RNG, s mask.Mask, c mask.Point, op Op, forFake [2][]mask.Point, fl *fakeCallLog) []mask.Point {
	cfg := &e.cfg
	D0 := cfg.DepthLung
	if e.g.HeartType {
		D0 = cfg.DepthHeart
	}
	sp2 := cfg.FakePointSpacingPx * cfg.FakePointSpacingPx
	av := forFake[op]
	far := func(p mask.Point, from []mask.Point) bool {
		for _, a := range from {
			if mask.Dist2(p, a) < sp2 {
				return false
			}
		}
		return true
	}
	var kept []mask.Point
	plan := [3][2]int{{D0, 1}, {D0 + 1, 1}, {D0 + 1, 2}}
	for at := 0; at < len(plan) && len(kept) < cfg.FakePointsWanted; at++ {
		D, ipd := plan[at][0], plan[at][1]
		var ring []mask.Point
		if op == Contraction {
			ring = e.rings.ring(s, dilateKind, D*ipd)
		} else {
			ring = e.rings.ring(s, erodeKind, D*ipd)
		}
		dl := fakeDrawLog{Depth: D, Iterations: D * ipd}
		var C []mask.Point
		for _, p := range ring {
			if e.regionR.Pix[p.Y*e.w+p.X] == 0 || mask.Dist2(p, c) < sp2 || !far(p, av) {
				continue
			}
			C = append(C, p)
		}
		dl.Candidates = len(C)
		if len(C) == 0 {
			fl.PointDraws = append(fl.PointDraws, dl)
			continue
		}
		picks := []mask.Point{rng.Choice(r, C)}
		for rep := 0; rep < cfg.FakePointsPerDraw-1; rep++ {
			var V []mask.Point
			for _, p := range C {
				if !slices.Contains(picks, p) && far(p, picks) {
					V = append(V, p)
				}
			}
			if len(V) == 0 {
				break
			}
			picks = append(picks, rng.Choice(r, V))
		}
		dl.Picks = ptsJSON(picks)
		fl.PointDraws = append(fl.PointDraws, dl)
		for _, p := range picks {
			if far(p, kept) {
				kept = append(kept, p)
			}
		}
	}
	if len(kept) < cfg.FakePointsWanted {
		avoid := append(append(append([]mask.Point(nil), kept...), forFake[Expansion]...), forFake[Contraction]...)
		maxR := cfg.FakeFallbackMaxPx
		max2 := maxR * maxR
		var C []mask.Point
		for y := max(0, c.Y-maxR); y <= min(e.h-1, c.Y+maxR); y++ {
			row := e.lungUnion.Pix[y*e.w : (y+1)*e.w]
			for x := max(0, c.X-maxR); x <= min(e.w-1, c.X+maxR); x++ {
				if row[x] == 0 {
					continue
				}
				p := mask.Point{X: x, Y: y}
				d2 := mask.Dist2(p, c)
				if d2 < sp2 || d2 > max2 || !far(p, avoid) {
					continue
				}
				C = append(C, p)
			}
		}
		got := rng.Sample(r, C, min(cfg.FakePointsWanted-len(kept), len(C)))
		fl.Fallback = &fakeFallbackLog{Candidates: len(C), Picks: ptsJSON(got)}
		kept = append(kept, got...)
	}
	return kept
}

// fakeMasks is the fake-mask loop of §8.8 for one call, reproducing the
// reference's retry / depth-escalation logic exactly.
func (e *engine) fakeMasks(r *rng.RNG, st *Step, op Op, prev0 []mask.Point, fl *fakeCallLog) []Fake {
	cfg := &e.cfg
	D0 := cfg.DepthLung
	if e.g.HeartType {
		D0 = cfg.DepthHeart
	}
	s := st.Mask
	prev := append([]mask.Point(nil), prev0...)
	var fakes []Fake
	retry, fa, D := 0, 0, D0
	for retry < cfg.FakeMaskFailures && len(fakes) < cfg.FakeMasksPerCall {
		if fa > 0 {
			D++
		}
		widths1 := cfg.PointWidths
		if D > 2 {
			widths1 = cfg.FakePointWidths
		}
		tl := fakeMaskTryLog{Depth: D, Retry: retry, FA: fa}
		P, _, ok, tries := e.cluster(r, s, e.lungUnion, op, D, prev, cfg.FakePointSeparationPx, widths1)
		tl.Tries = tries
		if !ok {
			if fa < cfg.FakeDepthEscalations {
				tl.Result = "no points; escalate depth"
				fl.MaskTries = append(fl.MaskTries, tl)
				fa++
				continue
			}
			tl.Result = "no points; give up"
			fl.MaskTries = append(fl.MaskTries, tl)
			break
		}
		var E []prompt
		var K []mask.Point
		if op == Expansion {
			for _, p := range P {
				E = append(E, prompt{P: p})
			}
		} else {
			K = P
		}
		f, dl, dok := e.deform(r, s, E, K, false)
		tl.Deform = &dl
		valid := false
		if dok {
			var v validation
			if op == Expansion {
				v = e.validate(f, s, P, nil, nil, op)
			} else {
				v = e.validate(f, s, nil, P, nil, op)
			}
			tl.Validation = &v
			valid = v.Valid
		}
		if valid {
			name := fmt.Sprintf("%s_fake_%s_%d", st.Name, op, len(fakes)+1)
			fakes = append(fakes, Fake{Name: name, Op: op, Mask: f.full()})
			prev = append(prev, P...)
			retry, fa, D = 0, 0, D0
			tl.Result = "kept " + name
		} else {
			retry++
			if fa < cfg.FakeDepthEscalations {
				fa++
			} else {
				fa = 0
				D = D0
			}
			tl.Result = "invalid"
		}
		fl.MaskTries = append(fl.MaskTries, tl)
	}
	return fakes
}
