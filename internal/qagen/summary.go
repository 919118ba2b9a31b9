package qagen

import (
	"fmt"
	"strings"
)

// Summary describes the point options and how the answers follow from
// them, for the inspect view's summary.txt, e.g.
// "option 2 orange (300, 300) GT-con".
func (p *PointPool) Summary() string {
	var b strings.Builder
	for k, o := range p.Options {
		if o.Point == nil {
			fmt.Fprintf(&b, "option %d None\n", k+1)
			continue
		}
		kind := ""
		if k < len(p.Kinds) {
			kind = " " + p.Kinds[k]
		}
		fmt.Fprintf(&b, "option %d %s (%d, %d)%s\n", k+1, o.Color, o.Point[0], o.Point[1], kind)
	}
	fmt.Fprintf(&b, "expansion = %v (%s): centres of contraction corruptions\n", p.ExpansionIndex, p.ExpansionAnswer())
	fmt.Fprintf(&b, "contraction = %v (%s): centres of expansion corruptions\n", p.ContractionIndex, p.ContractionAnswer())
	return b.String()
}

// Summary describes the revision-result derivation for summary.txt.
func (c *RevisionChoice) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "components (lexicographic): %s\n", strings.Join(c.Components, ", "))
	fmt.Fprintf(&b, "revision_before_masks: %s\n", strings.Join(c.RevisionBeforeMasks, ", "))
	fmt.Fprintf(&b, "true combination: %s\n", strings.Join(c.TrueCombination, ", "))
	for _, f := range c.FakeMasks {
		fmt.Fprintf(&b, "fake pool %s: %s\n", f.Component, strings.Join(f.Masks, ", "))
	}
	fmt.Fprintf(&b, "distractors examined %d, pixel-identical rejected %d, accepted %d\n", c.Candidates, c.Duplicates, len(c.FakeCombinations))
	for k, o := range c.Options {
		fmt.Fprintf(&b, "option %d %s: %s\n", k+1, o.Type, strings.Join(o.Masks, " + "))
	}
	fmt.Fprintf(&b, "revision result = %d (%s)\n", c.AnswerIndex, c.Answer())
	return b.String()
}
