package qagen

import (
	"errors"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/deform"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// Point kinds, for the inspect view's labels.
const (
	KindGTExpansion   = "GT-exp"
	KindGTContraction = "GT-con"
	KindFake          = "fake"
)

// PointPool is the shared option list of the expansion and contraction
// questions (§9.4).
type PointPool struct {
	// Options are the point options in option order, then the final
	// {"point": null, "color": "None"}.
	Options []benchmark.PointOption
	// Kinds[k] says what point option k is (KindGTExpansion, …).
	Kinds []string
	// ExpansionIndex / ContractionIndex are the 1-based option indices of
	// gt_exp / gt_con in GT order; [len(Options)] (None) when empty.
	ExpansionIndex, ContractionIndex []int
}

// ExpansionAnswer is the expansion question's answer string.
func (p *PointPool) ExpansionAnswer() string { return p.answer(p.ExpansionIndex) }

// ContractionAnswer is the contraction question's answer string.
func (p *PointPool) ContractionAnswer() string { return p.answer(p.ContractionIndex) }

func (p *PointPool) answer(idx []int) string {
	parts := make([]string, 0, len(idx))
	for _, i := range idx {
		o := p.Options[i-1]
		if o.Point == nil {
			return "None"
		}
		parts = append(parts, o.Color+" point")
	}
	return strings.Join(parts, ", ")
}

// OptionTexts are the option lines of the point questions: "<colour> point"
// per point, then "None".
func (p *PointPool) OptionTexts() []string {
	out := make([]string, len(p.Options))
	for k, o := range p.Options {
		if o.Point == nil {
			out[k] = "None"
		} else {
			out[k] = o.Color + " point"
		}
	}
	return out
}

type poolPoint struct {
	p    mask.Point
	kind string
}

// steps lists the attempt's steps in the §9.4 iteration order: corruption
// op in (expansion, contraction), components in id order, steps in order.
func orderedSteps(a *deform.Attempt) []*deform.Step {
	var out []*deform.Step
	for _, op := range []deform.Op{deform.Expansion, deform.Contraction} {
		for ci := range a.Components {
			c := &a.Components[ci]
			steps := c.Expansion
			if op == deform.Contraction {
				steps = c.Contraction
			}
			for i := range steps {
				out = append(out, &steps[i])
			}
		}
	}
	return out
}

// NewPointPool builds the §9.4 option list from a sequential attempt, drawing
// from r (cap sample, then shuffle). Every step's centre is a GT point: a
// contraction corruption must be undone by expanding toward it (gt_exp),
// an expansion corruption by contracting at it (gt_con).
func NewPointPool(r *rng.RNG, a *deform.Attempt, cfg buildcfg.Config) (*PointPool, error) {
	if a == nil {
		return nil, errors.New("qagen: point pool of a nil attempt")
	}
	steps := orderedSteps(a)
	var gtExp, gtCon []mask.Point
	for _, s := range steps {
		if s.Op == deform.Contraction {
			gtExp = append(gtExp, s.Center)
		} else {
			gtCon = append(gtCon, s.Center)
		}
	}
	gt := append(append([]mask.Point(nil), gtExp...), gtCon...)
	sp2 := cfg.QAPointSpacingPx * cfg.QAPointSpacingPx
	far := func(p mask.Point, from []mask.Point) bool {
		for _, q := range from {
			if mask.Dist2(p, q) < sp2 {
				return false
			}
		}
		return true
	}
	var kept []mask.Point
	consider := func(p mask.Point) {
		if far(p, gt) && far(p, kept) {
			kept = append(kept, p)
		}
	}
	for _, s := range steps {
		for _, p := range s.FakePointsExpansion {
			consider(p)
		}
	}
	for _, s := range steps {
		for _, p := range s.FakePointsContraction {
			consider(p)
		}
	}
	if len(gt)+len(kept) > cfg.MaxPoints {
		kept = rng.Sample(r, kept, max(0, cfg.MaxPoints-len(gt)))
	}
	all := make([]poolPoint, 0, len(gt)+len(kept))
	for _, p := range gtExp {
		all = append(all, poolPoint{p, KindGTExpansion})
	}
	for _, p := range gtCon {
		all = append(all, poolPoint{p, KindGTContraction})
	}
	for _, p := range kept {
		all = append(all, poolPoint{p, KindFake})
	}
	rng.Shuffle(r, all)

	pool := &PointPool{}
	index := map[mask.Point]int{} // coordinate → 1-based option index
	for _, pp := range all {
		if _, dup := index[pp.p]; dup {
			continue // repeated coordinates keep their first option (before colouring)
		}
		k := len(pool.Options) + 1
		index[pp.p] = k
		xy := [2]int{pp.p.X, pp.p.Y}
		pool.Options = append(pool.Options, benchmark.PointOption{Point: &xy, Color: render.PaletteName(k)})
		pool.Kinds = append(pool.Kinds, pp.kind)
	}
	if len(pool.Options) == 0 {
		return nil, errors.New("qagen: the attempt has no steps, so there is no point to ask about")
	}
	pool.Options = append(pool.Options, benchmark.PointOption{Point: nil, Color: "None"})
	none := len(pool.Options)
	pool.ExpansionIndex = gtIndices(gtExp, index, none)
	pool.ContractionIndex = gtIndices(gtCon, index, none)
	return pool, nil
}

// gtIndices maps GT points to option indices in GT order; two GT points on
// the same coordinate share one option, listed once.
func gtIndices(gt []mask.Point, index map[mask.Point]int, none int) []int {
	if len(gt) == 0 {
		return []int{none}
	}
	out := make([]int, 0, len(gt))
	for _, p := range gt {
		k := index[p]
		dup := false
		for _, j := range out {
			dup = dup || j == k
		}
		if !dup {
			out = append(out, k)
		}
	}
	return out
}
