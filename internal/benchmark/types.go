// Package benchmark is the typed model of a CheXpercept benchmark on disk:
// chexpercept.json (one record per case, keyed by key_id) plus the image
// bundle under chexpercept/<key_id>/ (spec format.md).
//
// Records keep the file's order and every field's exact value, so a
// benchmark that is loaded and written again is byte-identical to a file
// written by the reference Python tools. answer_index is an int for
// single-choice questions and a list for multi-select questions; the types
// below make that distinction static.
package benchmark

// Record is one case: one value of the top-level object of chexpercept.json.
type Record struct {
	KeyID  string // the member name; <lesion>_<pair_id>
	Lesion string // derived: the key up to its first underscore

	Detection YesNoQA    // detection_qa
	Contour   *ContourQA // contour_qa; nil for lesion-free records

	// Attributes is attribute_extraction_qa. It is nil when the key is
	// absent (lesion-free) or null (heart-type); AttributesNull tells the
	// two apart so that a written file keeps the explicit null, and makes
	// a positive record heart-type.
	Attributes     *AttributeQA
	AttributesNull bool

	// RevisionSequential is revision_sequential_qa kept verbatim as raw
	// JSON text (it is not part of the benchmark and never evaluated).
	RevisionSequential []byte

	PairID  string
	DicomID *string // null when the generator had no image id
}

// YesNoQA is a Yes/No single-choice question (detection).
type YesNoQA struct {
	Question      string
	AnswerOptions []string
	Answer        string
	AnswerIndex   int
}

// ContourEvalQA is contour_qa.contour_eval_qa.
type ContourEvalQA struct {
	YesNoQA
	RelativePath string // relative to <key_id>/contour_qa/
}

// NamedMasks is an ordered component-id → mask-names map (true_masks,
// fake_masks); input order is kept.
type NamedMasks []NamedMaskList

// NamedMaskList is one entry of NamedMasks.
type NamedMaskList struct {
	Component string
	Masks     []string
}

// ContourQA is contour_qa of a positive (RF or RR) record.
type ContourQA struct {
	NoDeformation       bool
	InitialContext      string
	RevisionBeforeMasks []string
	RevisionAfterMasks  []string
	TrueMasks           NamedMasks
	FakeMasks           NamedMasks
	TrueCombination     []string // nil means JSON null
	FakeCombinations    [][]string
	ContourEval         ContourEvalQA
	Expansion           PointQA
	Contraction         PointQA
	RevisionResult      RevisionQA
}

// PointOption is one option of an expansion/contraction question. Point is
// nil only on the final None option.
type PointOption struct {
	Point *[2]int // [x, y]
	Color string
}

// PointQA is a multi-select coloured-point question.
type PointQA struct {
	Question      string
	AnswerOptions []PointOption
	Answer        string
	AnswerIndex   []int // GT order, not necessarily sorted
}

// RevisionOption is one candidate revised mask.
type RevisionOption struct {
	Type         string // "true" or "fake"
	Masks        []string
	RelativePath string // relative to <key_id>/contour_qa/contour_revision_qa/
}

// RevisionQA is the single-choice revision-result question.
type RevisionQA struct {
	Question      string
	AnswerOptions []RevisionOption
	Answer        string
	AnswerIndex   int
}

// AttributeQA is attribute_extraction_qa of a lung-type positive record.
type AttributeQA struct {
	Distribution DistributionQA
	Location     LocationQA
	Severity     SeverityQA // key "severity/measurement"
	Comparison   ComparisonQA
}

// DistributionQA counts involved zones.
type DistributionQA struct {
	Question      string
	AnswerOptions []string
	Answer        string
	AnswerIndex   int
	AnswerZones   []string
}

// LocationQA is the multi-select location question.
type LocationQA struct {
	Question      string
	AnswerOptions []string
	Answer        string
	AnswerIndex   []int
	AnswerZones   []string
}

// SeverityQA is the "severity/measurement" question.
type SeverityQA struct {
	Question      string
	AnswerOptions []string
	Answer        string
	AnswerIndex   int
	// OverlapRatio is the number exactly as written in the file (e.g. "0",
	// "0.184"), so that re-writing keeps int vs float and every digit.
	OverlapRatio string
	SelectedLung string
}

// ComparisonQA compares lesion size across the two lungs.
type ComparisonQA struct {
	Question        string
	AnswerOptions   []string
	Answer          string
	AnswerIndex     int
	LeftSize        int
	RightSize       int
	LeftHasOverlap  bool
	RightHasOverlap bool
}

// Path classifies the record from ground truth (format.md §5).
func (r *Record) Path() Path {
	if r.Detection.Answer != "Yes" {
		return LesionFree
	}
	if r.Contour != nil && r.Contour.NoDeformation {
		return RevisionFree
	}
	return RevisionRequired
}

// IsHeartType reports whether the record is a heart-type positive, one
// without an attribute stage: its attribute_extraction_qa is null
// (format.md §3.5). The data says it, not the lesion name; the decoder
// holds a file to its lesion set's heart-type lesions.
func (r *Record) IsHeartType() bool { return r.AttributesNull && r.Path() != LesionFree }
