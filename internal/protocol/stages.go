package protocol

import (
	"fmt"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/results"
)

// finish fills the record's stages and usage from its turns.
func finish(r *results.Record, rec *benchmark.Record) {
	r.Stages = computeStages(r, rec.Path(), rec.IsHeartType())
	r.Usage = sumUsage(r.Turns)
}

// computeStages applies our stage semantics (§8, §10.3): a sub-question is
// correct only if its turn was asked and scored correct; a stage is
// correct only if all its sub-questions are. Non-applicable stages have
// null correctness and null sub-questions.
func computeStages(r *results.Record, path benchmark.Path, heart bool) results.Stages {
	sub := func(step string) (asked, correct bool) {
		t := r.TurnByStep(step)
		if t == nil || t.Status != results.TurnAsked {
			return false, false
		}
		return true, t.Correct != nil && *t.Correct
	}
	b := func(v bool) *bool { return &v }
	stage := func(applicable bool, steps ...string) (results.Stage, []*bool) {
		s := results.Stage{Applicable: applicable}
		subs := make([]*bool, len(steps))
		if !applicable {
			return s, subs
		}
		allAsked, allCorrect := true, true
		for i, st := range steps {
			a, c := sub(st)
			allAsked, allCorrect = allAsked && a, allCorrect && c
			subs[i] = b(c)
		}
		s.Asked, s.Correct = allAsked, b(allCorrect)
		return s, subs
	}
	positive := path != benchmark.LesionFree
	var out results.Stages
	out.Detection, _ = stage(true, StepDetection)
	out.ContourEvaluation, _ = stage(positive, StepContourEval)
	s3, subs3 := stage(path == benchmark.RevisionRequired, StepExpansion, StepContraction, StepRevisionResult)
	out.ContourRevision = results.RevisionStage{Applicable: s3.Applicable, Asked: s3.Asked, Correct: s3.Correct,
		Expansion: subs3[0], Contraction: subs3[1], RevisionResult: subs3[2]}
	s4, subs4 := stage(positive && !heart, StepDistribution, StepLocation, StepSeverity, StepComparison)
	out.AttributeExtraction = results.AttributeStage{Applicable: s4.Applicable, Asked: s4.Asked, Correct: s4.Correct,
		Distribution: subs4[0], Location: subs4[1], Severity: subs4[2], Comparison: subs4[3]}
	return out
}

// sumUsage adds up the asked turns' usage; the cost is null as soon as one
// asked call is unpriced.
func sumUsage(turns []results.Turn) results.Usage {
	var u results.Usage
	cost, priced := 0.0, true
	for _, t := range turns {
		if t.Status != results.TurnAsked {
			continue
		}
		if t.Usage != nil {
			u.InputTokens += t.Usage.InputTokens
			u.CachedInputTokens += t.Usage.CachedInputTokens
			u.OutputTokens += t.Usage.OutputTokens
			u.ThinkingTokens += t.Usage.ThinkingTokens
		}
		if t.CostUSD == nil {
			priced = false
		} else {
			cost += *t.CostUSD
		}
	}
	if priced {
		u.CostUSD = &cost
	}
	return u
}

// Rescore re-parses a finished record's raw replies with another parse
// mode and recomputes parse fields, correctness and stages. The
// conversation (texts, fed-back history, oracle events) is kept as it was,
// so for oracle runs only the labels change (§7). bench is the record's
// benchmark entry, which gives the option counts. The input is not
// modified.
func Rescore(r *results.Record, bench *benchmark.Record, mode parse.Mode, glmUnwrap bool) (*results.Record, error) {
	if r.KeyID != bench.KeyID {
		return nil, fmt.Errorf("rescore: record %s does not match benchmark record %s", r.KeyID, bench.KeyID)
	}
	line, err := r.MarshalLine()
	if err != nil {
		return nil, err
	}
	out, err := results.UnmarshalLine(line) // deep copy
	if err != nil {
		return nil, err
	}
	out.ParseMode = string(mode)
	for i := range out.Turns {
		t := &out.Turns[i]
		if t.Status != results.TurnAsked {
			continue
		}
		if t.Raw == nil {
			return nil, fmt.Errorf("rescore: record %s turn %s was asked but has no raw text", r.KeyID, t.Turn)
		}
		n, ok := optionCount(bench, t.Step)
		if !ok {
			return nil, fmt.Errorf("rescore: record %s turn %s: unknown step %q", r.KeyID, t.Turn, t.Step)
		}
		scoreTurn(t, n, IsMulti(t.Step), mode, glmUnwrap)
	}
	out.Stages = computeStages(out, bench.Path(), bench.IsHeartType())
	if out.OracleMode == string(OracleNone) {
		// In none mode the decisions changed nothing, so they are labels
		// like any other and follow the new parse.
		relabelEvents(out, bench.Path())
	}
	return out, nil
}

// relabelEvents recomputes whether each decision triggers (§4).
func relabelEvents(r *results.Record, path benchmark.Path) {
	ok := func(step string) bool {
		t := r.TurnByStep(step)
		return t != nil && t.Status == results.TurnAsked && t.Correct != nil && *t.Correct
	}
	for i := range r.OracleEvents {
		e := &r.OracleEvents[i]
		switch e.Point {
		case "D2":
			e.Triggered = !ok(StepDetection)
		case "D3":
			e.Triggered = !ok(StepContourEval)
		case "D5":
			e.Triggered = !ok(StepExpansion) || !ok(StepContraction)
		case "D6":
			if path == benchmark.RevisionFree {
				e.Triggered = !ok(StepContourEval)
			} else {
				e.Triggered = !ok(StepRevisionResult)
			}
		}
	}
}

// optionCount is the number of options used for range checks (§7).
func optionCount(rec *benchmark.Record, step string) (int, bool) {
	switch step {
	case StepDetection, StepContourEval:
		return 2, true
	case StepDistribution, StepLocation, StepComparison:
		return 4, true
	case StepSeverity:
		return 3, true
	}
	if rec.Contour == nil {
		return 0, step == StepExpansion || step == StepContraction || step == StepRevisionResult
	}
	switch step {
	case StepExpansion:
		return len(rec.Contour.Expansion.AnswerOptions), true
	case StepContraction:
		return len(rec.Contour.Contraction.AnswerOptions), true
	case StepRevisionResult:
		return len(rec.Contour.RevisionResult.AnswerOptions), true
	}
	return 0, false
}
