package protocol

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

// Step keys (spec protocol.md §2), also the keys of the export's
// _chat_history_idx.
const (
	StepDetection      = "detection_qa"
	StepContourEval    = "contour_evaluation_qa"
	StepExpansion      = "contour_revision_qa_expansion"
	StepContraction    = "contour_revision_qa_contraction"
	StepRevisionResult = "contour_revision_qa_revision_result"
	StepDistribution   = "attribute_extraction_qa_distribution"
	StepLocation       = "attribute_extraction_qa_location"
	StepSeverity       = "attribute_extraction_qa_severity/measurement"
	StepComparison     = "attribute_extraction_qa_comparison"
)

// Steps lists the nine step keys in turn order (T1…T9).
var Steps = []string{StepDetection, StepContourEval, StepExpansion, StepContraction, StepRevisionResult,
	StepDistribution, StepLocation, StepSeverity, StepComparison}

// TurnID returns "T1"… for a step key, or "" if unknown.
func TurnID(step string) string {
	for i, s := range Steps {
		if s == step {
			return fmt.Sprintf("T%d", i+1)
		}
	}
	return ""
}

// IsMulti reports whether a step is a multi-select question.
func IsMulti(step string) bool {
	return step == StepExpansion || step == StepContraction || step == StepLocation
}

// PlannedTurn is a turn on a record's path with everything that does not
// depend on the model's answers: whether it is asked, its images, its
// text before any oracle prefix, its ground truth and option count.
type PlannedTurn struct {
	ID, Step   string
	SkipReason string   // "" when the turn is asked
	Images     []string // relative to the benchmark dir, in send order
	Text       string   // user text without oracle prefix
	GT         []int    // nil when the question object is absent
	NOptions   int
	Multi      bool
	// Decision is true when this turn's oracle decision point (D2 at T2,
	// D3 at T3, D5 at T5, D6 at T6) is reached; it can be reached even
	// when the turn itself is then skipped (D3, D5).
	Decision bool
}

// Asked reports whether the turn will be sent.
func (p *PlannedTurn) Asked() bool { return p.SkipReason == "" }

// Plan lays out the turns of rec's path (spec §2) with the skip rules of
// §2.1, checking image files under benchDir. It fails only on a record
// whose key or image paths would leave its image folder.
func Plan(rec *benchmark.Record, benchDir string) ([]PlannedTurn, error) {
	if !safeElem(rec.KeyID) {
		return nil, fmt.Errorf("record %q: key_id is not a safe folder name", rec.KeyID)
	}
	base := "chexpercept/" + rec.KeyID + "/"
	exists := func(rel string, dir bool) bool {
		fi, err := os.Stat(filepath.Join(benchDir, filepath.FromSlash(rel)))
		return err == nil && fi.IsDir() == dir
	}
	path := rec.Path()
	// Capacity for all nine turns: add returns pointers into out, which
	// must not move.
	out := make([]PlannedTurn, 0, len(Steps))
	add := func(step string, gt []int, n int) *PlannedTurn {
		out = append(out, PlannedTurn{ID: TurnID(step), Step: step, GT: gt, NOptions: n, Multi: IsMulti(step), Images: []string{}})
		return &out[len(out)-1]
	}

	// T1
	d := rec.Detection
	var gt1 []int
	if d.Question != "" {
		gt1 = []int{d.AnswerIndex}
	}
	t1 := add(StepDetection, gt1, 2)
	xray := base + "detection_qa/xray.png"
	switch {
	case d.Question == "":
		t1.SkipReason = "detection_qa missing or empty"
	case !exists(xray, false):
		t1.SkipReason = "image missing: " + xray
	default:
		t1.Text, t1.Images = d.Question, []string{xray}
	}
	if path == benchmark.LesionFree {
		return out, nil
	}

	// T2
	c := rec.Contour
	contourDir := base + "contour_qa/"
	contourOK := c != nil && exists(contourDir, true)
	var gt2 []int
	if c != nil && c.ContourEval.Question != "" {
		gt2 = []int{c.ContourEval.AnswerIndex}
	}
	t2 := add(StepContourEval, gt2, 2)
	switch {
	case c == nil:
		t2.SkipReason = "contour_qa missing or empty"
	case c.ContourEval.Question == "":
		t2.SkipReason = "contour_eval_qa missing or empty"
	case !contourOK:
		t2.SkipReason = "folder missing: " + contourDir
	default:
		t2.Text, t2.Decision = c.ContourEval.Question, true
		if rp := c.ContourEval.RelativePath; rp != "" {
			if !safeRel(rp) {
				return nil, fmt.Errorf("record %s: contour_eval_qa.relative_path %q leaves the record folder", rec.KeyID, rp)
			}
			// A missing file means T2 is asked without an image (ref).
			if img := contourDir + rp; exists(img, false) {
				t2.Images = []string{img}
			}
		}
	}

	// T3–T5
	if path == benchmark.RevisionRequired {
		revDir := contourDir + "contour_revision_qa/"
		var stageSkip string
		if c == nil {
			stageSkip = results.SkipStagePrefix + "contour_qa missing or empty"
		} else if !contourOK {
			stageSkip = results.SkipStagePrefix + "folder missing: " + contourDir
		}
		var e, k benchmark.PointQA
		var r benchmark.RevisionQA
		if c != nil {
			e, k, r = c.Expansion, c.Contraction, c.RevisionResult
		}
		t3 := add(StepExpansion, pointGT(e), len(e.AnswerOptions))
		t4 := add(StepContraction, pointGT(k), len(k.AnswerOptions))
		var gt5 []int
		if r.Question != "" {
			gt5 = []int{r.AnswerIndex}
		}
		t5 := add(StepRevisionResult, gt5, len(r.AnswerOptions))
		if stageSkip != "" {
			t3.SkipReason, t4.SkipReason, t5.SkipReason = stageSkip, stageSkip, stageSkip
		} else {
			t3.Decision = true
			points := revDir + "xray_with_mask_and_points.png"
			switch {
			case e.Question == "":
				t3.SkipReason = "contour_revision_qa_expansion missing or empty"
			case !exists(points, false):
				t3.SkipReason = "image missing: " + points
			default:
				t3.Text, t3.Images = c.InitialContext+"\n\n"+e.Question, []string{points}
			}
			if k.Question == "" {
				t4.SkipReason = "contour_revision_qa_contraction missing or empty"
			} else {
				t4.Text = k.Question
			}
			if r.Question == "" {
				t5.SkipReason = "contour_revision_qa_revision_result missing or empty"
			} else {
				t5.Decision = true
				for _, opt := range r.AnswerOptions {
					if opt.RelativePath == "" {
						continue // treated as a missing file
					}
					if !safeRel(opt.RelativePath) {
						return nil, fmt.Errorf("record %s: revision option relative_path %q leaves the record folder", rec.KeyID, opt.RelativePath)
					}
					if img := revDir + opt.RelativePath; exists(img, false) {
						t5.Images = append(t5.Images, img)
					}
				}
				if len(t5.Images) == 0 {
					t5.SkipReason = "no option image exists under " + revDir
				} else {
					t5.Text = r.Question
				}
			}
		}
	}

	// T6–T9
	if rec.IsHeartType() {
		return out, nil
	}
	a := rec.Attributes
	type sub struct {
		step, question string
		gt             []int
		n              int
	}
	var subs []sub
	if a != nil {
		subs = []sub{
			{StepDistribution, a.Distribution.Question, []int{a.Distribution.AnswerIndex}, 4},
			{StepLocation, a.Location.Question, append([]int{}, a.Location.AnswerIndex...), 4},
			{StepSeverity, a.Severity.Question, []int{a.Severity.AnswerIndex}, 3},
			{StepComparison, a.Comparison.Question, []int{a.Comparison.AnswerIndex}, 4},
		}
	} else {
		for _, s := range []string{StepDistribution, StepLocation, StepSeverity, StepComparison} {
			subs = append(subs, sub{step: s})
		}
	}
	for _, s := range subs {
		gt := s.gt
		if s.question == "" {
			gt = nil
		}
		n := s.n
		if n == 0 {
			n = map[string]int{StepDistribution: 4, StepLocation: 4, StepSeverity: 3, StepComparison: 4}[s.step]
		}
		t := add(s.step, gt, n)
		switch {
		case a == nil:
			t.SkipReason = results.SkipStagePrefix + "attribute_extraction_qa is null or absent"
		case s.question == "":
			t.SkipReason = strings.TrimPrefix(s.step, "attribute_extraction_qa_") + " missing or empty"
		default:
			t.Text = s.question
			t.Decision = s.step == StepDistribution
		}
	}
	return out, nil
}

func pointGT(q benchmark.PointQA) []int {
	if q.Question == "" {
		return nil
	}
	return append([]int{}, q.AnswerIndex...)
}

// safeElem: one plain path element (no separators, not . or ..).
func safeElem(s string) bool {
	return s != "" && !strings.ContainsAny(s, `/\`) && filepath.IsLocal(s)
}

// safeRel: a relative slash path that stays inside its folder.
func safeRel(s string) bool {
	return s != "" && !strings.Contains(s, `\`) && filepath.IsLocal(filepath.FromSlash(s))
}

// ImagesToSend lists, once each and in first-use order, the images the
// asked turns of a plan will send (for verification before a run and for
// dry-run counts).
func ImagesToSend(plan []PlannedTurn) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range plan {
		if !p.Asked() {
			continue
		}
		for _, img := range p.Images {
			if !seen[img] {
				seen[img] = true
				out = append(out, img)
			}
		}
	}
	return out
}
