package results

import (
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/ojson"
)

// Step keys as the reference export names them (spec protocol.md §2).
const (
	stepDetection      = "detection_qa"
	stepContourEval    = "contour_evaluation_qa"
	stepExpansion      = "contour_revision_qa_expansion"
	stepContraction    = "contour_revision_qa_contraction"
	stepRevisionResult = "contour_revision_qa_revision_result"
	stepDistribution   = "attribute_extraction_qa_distribution"
	stepLocation       = "attribute_extraction_qa_location"
	stepSeverity       = "attribute_extraction_qa_severity/measurement"
	stepComparison     = "attribute_extraction_qa_comparison"
	attrPrefix         = "attribute_extraction_qa_"
)

// usageBackends are the backends whose export carries token_usage (ref).
var usageBackends = map[string]bool{"openai": true, "azure": true, "gemini": true}

// ExportRecord converts one record to the reference all_results.json
// value (§9.3). benchAbsDir is the absolute benchmark directory used to
// make image paths absolute; backend decides whether token_usage is
// written. token_usage.model_id is left empty; use ExportRecordModel to
// set it.
func ExportRecord(rec *Record, benchAbsDir string, backend string) *ojson.Value {
	return ExportRecordModel(rec, benchAbsDir, backend, "")
}

// ExportRecordModel is ExportRecord with the model id for token_usage.
func ExportRecordModel(rec *Record, benchAbsDir, backend, modelID string) *ojson.Value {
	strict := rec.ParseMode == "strict"
	o := ojson.NewObject()
	o.Set("key_id", ojson.Str(rec.KeyID))
	o.Set("qa_path", ojson.Str(rec.QAPath))
	o.Set("detection_qa", exportAnswer(rec.TurnByStep(stepDetection), strict, "response"))
	o.Set("contour_evaluation_qa", exportAnswer(rec.TurnByStep(stepContourEval), strict, "responses"))
	o.Set("contour_revision_qa", exportRevision(rec))
	o.Set("attribute_extraction_qa", exportAttributes(rec))
	idx, hist := exportChatHistory(rec, benchAbsDir, strict)
	if idx != nil {
		o.Set("_chat_history_idx", idx)
	}
	if tu := tokenUsage(rec, backend, modelID); tu != nil {
		o.Set("token_usage", tu)
	}
	o.Set("chat_history", hist)
	return o
}

// exportAnswer is a single-turn stage (detection, contour evaluation):
// empty unless the turn was recorded; respKey is the reference's name for
// the response.
func exportAnswer(t *Turn, strict bool, respKey string) *ojson.Value {
	o := ojson.NewObject()
	if turnRecorded(t, strict) {
		o.Set(respKey, ojson.Str(str(t.ParsedText))).Set("ground_truth", gtInt(t)).Set("correct", ojson.Bool(turnCorrect(t)))
	}
	return o
}

// exportRevision is the contour-revision stage (expansion, contraction,
// revision result), empty unless the record's path has it.
func exportRevision(rec *Record) *ojson.Value {
	cr := ojson.NewObject()
	if rec.QAPath != "revision_required" || !stageKept(rec, stepExpansion, stepContraction, stepRevisionResult) {
		return cr
	}
	e, k, r := rec.TurnByStep(stepExpansion), rec.TurnByStep(stepContraction), rec.TurnByStep(stepRevisionResult)
	gt := ojson.NewObject().Set("expansion", gtList(e)).Set("contraction", gtList(k)).Set("revision_result", gtInt(r))
	resp := ojson.NewObject()
	for _, x := range []struct {
		key string
		t   *Turn
	}{{"expansion", e}, {"contraction", k}, {"revision_result", r}} {
		if turnAsked(x.t) {
			resp.Set(x.key, ojson.Str(str(x.t.ParsedText)))
		}
	}
	return cr.Set("ground_truth", gt).Set("responses", resp).
		Set("correct", ojson.Bool(turnCorrect(e) && turnCorrect(k) && turnCorrect(r))).
		Set("expansion", correctObj(turnCorrect(e))).
		Set("contraction", correctObj(turnCorrect(k))).
		Set("revision_result", correctObj(turnCorrect(r)))
}

// exportAttributes is the attribute-extraction stage, empty for a
// lesion-free record or a skipped stage.
func exportAttributes(rec *Record) *ojson.Value {
	ae := ojson.NewObject()
	if rec.QAPath == "lesion_free" || !stageKept(rec, attrSteps...) {
		return ae
	}
	resp, gt := ojson.NewObject(), ojson.NewObject()
	all := true
	for _, s := range attrSteps {
		t := rec.TurnByStep(s)
		all = all && turnCorrect(t)
		if !turnAsked(t) {
			continue
		}
		key := strings.TrimPrefix(s, attrPrefix)
		resp.Set(key, ojson.Str(str(t.ParsedText)))
		if s == stepLocation {
			gt.Set(key, gtList(t))
		} else {
			gt.Set(key, gtInt(t))
		}
	}
	ae.Set("responses", resp).Set("ground_truth", gt).Set("correct", ojson.Bool(all))
	// The reference's order, kept for byte compatibility.
	for _, s := range []string{stepDistribution, stepSeverity, stepComparison, stepLocation} {
		ae.Set(strings.TrimPrefix(s, attrPrefix), correctObj(turnCorrect(rec.TurnByStep(s))))
	}
	return ae
}

// exportChatHistory is chat_history and _chat_history_idx (nil when
// neither a turn nor a patch attempt creates it).
func exportChatHistory(rec *Record, benchAbsDir string, strict bool) (idx, hist *ojson.Value) {
	for _, ev := range rec.OracleEvents {
		if ev.Action == ActionPatch {
			idx = ojson.NewObject() // a patch attempt creates it
		}
	}
	hist = ojson.Arr()
	prefix := strings.TrimRight(benchAbsDir, "/") + "/"
	for i := range rec.Turns {
		t := &rec.Turns[i]
		if !turnAsked(t) {
			continue
		}
		if t.Step != stepDetection || turnRecorded(t, strict) {
			if idx == nil {
				idx = ojson.NewObject()
			}
			idx.Set(t.Step, ojson.Int(int64(len(hist.A))))
		}
		imgs := make([]string, len(t.Images))
		for j, p := range t.Images {
			imgs[j] = prefix + p
		}
		entry := ojson.Arr(ojson.Str(str(t.UserText)), ojson.Strs(imgs), ojson.Str(str(t.FedBack)))
		if t.OriginalRaw != nil {
			entry.A = append(entry.A, ojson.Str(*t.OriginalRaw))
		}
		hist.A = append(hist.A, entry)
	}
	return idx, hist
}

// gtInt is a turn's single ground-truth answer, or null.
func gtInt(t *Turn) *ojson.Value {
	if t == nil || t.GT == nil || len(*t.GT) == 0 {
		return ojson.Null()
	}
	return ojson.Int(int64((*t.GT)[0]))
}

// gtList is a turn's ground-truth answers, or null.
func gtList(t *Turn) *ojson.Value {
	if t == nil || t.GT == nil {
		return ojson.Null()
	}
	return ojson.Ints(*t.GT)
}

// The export rules shared by ExportRecordModel and refEntryFromRecord,
// which computes the reference metrics without building the export.

func turnAsked(t *Turn) bool { return t != nil && t.Status == TurnAsked }

// turnRecorded: the reference stores a stage only when the layer-A string
// is non-empty (T1, T2); strict mode records every asked turn.
func turnRecorded(t *Turn, strict bool) bool {
	return turnAsked(t) && (strict || str(t.ParsedText) != "")
}

func turnCorrect(t *Turn) bool { return turnAsked(t) && t.Correct != nil && *t.Correct }

// stageKept: the stage's turns exist and were not skipped as a whole.
func stageKept(rec *Record, steps ...string) bool {
	found := false
	for _, s := range steps {
		t := rec.TurnByStep(s)
		if t == nil {
			continue
		}
		found = true
		if t.Status == TurnSkipped && strings.HasPrefix(str(t.SkipReason), SkipStagePrefix) {
			return false
		}
	}
	return found
}

// attrSteps are the stage-4 steps in §2 order.
var attrSteps = []string{stepDistribution, stepLocation, stepSeverity, stepComparison}

func correctObj(b bool) *ojson.Value { return ojson.NewObject().Set("correct", ojson.Bool(b)) }

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// tokenUsage is the reference token_usage block, or nil when it is not
// written (other backends, or no call reported usage).
func tokenUsage(rec *Record, backend, modelID string) *ojson.Value {
	if !usageBackends[backend] {
		return nil
	}
	var in, cached, out, think, total int64
	cost := 0.0
	per := ojson.Arr()
	for _, t := range rec.Turns {
		if t.Status != TurnAsked || t.Usage == nil {
			continue
		}
		u := t.Usage
		c := 0.0 // unpriced calls count 0.0 (ref)
		if t.CostUSD != nil {
			c = *t.CostUSD
		}
		in, cached, out, think, total, cost = in+u.InputTokens, cached+u.CachedInputTokens, out+u.OutputTokens, think+u.ThinkingTokens, total+u.TotalTokens, cost+c
		per.A = append(per.A, ojson.NewObject().
			Set("input_tokens", ojson.Int(u.InputTokens)).
			Set("cached_input_tokens", ojson.Int(u.CachedInputTokens)).
			Set("output_tokens", ojson.Int(u.OutputTokens)).
			Set("thinking_tokens", ojson.Int(u.ThinkingTokens)).
			Set("total_tokens", ojson.Int(u.TotalTokens)).
			Set("cost_usd", ojson.Float(c)))
	}
	if len(per.A) == 0 {
		return nil
	}
	return ojson.NewObject().
		Set("model_id", ojson.Str(modelID)).
		Set("num_calls", ojson.Int(int64(len(per.A)))).
		Set("input_tokens", ojson.Int(in)).
		Set("cached_input_tokens", ojson.Int(cached)).
		Set("output_tokens", ojson.Int(out)).
		Set("thinking_tokens", ojson.Int(think)).
		Set("total_tokens", ojson.Int(total)).
		Set("estimated_cost_usd", ojson.Float(cost)).
		Set("per_call", per)
}

// MarshalAllResults writes all_results.json (§9.3): the ok records keyed by
// key_id in benchmark (index) order, indent 2, ASCII-escaped, no trailing
// newline. When a key_id appears more than once the last record wins, as
// for results.jsonl readers.
func MarshalAllResults(records []*Record, benchAbsDir, backend, modelID string) []byte {
	last := map[string]int{}
	for i, r := range records {
		last[r.KeyID] = i
	}
	var keep []*Record
	for i, r := range records {
		if last[r.KeyID] == i && r.Status == StatusOK {
			keep = append(keep, r)
		}
	}
	slices.SortStableFunc(keep, func(a, b *Record) int { return a.Index - b.Index })
	o := ojson.NewObject()
	for _, r := range keep {
		o.Set(r.KeyID, ExportRecordModel(r, benchAbsDir, backend, modelID))
	}
	return ojson.MarshalASCII(o)
}
