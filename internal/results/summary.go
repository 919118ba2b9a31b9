package results

import (
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// RunInfo is the "run" block of summary.json (spec protocol.md §9.4).
type RunInfo struct {
	Name            string  `json:"name"`  // run name, <provider>_<label>[_no_thinking][_strict]
	Model           string  `json:"model"` // alias, raw id or baseline policy
	ModelID         string  `json:"model_id"`
	Provider        string  `json:"provider"`
	Backend         string  `json:"backend"`
	OracleMode      string  `json:"oracle_mode"`
	ParseMode       string  `json:"parse_mode"`
	BenchmarkSHA256 string  `json:"benchmark_sha256"`
	RescoredFrom    *string `json:"rescored_from"`
}

// Counts is the "counts" block of summary.json.
type Counts struct {
	RecordsSelected int `json:"records_selected"`
	RecordsOK       int `json:"records_ok"`
	RecordsError    int `json:"records_error"`
	Calls           int `json:"calls"` // asked turns, cache hits included
	ParseFailures   int `json:"parse_failures"`
	EmptyAnswers    int `json:"empty_answers"`
	Truncations     int `json:"truncations"`
	CacheHits       int `json:"cache_hits"`
}

// StageAccuracy is one entry of summary.json's "accuracy" list. E2E and
// OraclePassed are null when N is 0.
type StageAccuracy struct {
	Path         benchmark.Path  `json:"path"`
	Stage        benchmark.Stage `json:"stage"`
	N            int             `json:"n_records"`
	E2E          *float64        `json:"e2e"`
	OraclePassed *float64        `json:"oracle_passed"`
}

// Summary is summary.json.
type Summary struct {
	Run       RunInfo         `json:"run"`
	Counts    Counts          `json:"counts"`
	Usage     Usage           `json:"usage"`
	WallTimeS float64         `json:"wall_time_s"`
	Accuracy  []StageAccuracy `json:"accuracy"`
}

// stageCorrect returns, for stage k, whether it applies to r and whether
// it is correct (our semantics, §10.3, as stored in r.Stages).
func stageCorrect(r *Record, k benchmark.Stage) (applicable, correct bool) {
	var a bool
	var c *bool
	switch k {
	case benchmark.StageDetection:
		a, c = r.Stages.Detection.Applicable, r.Stages.Detection.Correct
	case benchmark.StageContourEvaluation:
		a, c = r.Stages.ContourEvaluation.Applicable, r.Stages.ContourEvaluation.Correct
	case benchmark.StageContourRevision:
		a, c = r.Stages.ContourRevision.Applicable, r.Stages.ContourRevision.Correct
	case benchmark.StageAttributeExtraction:
		a, c = r.Stages.AttributeExtraction.Applicable, r.Stages.AttributeExtraction.Correct
	}
	return a, a && c != nil && *c
}

// StageAccuracies computes e2e_k and op_k per path and stage over the ok
// records (§10.3 semantics, lesion "all"), for the stages that apply to
// some record of the path: the denominator of stage k is the ok records of
// the path for which stage k applies; e2e needs every applicable stage
// 1..k correct.
func StageAccuracies(latest []*Record) []StageAccuracy {
	var out []StageAccuracy
	for _, path := range benchmark.Paths {
		for _, k := range benchmark.Stages {
			if !benchmark.StageApplies(path, false, k) {
				continue
			}
			n, e2e, op := 0, 0, 0
			for _, r := range latest {
				if r.Status != StatusOK || r.QAPath != path {
					continue
				}
				if a, _ := stageCorrect(r, k); !a {
					continue
				}
				n++
				chain := true
				for j := benchmark.StageDetection; j <= k; j++ {
					if a, c := stageCorrect(r, j); a && !c {
						chain = false
					}
				}
				if chain {
					e2e++
				}
				if _, c := stageCorrect(r, k); c {
					op++
				}
			}
			sa := StageAccuracy{Path: path, Stage: k, N: n}
			if n > 0 {
				e, o := float64(e2e)/float64(n), float64(op)/float64(n)
				sa.E2E, sa.OraclePassed = &e, &o
			}
			out = append(out, sa)
		}
	}
	return out
}

// BuildSummary computes summary.json from the run's records (every line;
// the last line per key_id counts). selected is the number of records the
// run selected; wallTime the seconds spent by the command(s) that wrote
// the run.
func BuildSummary(info RunInfo, selected int, recs []*Record, wallTime float64) *Summary {
	latest := Latest(recs)
	s := &Summary{Run: info, WallTimeS: wallTime}
	s.Counts.RecordsSelected = selected
	cost, priced := 0.0, true
	for _, r := range latest {
		if r.Status == StatusOK {
			s.Counts.RecordsOK++
		} else {
			s.Counts.RecordsError++
		}
		u := r.Usage
		s.Usage.InputTokens += u.InputTokens
		s.Usage.CachedInputTokens += u.CachedInputTokens
		s.Usage.OutputTokens += u.OutputTokens
		s.Usage.ThinkingTokens += u.ThinkingTokens
		if u.CostUSD == nil {
			priced = false
		} else {
			cost += *u.CostUSD
		}
		for i := range r.Turns {
			t := &r.Turns[i]
			if t.Status != TurnAsked {
				continue
			}
			s.Counts.Calls++
			if t.ParseOK != nil && !*t.ParseOK {
				s.Counts.ParseFailures++
			} else if t.ParseRule != nil && strings.HasPrefix(*t.ParseRule, "fail:") {
				s.Counts.ParseFailures++
			}
			if t.Raw != nil && *t.Raw == "" {
				s.Counts.EmptyAnswers++
			}
			if t.FinishReason != nil && *t.FinishReason == "length" {
				s.Counts.Truncations++
			}
			if t.Cached {
				s.Counts.CacheHits++
			}
		}
	}
	if priced {
		s.Usage.CostUSD = &cost
	}
	s.Accuracy = StageAccuracies(latest)
	return s
}

// Marshal writes the summary with the format.md §6 writer.
func (s *Summary) Marshal() ([]byte, error) {
	return ojson.EncodeIndent(s)
}
