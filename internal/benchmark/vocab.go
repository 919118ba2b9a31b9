package benchmark

import (
	"slices"
	"strconv"
)

// The scoring vocabulary: paths, stages and question types, and the one
// rule that says which apply to a record (format.md §5, protocol.md §2);
// the lesions are data (LesionSet, lesions.go). Everything downstream (build, protocol, results,
// analysis) asks Applies or StageApplies instead of coding it again.

// Path is a record's evaluation path, decided from ground truth only.
type Path string

const (
	LesionFree       Path = "lesion_free"
	RevisionFree     Path = "revision_free"
	RevisionRequired Path = "revision_required"
)

// Paths lists the three paths in the order reports use: RR, RF, LF.
var Paths = []Path{RevisionRequired, RevisionFree, LesionFree}

// Valid reports whether p is one of the three paths.
func (p Path) Valid() bool {
	return p == LesionFree || p == RevisionFree || p == RevisionRequired
}

// Positive reports whether p is a path of a positive record (RF or RR).
func (p Path) Positive() bool { return p == RevisionFree || p == RevisionRequired }

// Short is the two-letter name tables use: RR, RF or LF ("" for an
// unknown path).
func (p Path) Short() string {
	switch p {
	case RevisionRequired:
		return "RR"
	case RevisionFree:
		return "RF"
	case LesionFree:
		return "LF"
	}
	return ""
}

// MaxDepth is the number of stages of the path for a lung-type record:
// the largest depth a record of the path can reach (4, 3, 1).
func (p Path) MaxDepth() int {
	n := 0
	for _, s := range Stages {
		if StageApplies(p, false, s) {
			n++
		}
	}
	return n
}

// Stage is one of the four stages, numbered 1..4 as in the spec.
type Stage int

const (
	StageDetection Stage = 1 + iota
	StageContourEvaluation
	StageContourRevision
	StageAttributeExtraction
)

// Stages lists the four stages in order.
var Stages = []Stage{StageDetection, StageContourEvaluation, StageContourRevision, StageAttributeExtraction}

var stageNames = [...]string{"", "detection", "contour_evaluation", "contour_revision", "attribute_extraction"}

// Name is the stage's key in a results record's stages object.
func (s Stage) Name() string {
	if s < StageDetection || s > StageAttributeExtraction {
		return "stage " + strconv.Itoa(int(s))
	}
	return stageNames[s]
}

// Questions returns the question types of the stage, in turn order. The
// slice is shared: callers must not modify it.
func (s Stage) Questions() []Question {
	if s < StageDetection || s > StageAttributeExtraction {
		return nil
	}
	return stageQuestions[s]
}

// stageQuestions are the question types per stage (index 1..4), set up
// once: scoring asks for them for every record.
var stageQuestions = func() (out [StageAttributeExtraction + 1][]Question) {
	for _, q := range Questions {
		out[q.Stage()] = append(out[q.Stage()], q)
	}
	for s := range out {
		out[s] = slices.Clip(out[s])
	}
	return out
}()

// Question is one of the nine question types, numbered 0..8 in turn order
// (T1…T9), so that it indexes per-question arrays.
type Question int

const (
	QDetection Question = iota
	QContourEval
	QExpansion
	QContraction
	QRevisionResult
	QDistribution
	QLocation
	QSeverity
	QComparison
)

// NumQuestions is the number of question types.
const NumQuestions = 9

// Questions lists the nine question types in turn order.
var Questions = []Question{QDetection, QContourEval, QExpansion, QContraction, QRevisionResult,
	QDistribution, QLocation, QSeverity, QComparison}

var questionInfo = [NumQuestions]struct {
	turn, name, step string
	stage            Stage
	multi            bool
}{
	{"T1", "detection", "detection_qa", StageDetection, false},
	{"T2", "contour_evaluation", "contour_evaluation_qa", StageContourEvaluation, false},
	{"T3", "expansion", "contour_revision_qa_expansion", StageContourRevision, true},
	{"T4", "contraction", "contour_revision_qa_contraction", StageContourRevision, true},
	{"T5", "revision_result", "contour_revision_qa_revision_result", StageContourRevision, false},
	{"T6", "distribution", "attribute_extraction_qa_distribution", StageAttributeExtraction, false},
	{"T7", "location", "attribute_extraction_qa_location", StageAttributeExtraction, true},
	{"T8", "severity/measurement", "attribute_extraction_qa_severity/measurement", StageAttributeExtraction, false},
	{"T9", "comparison", "attribute_extraction_qa_comparison", StageAttributeExtraction, false},
}

// Valid reports whether q is one of the nine question types.
func (q Question) Valid() bool { return q >= 0 && q < NumQuestions }

// Name is the question's short name in our tables ("detection",
// "contour_evaluation", …, "severity/measurement", "comparison"); an
// attribute question's name is also its key in attribute_extraction_qa
// (format.md §3.5).
func (q Question) Name() string { return questionInfo[q].name }

// Step is the question's step key in a results record (protocol.md §2),
// e.g. "detection_qa" or "attribute_extraction_qa_location".
func (q Question) Step() string { return questionInfo[q].step }

// Turn is the question's turn id, "T1"…"T9".
func (q Question) Turn() string { return questionInfo[q].turn }

// Stage is the stage the question belongs to.
func (q Question) Stage() Stage { return questionInfo[q].stage }

// Multi reports whether the question is multi-select (expansion,
// contraction, location).
func (q Question) Multi() bool { return questionInfo[q].multi }

// QuestionOfStep returns the question type of a step key.
func QuestionOfStep(step string) (Question, bool) {
	for _, q := range Questions {
		if questionInfo[q].step == step {
			return q, true
		}
	}
	return 0, false
}

// QuestionOfTurn returns the question type of a turn id ("T1"…"T9").
func QuestionOfTurn(id string) (Question, bool) {
	for _, q := range Questions {
		if questionInfo[q].turn == id {
			return q, true
		}
	}
	return 0, false
}

// StageApplies reports whether stage s applies to a record of path p;
// heart says the record is heart-type (it has no attribute stage). The
// path and heart-type alone decide (format.md §5): detection applies to
// every path, contour evaluation to RF and RR, contour revision to RR,
// attribute extraction to lung-type RF and RR records.
func StageApplies(p Path, heart bool, s Stage) bool {
	switch s {
	case StageDetection:
		return p.Valid()
	case StageContourEvaluation:
		return p.Positive()
	case StageContourRevision:
		return p == RevisionRequired
	case StageAttributeExtraction:
		return p.Positive() && !heart
	}
	return false
}

// Applies reports whether question q is asked of a record of path p (heart
// as for StageApplies): a question applies exactly when its stage does.
func Applies(p Path, heart bool, q Question) bool {
	return q.Valid() && StageApplies(p, heart, q.Stage())
}

// QuestionsFor returns the number of questions asked (= model calls) of a
// record of path p: the questions that apply. LF 1, RF 6, RR 9; heart-type
// RF 2, RR 5 (format.md §8.6, protocol.md §2.2).
func QuestionsFor(p Path, heart bool) int {
	n := 0
	for _, q := range Questions {
		if Applies(p, heart, q) {
			n++
		}
	}
	return n
}
