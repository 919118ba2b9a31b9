package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
)

// NAText is shown in report.md and index.html for a cell that does not
// apply or has n = 0.
const NAText = "N/A"

func pct(x float64) string { return fmt.Sprintf("%.1f", 100*x) }

// pctCI formats a share as "85.7 [80.1–90.2]".
func pctCI(p analysis.Prop, applicable bool) string {
	if !applicable || !p.Valid {
		return NAText
	}
	return fmt.Sprintf("%s [%s–%s]", pct(p.Value), pct(p.Lo), pct(p.Hi))
}

func depthCI(d *analysis.DepthCell) string {
	if d == nil || !d.Valid {
		return NAText
	}
	return fmt.Sprintf("%.2f [%.2f–%.2f]", d.Mean, d.Lo, d.Hi)
}

func pctOrNA(x float64) string {
	if math.IsNaN(x) {
		return NAText
	}
	return pct(x)
}

// doc is the report's text content: paragraphs and tables, rendered
// both as report.md and inside index.html.
type doc struct {
	Intro    []string
	Warnings []string
	Sections []*section
}

// section is one oracle mode's tables.
type section struct {
	Mode   string
	Note   string
	Tables []*table
}

// table is one titled table; the first column is a row label.
type table struct {
	Title  string
	Header []string
	Rows   [][]string
	ID     string // anchor in index.html
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func newTable(sec *section, title string, header ...string) *table {
	t := &table{Title: title, Header: header, ID: fmt.Sprintf("t-%s-%d", sec.Mode, len(sec.Tables)+1)}
	sec.Tables = append(sec.Tables, t)
	return t
}

func (t *table) row(cells ...string) { t.Rows = append(t.Rows, cells) }

func (t *table) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "\n### %s\n\n", t.Title)
	line := func(cells []string) {
		esc := make([]string, len(cells))
		for i, c := range cells {
			esc[i] = mdEscape(c)
		}
		b.WriteString("| " + strings.Join(esc, " | ") + " |\n")
	}
	line(t.Header)
	seps := make([]string, len(t.Header))
	for i := range seps {
		seps[i] = "---"
		if i > 0 {
			seps[i] = "--:"
		}
	}
	b.WriteString("|" + strings.Join(seps, "|") + "|\n")
	for _, r := range t.Rows {
		line(r)
	}
}

// markdown renders report.md.
func markdown(d *doc) []byte {
	var b strings.Builder
	b.WriteString("# CheXpercept report\n")
	for _, p := range d.Intro {
		b.WriteString("\n" + p + "\n")
	}
	if len(d.Warnings) > 0 {
		b.WriteString("\n## Warnings\n\n")
		for _, w := range d.Warnings {
			fmt.Fprintf(&b, "- %s\n", w)
		}
	}
	for _, s := range d.Sections {
		fmt.Fprintf(&b, "\n## Oracle mode: %s\n", s.Mode)
		if s.Note != "" {
			b.WriteString("\n" + s.Note + "\n")
		}
		for _, t := range s.Tables {
			t.markdown(&b)
		}
	}
	return []byte(b.String())
}

// modeRuns are the scored runs of one oracle mode, in run-name order.
func modeRuns(res *analysis.Result, mode string) []*analysis.RunResult {
	var out []*analysis.RunResult
	for _, rr := range res.Runs {
		if rr.Run.OracleMode == mode && rr.Scored {
			out = append(out, rr)
		}
	}
	return out
}

func stageView(c *analysis.StageCell, view string) analysis.Prop {
	switch view {
	case "oracle_passed":
		return c.OP
	case "conditional":
		return c.Cond
	}
	return c.E2E
}

var viewTitle = map[string]string{"e2e": "End-to-end accuracy (%)", "oracle_passed": "Oracle-passed accuracy (%)", "conditional": "Conditional accuracy (%)"}

// chancePct shows tiny chance levels as "<0.1" rather than a misleading 0.0.
func chancePct(x float64) string {
	if x > 0 && x < 0.0005 {
		return "<0.1"
	}
	return pctOrNA(x)
}

func chanceCell(res *analysis.Result, path, lesion, target string, majority bool) string {
	c := res.Chance.Get(path, lesion, target)
	if c == nil || c.N == 0 {
		return NAText
	}
	if majority {
		if target == "depth" {
			return fmt.Sprintf("%.2f", c.MajorityAcc)
		}
		return pctOrNA(c.MajorityAcc)
	}
	if target == "depth" {
		return fmt.Sprintf("%.2f", c.Uniform)
	}
	return chancePct(c.Uniform)
}

// buildDoc lays out every table of the report.
func buildDoc(res *analysis.Result, warnings []string, ver string) *doc {
	d := &doc{Warnings: warnings}
	d.Intro = append(d.Intro, fmt.Sprintf("Written by chexpercept %s from %d run(s). Accuracies are percentages with Wilson 95 %% intervals; depth is the mean number of stages answered correctly in a row, with a bootstrap 95 %% interval (B = %d). N/A marks a stage that does not apply to a path or a cell without records. Error policy: %s.\n",
		ver, len(res.Runs), res.Options.Bootstrap, res.Options.ErrorPolicy))
	if res.Chance != nil {
		d.Intro = append(d.Intro, "The rows *chance* (uniform guessing) and *majority* (always the most frequent answer of each question type) are computed from the benchmark alone.")
	}
	for _, mode := range res.Modes() {
		runs := modeRuns(res, mode)
		sec := &section{Mode: mode}
		d.Sections = append(d.Sections, sec)
		if len(runs) == 0 {
			sec.Note = "No run of this mode has a usable results.jsonl; see the reference CSVs."
			continue
		}
		// The order of the calls is the order of the tables (and their IDs).
		m := &modeDoc{res: res, sec: sec, runs: runs, mode: mode, on: "(oracle " + mode + ")"}
		m.leaderboard()
		for _, view := range views {
			for _, path := range analysis.Paths {
				m.stageTable(view, path)
			}
		}
		m.subTable("Contour revision sub-questions (%), revision_required", analysis.Paths[0], []int{2, 3, 4})
		m.subTable("Attribute sub-questions (%), revision_required+revision_free pooled", analysis.PooledPath, []int{5, 6, 7, 8})
		m.subTable("Attribute sub-questions (%), revision_required", analysis.Paths[0], []int{5, 6, 7, 8})
		m.subTable("Attribute sub-questions (%), revision_free", analysis.Paths[1], []int{5, 6, 7, 8})
		m.subTable("Detection and contour evaluation (%), revision_required", analysis.Paths[0], []int{0, 1})
		m.subTable("Detection and contour evaluation (%), revision_free", analysis.Paths[1], []int{0, 1})
		m.subTable("Detection (%), lesion_free", analysis.Paths[2], []int{0})
		// Per lesion: depth, and the final stage's e2e, per path.
		for _, path := range analysis.Paths {
			m.lesionDepthTable(path)
		}
		for _, rr := range runs {
			m.lesionStageTable(rr)
		}
		m.parseTable()
		m.usageTable()
		m.pairsTable()
	}
	return d
}

// modeDoc lays out the tables of one oracle mode's section.
type modeDoc struct {
	res  *analysis.Result
	sec  *section
	runs []*analysis.RunResult // the mode's scored runs
	mode string
	on   string // "(oracle MODE)", the end of every title
}

// chanceRowNames are the reference rows' labels; majority is the second.
var chanceRowNames = [2]string{"*chance*", "*majority*"}

func (m *modeDoc) leaderboard() {
	t := newTable(m.sec, "Leaderboard "+m.on, "Model", "Parse", "Records", "Errors", "Depth RR", "Depth RF", "Depth LF", "E2E RR stage 4 (%)", "E2E RF stage 4 (%)", "E2E LF stage 1 (%)")
	for _, rr := range m.runs {
		t.row(leaderName(rr.Run), rr.Run.ParseMode, itoa(rr.Usage.NItems), itoa(rr.Usage.NError),
			depthCI(rr.DepthOf(analysis.Paths[0], "all")), depthCI(rr.DepthOf(analysis.Paths[1], "all")), depthCI(rr.DepthOf(analysis.Paths[2], "all")),
			pctCI(rr.Stage(analysis.Paths[0], "all", 4).E2E, true), pctCI(rr.Stage(analysis.Paths[1], "all", 4).E2E, true), pctCI(rr.Stage(analysis.Paths[2], "all", 1).E2E, true))
	}
}

// stageTable is one view's accuracy per stage on one path (and the depth
// for e2e), with the chance and majority rows except for the
// conditional view.
func (m *modeDoc) stageTable(view, path string) {
	hdr := []string{"Model", "n"}
	for k := 1; k <= 4; k++ {
		hdr = append(hdr, fmt.Sprintf("Stage %d", k))
	}
	if view == "e2e" {
		hdr = append(hdr, "Depth")
	}
	t := newTable(m.sec, fmt.Sprintf("%s, %s %s", viewTitle[view], path, m.on), hdr...)
	for _, rr := range m.runs {
		row := []string{rr.Run.Name, itoa(rr.DepthOf(path, "all").N)}
		for k := 1; k <= 4; k++ {
			c := rr.Stage(path, "all", k)
			row = append(row, pctCI(stageView(c, view), c.Applicable))
		}
		if view == "e2e" {
			row = append(row, depthCI(rr.DepthOf(path, "all")))
		}
		t.row(row...)
	}
	if m.res.Chance == nil || view == "conditional" {
		return
	}
	for i, name := range chanceRowNames {
		maj := i == 1
		row := []string{name, ""}
		for k := 1; k <= 4; k++ {
			target := fmt.Sprintf("e2e_%d", k)
			if view == "oracle_passed" {
				target = fmt.Sprintf("stage_%d", k)
			}
			if analysis.StageApplies(path, "all", k) {
				row = append(row, chanceCell(m.res, path, "all", target, maj))
			} else {
				row = append(row, NAText)
			}
		}
		if view == "e2e" {
			row = append(row, chanceCell(m.res, path, "all", "depth", maj))
		}
		t.row(row...)
	}
}

// subTable is the accuracy of the question types qs (indexes into
// analysis.Questions) on one path, then the Jaccard index of those that
// are multi-select, with the chance and majority rows.
func (m *modeDoc) subTable(title, path string, qs []int) {
	hdr := []string{"Model", "n"}
	for _, q := range qs {
		hdr = append(hdr, analysis.Questions[q])
	}
	for _, q := range qs {
		if analysis.IsMultiQuestion(q) {
			hdr = append(hdr, "Jaccard "+analysis.Questions[q])
		}
	}
	t := newTable(m.sec, title+" "+m.on, hdr...)
	for _, rr := range m.runs {
		row := []string{rr.Run.Name, itoa(rr.SubOf(path, "all", analysis.Questions[qs[0]]).Acc.N)}
		for _, q := range qs {
			c := rr.SubOf(path, "all", analysis.Questions[q])
			row = append(row, pctCI(c.Acc, c.Applicable))
		}
		for _, q := range qs {
			if !analysis.IsMultiQuestion(q) {
				continue
			}
			if c := rr.SubOf(path, "all", analysis.Questions[q]); c.Acc.Valid {
				row = append(row, fmt.Sprintf("%.3f", c.Jaccard))
			} else {
				row = append(row, NAText)
			}
		}
		t.row(row...)
	}
	if m.res.Chance == nil {
		return
	}
	for i, name := range chanceRowNames {
		row := []string{name, ""}
		for _, q := range qs {
			row = append(row, chanceCell(m.res, path, "all", analysis.Questions[q], i == 1))
		}
		for _, q := range qs {
			if analysis.IsMultiQuestion(q) {
				row = append(row, "")
			}
		}
		t.row(row...)
	}
}

// lesionDepthTable is the depth per lesion on one path.
func (m *modeDoc) lesionDepthTable(path string) {
	hdr := []string{"Model"}
	hdr = append(hdr, analysis.Lesions[1:]...)
	t := newTable(m.sec, fmt.Sprintf("Depth by lesion, %s %s", path, m.on), hdr...)
	for _, rr := range m.runs {
		row := []string{rr.Run.Name}
		for _, l := range analysis.Lesions[1:] {
			row = append(row, depthCI(rr.DepthOf(path, l)))
		}
		t.row(row...)
	}
	if m.res.Chance != nil {
		row := []string{"*chance*"}
		for _, l := range analysis.Lesions[1:] {
			row = append(row, chanceCell(m.res, path, l, "depth", false))
		}
		t.row(row...)
	}
}

// lesionStageTable is one run's e2e accuracy per lesion at every stage
// that applies, path by path.
func (m *modeDoc) lesionStageTable(rr *analysis.RunResult) {
	hdr := []string{"Lesion"}
	for _, path := range analysis.Paths {
		for k := 1; k <= 4; k++ {
			if analysis.StageApplies(path, "all", k) {
				hdr = append(hdr, fmt.Sprintf("%s s%d", pathShort[path], k))
			}
		}
	}
	t := newTable(m.sec, fmt.Sprintf("End-to-end accuracy (%%) by lesion and path, %s %s", rr.Run.Name, m.on), hdr...)
	for _, l := range analysis.Lesions {
		row := []string{l}
		for _, path := range analysis.Paths {
			for k := 1; k <= 4; k++ {
				if analysis.StageApplies(path, "all", k) {
					c := rr.Stage(path, l, k)
					row = append(row, pctCI(c.E2E, c.Applicable))
				}
			}
		}
		t.row(row...)
	}
}

func (m *modeDoc) parseTable() {
	t := newTable(m.sec, "Parse failures and errors "+m.on, "Model", "Records", "Errors", "Calls", "Parse failures", "Rate (%)", "Out of range", "Empty", "Truncated")
	for _, rr := range m.runs {
		p := rr.Parse[len(rr.Parse)-1]
		rate := NAText
		if p.NAsked > 0 {
			rate = pct(float64(p.NFail) / float64(p.NAsked))
		}
		t.row(rr.Run.Name, itoa(rr.Usage.NItems), itoa(rr.Usage.NError), itoa(p.NAsked), itoa(p.NFail), rate, itoa(p.NOutOfRange), itoa(p.NEmpty), itoa(p.NTrunc))
	}
}

func (m *modeDoc) usageTable() {
	t := newTable(m.sec, "Usage "+m.on, "Model", "Calls", "Input tokens", "Cached input", "Output tokens", "Thinking tokens", "Cost (USD)", "Latency p50 (ms)", "Latency p95 (ms)")
	lat := func(x float64) string {
		if math.IsNaN(x) {
			return NAText
		}
		return fmt.Sprintf("%.0f", x)
	}
	for _, rr := range m.runs {
		u := rr.Usage
		cost := NAText
		if !math.IsNaN(u.Cost) {
			cost = fmt.Sprintf("%.4f", u.Cost)
		}
		t.row(rr.Run.Name, itoa(u.NCalls), fmt.Sprint(u.InputTokens), fmt.Sprint(u.CachedInputTokens), fmt.Sprint(u.OutputTokens), fmt.Sprint(u.Thinking), cost, lat(u.LatencyP50), lat(u.LatencyP95))
	}
}

// pairsTable is the paired differences over all lesions, when the
// analysis compared runs of this mode.
func (m *modeDoc) pairsTable() {
	var pairs []analysis.PairRow
	for _, p := range m.res.Pairs {
		if p.OracleMode == m.mode && p.Lesion == "all" {
			pairs = append(pairs, p)
		}
	}
	if len(pairs) == 0 {
		return
	}
	t := newTable(m.sec, "Paired differences A − B, lesion all "+m.on+"; shares in points, depth in stages; per-lesion rows in ext_pairwise.csv",
		"A", "B", "Path", "Metric", "Value A", "Value B", "A − B [95% CI]", "n paired")
	for _, p := range pairs {
		switch {
		case !p.Valid:
			t.row(p.ModelA, p.ModelB, p.Path, p.Metric, NAText, NAText, NAText, "0")
		case p.Metric == "depth":
			t.row(p.ModelA, p.ModelB, p.Path, p.Metric, fmt.Sprintf("%.2f", p.ValueA), fmt.Sprintf("%.2f", p.ValueB),
				fmt.Sprintf("%+.2f [%+.2f, %+.2f]", p.Diff, p.Lo, p.Hi), itoa(p.NPaired))
		default:
			t.row(p.ModelA, p.ModelB, p.Path, p.Metric, pct(p.ValueA), pct(p.ValueB),
				fmt.Sprintf("%+.1f [%+.1f, %+.1f]", 100*p.Diff, 100*p.Lo, 100*p.Hi), itoa(p.NPaired))
		}
	}
}

// leaderName is a run's name in the leaderboard, marked when the run has
// results for only part of its selection (the warnings say more).
func leaderName(r *analysis.Run) string {
	if !r.Partial() {
		return r.Name
	}
	state := "partial"
	if r.Live {
		state = "running"
	}
	return fmt.Sprintf("%s (%s %d/%d)", r.Name, state, r.Finished, r.Selected)
}

var pathShort = map[string]string{"revision_required": "RR", "revision_free": "RF", "lesion_free": "LF"}
