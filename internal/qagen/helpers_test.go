package qagen

import (
	"fmt"

	"github.com/chexpercept/chexpercept/internal/deform"
	"github.com/chexpercept/chexpercept/internal/mask"
)

// The synthetic attempts below use small W×W masks: the §9.5 logic only
// compares and unions masks, and point coordinates are independent of the
// mask size.
const W = 64

func rect(x0, y0, x1, y1 int) mask.Mask {
	m := mask.New(W, W)
	for y := max(0, y0); y < min(W, y1); y++ {
		for x := max(0, x0); x < min(W, x1); x++ {
			m.Pix[y*W+x] = 1
		}
	}
	return m
}

func p(x, y int) mask.Point { return mask.Point{X: x, Y: y} }

// attemptBuilder assembles a deform.Attempt the way the sequential pass
// names and chains its masks (§8.7).
type attemptBuilder struct {
	a *deform.Attempt
}

func newAttempt() *attemptBuilder {
	return &attemptBuilder{a: &deform.Attempt{Masks: map[string]mask.Mask{}}}
}

func (b *attemptBuilder) put(name string, m mask.Mask) {
	if _, ok := b.a.Masks[name]; !ok {
		b.a.Names = append(b.a.Names, name)
	}
	b.a.Masks[name] = m
}

// component adds component i with its optimal mask; returns its index.
func (b *attemptBuilder) component(i int, opt mask.Mask) *deform.ComponentSteps {
	b.put(deform.OptimalName(i), opt)
	b.a.Components = append(b.a.Components, deform.ComponentSteps{Component: i})
	return &b.a.Components[len(b.a.Components)-1]
}

// undeformed adds a component without steps.
func (b *attemptBuilder) undeformed(i int, opt mask.Mask) {
	cs := b.component(i, opt)
	cs.Undeformed, cs.NoExpansion, cs.NoContraction = true, true, true
	b.put(deform.SID(i)+"_no_expansion", opt)
	b.put(deform.SID(i)+"_no_contraction", opt)
}

type fakeSpec struct {
	op deform.Op
	m  mask.Mask
}

// step appends a step to the last component with the given op; the flow
// continues from the previous step of that component.
func (b *attemptBuilder) step(op deform.Op, anatomy string, center mask.Point, m mask.Mask, fakes []fakeSpec, fpExp, fpCon []mask.Point) *deform.Step {
	cs := &b.a.Components[len(b.a.Components)-1]
	sid := deform.SID(cs.Component)
	prev := deform.OptimalName(cs.Component)
	if n := len(cs.Expansion); n > 0 {
		prev = cs.Expansion[n-1].Name
	}
	if n := len(cs.Contraction); n > 0 {
		prev = cs.Contraction[n-1].Name
	}
	var name string
	var idx int
	if op == deform.Expansion {
		idx = len(cs.Expansion) + 1
		name = fmt.Sprintf("%s_exp%d", sid, idx)
	} else {
		idx = len(cs.Contraction) + 1
		name = fmt.Sprintf("%s_cont%d", sid, idx)
	}
	s := deform.Step{Component: cs.Component, Op: op, Index: idx, Name: name, Anatomy: anatomy,
		Center: center, Mask: m, FakePointsExpansion: fpExp, FakePointsContraction: fpCon,
		Before: name, After: prev}
	counts := map[deform.Op]int{}
	for _, f := range fakes {
		counts[f.op]++
		fn := fmt.Sprintf("%s_fake_%s_%d", name, f.op, counts[f.op])
		s.Fakes = append(s.Fakes, deform.Fake{Name: fn, Op: f.op, Mask: f.m})
		b.put(fn, f.m)
	}
	b.put(name, m)
	if op == deform.Expansion {
		cs.Expansion = append(cs.Expansion, s)
		return &cs.Expansion[len(cs.Expansion)-1]
	}
	cs.Contraction = append(cs.Contraction, s)
	return &cs.Contraction[len(cs.Contraction)-1]
}
