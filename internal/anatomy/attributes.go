package anatomy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// DistributionOptions are the fixed distribution options of format.md §3.5
// (data, not wording: the validator checks them).
var DistributionOptions = [4]string{"1 zone", "2 zones", "3 zones", "4 zones or more"}

// LocationNone is the fourth location option.
const LocationNone = "None of the above (options 1-3)"

// Lung names as stored in selected_lung.
const (
	LeftLung  = "left lung"
	RightLung = "right lung"
)

// distributionZones are the distribution answer zones in their fixed order.
var distributionZones = [6]string{
	"right upper zone lung", "right mid zone lung", "right lower zone lung",
	"left upper zone lung", "left mid zone lung", "left lower zone lung",
}

// RegionString renders a lung region name as the text used in the attribute
// questions (§10): "<region> & <zone>" becomes "the intersection of the
// <region> and the <zone'>" with "lung base" read as "lower zone lung"; a
// CPA becomes "the <side> costophrenic angle".
func RegionString(name string) string {
	if region, zone, ok := strings.Cut(name, " & "); ok {
		return "the intersection of the " + region + " and the " + zonePrime(zone)
	}
	return "the " + name
}

// regionZone is the distribution zone of a lung region: zone' for a
// "<region> & <zone>", "<side> lower zone lung" for a CPA.
func regionZone(name string) string {
	if _, zone, ok := strings.Cut(name, " & "); ok {
		return zonePrime(zone)
	}
	side, _, _ := strings.Cut(name, " ")
	return side + " lower zone lung"
}

func zonePrime(zone string) string { return strings.Replace(zone, "lung base", "lower zone lung", 1) }

// DistributionAnswer is the distribution question's answer.
type DistributionAnswer struct {
	AnswerZones []string // distinct zones of P, fixed zone order
	AnswerIndex int      // min(|AnswerZones|, 4)
	Derivation  string
}

// Answer is the option text at AnswerIndex.
func (d DistributionAnswer) Answer() string { return DistributionOptions[d.AnswerIndex-1] }

// LocationAnswer is the location question's answer.
type LocationAnswer struct {
	Options     []string // the 3 region strings of options 1–3, in option order
	AnswerIndex []int    // ascending 1-based indices of the options in SP; [4] if none
	AnswerZones []string // SP: sampled order, then top-ups
	Derivation  string
}

// AllOptions is Options followed by the "None of the above" option.
func (l LocationAnswer) AllOptions() []string { return append(slices.Clone(l.Options), LocationNone) }

// Answer is the texts of the answer options joined by ", ".
func (l LocationAnswer) Answer() string {
	var parts []string
	for _, i := range l.AnswerIndex {
		if i == 4 {
			return LocationNone
		}
		parts = append(parts, l.Options[i-1])
	}
	return strings.Join(parts, ", ")
}

// SeverityAnswer is the severity/measurement question's answer.
type SeverityAnswer struct {
	SelectedLung string  // LeftLung or RightLung
	I            int     // lesion pixels counted in the selected lung
	Area         int     // |L| of the selected (augmented) lung
	OverlapRatio float64 // float64(I) / float64(Area), one division
	AnswerIndex  int     // 1: 3I < |L|; 2: 3I < 2|L|; else 3
	Derivation   string
}

// ComparisonAnswer is the comparison question's answer.
type ComparisonAnswer struct {
	LeftSize, RightSize             int
	LeftHasOverlap, RightHasOverlap bool
	AnswerIndex                     int // 1 similar, 2 left larger, 3 right larger, 4 one lung
	Derivation                      string
}

// AttributeAnswers are the §10 answers of one lung-type case.
type AttributeAnswers struct {
	Positive     []string // P: region strings with has_overlap in any component, canonical order
	Negative     []string // N: the other region strings, canonical order
	Distribution DistributionAnswer
	Location     LocationAnswer
	Severity     SeverityAnswer
	Comparison   ComparisonAnswer
}

// Attributes derives the §10 answers from the optimal components' overlap
// records. It draws from r for location, then severity, and nothing else.
// It fails with no_positive_region when no component marks a lung region.
func Attributes(r *rng.RNG, ov []ComponentOverlap, p *Prepared, cfg buildcfg.Config) (*AttributeAnswers, error) {
	// p and cfg are not needed: the records already carry the lung areas
	// and the threshold flags. They stay in the signature agreed with the
	// build (and may be nil / zero).
	_, _ = p, cfg
	a := &AttributeAnswers{}
	var has [20]bool
	for _, c := range ov {
		if len(c.LungRegions) != len(LungRegionNames) {
			return nil, fmt.Errorf("anatomy: attributes need the 20 lung regions; %s has %d (heart-type lesion?)",
				ComponentName(c.ID), len(c.LungRegions))
		}
		for i, o := range c.LungRegions {
			has[i] = has[i] || o.HasOverlap
		}
	}
	// Names are unique, so the region strings need no de-duplication.
	var posNames []string
	for i, n := range LungRegionNames {
		if has[i] {
			a.Positive = append(a.Positive, RegionString(n))
			posNames = append(posNames, n)
		} else {
			a.Negative = append(a.Negative, RegionString(n))
		}
	}
	if len(a.Positive) == 0 {
		return nil, frame.Fail(ReasonNoPositiveRegion, "no lung region has overlap in any of %d component(s)", len(ov))
	}

	a.Distribution = distribution(posNames, a.Positive)
	loc, err := location(r, a.Positive, a.Negative)
	if err != nil {
		return nil, err
	}
	a.Location = loc
	a.Severity = severity(r, ov, loc.AnswerZones)
	a.Comparison = comparison(ov)
	return a, nil
}

func distribution(posNames, posStrings []string) DistributionAnswer {
	var in [6]bool
	for _, n := range posNames {
		in[slices.Index(distributionZones[:], regionZone(n))] = true
	}
	var d DistributionAnswer
	for i, z := range distributionZones {
		if in[i] {
			d.AnswerZones = append(d.AnswerZones, z)
		}
	}
	d.AnswerIndex = min(len(d.AnswerZones), 4)
	var short []string
	for _, z := range d.AnswerZones {
		short = append(short, strings.TrimSuffix(z, " zone lung"))
	}
	d.Derivation = fmt.Sprintf("distribution = %d: P = {%s} → zones {%s}",
		d.AnswerIndex, strings.Join(posStrings, "; "), strings.Join(short, ", "))
	return d
}

// location draws the three location options exactly as §10 prescribes.
func location(r *rng.RNG, P, N []string) (LocationAnswer, error) {
	m := min(3, len(P))
	s := 0
	if m > 0 {
		s = r.IntRange(0, m)
	}
	SP := rng.Sample(r, P, s)
	var SN []string
	if 3-s > 0 && len(N) > 0 {
		SN = rng.Sample(r, N, min(3-s, len(N)))
	}
	sel := append(slices.Clone(SP), SN...)
	nTop := 0
	if len(sel) < 3 {
		var rest []string
		for _, x := range P {
			if !slices.Contains(SP, x) {
				rest = append(rest, x)
			}
		}
		X := rng.Sample(r, rest, min(3-len(sel), len(rest)))
		nTop = len(X)
		sel = append(sel, X...)
		SP = append(SP, X...)
	}
	if len(sel) != 3 {
		// P ∪ N is always the 20 distinct region strings, so this needs a bug.
		return LocationAnswer{}, fmt.Errorf("anatomy: location drew %d options, want 3 (|P| = %d, |N| = %d)", len(sel), len(P), len(N))
	}
	rng.Shuffle(r, sel)
	l := LocationAnswer{Options: sel, AnswerZones: SP}
	for i, o := range sel {
		if slices.Contains(SP, o) {
			l.AnswerIndex = append(l.AnswerIndex, i+1)
		}
	}
	if len(l.AnswerIndex) == 0 {
		l.AnswerIndex = []int{4}
	}
	l.Derivation = fmt.Sprintf("location = %v: |P| = %d, s = %d positive(s) sampled, %d negative(s), %d top-up(s); options after shuffle [%s]; SP = [%s]",
		l.AnswerIndex, len(P), s, len(SN), nTop, strings.Join(sel, "; "), strings.Join(SP, "; "))
	return l, nil
}

// lungTotals sums one lung's counted intersection I, flag and raw
// intersection over all components.
func lungTotals(ov []ComponentOverlap, left bool) (I int, has bool, raw int) {
	for _, c := range ov {
		l := c.Right
		if left {
			l = c.Left
		}
		raw += l.Inter
		if l.HasOverlap {
			has = true
			I += l.Inter
		}
	}
	return
}

func severity(r *rng.RNG, ov []ComponentOverlap, answerZones []string) SeverityAnswer {
	iL, hasL, rawL := lungTotals(ov, true)
	iR, hasR, rawR := lungTotals(ov, false)
	mL, mR := false, false
	for _, z := range answerZones {
		mL = mL || strings.Contains(z, "left")
		mR = mR || strings.Contains(z, "right")
	}
	var why, chosen string
	pickEither := func() string {
		switch {
		case hasL && hasR:
			return rng.Choice(r, []string{LeftLung, RightLung})
		case hasL:
			return LeftLung
		case hasR:
			return RightLung
		}
		return ""
	}
	switch {
	case mL && mR:
		chosen = pickEither()
		why = "answer_zones mention both sides"
		if hasL && hasR {
			why += ", both lungs ≥ lung_overlap_min → random"
		}
	case mL:
		why = "answer_zones mention left only"
		if hasL {
			chosen = LeftLung
		}
	case mR:
		why = "answer_zones mention right only"
		if hasR {
			chosen = RightLung
		}
	default:
		why = "answer_zones mention no side"
	}
	if chosen == "" {
		if chosen = pickEither(); chosen != "" {
			why += "; fallback to the lung(s) with overlap"
			if hasL && hasR {
				why += " → random"
			}
		}
	}
	s := SeverityAnswer{}
	switch chosen {
	case LeftLung:
		s.SelectedLung, s.I = LeftLung, iL
	case RightLung:
		s.SelectedLung, s.I = RightLung, iR
	default:
		// Neither lung reaches lung_overlap_min (our fix): the one holding
		// more of the lesion, ties left, with its raw intersection.
		why += "; neither lung has overlap → larger raw intersection (ties left)"
		if rawL >= rawR {
			s.SelectedLung, s.I = LeftLung, rawL
		} else {
			s.SelectedLung, s.I = RightLung, rawR
		}
	}
	// Every record carries |L| of the augmented lungs; ov is non-empty here.
	if s.SelectedLung == LeftLung {
		s.Area = ov[0].Left.Area
	} else {
		s.Area = ov[0].Right.Area
	}
	s.OverlapRatio = ratio(s.I, s.Area)
	lt1 := 3*s.I < s.Area
	lt2 := 3*s.I < 2*s.Area
	switch {
	case lt1:
		s.AnswerIndex = 1
	case lt2:
		s.AnswerIndex = 2
	default:
		s.AnswerIndex = 3
	}
	s.Derivation = fmt.Sprintf("severity: %s → %s; I = %s, area(L) = %s, 3·I < area(L) %t, 3·I < 2·area(L) %t → %d",
		why, s.SelectedLung, group(s.I), group(s.Area), lt1, lt2, s.AnswerIndex)
	return s
}

func comparison(ov []ComponentOverlap) ComparisonAnswer {
	_, hasL, rawL := lungTotals(ov, true)
	_, hasR, rawR := lungTotals(ov, false)
	c := ComparisonAnswer{LeftHasOverlap: hasL, RightHasOverlap: hasR}
	for _, o := range ov {
		c.LeftSize += o.Left.Size
		c.RightSize += o.Right.Size
	}
	note := ""
	if !hasL && !hasR {
		// Our fix, as for severity: the lung with more raw lesion counts.
		if rawL >= rawR {
			c.LeftHasOverlap, c.LeftSize = true, rawL
		} else {
			c.RightHasOverlap, c.RightSize = true, rawR
		}
		note = " (neither lung has overlap → larger raw intersection, ties left)"
	}
	l, rt := c.LeftSize, c.RightSize
	switch {
	case c.LeftHasOverlap != c.RightHasOverlap:
		c.AnswerIndex = 4
		side := "left"
		if c.RightHasOverlap {
			side = "right"
		}
		c.Derivation = fmt.Sprintf("comparison: left %s, right %s; only the %s lung has overlap%s → 4", group(l), group(rt), side, note)
	case 2*max(l, rt) < 3*min(l, rt):
		c.AnswerIndex = 1
		c.Derivation = fmt.Sprintf("comparison: left %s, right %s, 2·%s < 3·%s → 1", group(l), group(rt), group(max(l, rt)), group(min(l, rt)))
	case 2*l >= 3*rt:
		c.AnswerIndex = 2
		c.Derivation = fmt.Sprintf("comparison: left %s, right %s, 2·%s ≥ 3·%s → 2", group(l), group(rt), group(l), group(rt))
	default:
		c.AnswerIndex = 3
		c.Derivation = fmt.Sprintf("comparison: left %s, right %s, 2·%s ≥ 3·%s → 3", group(l), group(rt), group(rt), group(l))
	}
	return c
}

// group writes n with spaces between groups of three digits ("28 713").
func group(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(ch)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
