package qagen

import (
	"errors"
	"fmt"
	"slices"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// Fixed option lists and paths of format.md §3.
var yesNo = []string{"Yes", "No"}

// ContourEvalPath is contour_eval_qa.relative_path (relative to
// <key_id>/contour_qa/).
const ContourEvalPath = "contour_eval_qa/xray_with_mask.png"

// Case identifies the record being assembled.
type Case struct {
	KeyID, PairID, Lesion string
	DicomID               *string
	Positive              bool // label "positive"
	// NoDeformation makes a positive an RF record (false: RR).
	NoDeformation bool
}

// QA are the generated parts of a positive record: the point pool and
// revision choice of the successful sequential retry, and the §10 answers
// (nil for heart-type lesions).
type QA struct {
	Points     *PointPool
	Revision   *RevisionChoice
	Attributes *anatomy.AttributeAnswers
}

// AssembleRecord builds the benchmark record of a case (§9.1–§9.6, §10
// wording). Negatives (LF) carry only detection_qa; qa may be nil for
// them. Positives need qa.Points and qa.Revision, and qa.Attributes unless
// the lesion is heart-type (cfg.heart_lesions), whose attribute object is
// an explicit null.
func AssembleRecord(c Case, qa *QA, cfg buildcfg.Config) (*benchmark.Record, error) {
	w := NewWording(c.Lesion, cfg)
	rec := &benchmark.Record{
		KeyID:   c.KeyID,
		Lesion:  c.Lesion,
		PairID:  c.PairID,
		DicomID: c.DicomID,
	}
	rec.Detection = benchmark.YesNoQA{Question: Question(w.Detection(), yesNo), AnswerOptions: slices.Clone(yesNo), Answer: "No", AnswerIndex: 2}
	if !c.Positive {
		return rec, nil
	}
	rec.Detection.Answer, rec.Detection.AnswerIndex = "Yes", 1
	if qa == nil || qa.Points == nil || qa.Revision == nil {
		return nil, fmt.Errorf("qagen: %s: a positive record needs its point pool and revision options", c.KeyID)
	}
	heart := cfg.IsHeartLesion(c.Lesion)
	p, rv := qa.Points, qa.Revision

	eval := benchmark.ContourEvalQA{
		YesNoQA:      benchmark.YesNoQA{Question: Question(w.ContourEval(), yesNo), AnswerOptions: slices.Clone(yesNo), Answer: "Yes", AnswerIndex: 1},
		RelativePath: ContourEvalPath,
	}
	if c.NoDeformation {
		eval.Answer, eval.AnswerIndex = "No", 2
	}
	pointTexts := p.OptionTexts()
	cq := &benchmark.ContourQA{
		NoDeformation:       c.NoDeformation,
		InitialContext:      w.InitialContext(),
		RevisionBeforeMasks: slices.Clone(rv.RevisionBeforeMasks),
		RevisionAfterMasks:  slices.Clone(rv.RevisionAfterMasks),
		TrueMasks:           cloneNamed(rv.TrueMasks),
		FakeMasks:           cloneNamed(rv.FakeMasks),
		TrueCombination:     slices.Clone(rv.TrueCombination),
		FakeCombinations:    cloneLists(rv.FakeCombinations),
		ContourEval:         eval,
		Expansion: benchmark.PointQA{
			Question:      Question(w.Expansion(), pointTexts),
			AnswerOptions: clonePoints(p.Options),
			Answer:        p.ExpansionAnswer(),
			AnswerIndex:   slices.Clone(p.ExpansionIndex),
		},
		Contraction: benchmark.PointQA{
			Question:      Question(w.Contraction(), pointTexts),
			AnswerOptions: clonePoints(p.Options),
			Answer:        p.ContractionAnswer(),
			AnswerIndex:   slices.Clone(p.ContractionIndex),
		},
		RevisionResult: benchmark.RevisionQA{
			Question:      Question(w.RevisionResult(), rv.OptionTexts()),
			AnswerOptions: cloneRevision(rv.Options),
			Answer:        rv.Answer(),
			AnswerIndex:   rv.AnswerIndex,
		},
	}
	rec.Contour = cq
	if heart {
		rec.AttributesNull = true
		return rec, nil
	}
	if qa.Attributes == nil {
		return nil, fmt.Errorf("qagen: %s: a lung-type positive needs its attribute answers", c.KeyID)
	}
	attrs, err := attributeQA(w, qa.Attributes)
	if err != nil {
		return nil, fmt.Errorf("qagen: %s: %w", c.KeyID, err)
	}
	rec.Attributes = attrs
	return rec, nil
}

// attributeQA words the §10 answers.
func attributeQA(w *Wording, a *anatomy.AttributeAnswers) (*benchmark.AttributeQA, error) {
	d, l, s, c := a.Distribution, a.Location, a.Severity, a.Comparison
	if d.AnswerIndex < 1 || d.AnswerIndex > 4 {
		return nil, fmt.Errorf("distribution answer index %d outside 1..4", d.AnswerIndex)
	}
	if len(l.Options) != 3 || len(l.AnswerIndex) == 0 {
		return nil, fmt.Errorf("location has %d options and %d answer indices", len(l.Options), len(l.AnswerIndex))
	}
	if s.AnswerIndex < 1 || s.AnswerIndex > 3 {
		return nil, fmt.Errorf("severity answer index %d outside 1..3", s.AnswerIndex)
	}
	if s.SelectedLung != anatomy.LeftLung && s.SelectedLung != anatomy.RightLung {
		return nil, fmt.Errorf("severity selected lung %q", s.SelectedLung)
	}
	if c.AnswerIndex < 1 || c.AnswerIndex > 4 {
		return nil, fmt.Errorf("comparison answer index %d outside 1..4", c.AnswerIndex)
	}
	distOpts := anatomy.DistributionOptions[:]
	locOpts := l.AllOptions()
	sevQ, sevOpts := w.Severity(s.SelectedLung)
	cmpQ, cmpOpts := w.Comparison()
	return &benchmark.AttributeQA{
		Distribution: benchmark.DistributionQA{
			Question:      Question(w.Distribution(), distOpts),
			AnswerOptions: slices.Clone(distOpts),
			Answer:        d.Answer(),
			AnswerIndex:   d.AnswerIndex,
			AnswerZones:   nonNil(d.AnswerZones),
		},
		Location: benchmark.LocationQA{
			Question:      Question(w.Location(), locOpts),
			AnswerOptions: locOpts,
			Answer:        l.Answer(),
			AnswerIndex:   slices.Clone(l.AnswerIndex),
			AnswerZones:   nonNil(l.AnswerZones),
		},
		Severity: benchmark.SeverityQA{
			Question:      Question(sevQ, sevOpts),
			AnswerOptions: sevOpts,
			Answer:        sevOpts[s.AnswerIndex-1],
			AnswerIndex:   s.AnswerIndex,
			OverlapRatio:  ojson.FormatFloat(s.OverlapRatio),
			SelectedLung:  s.SelectedLung,
		},
		Comparison: benchmark.ComparisonQA{
			Question:        Question(cmpQ, cmpOpts),
			AnswerOptions:   cmpOpts,
			Answer:          cmpOpts[c.AnswerIndex-1],
			AnswerIndex:     c.AnswerIndex,
			LeftSize:        c.LeftSize,
			RightSize:       c.RightSize,
			LeftHasOverlap:  c.LeftHasOverlap,
			RightHasOverlap: c.RightHasOverlap,
		},
	}, nil
}

var errNoRecord = errors.New("qagen: nil record")

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return slices.Clone(xs)
}

func cloneNamed(n benchmark.NamedMasks) benchmark.NamedMasks {
	out := make(benchmark.NamedMasks, len(n))
	for i, e := range n {
		out[i] = benchmark.NamedMaskList{Component: e.Component, Masks: slices.Clone(e.Masks)}
	}
	return out
}

func cloneLists(xs [][]string) [][]string {
	out := make([][]string, len(xs))
	for i, x := range xs {
		out[i] = slices.Clone(x)
	}
	return out
}

func clonePoints(xs []benchmark.PointOption) []benchmark.PointOption {
	out := make([]benchmark.PointOption, len(xs))
	for i, o := range xs {
		out[i] = benchmark.PointOption{Color: o.Color}
		if o.Point != nil {
			p := *o.Point
			out[i].Point = &p
		}
	}
	return out
}

func cloneRevision(xs []benchmark.RevisionOption) []benchmark.RevisionOption {
	out := make([]benchmark.RevisionOption, len(xs))
	for i, o := range xs {
		out[i] = benchmark.RevisionOption{Type: o.Type, Masks: slices.Clone(o.Masks), RelativePath: o.RelativePath}
	}
	return out
}
