package qagen

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/deform"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// ReasonInsufficientRevisionOptions is the §14 reason of a sequential retry
// (and, after the last retry, of a case) that found too few distinct
// revision-result distractors.
const ReasonInsufficientRevisionOptions = "insufficient_revision_options"

// TokenContext is what the default tokens of §9.5 depend on besides the
// attempt.
type TokenContext struct {
	HeartType bool
	// Overlaps are the §7 records of the optimal components; an undeformed
	// lung-type component takes its side from its left-lung ratio.
	Overlaps []anatomy.ComponentOverlap
	// Lungs are the masks behind default_<side>_lung_{chex,cxas}.
	Lungs render.Lungs
}

// RevisionChoice is the revision-result question of one attempt (§9.5)
// plus the contour_qa bookkeeping derived with it.
type RevisionChoice struct {
	Components          []string // component ids in component order (lexicographic)
	RevisionBeforeMasks []string
	RevisionAfterMasks  []string
	TrueMasks           benchmark.NamedMasks
	FakeMasks           benchmark.NamedMasks
	TrueCombination     []string
	FakeCombinations    [][]string // accepted distractors, acceptance order
	Options             []benchmark.RevisionOption
	AnswerIndex         int // 1-based position of the true option
	// Tokens resolves every name of the options (for the option images).
	Tokens *render.Tokens
	// Candidates and Duplicates count the distractors examined and those
	// rejected as pixel-identical (inspect view).
	Candidates, Duplicates int
}

// Answer is the ordinal of the true option ("2nd mask").
func (c *RevisionChoice) Answer() string { return benchmark.OrdinalMask(c.AnswerIndex) }

// OptionTexts are the option lines "1st mask", "2nd mask", ….
func (c *RevisionChoice) OptionTexts() []string {
	out := make([]string, len(c.Options))
	for k := range c.Options {
		out[k] = benchmark.OrdinalMask(k + 1)
	}
	return out
}

// component is one component's §9.5 bookkeeping.
type component struct {
	sid       string
	deformed  bool
	trueMask  string
	before    string
	pool      []string // fake pool (deformed only)
	defaults  []string
	choices   []string // [true] ++ pool ++ defaults
	isDefault []bool
}

// sideOf is "right" if the anatomy name contains "right", else "left" if it
// contains "left", else "".
func sideOf(name string) string {
	switch {
	case strings.Contains(name, "right"):
		return "right"
	case strings.Contains(name, "left"):
		return "left"
	}
	return ""
}

// undeformedSide is the side of a lung-type component without steps:
// "left lung" when its left-lung overlap ratio is > 0, else "right lung".
func undeformedSide(ctx TokenContext, id int) string {
	for _, o := range ctx.Overlaps {
		if o.ID == id {
			if o.Left.Ratio > 0 {
				return "left"
			}
			return "right"
		}
	}
	return "right"
}

// components derives the per-component lists of §9.5 in component order.
func components(a *deform.Attempt, ctx TokenContext) []*component {
	order := make([]int, len(a.Components))
	for i := range order {
		order[i] = i
	}
	// Component order is the byte order of the id strings (ref).
	sort.SliceStable(order, func(i, j int) bool {
		return deform.SID(a.Components[order[i]].Component) < deform.SID(a.Components[order[j]].Component)
	})
	seenSide := map[string]bool{}
	var out []*component
	for _, ci := range order {
		cs := &a.Components[ci]
		c := &component{sid: deform.SID(cs.Component)}
		anat := ""
		if len(cs.Expansion)+len(cs.Contraction) > 0 {
			c.deformed = true
			first := firstStep(cs)
			c.trueMask = first.After
			anat = first.Anatomy
			if n := len(cs.Contraction); n > 0 {
				c.before = cs.Contraction[n-1].Before
			} else {
				c.before = cs.Expansion[len(cs.Expansion)-1].Before
			}
			for _, steps := range [][]deform.Step{cs.Expansion, cs.Contraction} {
				for _, s := range steps {
					for _, f := range s.Fakes {
						c.pool = append(c.pool, f.Name)
					}
					c.pool = append(c.pool, s.Name)
				}
			}
		} else {
			c.trueMask = c.sid + "_no_contraction"
			c.before = c.trueMask
		}
		if ctx.HeartType {
			c.defaults = []string{render.TokenKeep, render.TokenDilated, render.TokenEroded}
		} else {
			side := sideOf(anat)
			if side == "" {
				// An undeformed component, or (defensively) an anatomy
				// name without a side: the left-lung-ratio rule.
				side = undeformedSide(ctx, cs.Component)
			}
			c.defaults = []string{render.TokenKeep}
			if !seenSide[side] {
				seenSide[side] = true
				c.defaults = append(c.defaults, render.LungToken(side, "chex"))
				if ctx.Lungs.HasSecondary {
					c.defaults = append(c.defaults, render.LungToken(side, "cxas"))
				}
			}
		}
		c.choices = append(append([]string{c.trueMask}, c.pool...), c.defaults...)
		c.isDefault = make([]bool, len(c.choices))
		for j, n := range c.choices {
			c.isDefault[j] = render.IsToken(n)
		}
		out = append(out, c)
	}
	return out
}

// firstStep is the first step of a deformed component: expansion steps
// first, else contraction.
func firstStep(cs *deform.ComponentSteps) *deform.Step {
	if len(cs.Expansion) > 0 {
		return &cs.Expansion[0]
	}
	return &cs.Contraction[0]
}

// enumerator walks the Cartesian product of the components' choices in
// product order (first component slowest), one default-count group at a
// time, never materialising more than a group's cap.
type enumerator struct {
	comps     []*component
	suffixDef []int // suffixDef[p] = components p.. that have a default choice
	skip      func(idx []int) bool
}

func newEnumerator(comps []*component, skip func([]int) bool) *enumerator {
	e := &enumerator{comps: comps, suffixDef: make([]int, len(comps)+1), skip: skip}
	for p := len(comps) - 1; p >= 0; p-- {
		e.suffixDef[p] = e.suffixDef[p+1]
		if slices.Contains(comps[p].isDefault, true) {
			e.suffixDef[p]++
		}
	}
	return e
}

// group returns the first max combinations (in product order) with exactly
// g default tokens that skip does not exclude. Subtrees that cannot reach
// exactly g tokens are pruned, so the walk costs O(max·n) plus the skipped
// leaves.
func (e *enumerator) group(g, max int) [][]int {
	n := len(e.comps)
	var out [][]int
	idx := make([]int, n)
	var rec func(pos, used int) bool
	rec = func(pos, used int) bool {
		if pos == n {
			if used == g && !e.skip(idx) {
				out = append(out, slices.Clone(idx))
			}
			return len(out) < max
		}
		c := e.comps[pos]
		for j := range c.choices {
			u := used
			if c.isDefault[j] {
				u++
			}
			if u > g || u+e.suffixDef[pos+1] < g {
				continue
			}
			idx[pos] = j
			if !rec(pos+1, u) {
				return false
			}
		}
		return true
	}
	if max > 0 {
		rec(0, 0)
	}
	return out
}

// rendered is a union mask with its hash, for pixel-identity checks.
type rendered struct {
	h uint64
	m mask.Mask
}

// hashMask is the FNV-1a hash of m's coverage (which pixels are on), the
// same thing sameCoverage compares.
func hashMask(m mask.Mask) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, v := range m.Pix {
		var b uint64
		if v != 0 {
			b = 1
		}
		h = (h ^ b) * prime
	}
	return h
}

// sameCoverage reports whether a and b cover the same pixels. An option
// image is the CXR with the cyan overlay wherever the union mask is
// non-zero, and the overlay changes every grey value it covers, so two
// options render the same image exactly when their masks cover the same
// pixels. Masks hold 0 or 1, where this is mask.Equal; comparing coverage
// keeps the rule right even for a mask that broke that convention.
func sameCoverage(a, b mask.Mask) bool {
	if a.W != b.W || a.H != b.H || len(a.Pix) != len(b.Pix) {
		return false
	}
	for i, v := range a.Pix {
		if (v != 0) != (b.Pix[i] != 0) {
			return false
		}
	}
	return true
}

// RevisionOptions builds the revision-result options of §9.5 from a
// sequential attempt: per-component choices, lazily enumerated distractor
// groups by ascending number of default tokens (each shuffled with r),
// rejection of distractors whose union mask covers the same pixels as the
// answer's or an accepted one's (so no option image repeats another, and
// no distractor is a second right answer), and the final shuffle. With fewer than
// cfg.RevisionDistractors distinct distractors and
// require_four_revision_options it fails with a *frame.CaseError
// insufficient_revision_options (which fails the sequential retry).
func RevisionOptions(r *rng.RNG, a *deform.Attempt, ctx TokenContext, cfg buildcfg.Config) (*RevisionChoice, error) {
	if a == nil || len(a.Components) == 0 {
		return nil, errors.New("qagen: revision options of an attempt without components")
	}
	comps := components(a, ctx)
	rc := revisionMasks(a, comps, ctx, cfg)
	// The random draws, in their fixed order: one shuffle per distractor
	// group, then the option shuffle.
	accepted, err := pickDistractors(r, rc, comps, cfg)
	if err != nil {
		return nil, err
	}
	rc.FakeCombinations = accepted
	if rc.FakeCombinations == nil {
		rc.FakeCombinations = [][]string{}
	}
	shuffleOptions(r, rc, accepted)
	return rc, nil
}

// revisionMasks fills the choice's per-component masks (deformed
// components first in the before/after lists) and its token resolver.
func revisionMasks(a *deform.Attempt, comps []*component, ctx TokenContext, cfg buildcfg.Config) *RevisionChoice {
	rc := &RevisionChoice{}
	for _, c := range comps {
		rc.Components = append(rc.Components, c.sid)
		rc.TrueMasks = append(rc.TrueMasks, benchmark.NamedMaskList{Component: c.sid, Masks: []string{c.trueMask}})
		rc.TrueCombination = append(rc.TrueCombination, c.trueMask)
		if c.deformed {
			rc.RevisionBeforeMasks = append(rc.RevisionBeforeMasks, c.before)
			rc.RevisionAfterMasks = append(rc.RevisionAfterMasks, c.trueMask)
			rc.FakeMasks = append(rc.FakeMasks, benchmark.NamedMaskList{Component: c.sid, Masks: slices.Clone(c.pool)})
		}
	}
	for _, c := range comps {
		if !c.deformed {
			rc.RevisionBeforeMasks = append(rc.RevisionBeforeMasks, c.before)
			rc.RevisionAfterMasks = append(rc.RevisionAfterMasks, c.trueMask)
		}
	}
	if rc.FakeMasks == nil {
		rc.FakeMasks = benchmark.NamedMasks{}
	}
	rc.Tokens = &render.Tokens{
		Masks:           a.Masks,
		Before:          rc.RevisionBeforeMasks,
		Lungs:           ctx.Lungs,
		MorphSize:       cfg.DefaultMorphSize,
		MorphIterations: cfg.DefaultMorphIterations,
	}
	return rc
}

// pickDistractors enumerates the distractor groups by ascending number of
// default tokens, each shuffled with r, and accepts combinations until
// cfg.RevisionDistractors are found, rejecting those whose union mask
// covers the same pixels as the answer's or an accepted one's. It counts
// rc.Candidates and rc.Duplicates.
func pickDistractors(r *rng.RNG, rc *RevisionChoice, comps []*component, cfg buildcfg.Config) ([][]string, error) {
	beforeSet := sortedSet(rc.RevisionBeforeMasks)
	names := func(idx []int) []string {
		out := make([]string, len(idx))
		for p, j := range idx {
			out[p] = comps[p].choices[j]
		}
		return out
	}
	skip := func(idx []int) bool {
		allTrue := true
		for _, j := range idx {
			allTrue = allTrue && j == 0
		}
		return allTrue || slices.Equal(sortedSet(names(idx)), beforeSet)
	}

	answer, err := rc.Tokens.Union(rc.TrueCombination)
	if err != nil {
		return nil, err
	}
	seen := []rendered{{hashMask(answer), answer}}
	want := cfg.RevisionDistractors
	var accepted [][]string
	var buf mask.Mask
	en := newEnumerator(comps, skip)
	for g := 0; g <= len(comps) && len(accepted) < want; g++ {
		group := en.group(g, cfg.RevisionGroupCap)
		rng.Shuffle(r, group)
		for _, idx := range group {
			if len(accepted) >= want {
				break
			}
			rc.Candidates++
			combo := names(idx)
			u, err := rc.Tokens.UnionInto(buf, combo)
			if err != nil {
				return nil, err
			}
			h := hashMask(u)
			if slices.ContainsFunc(seen, func(s rendered) bool { return s.h == h && sameCoverage(s.m, u) }) {
				rc.Duplicates++
				buf = u
				continue
			}
			seen = append(seen, rendered{h, u})
			buf = mask.Mask{} // u is kept; the next union needs fresh storage
			accepted = append(accepted, combo)
		}
	}
	if len(accepted) < want && cfg.RequireFourRevisionOptions {
		return nil, frame.Fail(ReasonInsufficientRevisionOptions,
			"%d distinct revision distractor(s) of %d needed (%d candidates, %d pixel-identical)",
			len(accepted), want, rc.Candidates, rc.Duplicates)
	}
	return accepted, nil
}

// shuffleOptions shuffles the answer and the accepted distractors with r
// into rc.Options and sets rc.AnswerIndex.
func shuffleOptions(r *rng.RNG, rc *RevisionChoice, accepted [][]string) {
	type opt struct {
		masks  []string
		isTrue bool
	}
	list := []opt{{slices.Clone(rc.TrueCombination), true}}
	for _, c := range accepted {
		list = append(list, opt{slices.Clone(c), false})
	}
	rng.Shuffle(r, list)
	for k, o := range list {
		ro := benchmark.RevisionOption{Type: "fake", Masks: o.masks, RelativePath: fmt.Sprintf("option_%d_mask_fake.png", k+1)}
		if o.isTrue {
			ro.Type = "true"
			ro.RelativePath = fmt.Sprintf("option_%d_mask_answer.png", k+1)
			rc.AnswerIndex = k + 1
		}
		rc.Options = append(rc.Options, ro)
	}
}

func sortedSet(xs []string) []string {
	s := slices.Clone(xs)
	slices.Sort(s)
	return slices.Compact(s)
}
