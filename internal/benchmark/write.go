package benchmark

import (
	"path/filepath"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// Marshal writes records as chexpercept.json bytes in the reference
// writer's format (format.md §6): 2-space indent, the key order of §3,
// no trailing newline.
func Marshal(records []*Record) []byte {
	root := ojson.NewObject()
	for _, r := range records {
		root.Set(r.KeyID, r.OJSON())
	}
	return ojson.Marshal(root)
}

// OJSON returns the record as an ordered JSON value.
func (r *Record) OJSON() *ojson.Value {
	o := ojson.NewObject()
	o.Set("detection_qa", yesNoValue(r.Detection, ""))
	if r.Contour != nil {
		o.Set("contour_qa", r.Contour.ojson())
		switch {
		case r.Attributes != nil:
			o.Set("attribute_extraction_qa", r.Attributes.ojson())
		case r.AttributesNull:
			o.Set("attribute_extraction_qa", ojson.Null())
		}
		if len(r.RevisionSequential) > 0 {
			if v, err := ojson.Parse(r.RevisionSequential); err == nil {
				o.Set("revision_sequential_qa", v)
			}
		}
	}
	o.Set("pair_id", ojson.Str(r.PairID))
	if r.DicomID == nil {
		o.Set("dicom_id", ojson.Null())
	} else {
		o.Set("dicom_id", ojson.Str(*r.DicomID))
	}
	return o
}

func strList(ss []string) *ojson.Value {
	vs := make([]*ojson.Value, len(ss))
	for i, s := range ss {
		vs[i] = ojson.Str(s)
	}
	return ojson.Arr(vs...)
}

func intList(ns []int) *ojson.Value {
	vs := make([]*ojson.Value, len(ns))
	for i, n := range ns {
		vs[i] = ojson.Int(int64(n))
	}
	return ojson.Arr(vs...)
}

func yesNoValue(q YesNoQA, relPath string) *ojson.Value {
	o := ojson.NewObject()
	o.Set("question", ojson.Str(q.Question))
	o.Set("answer_options", strList(q.AnswerOptions))
	o.Set("answer", ojson.Str(q.Answer))
	o.Set("answer_index", ojson.Int(int64(q.AnswerIndex)))
	if relPath != "" {
		o.Set("relative_path", ojson.Str(relPath))
	}
	return o
}

func (n NamedMasks) ojson() *ojson.Value {
	o := ojson.NewObject()
	for _, e := range n {
		o.Set(e.Component, strList(e.Masks))
	}
	return o
}

func (c *ContourQA) ojson() *ojson.Value {
	o := ojson.NewObject()
	o.Set("no_deformation", ojson.Bool(c.NoDeformation))
	o.Set("initial_context", ojson.Str(c.InitialContext))
	o.Set("revision_before_masks", strList(c.RevisionBeforeMasks))
	o.Set("revision_after_masks", strList(c.RevisionAfterMasks))
	o.Set("true_masks", c.TrueMasks.ojson())
	o.Set("fake_masks", c.FakeMasks.ojson())
	if c.TrueCombination == nil {
		o.Set("true_combination", ojson.Null())
	} else {
		o.Set("true_combination", strList(c.TrueCombination))
	}
	fc := make([]*ojson.Value, len(c.FakeCombinations))
	for i, l := range c.FakeCombinations {
		fc[i] = strList(l)
	}
	o.Set("fake_combinations", ojson.Arr(fc...))
	// relative_path is always written, even when empty, so that an
	// invalid record keeps its shape.
	ce := yesNoValue(c.ContourEval.YesNoQA, "")
	ce.Set("relative_path", ojson.Str(c.ContourEval.RelativePath))
	o.Set("contour_eval_qa", ce)
	o.Set("contour_revision_qa_expansion", c.Expansion.ojson())
	o.Set("contour_revision_qa_contraction", c.Contraction.ojson())
	o.Set("contour_revision_qa_revision_result", c.RevisionResult.ojson())
	return o
}

func (q PointQA) ojson() *ojson.Value {
	opts := make([]*ojson.Value, len(q.AnswerOptions))
	for i, p := range q.AnswerOptions {
		po := ojson.NewObject()
		if p.Point == nil {
			po.Set("point", ojson.Null())
		} else {
			po.Set("point", intList(p.Point[:]))
		}
		po.Set("color", ojson.Str(p.Color))
		opts[i] = po
	}
	o := ojson.NewObject()
	o.Set("question", ojson.Str(q.Question))
	o.Set("answer_options", ojson.Arr(opts...))
	o.Set("answer", ojson.Str(q.Answer))
	o.Set("answer_index", intList(q.AnswerIndex))
	return o
}

func (q RevisionQA) ojson() *ojson.Value {
	opts := make([]*ojson.Value, len(q.AnswerOptions))
	for i, p := range q.AnswerOptions {
		po := ojson.NewObject()
		po.Set("type", ojson.Str(p.Type))
		po.Set("masks", strList(p.Masks))
		po.Set("relative_path", ojson.Str(p.RelativePath))
		opts[i] = po
	}
	o := ojson.NewObject()
	o.Set("question", ojson.Str(q.Question))
	o.Set("answer_options", ojson.Arr(opts...))
	o.Set("answer", ojson.Str(q.Answer))
	o.Set("answer_index", ojson.Int(int64(q.AnswerIndex)))
	return o
}

func (a *AttributeQA) ojson() *ojson.Value {
	o := ojson.NewObject()

	d := ojson.NewObject()
	d.Set("question", ojson.Str(a.Distribution.Question))
	d.Set("answer_options", strList(a.Distribution.AnswerOptions))
	d.Set("answer", ojson.Str(a.Distribution.Answer))
	d.Set("answer_index", ojson.Int(int64(a.Distribution.AnswerIndex)))
	d.Set("answer_zones", strList(a.Distribution.AnswerZones))
	o.Set(AttrDistribution, d)

	l := ojson.NewObject()
	l.Set("question", ojson.Str(a.Location.Question))
	l.Set("answer_options", strList(a.Location.AnswerOptions))
	l.Set("answer", ojson.Str(a.Location.Answer))
	l.Set("answer_index", intList(a.Location.AnswerIndex))
	l.Set("answer_zones", strList(a.Location.AnswerZones))
	o.Set(AttrLocation, l)

	s := ojson.NewObject()
	s.Set("question", ojson.Str(a.Severity.Question))
	s.Set("answer_options", strList(a.Severity.AnswerOptions))
	s.Set("answer", ojson.Str(a.Severity.Answer))
	s.Set("answer_index", ojson.Int(int64(a.Severity.AnswerIndex)))
	ratio := a.Severity.OverlapRatio
	if ratio == "" {
		ratio = "0"
	}
	s.Set("overlap_ratio", ojson.Num(ratio))
	s.Set("selected_lung", ojson.Str(a.Severity.SelectedLung))
	o.Set(AttrSeverity, s)

	c := ojson.NewObject()
	c.Set("question", ojson.Str(a.Comparison.Question))
	c.Set("answer_options", strList(a.Comparison.AnswerOptions))
	c.Set("answer", ojson.Str(a.Comparison.Answer))
	c.Set("answer_index", ojson.Int(int64(a.Comparison.AnswerIndex)))
	c.Set("left_size", ojson.Int(int64(a.Comparison.LeftSize)))
	c.Set("right_size", ojson.Int(int64(a.Comparison.RightSize)))
	c.Set("left_has_overlap", ojson.Bool(a.Comparison.LeftHasOverlap))
	c.Set("right_has_overlap", ojson.Bool(a.Comparison.RightHasOverlap))
	o.Set(AttrComparison, c)
	return o
}

// WriteFile writes records to dir/chexpercept.json atomically: a
// temporary file in dir is written, synced and renamed over the target,
// so readers see either the old or the new file, never a partial one.
// The temporary file is registered with j (atomicfile.WriteFile).
func WriteFile(j *job.Job, dir string, records []*Record) error {
	return atomicfile.WriteFile(j, filepath.Join(dir, JSONName), Marshal(records))
}
