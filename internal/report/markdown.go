package report

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/textsafe"
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
	// Banners say, before anything else, what the numbers are not: a
	// synthetic or unreviewed benchmark, rehearsal runs (provenance.go).
	Banners  []string
	Intro    []string
	Warnings []string
	Findings *findingsDoc // nil without model runs (and without readers)
	Image    *imageDoc    // nil without a control run paired with a model's (imagecontrol.go)
	Readers  *readersDoc  // nil without runs of human readers (readers.go)
	Sections []*section
	// Mixed is "" or the line that runs of different benchmarks are set
	// side by side (analysis.Set.Mixed), which every table carries.
	Mixed string
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
	Note   string // "" or a line shown under the title (runs of mixed benchmarks)
	Header []string
	Rows   [][]string
	ID     string   // anchor in index.html
	Notes  []string // sentences under the table (notes.go)
}

func mdEscape(s string) string { return strings.ReplaceAll(textsafe.OneLine(s), "|", `\|`) }

// markupStart is what a Markdown renderer takes for the start of an HTML
// tag, comment or character reference.
var markupStart = regexp.MustCompile(`[<&][A-Za-z/!?#]`)

// mdInert backslash-escapes every markupStart of report.md's text: run
// and model names are printed there, and a name such as
// "<img src=x onerror=…>" or "&#x202E;" must show as typed, not become
// markup (or a bidi override) in a Markdown viewer. The report's own
// text holds no HTML.
func mdInert(s string) string {
	return markupStart.ReplaceAllStringFunc(s, func(m string) string { return `\` + m })
}

func newTable(sec *section, title string, header ...string) *table {
	t := &table{Title: title, Header: header, ID: fmt.Sprintf("t-%s-%d", sec.Mode, len(sec.Tables)+1)}
	sec.Tables = append(sec.Tables, t)
	return t
}

func (t *table) row(cells ...string) { t.Rows = append(t.Rows, cells) }

func (t *table) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "\n### %s\n\n", t.Title)
	if t.Note != "" {
		fmt.Fprintf(b, "> %s\n\n", textsafe.OneLine(t.Note))
	}
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
	for _, n := range t.Notes {
		b.WriteString("\n" + mdInert(textsafe.OneLine(n)) + "\n")
	}
}

// note adds n under the table unless it is "".
func (t *table) note(n string) {
	if n != "" {
		t.Notes = append(t.Notes, n)
	}
}

// markdown renders report.md.
func markdown(d *doc) []byte {
	var b strings.Builder
	b.WriteString("# CheXpercept report\n")
	for _, p := range d.Banners {
		b.WriteString("\n> **" + p + "**\n")
	}
	for _, p := range d.Intro {
		b.WriteString("\n" + p + "\n")
	}
	if len(d.Warnings) > 0 {
		b.WriteString("\n## Warnings\n\n")
		for _, w := range d.Warnings {
			fmt.Fprintf(&b, "- %s\n", w)
		}
	}
	if d.Findings != nil {
		d.Findings.markdown(&b)
	}
	if d.Image != nil {
		d.Image.markdown(&b)
	}
	if d.Readers != nil {
		d.Readers.markdown(&b)
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
	glossaryMarkdown(&b)
	return []byte(mdInert(b.String()))
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

func stageView(c *analysis.StageCell, setting string) analysis.Prop {
	switch setting {
	case "oracle_passed":
		return c.OP
	case "conditional":
		return c.Cond
	}
	return c.E2E
}

var settingTitle = map[string]string{"end_to_end": "End-to-end accuracy (%)", "oracle_passed": "Oracle-passed accuracy (%)", "conditional": "Conditional accuracy (%)"}

// chancePct shows tiny chance levels as "<0.1" rather than a misleading 0.0.
func chancePct(x float64) string {
	if x > 0 && x < 0.0005 {
		return "<0.1"
	}
	return pctOrNA(x)
}

func chanceCell(res *analysis.Result, path benchmark.Path, lesion, target string, majority bool) string {
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
	d := &doc{Banners: banners(res), Warnings: warnings, Findings: buildFindings(res), Image: buildImageDoc(res), Readers: buildReaders(res)}
	// A reader study's analysis plan comes first: its primary result is
	// the study's answer, the rest exploratory.
	d.Intro = append(d.Intro, planParagraphs(res)...)
	d.Intro = append(d.Intro, fmt.Sprintf("Written by chexpercept %s from %d run(s). Accuracies are percentages with Wilson 95 %% intervals; depth is the mean number of stages answered correctly in a row, with a bootstrap 95 %% interval (B = %d). N/A marks a stage that does not apply to a path or a cell without records. Error policy: %s.\n",
		ver, len(res.Runs), res.Options.Bootstrap, res.Options.ErrorPolicy))
	if res.Chance != nil {
		d.Intro = append(d.Intro, "The rows *chance* (uniform guessing) and *majority* (always the most frequent answer of each question type) are computed from the benchmark alone.")
	}
	for _, mode := range res.Modes() {
		s := &sectionDoc{res: res, sec: &section{Mode: mode}, runs: modeRuns(res, mode), on: "(oracle " + mode + ")"}
		d.Sections = append(d.Sections, s.sec)
		if len(s.runs) == 0 {
			s.sec.Note = "No run of this mode has a usable results.jsonl; see the reference CSVs."
			continue
		}
		s.leaderboard()
		readersBoards(s)
		s.samplingTable()
		s.serverTable()
		for _, setting := range settings {
			for _, path := range benchmark.Paths {
				s.stageTable(setting, path)
			}
		}
		s.subTables()
		s.lesionTables()
		s.parseTable()
		s.usageTable()
		s.pairTable()
		s.benchmarkTable()
	}
	if m := res.Set.Mixed; m != "" {
		d.Mixed = m
		d.Banners = append(d.Banners, m)
		for _, t := range d.tables() {
			t.Note = m
		}
	}
	return d
}

// tables are every table of the report.
func (d *doc) tables() []*table {
	var out []*table
	if d.Findings != nil {
		out = append(out, d.Findings.Tables...)
	}
	if d.Image != nil {
		out = append(out, d.Image.Tables...)
	}
	if d.Readers != nil {
		out = append(out, d.Readers.Tables...)
	}
	for _, s := range d.Sections {
		out = append(out, s.Tables...)
	}
	return out
}

// benchmarkTable names the benchmark each run was made on: its identity
// (the file its SHA-256 is of, and the first digits; in full in
// summary.json), unknown for a run made before identities were recorded.
func (s *sectionDoc) benchmarkTable() {
	t := newTable(s.sec, "Benchmarks "+s.on, "Model", "Benchmark identity")
	for _, rr := range s.runs {
		t.row(rr.Run.Name, rr.Run.Identity.Short())
	}
}

// sectionDoc builds one oracle mode's section: its scored runs' tables,
// one method per table or group of tables, in report order.
type sectionDoc struct {
	res  *analysis.Result
	sec  *section
	runs []*analysis.RunResult
	on   string // "(oracle <mode>)", appended to titles
}

// leaderboard ranks the mode's runs on their own records; readers (a
// reader study reads a sample) are ranked apart, beside the models on
// the records they answered (readersBoards).
func (s *sectionDoc) leaderboard() {
	t := newTable(s.sec, "Leaderboard "+s.on, "Model", "Parse", "Records", "Errors", "Depth RR", "Depth RF", "Depth LF", "E2E RR stage 4 (%)", "E2E RF stage 4 (%)", "E2E LF stage 1 (%)")
	for _, rr := range s.runs {
		if _, reader := rr.Run.ReaderOf(); reader {
			continue
		}
		t.row(leaderName(rr.Run), rr.Run.ParseMode, itoa(rr.Usage.NItems), itoa(rr.Usage.NError),
			depthCI(rr.DepthOf(benchmark.RevisionRequired, "all")), depthCI(rr.DepthOf(benchmark.RevisionFree, "all")), depthCI(rr.DepthOf(benchmark.LesionFree, "all")),
			pctCI(rr.Stage(benchmark.RevisionRequired, "all", 4).E2E, true), pctCI(rr.Stage(benchmark.RevisionFree, "all", 4).E2E, true), pctCI(rr.Stage(benchmark.LesionFree, "all", 1).E2E, true))
	}
	t.note(leaderboardNote(s.res, s.runs))
}

// samplingTable is each run's generation settings, kept out of the
// leaderboard so that it fits a desktop window.
func (s *sectionDoc) samplingTable() {
	t := newTable(s.sec, "Sampling "+s.on, "Model", "Sampling")
	for _, rr := range s.runs {
		t.row(leaderName(rr.Run), samplingCell(rr.Run))
	}
}

// samplingCell is the run's generation settings as its manifest records
// them (N/A without a manifest), so runs with different settings are
// told apart in the leaderboard.
func samplingCell(r *analysis.Run) string {
	if r.Sampling == "" {
		return NAText
	}
	return r.Sampling
}

// stageTable is one setting's stage accuracies on one path, with the chance
// and majority rows.
func (s *sectionDoc) stageTable(setting string, path benchmark.Path) {
	hdr := []string{"Model", "n"}
	for _, k := range benchmark.Stages {
		hdr = append(hdr, fmt.Sprintf("Stage %d", k))
	}
	if setting == "end_to_end" {
		hdr = append(hdr, "Depth")
	}
	t := newTable(s.sec, fmt.Sprintf("%s, %s %s", settingTitle[setting], path, s.on), hdr...)
	for _, rr := range s.runs {
		row := []string{rr.Run.Name, itoa(rr.DepthOf(path, "all").N)}
		for _, k := range benchmark.Stages {
			c := rr.Stage(path, "all", k)
			row = append(row, pctCI(stageView(c, setting), c.Applicable))
		}
		if setting == "end_to_end" {
			row = append(row, depthCI(rr.DepthOf(path, "all")))
		}
		t.row(row...)
	}
	t.note(StageNote(s.res, s.runs, path))
	if s.res.Chance == nil || setting == "conditional" {
		return
	}
	t.note(majorityTieNote(s.res, path))
	for _, maj := range []bool{false, true} {
		name := "chance"
		if maj {
			name = "majority"
		}
		row := []string{"*" + name + "*", ""}
		for _, k := range benchmark.Stages {
			target := fmt.Sprintf("e2e_%d", k)
			if setting == "oracle_passed" {
				target = fmt.Sprintf("stage_%d", k)
			}
			if benchmark.StageApplies(path, false, k) {
				row = append(row, chanceCell(s.res, path, "all", target, maj))
			} else {
				row = append(row, NAText)
			}
		}
		if setting == "end_to_end" {
			row = append(row, chanceCell(s.res, path, "all", "depth", maj))
		}
		t.row(row...)
	}
}

func (s *sectionDoc) subTables() {
	attr := benchmark.StageAttributeExtraction.Questions()
	detCE := []benchmark.Question{benchmark.QDetection, benchmark.QContourEval}
	s.subTable("Contour revision sub-questions (%), revision_required", benchmark.RevisionRequired, benchmark.StageContourRevision.Questions())
	s.subTable("Attribute sub-questions (%), revision_required+revision_free pooled", analysis.PooledPath, attr)
	s.subTable("Attribute sub-questions (%), revision_required", benchmark.RevisionRequired, attr)
	s.subTable("Attribute sub-questions (%), revision_free", benchmark.RevisionFree, attr)
	s.subTable("Detection and contour evaluation (%), revision_required", benchmark.RevisionRequired, detCE)
	s.subTable("Detection and contour evaluation (%), revision_free", benchmark.RevisionFree, detCE)
	s.subTable("Detection (%), lesion_free", benchmark.LesionFree, detCE[:1])
}

// subTable is the accuracy of questions qs on a path (lesion all), with
// the Jaccard means of the multi-select ones and the chance rows.
func (s *sectionDoc) subTable(title string, path benchmark.Path, qs []benchmark.Question) {
	hdr := []string{"Model", "n"}
	for _, q := range qs {
		hdr = append(hdr, q.Name())
	}
	for _, q := range qs {
		if q.Multi() {
			hdr = append(hdr, "Jaccard "+q.Name())
		}
	}
	t := newTable(s.sec, title+" "+s.on, hdr...)
	for _, rr := range s.runs {
		row := []string{rr.Run.Name, itoa(rr.SubOf(path, "all", qs[0]).Acc.N)}
		for _, q := range qs {
			c := rr.SubOf(path, "all", q)
			row = append(row, pctCI(c.Acc, c.Applicable))
		}
		for _, q := range qs {
			if q.Multi() {
				c := rr.SubOf(path, "all", q)
				if c.Acc.Valid {
					row = append(row, fmt.Sprintf("%.3f", c.Jaccard))
				} else {
					row = append(row, NAText)
				}
			}
		}
		t.row(row...)
	}
	if s.res.Chance == nil {
		return
	}
	for _, maj := range []bool{false, true} {
		name := "chance"
		if maj {
			name = "majority"
		}
		row := []string{"*" + name + "*", ""}
		for _, q := range qs {
			row = append(row, chanceCell(s.res, path, "all", q.Name(), maj))
		}
		for _, q := range qs {
			if q.Multi() {
				row = append(row, "")
			}
		}
		t.row(row...)
	}
}

// lesionTables are, per path, the depth by lesion, then per run the
// end-to-end accuracy by lesion, path and stage.
func (s *sectionDoc) lesionTables() {
	for _, path := range benchmark.Paths {
		hdr := []string{"Model"}
		hdr = append(hdr, s.res.Lesions[1:]...)
		t := newTable(s.sec, fmt.Sprintf("Depth by lesion, %s %s", path, s.on), hdr...)
		for _, rr := range s.runs {
			row := []string{rr.Run.Name}
			for _, l := range s.res.Lesions[1:] {
				row = append(row, depthCI(rr.DepthOf(path, l)))
			}
			t.row(row...)
		}
		if s.res.Chance != nil {
			row := []string{"*chance*"}
			for _, l := range s.res.Lesions[1:] {
				row = append(row, chanceCell(s.res, path, l, "depth", false))
			}
			t.row(row...)
		}
	}
	for _, rr := range s.runs {
		hdr := []string{"Lesion"}
		for _, path := range benchmark.Paths {
			for _, k := range benchmark.Stages {
				if benchmark.StageApplies(path, false, k) {
					hdr = append(hdr, fmt.Sprintf("%s s%d", path.Short(), k))
				}
			}
		}
		t := newTable(s.sec, fmt.Sprintf("End-to-end accuracy (%%) by lesion and path, %s %s", rr.Run.Name, s.on), hdr...)
		for _, l := range s.res.Lesions {
			row := []string{l}
			for _, path := range benchmark.Paths {
				for _, k := range benchmark.Stages {
					if benchmark.StageApplies(path, false, k) {
						c := rr.Stage(path, l, k)
						row = append(row, pctCI(c.E2E, c.Applicable))
					}
				}
			}
			t.row(row...)
		}
	}
}

func (s *sectionDoc) parseTable() {
	t := newTable(s.sec, "Parse failures and errors "+s.on, "Model", "Records", "Errors", "Calls", "Parse failures", "Rate (%)", "Out of range", "Empty", "Truncated")
	for _, rr := range s.runs {
		p := rr.Parse[len(rr.Parse)-1]
		rate := NAText
		if p.NAsked > 0 {
			rate = pct(float64(p.NFail) / float64(p.NAsked))
		}
		t.row(rr.Run.Name, itoa(rr.Usage.NItems), itoa(rr.Usage.NError), itoa(p.NAsked), itoa(p.NFail), rate, itoa(p.NOutOfRange), itoa(p.NEmpty), itoa(p.NTrunc))
	}
}

func (s *sectionDoc) usageTable() {
	t := newTable(s.sec, "Usage "+s.on, "Model", "Calls", "Input tokens", "Cached input", "Output tokens", "Thinking tokens", "Cost (USD)", "Latency p50 (ms)", "Latency p95 (ms)")
	lat := func(x float64) string {
		if math.IsNaN(x) {
			return NAText
		}
		return fmt.Sprintf("%.0f", x)
	}
	for _, rr := range s.runs {
		u := rr.Usage
		cost := NAText
		if !math.IsNaN(u.Cost) {
			cost = fmt.Sprintf("%.4f", u.Cost)
		}
		t.row(rr.Run.Name, itoa(u.NCalls), fmt.Sprint(u.InputTokens), fmt.Sprint(u.CachedInputTokens), fmt.Sprint(u.OutputTokens), fmt.Sprint(u.Thinking), cost, lat(u.LatencyP50), lat(u.LatencyP95))
	}
}

// pairTable lists the paired comparisons of the mode, lesion all (none:
// no table).
func (s *sectionDoc) pairTable() {
	var pairs []analysis.PairRow
	for _, p := range s.res.Pairs {
		if p.OracleMode == s.sec.Mode && p.Lesion == "all" {
			pairs = append(pairs, p)
		}
	}
	if len(pairs) == 0 {
		return
	}
	t := newTable(s.sec, "Paired differences A − B, lesion all "+s.on+"; shares in points, depth in stages; per-lesion rows in ext_pairwise.csv",
		"A", "B", "Path", "Metric", "Value A", "Value B", "A − B [95% CI]", "n paired")
	for _, p := range pairs {
		switch {
		case !p.Valid:
			t.row(p.ModelA, p.ModelB, string(p.Path), p.Metric, NAText, NAText, NAText, "0")
		case p.Metric == "depth":
			t.row(p.ModelA, p.ModelB, string(p.Path), p.Metric, fmt.Sprintf("%.2f", p.ValueA), fmt.Sprintf("%.2f", p.ValueB),
				fmt.Sprintf("%+.2f [%+.2f, %+.2f]", p.Diff, p.Lo, p.Hi), itoa(p.NPaired))
		default:
			t.row(p.ModelA, p.ModelB, string(p.Path), p.Metric, pct(p.ValueA), pct(p.ValueB),
				fmt.Sprintf("%+.1f [%+.1f, %+.1f]", 100*p.Diff, 100*p.Lo, 100*p.Hi), itoa(p.NPaired))
		}
	}
}

// leaderName is a run's name in the leaderboard, marked when the run has
// results for only part of its selection (the warnings say more).
func leaderName(r *analysis.Run) string {
	name := r.Name
	if r.Kind == results.KindRehearsal {
		name += " (" + analysis.RehearsalNote + ")"
	}
	if !r.Partial() {
		return name
	}
	state := "partial"
	if r.Live {
		state = "running"
	}
	return fmt.Sprintf("%s (%s %d/%d)", name, state, r.Finished, r.Selected)
}
