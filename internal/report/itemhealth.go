package report

// Item health outputs (docs/item-health.md): item_stats.csv,
// flagged_items.csv, item_position_bias.csv, a report.md section and the
// flags of the HTML item browser. The numbers come from
// analysis.ComputeItemHealth.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// Item-health file names in the report directory. The CSVs are always
// written (header only when no mode has enough runs) so that a report
// never leaves an earlier report's flags behind in its directory.
const (
	ItemStatsFile    = "item_stats.csv"
	FlaggedItemsFile = "flagged_items.csv"
	PositionBiasFile = "item_position_bias.csv"
)

// FlaggedHeader is the header of flagged_items.csv; `review init --only`
// reads key_id, question, reason, gt, modal_answer, agree_share and
// n_runs.
var FlaggedHeader = []string{"oracle_mode", "key_id", "question", "turn", "reason", "n_runs", "agree_share", "gt", "modal_answer", "accuracy", "discrimination", "lesion", "path", "p_chance", "gt_text", "modal_text",
	"n_readers", "n_readers_modal", "n_readers_gt"}

// healthFiles returns the item-health CSVs.
func healthFiles(res *analysis.Result) map[string][]byte {
	return map[string][]byte{
		ItemStatsFile:    itemStatsCSV(res),
		FlaggedItemsFile: flaggedCSV(res),
		PositionBiasFile: biasCSV(res),
	}
}

func orNA(s string) string {
	if s == "" {
		return NA
	}
	return s
}

// NoFlag is item_stats.csv's reason for an item no rule flags: a value
// of its own, so that no reader of the file takes the row's reason for
// missing (an empty cell reads as null in pandas, Polars and DuckDB).
const NoFlag = "none"

// reasonText is the reason cell: the flag codes ;-joined, or NoFlag.
func reasonText(reasons []string) string {
	if len(reasons) == 0 {
		return NoFlag
	}
	return strings.Join(reasons, ";")
}

func itemStatsCSV(res *analysis.Result) []byte {
	header := []string{"oracle_mode", "key_id", "lesion", "path", "question", "turn", "gt", "n_answers", "n_runs", "n_correct", "accuracy", "difficulty",
		"modal_answer", "agree_share", "n_unparsed", "discrimination", "p_chance", "reason"}
	var rows [][]string
	for _, h := range res.Health {
		for i := range h.Items {
			s := &h.Items[i]
			rows = append(rows, []string{h.Mode, s.Key, s.Lesion, string(s.Path), s.Q.Name(), s.Q.Turn(), answerText(s.GT), itoa(s.Answers), itoa(s.Runs), itoa(s.Correct),
				f6(s.PCorrect), f6(s.Difficulty), answerText(orNA(s.Modal)), f6(s.AgreeShare()), itoa(s.Unparsed), f6(s.Discrimination), f6(s.PChance), reasonText(s.Reasons)})
		}
	}
	return results.CSV(header, rows)
}

func flaggedCSV(res *analysis.Result) []byte {
	var rows [][]string
	for _, h := range res.Health {
		for _, s := range h.Flags() {
			var rec *benchmark.Record
			if res.Set.Bench != nil {
				rec = res.Set.Bench.Lookup(s.Key)
			}
			rows = append(rows, []string{h.Mode, s.Key, s.Q.Name(), s.Q.Turn(), strings.Join(s.Reasons, ";"), itoa(s.Runs), f6(s.AgreeShare()), answerText(s.GT),
				answerText(orNA(s.Modal)), f6(s.PCorrect), f6(s.Discrimination), s.Lesion, string(s.Path), f6(s.PChance),
				OptionText(rec, s.Q, s.GT), OptionText(rec, s.Q, s.Modal), itoa(s.Readers), itoa(s.ReadersModal), itoa(s.ReadersGT)})
		}
	}
	return results.CSV(FlaggedHeader, rows)
}

func biasCSV(res *analysis.Result) []byte {
	header := []string{"oracle_mode", "question", "n_options", "option", "n_chosen", "chosen_share", "n_gt", "gt_share", "chi2", "df", "p_value"}
	var rows [][]string
	for _, h := range res.Health {
		for _, b := range h.Bias {
			for o := range b.K {
				rows = append(rows, []string{h.Mode, b.Q.Name(), itoa(b.K), itoa(o + 1), itoa(b.Chosen[o]), share(b.Chosen[o], b.NAn),
					itoa(b.GT[o]), share(b.GT[o], b.NItems), f6(b.Chi2), itoa(b.DF), f6(b.P)})
			}
		}
	}
	return results.CSV(header, rows)
}

func share(k, n int) string {
	if n == 0 {
		return NA
	}
	return f6(float64(k) / float64(n))
}

// TopFlagged is the number of flagged items report.md lists per mode.
const TopFlagged = 20

// healthMarkdown is report.md's item-health section; empty when no mode
// has a model's run (so a baselines-only report is unchanged).
func healthMarkdown(res *analysis.Result) []byte {
	if len(res.Health) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\n## Item health\n\n")
	fmt.Fprintf(&b, "Evidence about the items from the models' runs of each oracle mode (at least %d; baselines, image-removal controls and human readers never count: readers' answers are shown beside a flag, in flagged_items.csv and the item browser). "+
		"Flags: `unanimous_wrong` (every run asked gives the same wrong answer), `majority_wrong` (at least the flag share agree on one wrong answer), "+
		"`negative_discrimination` (at least %d runs; weak runs right where strong runs are wrong, one-sided p < %g), `parse_failures` (most runs' answers do not parse). "+
		"A rule is applied to an item only when its false-flag probability under random answering is at most %g; the expected number of false flags under random answering is shown beside the count. "+
		"Discrimination is the corrected item-total correlation and is noisy with few runs. See %s, %s and %s.\n",
		analysis.MinItemRuns, analysis.MinDiscRuns, analysis.DiscAlpha, analysis.MaxChance, ItemStatsFile, FlaggedItemsFile, PositionBiasFile)
	for _, h := range res.Health {
		fmt.Fprintf(&b, "\n### Item health (oracle %s)\n\n", h.Mode)
		if m := res.Set.Mixed; m != "" {
			fmt.Fprintf(&b, "> %s\n\n", textsafe.OneLine(m))
		}
		b.WriteString(healthSummary(h) + "\n")
		if h.Skipped != "" {
			continue
		}
		healthTop(&b, h)
		healthBias(&b, h)
	}
	return []byte(mdInert(b.String()))
}

// healthSummary is one oracle mode's item-health sentence.
func healthSummary(h *analysis.ItemHealth) string {
	if h.Skipped != "" {
		return fmt.Sprintf("Not computed: %s (runs: %s).", h.Skipped, strings.Join(h.Runs, ", "))
	}
	s := fmt.Sprintf("%d run(s): %s. %d of %d item questions flagged; under random answering %.1f (sd %.1f) would be flagged by chance. Flag share %g.",
		len(h.Runs), strings.Join(h.Runs, ", "), h.Flagged, len(h.Items), h.Expected, h.SD, h.FlagShare)
	if len(h.Readers) > 0 {
		s += fmt.Sprintf(" Readers shown beside the flags, not counted: %s.", strings.Join(h.Readers, ", "))
	}
	if len(h.ControlRuns) > 0 {
		s += fmt.Sprintf(" Image-control run(s), counted apart: %s. answerable_without_image: at least the flag share of them (and at least %d) answer the question right without the image, "+
			"where random answering would do so with probability at most %g: a text cue or a skewed answer set, so the question measures no perception.",
			strings.Join(h.ControlRuns, ", "), analysis.MinItemRuns, analysis.MaxChance)
	}
	return s
}

// healthView is index.html's item-health section.
type healthView struct {
	Intro string
	Modes []healthModeView
}

type healthModeView struct {
	Mode, Summary string
	Top, Bias     *table // nil when empty
	More          string // "N more in flagged_items.csv." or ""
	BiasNote      string
}

// healthHTML lays out index.html's item-health section from the numbers
// report.md shows; nil when report.md has no such section.
func healthHTML(res *analysis.Result) *healthView {
	if len(res.Health) == 0 {
		return nil
	}
	v := &healthView{Intro: fmt.Sprintf("A flag marks a question of an item whose answers, across the models' runs of one oracle mode (at least %d runs; baselines, image-removal controls and human readers never count), "+
		"suggest that the item may be mislabeled rather than hard, so that a reviewer should look at it again. "+
		"unanimous_wrong: every run gives the same wrong answer. majority_wrong: at least the flag share of the runs agree on one wrong answer. "+
		"negative_discrimination (at least %d runs): the weaker runs are right where the stronger runs are wrong (one-sided p < %g). parse_failures: most runs' answers cannot be read. "+
		"A rule is applied only where random answering would trigger it with probability at most %g; the number of flags random answering would give is shown beside the count. "+
		"Agree: the share of runs giving the most common (modal) answer. Correct: the share of runs that are right. "+
		"The item browser below shows each flagged item with every counted run's answer, and the readers' answers beside them (readers who answered alone: how many gave the models' modal answer and how many the ground truth; they do not count toward the flag) (Item health: flagged); review init --only %s sends them back to the reviewers.",
		analysis.MinItemRuns, analysis.MinDiscRuns, analysis.DiscAlpha, analysis.MaxChance, FlaggedItemsFile)}
	for _, h := range res.Health {
		m := healthModeView{Mode: h.Mode, Summary: healthSummary(h)}
		if h.Skipped == "" {
			if rows, more := healthTopRows(h); len(rows) > 0 {
				m.Top = &table{Title: "Flagged questions, strongest agreement first", Header: healthTopHeader, Rows: rows}
				if more > 0 {
					m.More = fmt.Sprintf("%d more in %s.", more, FlaggedItemsFile)
				}
			}
			if rows := healthBiasRows(h); len(rows) > 0 {
				m.Bias = &table{Title: "Position bias", Header: healthBiasHeader, Rows: rows}
				m.BiasNote = healthBiasNote
			}
		}
		v.Modes = append(v.Modes, m)
	}
	return v
}

// healthTop lists the first TopFlagged flagged items, strongest agreement
// first (ties: benchmark order).
func healthTop(b *strings.Builder, h *analysis.ItemHealth) {
	rows, more := healthTopRows(h)
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n| Key | Question | Reason | Runs | Agree | GT | Modal answer | Correct (%) |\n|---|---|---|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		r[0] = mdEscape(r[0])
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	if more > 0 {
		fmt.Fprintf(b, "\n%d more in %s.\n", more, FlaggedItemsFile)
	}
}

// healthTopHeader heads the rows of healthTopRows.
var healthTopHeader = []string{"Key", "Question", "Reason", "Runs", "Agree", "GT", "Modal answer", "Correct (%)"}

// healthTopRows are the first TopFlagged flagged questions, strongest
// agreement first (ties: benchmark order), and how many more there are.
func healthTopRows(h *analysis.ItemHealth) (rows [][]string, more int) {
	flags := h.Flags()
	sortFlags(flags)
	for i, s := range flags {
		if i == TopFlagged {
			return rows, len(flags) - TopFlagged
		}
		rows = append(rows, []string{s.Key, s.Q.Turn() + " " + s.Q.Name(), strings.Join(s.Reasons, ", "),
			strconv.Itoa(s.Runs), pctOrNA(s.AgreeShare()), s.GT, orNA(s.Modal), pctOrNA(s.PCorrect)})
	}
	return rows, 0
}

// sortFlags orders by agreement, highest first; flags come in benchmark
// order and the stable sort keeps it for ties.
func sortFlags(flags []*analysis.ItemStat) {
	slices.SortStableFunc(flags, func(a, b *analysis.ItemStat) int { return cmp.Compare(b.AgreeShare(), a.AgreeShare()) })
}

func healthBias(b *strings.Builder, h *analysis.ItemHealth) {
	if len(h.Bias) == 0 {
		return
	}
	b.WriteString("\n" + healthBiasNote + "\n\n")
	b.WriteString("| Question | Options | Chosen (%) | Ground truth (%) | χ² | df | p |\n|---|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range healthBiasRows(h) {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
}

const healthBiasNote = "Position bias (single-choice questions): chosen option index against the ground-truth index, chi-square test of homogeneity. " +
	"Answers to one item are correlated across runs, so the p-values are optimistic; read them as a screen."

// healthBiasHeader heads the rows of healthBiasRows.
var healthBiasHeader = []string{"Question", "Options", "Chosen (%)", "Ground truth (%)", "χ²", "df", "p"}

// healthBiasRows are the position-bias rows, one per single-choice question.
func healthBiasRows(h *analysis.ItemHealth) [][]string {
	var rows [][]string
	for _, p := range h.Bias {
		ch, gt := make([]string, p.K), make([]string, p.K)
		for o := range p.K {
			ch[o], gt[o] = pctOf(p.Chosen[o], p.NAn), pctOf(p.GT[o], p.NItems)
		}
		rows = append(rows, []string{p.Q.Name(), strconv.Itoa(p.K), strings.Join(ch, " / "), strings.Join(gt, " / "),
			fmtNum(p.Chi2, "%.2f"), strconv.Itoa(p.DF), fmtNum(p.P, "%.3g")})
	}
	return rows
}

func pctOf(k, n int) string {
	if n == 0 {
		return NAText
	}
	return pct(float64(k) / float64(n))
}

func fmtNum(x float64, f string) string {
	if math.IsNaN(x) {
		return NAText
	}
	return fmt.Sprintf(f, x)
}

// indexFlag is one flagged question of an item in the browser's index.
type indexFlag struct {
	Item    int      `json:"i"` // index into keys
	Mode    string   `json:"mode"`
	Turn    string   `json:"turn"`
	Q       string   `json:"q"`
	Reasons []string `json:"reasons"`
	Runs    int      `json:"runs"`
	Agree   float64  `json:"agree"`
	GT      string   `json:"gt"`
	Modal   string   `json:"modal"`
	From    []string `json:"from"` // the counted runs' names
	// Readers are the readers' runs shown beside the flag, ReadersModal
	// and ReadersGT how many of the ReadersAsked who were asked gave the
	// modal answer and the ground truth.
	Readers      []string `json:"readers,omitempty"`
	ReadersAsked int      `json:"readers_asked,omitempty"`
	ReadersModal int      `json:"readers_modal,omitempty"`
	ReadersGT    int      `json:"readers_gt,omitempty"`
}

// indexFlags lists the flagged questions of the browser's items.
func indexFlags(res *analysis.Result, items []*item) []indexFlag {
	pos := make(map[string]int, len(items))
	for i, it := range items {
		pos[it.key] = i
	}
	var out []indexFlag
	for _, h := range res.Health {
		for _, s := range h.Flags() {
			i, ok := pos[s.Key]
			if !ok {
				continue
			}
			out = append(out, indexFlag{Item: i, Mode: h.Mode, Turn: s.Q.Turn(), Q: s.Q.Name(), Reasons: s.Reasons,
				Runs: s.Runs, Agree: s.AgreeShare(), GT: s.GT, Modal: s.Modal, From: h.Runs,
				Readers: h.Readers, ReadersAsked: s.Readers, ReadersModal: s.ReadersModal, ReadersGT: s.ReadersGT})
		}
	}
	return out
}

// OptionText names the options of a canonical answer ("2", "1,3") of
// question q of rec, joined by " + " ("" when unknown), so that a reviewer
// reads the answers rather than their indices.
func OptionText(rec *benchmark.Record, q benchmark.Question, ans string) string {
	opts := optionNames(rec, q)
	if opts == nil || ans == "" {
		return ""
	}
	var names []string
	for _, p := range strings.Split(ans, ",") {
		i, err := strconv.Atoi(p)
		if err != nil || i < 1 || i > len(opts) {
			return ""
		}
		names = append(names, opts[i-1])
	}
	return strings.Join(names, " + ")
}

// optionNames lists the answer options of question q of rec.
func optionNames(rec *benchmark.Record, q benchmark.Question) []string {
	if rec == nil {
		return nil
	}
	points := func(o []benchmark.PointOption) []string {
		out := make([]string, len(o))
		for i, p := range o {
			out[i] = p.Color + " point"
			if p.Point == nil {
				out[i] = "None"
			}
		}
		return out
	}
	c, a := rec.Contour, rec.Attributes
	switch {
	case q == benchmark.QDetection:
		return rec.Detection.AnswerOptions
	case c != nil && q == benchmark.QContourEval:
		return c.ContourEval.AnswerOptions
	case c != nil && q == benchmark.QExpansion:
		return points(c.Expansion.AnswerOptions)
	case c != nil && q == benchmark.QContraction:
		return points(c.Contraction.AnswerOptions)
	case c != nil && q == benchmark.QRevisionResult:
		out := make([]string, len(c.RevisionResult.AnswerOptions))
		for i, o := range c.RevisionResult.AnswerOptions {
			out[i] = fmt.Sprintf("mask %d (%s)", i+1, o.Type)
		}
		return out
	case a != nil && q == benchmark.QDistribution:
		return a.Distribution.AnswerOptions
	case a != nil && q == benchmark.QLocation:
		return a.Location.AnswerOptions
	case a != nil && q == benchmark.QSeverity:
		return a.Severity.AnswerOptions
	case a != nil && q == benchmark.QComparison:
		return a.Comparison.AnswerOptions
	}
	return nil
}
