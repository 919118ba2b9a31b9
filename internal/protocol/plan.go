package protocol

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

// PlannedTurn is a turn on a record's path with everything that does not
// depend on the model's answers: whether it is asked, its images, its
// text before any oracle prefix, its ground truth and option count.
type PlannedTurn struct {
	Q          benchmark.Question
	ID, Step   string   // Q.Turn() and Q.Step(), as results records write them
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
// whose key or image paths would leave its image folder. Which stages are
// planned is benchmark.StageApplies's decision.
func Plan(rec *benchmark.Record, benchDir string) ([]PlannedTurn, error) {
	if !safeElem(rec.KeyID) {
		return nil, fmt.Errorf("record %q: key_id is not a safe folder name", rec.KeyID)
	}
	p := &planner{rec: rec, benchDir: benchDir, base: "chexpercept/" + rec.KeyID + "/",
		// Capacity for all nine turns: add returns pointers into out,
		// which must not move.
		out: make([]PlannedTurn, 0, benchmark.NumQuestions)}
	path, heart := rec.Path(), rec.IsHeartType()
	p.detection()
	if benchmark.StageApplies(path, heart, benchmark.StageContourEvaluation) {
		if err := p.contourEval(); err != nil {
			return nil, err
		}
	}
	if benchmark.StageApplies(path, heart, benchmark.StageContourRevision) {
		if err := p.contourRevision(); err != nil {
			return nil, err
		}
	}
	if benchmark.StageApplies(path, heart, benchmark.StageAttributeExtraction) {
		p.attributes()
	}
	return p.out, nil
}

// planner is the state of one Plan: the record, where its images live and
// the turns planned so far.
type planner struct {
	rec            *benchmark.Record
	benchDir, base string
	out            []PlannedTurn
}

func (p *planner) exists(rel string, dir bool) bool {
	fi, err := os.Stat(filepath.Join(p.benchDir, filepath.FromSlash(rel)))
	return err == nil && fi.IsDir() == dir
}

func (p *planner) add(q benchmark.Question, gt []int, n int) *PlannedTurn {
	p.out = append(p.out, PlannedTurn{Q: q, ID: q.Turn(), Step: q.Step(), GT: gt, NOptions: n, Multi: q.Multi(), Images: []string{}})
	return &p.out[len(p.out)-1]
}

// contourDir is the record's contour_qa folder and whether T2 and stage 3
// can use it (contour_qa present and the folder on disk).
func (p *planner) contourDir() (string, bool) {
	dir := p.base + "contour_qa/"
	return dir, p.rec.Contour != nil && p.exists(dir, true)
}

// detection plans T1.
func (p *planner) detection() {
	d := p.rec.Detection
	var gt []int
	if d.Question != "" {
		gt = []int{d.AnswerIndex}
	}
	t := p.add(benchmark.QDetection, gt, 2)
	xray := p.base + "detection_qa/xray.png"
	switch {
	case d.Question == "":
		t.SkipReason = "detection_qa missing or empty"
	case !p.exists(xray, false):
		t.SkipReason = "image missing: " + xray
	default:
		t.Text, t.Images = d.Question, []string{xray}
	}
}

// contourEval plans T2.
func (p *planner) contourEval() error {
	c := p.rec.Contour
	dir, ok := p.contourDir()
	var gt []int
	if c != nil && c.ContourEval.Question != "" {
		gt = []int{c.ContourEval.AnswerIndex}
	}
	t := p.add(benchmark.QContourEval, gt, 2)
	switch {
	case c == nil:
		t.SkipReason = "contour_qa missing or empty"
	case c.ContourEval.Question == "":
		t.SkipReason = "contour_eval_qa missing or empty"
	case !ok:
		t.SkipReason = "folder missing: " + dir
	default:
		t.Text, t.Decision = c.ContourEval.Question, true
		if rp := c.ContourEval.RelativePath; rp != "" {
			if !safeRel(rp) {
				return fmt.Errorf("record %s: contour_eval_qa.relative_path %q leaves the record folder", p.rec.KeyID, rp)
			}
			// A missing file means T2 is asked without an image (ref).
			if img := dir + rp; p.exists(img, false) {
				t.Images = []string{img}
			}
		}
	}
	return nil
}

// contourRevision plans T3–T5.
func (p *planner) contourRevision() error {
	c := p.rec.Contour
	dir, ok := p.contourDir()
	var stageSkip string
	if c == nil {
		stageSkip = results.SkipStagePrefix + "contour_qa missing or empty"
	} else if !ok {
		stageSkip = results.SkipStagePrefix + "folder missing: " + dir
	}
	var e, k benchmark.PointQA
	var r benchmark.RevisionQA
	if c != nil {
		e, k, r = c.Expansion, c.Contraction, c.RevisionResult
	}
	t3 := p.add(benchmark.QExpansion, pointGT(e), len(e.AnswerOptions))
	t4 := p.add(benchmark.QContraction, pointGT(k), len(k.AnswerOptions))
	var gt5 []int
	if r.Question != "" {
		gt5 = []int{r.AnswerIndex}
	}
	t5 := p.add(benchmark.QRevisionResult, gt5, len(r.AnswerOptions))
	if stageSkip != "" {
		t3.SkipReason, t4.SkipReason, t5.SkipReason = stageSkip, stageSkip, stageSkip
		return nil
	}
	revDir := dir + "contour_revision_qa/"
	t3.Decision = true
	points := revDir + "xray_with_mask_and_points.png"
	switch {
	case e.Question == "":
		t3.SkipReason = benchmark.QExpansion.Step() + " missing or empty"
	case !p.exists(points, false):
		t3.SkipReason = "image missing: " + points
	default:
		t3.Text, t3.Images = c.InitialContext+"\n\n"+e.Question, []string{points}
	}
	if k.Question == "" {
		t4.SkipReason = benchmark.QContraction.Step() + " missing or empty"
	} else {
		t4.Text = k.Question
	}
	if r.Question == "" {
		t5.SkipReason = benchmark.QRevisionResult.Step() + " missing or empty"
		return nil
	}
	t5.Decision = true
	for _, opt := range r.AnswerOptions {
		if opt.RelativePath == "" {
			continue // treated as a missing file
		}
		if !safeRel(opt.RelativePath) {
			return fmt.Errorf("record %s: revision option relative_path %q leaves the record folder", p.rec.KeyID, opt.RelativePath)
		}
		if img := revDir + opt.RelativePath; p.exists(img, false) {
			t5.Images = append(t5.Images, img)
		}
	}
	if len(t5.Images) == 0 {
		t5.SkipReason = "no option image exists under " + revDir
	} else {
		t5.Text = r.Question
	}
	return nil
}

// attributeOptions is the number of options of each stage-4 question.
var attributeOptions = map[benchmark.Question]int{benchmark.QDistribution: 4, benchmark.QLocation: 4, benchmark.QSeverity: 3, benchmark.QComparison: 4}

// attributes plans T6–T9.
func (p *planner) attributes() {
	a := p.rec.Attributes
	type sub struct {
		question string
		gt       []int
	}
	subs := map[benchmark.Question]sub{}
	if a != nil {
		subs[benchmark.QDistribution] = sub{a.Distribution.Question, []int{a.Distribution.AnswerIndex}}
		subs[benchmark.QLocation] = sub{a.Location.Question, append([]int{}, a.Location.AnswerIndex...)}
		subs[benchmark.QSeverity] = sub{a.Severity.Question, []int{a.Severity.AnswerIndex}}
		subs[benchmark.QComparison] = sub{a.Comparison.Question, []int{a.Comparison.AnswerIndex}}
	}
	for _, q := range benchmark.StageAttributeExtraction.Questions() {
		s := subs[q]
		gt := s.gt
		if s.question == "" {
			gt = nil
		}
		t := p.add(q, gt, attributeOptions[q])
		switch {
		case a == nil:
			t.SkipReason = results.SkipStagePrefix + "attribute_extraction_qa is null or absent"
		case s.question == "":
			t.SkipReason = q.Name() + " missing or empty"
		default:
			t.Text = s.question
			t.Decision = q == benchmark.QDistribution
		}
	}
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
