package deform

import (
	"slices"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// TestFakeMaskLoop checks the reference's retry / depth-escalation logic of
// §8.8 on the depths the loop visits.
func TestFakeMaskLoop(t *testing.T) {
	t.Parallel()
	const S = 600
	step := &Step{Name: "suboptimal_component_0_exp1", Mask: discMask(S, S, 300, 300, 60), Center: pt(300, 300)}
	depths := func(fl fakeCallLog) []int {
		var ds []int
		for _, mt := range fl.MaskTries {
			ds = append(ds, mt.Depth)
		}
		return ds
	}
	t.Run("no points: escalate three times, then give up", func(t *testing.T) {
		cfg := buildcfg.Default()
		g := &Geometry{Gray: newGray(S, S), LungRight: mask.New(S, S), LungLeft: mask.New(S, S), Regions: map[string]mask.Mask{}}
		e, err := newEngine(g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var fl fakeCallLog
		fakes := e.fakeMasks(rng.New("loop1"), step, Expansion, nil, &fl)
		if len(fakes) != 0 || !slices.Equal(depths(fl), []int{2, 3, 4, 5}) {
			t.Errorf("fakes %d, depths %v; want none and [2 3 4 5]", len(fakes), depths(fl))
		}
		if r := fl.MaskTries[3].Result; !strings.Contains(r, "give up") {
			t.Errorf("last try %q", r)
		}
	})
	t.Run("invalid masks: ten failures with depth reset", func(t *testing.T) {
		cfg := buildcfg.Default()
		cfg.MinChangePx = 1 << 30 // no fake can ever validate
		e := flatEngine(t, S, S, cfg)
		var fl fakeCallLog
		fakes := e.fakeMasks(rng.New("loop2"), step, Expansion, nil, &fl)
		want := []int{2, 3, 4, 5, 2, 3, 4, 5, 2, 3}
		if len(fakes) != 0 || !slices.Equal(depths(fl), want) {
			t.Errorf("fakes %d, depths %v; want none and %v", len(fakes), depths(fl), want)
		}
	})
	t.Run("valid masks: names, and depth back to D0 after each", func(t *testing.T) {
		cfg := buildcfg.Default()
		e := flatEngine(t, S, S, cfg)
		big := &Step{Name: step.Name, Mask: discMask(S, S, 300, 300, 170), Center: pt(300, 300)}
		var fl fakeCallLog
		fakes := e.fakeMasks(rng.New("loop3"), big, Contraction, nil, &fl)
		if len(fakes) < 2 {
			t.Fatalf("%d fakes, want ≥ 2 on a large disc (tries %v)", len(fakes), depths(fl))
		}
		for k, f := range fakes {
			if want := big.Name + "_fake_contraction_" + string(rune('1'+k)); f.Name != want {
				t.Errorf("fake %d named %q, want %q", k, f.Name, want)
			}
			if mask.CountXor(f.Mask, big.Mask) < cfg.MinChangePx {
				t.Errorf("fake %s too close to the step mask", f.Name)
			}
		}
		for i, mt := range fl.MaskTries[:len(fl.MaskTries)-1] {
			if strings.HasPrefix(mt.Result, "kept") {
				if nx := fl.MaskTries[i+1]; nx.Depth != 2 || nx.FA != 0 || nx.Retry != 0 {
					t.Errorf("after a kept fake: depth %d fa %d retry %d, want 2 0 0", nx.Depth, nx.FA, nx.Retry)
				}
			}
		}
	})
}

// TestFakePoints checks placement rules of §8.8: every fake point is ≥ 100
// px from the centre, the avoid set and the other kept points of its draw,
// and lies in the lung union; the call whose ring is outside the step mask
// places points outside it.
func TestFakePoints(t *testing.T) {
	t.Parallel()
	const S = 600
	cfg := buildcfg.Default()
	e := flatEngine(t, S, S, cfg)
	sm := discMask(S, S, 300, 300, 120)
	c := pt(300, 180)
	avoid := [2][]mask.Point{{pt(420, 300)}, {pt(300, 420)}}
	for seed := 0; seed < 10; seed++ {
		for _, op := range []Op{Expansion, Contraction} {
			var fl fakeCallLog
			pts := e.fakePoints(rng.New("fp"+string(rune('a'+seed))+op.String()), sm, c, op, avoid, &fl)
			if len(pts) < cfg.FakePointsWanted {
				t.Errorf("seed %d %v: %d points", seed, op, len(pts))
			}
			for i, p := range pts {
				if mask.Dist2(p, c) < 100*100 {
					t.Errorf("%v within 100 px of the centre", p)
				}
				for _, a := range avoid[op] {
					if fl.Fallback == nil && mask.Dist2(p, a) < 100*100 {
						t.Errorf("%v within 100 px of avoided %v", p, a)
					}
				}
				for _, q := range pts[:i] {
					if mask.Dist2(p, q) < 100*100 {
						t.Errorf("fake points %v and %v closer than 100", p, q)
					}
				}
				if inside := sm.At(p.X, p.Y); inside != (op == Expansion) {
					t.Errorf("%v fake point %v: inside step mask = %v", op, p, inside)
				}
			}
		}
	}
}
