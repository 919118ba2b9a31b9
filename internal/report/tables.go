package report

import (
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/results"
)

// NA is written in our CSVs for a value that is undefined: a rate over
// no records, an interval without one, a name that is unknown. A count
// is never NA: it is 0.
const NA = "NA"

// f6 is a number with 6 decimals, NA when undefined; a value that rounds
// to 0 is "0.000000", never "-0.000000" (a rounding residue's sign is
// not information).
func f6(x float64) string {
	if math.IsNaN(x) {
		return NA
	}
	if s := strconv.FormatFloat(x, 'f', 6, 64); s != "-0.000000" {
		return s
	}
	return "0.000000"
}

func itoa(i int) string { return strconv.Itoa(i) }

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// propFields are n_records, n_correct, accuracy, ci_low, ci_high of a
// share.
func propFields(p analysis.Prop, applicable bool) []string {
	if !applicable {
		return []string{"0", "0", NA, NA, NA}
	}
	if !p.Valid {
		return []string{itoa(p.N), itoa(p.K), NA, NA, NA}
	}
	return []string{itoa(p.N), itoa(p.K), f6(p.Value), f6(p.Lo), f6(p.Hi)}
}

// refCSVs returns the three all-models reference CSVs of one oracle mode
// (spec §10.2): per-model rows concatenated, runs in byte-sorted run-name
// order (the analysis keeps runs in that order).
func refCSVs(res *analysis.Result, mode string) map[string][]byte {
	var sum, con, att [][]string
	for _, rr := range res.Runs {
		run := rr.Run
		if run.OracleMode != mode || run.Ref == nil {
			continue
		}
		label := results.RefLabel(run.Name)
		sum = append(sum, run.Ref.SummaryRows(label)...)
		con = append(con, run.Ref.ContourRows(label)...)
		att = append(att, run.Ref.AttributeRows(label)...)
	}
	return map[string][]byte{
		"all_models_summary.csv":                     results.CSV(results.RefSummaryHeader, sum),
		"all_models_contour_revision_detail.csv":     results.CSV(results.RefContourHeader, con),
		"all_models_attribute_extraction_detail.csv": results.CSV(results.RefAttributeHeader, att),
	}
}

// RefDir is the folder of one oracle mode's all-models CSVs.
func RefDir(mode string) string { return "all_models_oracle_" + mode }

// runHeader are the first columns of every per-run ext_*.csv: the run
// and the model alias (as in samples.*; run and oracle_mode are the key
// that joins them), then how the run was made.
var runHeader = []string{"run", "model", "provider", "oracle_mode", "parse_mode"}

func runCols(rr *analysis.RunResult) []string {
	return []string{rr.Run.Name, orNA(rr.Run.Model), rr.Run.Provider, rr.Run.OracleMode, rr.Run.ParseMode}
}

// withRun is runHeader followed by cols.
func withRun(cols ...string) []string { return append(slices.Clone(runHeader), cols...) }

// Settings of a stage accuracy (column setting), named as in the
// reference's all_models_summary.csv, plus our conditional accuracy.
var settings = []string{"end_to_end", "oracle_passed", "conditional"}

func extStage(res *analysis.Result) []byte {
	header := withRun("path", "lesion", "stage", "setting", "applicable", "n_records", "n_correct", "accuracy", "ci_low", "ci_high")
	var rows [][]string
	for _, rr := range res.Runs {
		if !rr.Scored {
			continue
		}
		for _, c := range rr.Stages {
			for _, v := range settings {
				p := stageView(&c, v)
				row := append(runCols(rr), string(c.Path), c.Lesion, itoa(int(c.Stage)), v, boolStr(c.Applicable))
				rows = append(rows, append(row, propFields(p, c.Applicable)...))
			}
		}
	}
	return results.CSV(header, rows)
}

func extDepth(res *analysis.Result) []byte {
	header := withRun("path", "lesion", "n_records", "depth_mean", "ci_low", "ci_high", "depth_max", "depth_norm")
	var rows [][]string
	for _, rr := range res.Runs {
		if !rr.Scored {
			continue
		}
		for _, d := range rr.Depth {
			row := append(runCols(rr), string(d.Path), d.Lesion, itoa(d.N))
			if d.Valid {
				row = append(row, f6(d.Mean), f6(d.Lo), f6(d.Hi), itoa(d.Max), f6(d.Mean/float64(d.Max)))
			} else {
				row = append(row, NA, NA, NA, itoa(d.Max), NA)
			}
			rows = append(rows, row)
		}
	}
	return results.CSV(header, rows)
}

// subRows lists a run's sub-question cells in table order: per path
// (RR, RF, LF, then pooled RR+RF) and lesion, the questions of the path.
func subRows(rr *analysis.RunResult, lesions []string) []*analysis.SubCell {
	var out []*analysis.SubCell
	for _, path := range append(slices.Clone(benchmark.Paths), analysis.PooledPath) {
		for _, lesion := range lesions {
			for _, q := range benchmark.Questions {
				if path == analysis.PooledPath {
					if q.Stage() != benchmark.StageAttributeExtraction {
						continue
					}
				} else if !benchmark.Applies(path, false, q) {
					continue
				}
				if c := rr.SubOf(path, lesion, q); c != nil {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func extSub(res *analysis.Result) []byte {
	header := withRun("path", "lesion", "question", "n_records", "n_correct", "accuracy", "ci_low", "ci_high", "jaccard_mean", "chance")
	var rows [][]string
	for _, rr := range res.Runs {
		if !rr.Scored {
			continue
		}
		for _, c := range subRows(rr, res.Lesions) {
			row := append(runCols(rr), string(c.Path), c.Lesion, c.Q.Name())
			row = append(row, propFields(c.Acc, c.Applicable)...)
			jac, chance := NA, NA
			if c.Applicable && c.Acc.Valid {
				jac = f6(c.Jaccard)
			}
			if ch := res.Chance.Get(c.Path, c.Lesion, c.Q.Name()); ch != nil && c.Applicable {
				chance = f6(ch.Uniform)
			}
			rows = append(rows, append(row, jac, chance))
		}
	}
	return results.CSV(header, rows)
}

func extParse(res *analysis.Result) []byte {
	header := withRun("question", "n_asked", "n_parse_fail", "parse_fail_rate", "n_out_of_range", "n_empty", "n_truncated")
	var rows [][]string
	for _, rr := range res.Runs {
		if !rr.Scored {
			continue
		}
		for _, p := range rr.Parse {
			rate := NA
			if p.NAsked > 0 {
				rate = f6(float64(p.NFail) / float64(p.NAsked))
			}
			rows = append(rows, append(runCols(rr), p.Question, itoa(p.NAsked), itoa(p.NFail), rate, itoa(p.NOutOfRange), itoa(p.NEmpty), itoa(p.NTrunc)))
		}
	}
	return results.CSV(header, rows)
}

func extUsage(res *analysis.Result) []byte {
	header := withRun("n_records", "n_ok", "n_error", "n_calls", "input_tokens", "cached_input_tokens", "output_tokens", "thinking_tokens", "cost_usd", "latency_ms_p50", "latency_ms_p95")
	var rows [][]string
	i64 := func(x int64) string { return strconv.FormatInt(x, 10) }
	for _, rr := range res.Runs {
		if !rr.Scored {
			continue
		}
		u := rr.Usage
		lat := func(x float64) string {
			if math.IsNaN(x) {
				return NA
			}
			return strconv.FormatFloat(x, 'f', 1, 64)
		}
		rows = append(rows, append(runCols(rr), itoa(u.NItems), itoa(u.NOK), itoa(u.NError), itoa(u.NCalls),
			i64(u.InputTokens), i64(u.CachedInputTokens), i64(u.OutputTokens), i64(u.Thinking), f6(u.Cost), lat(u.LatencyP50), lat(u.LatencyP95)))
	}
	return results.CSV(header, rows)
}

func extChance(res *analysis.Result) []byte {
	header := []string{"path", "lesion", "target", "kind", "n_records", "chance", "majority_answer", "majority_accuracy"}
	var rows [][]string
	if res.Chance != nil {
		for _, c := range res.Chance.Rows {
			maj := c.MajorityAnswer
			if maj == "" {
				maj = NA
			}
			rows = append(rows, []string{string(c.Path), c.Lesion, c.Target, c.Kind, itoa(c.N), f6(c.Uniform), answerText(maj), f6(c.MajorityAcc)})
		}
	}
	return results.CSV(header, rows)
}

func extPairwise(res *analysis.Result) []byte {
	header := []string{"run_a", "run_b", "oracle_mode", "path", "lesion", "metric", "value_a", "value_b", "difference", "ci_low", "ci_high", "n_paired"}
	var rows [][]string
	for _, p := range res.Pairs {
		if !p.Valid {
			rows = append(rows, []string{p.ModelA, p.ModelB, p.OracleMode, string(p.Path), p.Lesion, p.Metric, NA, NA, NA, NA, NA, "0"})
			continue
		}
		rows = append(rows, []string{p.ModelA, p.ModelB, p.OracleMode, string(p.Path), p.Lesion, p.Metric, f6(p.ValueA), f6(p.ValueB), f6(p.Diff), f6(p.Lo), f6(p.Hi), itoa(p.NPaired)})
	}
	return results.CSV(header, rows)
}

// num is a JSON number, or null for NaN / invalid.
func num(x float64, valid bool) *ojson.Value {
	if !valid || math.IsNaN(x) {
		return ojson.Null()
	}
	return ojson.Float(x)
}

// SummarySchemaVersion is the schema_version of the report's
// summary.json. A report summary.json without the member is version 1,
// which differs only by lacking it.
const SummarySchemaVersion = 2

// summaryJSON is summary.json (spec §10.4), with the §6 writer.
func summaryJSON(res *analysis.Result, warnings []string) []byte {
	models := ojson.Arr()
	for _, rr := range res.Runs {
		run := rr.Run
		nrec, nerr := rr.Usage.NItems, rr.Usage.NError
		metrics := ojson.Arr()
		for _, h := range rr.Headlines() {
			metrics.A = append(metrics.A, ojson.NewObject().
				Set("path", ojson.Str(string(h.Path))).
				Set("metric", ojson.Str(h.Metric)).
				Set("n_records", ojson.Int(int64(h.N))).
				Set("value", num(h.Value, h.Valid)).
				Set("ci_low", num(h.Lo, h.Valid)).
				Set("ci_high", num(h.Hi, h.Valid)))
		}
		m := ojson.NewObject().
			Set("run", ojson.Str(run.Name)).
			Set("model", strOrNull(run.Model)).
			Set("provider", ojson.Str(run.Provider)).
			Set("oracle_mode", ojson.Str(run.OracleMode)).
			Set("parse_mode", ojson.Str(run.ParseMode)).
			Set("benchmark_sha256", strOrNull(run.BenchmarkSHA256)).
			Set("benchmark_identity", identityJSON(run.Identity)).
			Set("n_records", ojson.Int(int64(nrec))).
			Set("n_error", ojson.Int(int64(nerr))).
			Set("metrics", metrics).
			Set("server", strOrNull(run.Server)).
			Set("rehearsal", ojson.Bool(run.Kind == results.KindRehearsal))
		if run.Kind == results.KindRehearsal {
			m.Set("note", ojson.Str(analysis.RehearsalNote))
		}
		models.A = append(models.A, m)
	}
	inputs := ojson.Arr()
	for _, rr := range res.Runs {
		inputs.A = append(inputs.A, ojson.NewObject().
			Set("dir", ojson.Str(filepath.ToSlash(rr.Run.Dir))).
			Set("run", ojson.Str(rr.Run.Name)).
			Set("oracle_mode", ojson.Str(rr.Run.OracleMode)).
			Set("benchmark_sha256", strOrNull(rr.Run.BenchmarkSHA256)).
			Set("benchmark_identity", identityJSON(rr.Run.Identity)))
	}
	ws := ojson.Arr()
	for _, w := range warnings {
		ws.A = append(ws.A, ojson.Str(w))
	}
	bi := res.Set.Build
	bench := ojson.Null()
	if bi.Known {
		bench = ojson.NewObject().Set("review_mode", strOrNull(bi.ReviewMode)).Set("phantom_source", ojson.Bool(bi.Phantom)).
			Set("synthetic_or_unreviewed", ojson.Bool(bi.Phantom || bi.Unreviewed()))
	}
	bs := ojson.Arr()
	for _, b := range banners(res) {
		bs.A = append(bs.A, ojson.Str(b))
	}
	o := ojson.NewObject().Set("schema_version", ojson.Int(SummarySchemaVersion)).
		Set("runs", models).Set("inputs", inputs).Set("warnings", ws).
		Set("benchmark_build", bench).Set("banners", bs).
		Set("mixed_benchmarks", strOrNull(res.Set.Mixed))
	return ojson.Marshal(o)
}

// identityJSON is a run's benchmark identity in summary.json: {"file",
// "sha256"}, or null when unknown.
func identityJSON(id benchmark.Identity) *ojson.Value {
	if !id.Known() {
		return ojson.Null()
	}
	return ojson.NewObject().Set("file", ojson.Str(id.File)).Set("sha256", ojson.Str(id.SHA256))
}

func strOrNull(s string) *ojson.Value {
	if s == "" {
		return ojson.Null()
	}
	return ojson.Str(s)
}

// answerText writes a canonical answer set ("1,3", as the analysis keys
// answers) in the one encoding of our files, "1;3" (see answerSet); NA
// stays NA.
func answerText(canon string) string { return strings.ReplaceAll(canon, ",", ";") }
