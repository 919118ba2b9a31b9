package analysis

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

// Image controls: does the model use the image? A control run asks a
// model the model run's conversations with the images removed
// (text-only) or with the radiograph under the drawn elements blanked
// (blank-radiograph); paired with the model's own run on the records ok
// in both, the drop in end-to-end accuracy at each stage is what the
// image contributed. A stage whose accuracy does not drop reliably is one
// the model answers without using the image: a text cue, a skewed answer
// set or a habit carries it.

// DropAlpha is the level of the reliable-drop rule: a stage's accuracy
// drops reliably without the image when the lower bound of the 95 %
// interval of (with − without) is above 0 and McNemar's exact p is at
// most DropAlpha, the rule the findings use for a difference.
const DropAlpha = 0.05

// ImageControlRow is one line of ext_image_control.csv: a model's run and
// its control run compared at one stage of one path.
type ImageControlRow struct {
	Run        string // the model's run
	ControlRun string // the control run (<run>_<control>)
	Control    results.Control
	OracleMode string
	Path       benchmark.Path
	Stage      benchmark.Stage
	// NRecords are the records ok in both runs for which the stage
	// applies; Valid is false when there are none.
	NRecords int
	Valid    bool
	// AccImage and AccControl are the end-to-end accuracies with and
	// without the image; Diff = AccImage − AccControl, with its 95 %
	// interval (paired bootstrap over records) and McNemar's exact p.
	AccImage, AccControl, Diff, Lo, Hi, P float64
	// RightImage counts the records right with the image, RightBoth
	// those right in both; Surviving = RightBoth / RightImage, the share
	// of right answers that survive without the image (SurvivingValid
	// false when RightImage is 0).
	RightImage, RightBoth int
	SurvivingValid        bool
	Surviving             float64
}

// Drops reports a reliable drop without the image (DropAlpha).
func (r *ImageControlRow) Drops() bool { return r.Valid && r.Lo > 0 && r.P <= DropAlpha }

// Cell names the row's path and stage: "RR s3".
func (r *ImageControlRow) Cell() string { return fmt.Sprintf("%s s%d", r.Path.Short(), r.Stage) }

// ImageUse is the verdict on one model's run under one control in one
// oracle mode: the stage cells where accuracy drops reliably without the
// image, and those it answers as well without it.
type ImageUse struct {
	Run, ControlRun string
	Control         results.Control
	OracleMode      string
	Drops, Holds    []string // stage cells, "RR s3"
	// Rehearsal is set when chexpercept's stand-in answered the model's
	// run (a rehearsal of the command, not a model result).
	Rehearsal bool
}

// UsesImage reports whether some stage's accuracy drops reliably without
// the image.
func (u *ImageUse) UsesImage() bool { return len(u.Drops) > 0 }

// Sentence says the verdict in one sentence, for the report and the
// demo's console.
func (u *ImageUse) Sentence() string {
	name := u.Run
	if u.Rehearsal {
		name += " (" + RehearsalNote + ")"
	}
	without := "without the image (" + string(u.Control) + " control)"
	if !u.UsesImage() {
		return fmt.Sprintf("%s shows no reliable drop at any stage %s: it answers every stage without using the image", name, without)
	}
	s := fmt.Sprintf("%s uses the image: %s its accuracy drops reliably at %s", name, without, strings.Join(u.Drops, ", "))
	if len(u.Holds) > 0 {
		s += fmt.Sprintf("; it answers %s without using the image (no reliable drop)", strings.Join(u.Holds, ", "))
	}
	return s
}

// ImageControl is the image-control part of a result.
type ImageControl struct {
	Rows []ImageControlRow // by model run, control, oracle mode, then path and stage
	Uses []ImageUse        // one per pair of runs, in Rows order
}

// controlPair is a scored control run and the scored model run it
// controls, in one oracle mode.
type controlPair struct{ model, control *RunResult }

// analyzeImageControl pairs every scored control run with the model's
// run of the same oracle mode (by name: the control run's name less
// "_<control>") and compares them at every path and stage.
func analyzeImageControl(ctx context.Context, res *Result, o *Options) (*ImageControl, []string) {
	var pairs []controlPair
	var warns []string
	for _, c := range res.Runs {
		if !c.Scored || c.Run.Kind != results.KindControl {
			continue
		}
		base, ok := strings.CutSuffix(c.Run.Name, "_"+string(c.Run.Control))
		if c.Run.Control == "" || !ok {
			warns = append(warns, fmt.Sprintf("control run %s: its manifest names no image control (or the run is not named <run>_<control>); left out of \"Does the model use the image?\"", c.Run.ID()))
			continue
		}
		var model *RunResult
		for _, m := range res.Runs {
			if m.Scored && m.Run.Kind.Model() && m.Run.Name == base && m.Run.OracleMode == c.Run.OracleMode {
				model = m
			}
		}
		if model == nil {
			warns = append(warns, fmt.Sprintf("control run %s: no scored model run %s (oracle %s) in this report to compare it with; left out of \"Does the model use the image?\"", c.Run.ID(), base, c.Run.OracleMode))
			continue
		}
		warns = append(warns, pairDiffers(model.Run, c.Run)...)
		if a, b := model.Run.Sampling, c.Run.Sampling; a != "" && b != "" && a != b {
			warns = append(warns, fmt.Sprintf("compared runs %s and %s (oracle %s) differ in sampling: %s vs %s", model.Run.Name, c.Run.Name, c.Run.OracleMode, a, b))
		}
		pairs = append(pairs, controlPair{model, c})
	}
	if len(pairs) == 0 {
		return nil, warns
	}
	slices.SortStableFunc(pairs, func(x, y controlPair) int {
		if c := strings.Compare(x.model.Run.Name, y.model.Run.Name); c != 0 {
			return c
		}
		if c := strings.Compare(string(x.control.Run.Control), string(y.control.Run.Control)); c != 0 {
			return c
		}
		return strings.Compare(x.model.Run.OracleMode, y.model.Run.OracleMode)
	})
	ic := &ImageControl{}
	type job struct {
		p  controlPair
		pi int
		k  benchmark.Stage
	}
	var jobs []job
	for _, p := range pairs {
		for pi, path := range benchmark.Paths {
			for _, k := range benchmark.Stages {
				if benchmark.StageApplies(path, false, k) {
					ic.Rows = append(ic.Rows, ImageControlRow{Run: p.model.Run.Name, ControlRun: p.control.Run.Name, Control: p.control.Run.Control,
						OracleMode: p.model.Run.OracleMode, Path: path, Stage: k})
					jobs = append(jobs, job{p: p, pi: pi, k: k})
				}
			}
		}
	}
	fns := make([]func(), len(jobs))
	for i, j := range jobs {
		row := &ic.Rows[i]
		fns[i] = func() { row.fill(pairStage(j.p.model, j.p.control, j.pi, j.k, o)) }
	}
	runJobs(ctx, fns, o.Workers)
	i := 0
	for _, p := range pairs {
		u := ImageUse{Run: p.model.Run.Name, ControlRun: p.control.Run.Name, Control: p.control.Run.Control, OracleMode: p.model.Run.OracleMode,
			Rehearsal: p.model.Run.Kind == results.KindRehearsal}
		for ; i < len(ic.Rows) && ic.Rows[i].ControlRun == u.ControlRun && ic.Rows[i].OracleMode == u.OracleMode; i++ {
			r := &ic.Rows[i]
			switch {
			case r.Drops():
				u.Drops = append(u.Drops, r.Cell())
			case r.Valid:
				u.Holds = append(u.Holds, r.Cell())
			}
		}
		ic.Uses = append(ic.Uses, u)
	}
	return ic, warns
}

// fill sets the row's numbers from the paired comparison.
func (r *ImageControlRow) fill(ps pairedStage) {
	r.NRecords = ps.n
	if ps.n == 0 {
		return
	}
	r.Valid = true
	r.AccImage, r.AccControl, r.Diff, r.Lo, r.Hi, r.P = ps.accA, ps.accB, ps.diff, ps.lo, ps.hi, ps.p
	r.RightImage, r.RightBoth = ps.right, ps.both
	if ps.right > 0 {
		r.SurvivingValid, r.Surviving = true, float64(ps.both)/float64(ps.right)
	}
}
