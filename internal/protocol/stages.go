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
// correct only if all its sub-questions are. Non-applicable stages
// (benchmark.StageApplies) have null correctness and null sub-questions.
func computeStages(r *results.Record, path benchmark.Path, heart bool) results.Stages {
	sub := func(q benchmark.Question) (asked, correct bool) {
		t := r.TurnByStep(q.Step())
		if t == nil || t.Status != results.TurnAsked {
			return false, false
		}
		return true, t.Correct != nil && *t.Correct
	}
	b := func(v bool) *bool { return &v }
	stage := func(k benchmark.Stage) (results.Stage, []*bool) {
		s := results.Stage{Applicable: benchmark.StageApplies(path, heart, k)}
		qs := k.Questions()
		subs := make([]*bool, len(qs))
		if !s.Applicable {
			return s, subs
		}
		allAsked, allCorrect := true, true
		for i, q := range qs {
			a, c := sub(q)
			allAsked, allCorrect = allAsked && a, allCorrect && c
			subs[i] = b(c)
		}
		s.Asked, s.Correct = allAsked, b(allCorrect)
		return s, subs
	}
	var out results.Stages
	out.Detection, _ = stage(benchmark.StageDetection)
	out.ContourEvaluation, _ = stage(benchmark.StageContourEvaluation)
	s3, subs3 := stage(benchmark.StageContourRevision)
	out.ContourRevision = results.RevisionStage{Applicable: s3.Applicable, Asked: s3.Asked, Correct: s3.Correct,
		Expansion: subs3[0], Contraction: subs3[1], RevisionResult: subs3[2]}
	s4, subs4 := stage(benchmark.StageAttributeExtraction)
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
		q, ok := benchmark.QuestionOfStep(t.Step)
		if !ok {
			return nil, fmt.Errorf("rescore: record %s turn %s: unknown step %q", r.KeyID, t.Turn, t.Step)
		}
		scoreTurn(t, optionCount(bench, q), q.Multi(), mode, glmUnwrap)
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
	ok := func(q benchmark.Question) bool {
		t := r.TurnByStep(q.Step())
		return t != nil && t.Status == results.TurnAsked && t.Correct != nil && *t.Correct
	}
	for i := range r.OracleEvents {
		e := &r.OracleEvents[i]
		switch e.Point {
		case "D2":
			e.Triggered = !ok(benchmark.QDetection)
		case "D3":
			e.Triggered = !ok(benchmark.QContourEval)
		case "D5":
			e.Triggered = !ok(benchmark.QExpansion) || !ok(benchmark.QContraction)
		case "D6":
			if path == benchmark.RevisionFree {
				e.Triggered = !ok(benchmark.QContourEval)
			} else {
				e.Triggered = !ok(benchmark.QRevisionResult)
			}
		}
	}
}

// optionCount is the number of options used for range checks (§7).
func optionCount(rec *benchmark.Record, q benchmark.Question) int {
	switch q {
	case benchmark.QDetection, benchmark.QContourEval:
		return 2
	case benchmark.QDistribution, benchmark.QLocation, benchmark.QSeverity, benchmark.QComparison:
		return attributeOptions[q]
	}
	if rec.Contour == nil {
		return 0
	}
	switch q {
	case benchmark.QExpansion:
		return len(rec.Contour.Expansion.AnswerOptions)
	case benchmark.QContraction:
		return len(rec.Contour.Contraction.AnswerOptions)
	}
	return len(rec.Contour.RevisionResult.AnswerOptions)
}
