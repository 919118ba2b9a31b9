package report

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/mrmc"
	"github.com/chexpercept/chexpercept/internal/results"
)

// The "Readers and models" part: when runs of human readers (`read
// export`, provider human) are among the runs, one reader panel per
// oracle mode, reader study and arm (analysis.Panel): its mean accuracy
// per path and stage beside each model's difference from it (unaided
// panels), its agreement per question type and its reading time per
// stage; the aided studies' aided − unaided and switches; and claim 3 of
// the findings, per unaided panel.

// readersDoc is the readers-and-models part of report.md and index.html.
type readersDoc struct {
	Notes  []string
	Tables []*table
}

func (rd *readersDoc) newTable(title string, header ...string) *table {
	t := &table{Title: title, Header: header, ID: fmt.Sprintf("readers-%d", len(rd.Tables)+1)}
	rd.Tables = append(rd.Tables, t)
	return t
}

// claim3 is the sentence of claim 3.
const claim3Title = "models fall short of expert readers"

const claim3 = "Models fall short of expert readers at each perception level: at every path and stage, every model's end-to-end accuracy is below the readers' mean."

// readersRule is the note that states claim 3's rule.
func readersRule(res *analysis.Result) string {
	return fmt.Sprintf("Claim 3 rule: the readers of one oracle mode and reader study who answered alone (runs of provider human, from chexpercept read export; the unaided arm) are one panel, compared with each model by multi-reader multi-case analysis (Obuchowski–Rockette with jackknife covariances over records, random readers and records; the model is a reader without reader variance; docs/mrmc.md) on the records the model and every reader answered; each study has its own verdict. A path and stage of a model (a cell) counts when they share at least %d records. "+
		"Supported when every cell counts and every model's 95 %% interval lies below 0 in every cell (an intersection–union test: each cell one-sided at %g, and so the verdict). "+
		"Not supported when Holm's step-down procedure over the counted cells' one-sided p-values of \"the model is not ahead\" rejects at familywise level %g: some model is ahead of the readers somewhere, the many cells accounted for. "+
		"A pre-stated primary comparison of the study replaces the cells by its own. Undecided otherwise (too few records when cells fall short of %d), with fewer than %d readers (the numbers are given, but no verdict: with few readers the degrees of freedom are few) or without a model.",
		analysis.MinReaderRecords, analysis.VerdictLevel, analysis.VerdictLevel, analysis.MinReaderRecords, analysis.MinReaders)
}

// readersClaim is claim 3 with its verdicts; nil without readers.
func readersClaim(res *analysis.Result) *claimDoc {
	if res.Readers == nil {
		return nil
	}
	return &claimDoc{N: 3, Title: claim3Title, Sentence: claim3, Verdicts: res.Readers.Verdict}
}

// mrmcLabel is an MRMC row's label in the tables.
func mrmcLabel(r *analysis.MRMCRow) string {
	switch {
	case r.Comparison == analysis.ComparisonReaders:
		return "readers (mean)"
	case r.Comparison == analysis.ComparisonAided:
		return "aided − unaided (" + r.Study + ")"
	}
	return r.Model + " − readers"
}

// clippedMark follows a bound shown at the limit of the values the
// figure can take (readersClipNote).
const clippedMark = "†"

const readersClipNote = clippedMark + " A bound beyond the values the figure can take (0–100 % for a mean, ±100 points for a difference) is shown at that limit; the interval itself, which agrees with its SE and p, is in ext_reader_mrmc.csv."

// mrmcCells are an MRMC row's cells after its label: path, stage,
// readers, records, estimate, 95 % interval, SE, df, p. The readers'
// mean is in percent, differences in points. The interval is the one
// Shown clips, a clipped bound marked; without an interval the cell says
// why. SE, df and p are shown whenever they are numbers: an SE of 0 goes
// with no interval.
func mrmcCells(r *analysis.MRMCRow) []string {
	cells := []string{string(r.Path), itoa(int(r.Stage)), itoa(r.NReaders), itoa(r.NRecords), NAText, NAText, NAText, NAText, NAText}
	mean := r.Comparison == analysis.ComparisonReaders
	if !math.IsNaN(r.Estimate) {
		if mean {
			cells[4] = pct(r.Estimate)
		} else {
			cells[4] = fmt.Sprintf("%+.1f", 100*r.Estimate)
		}
	}
	if r.Valid() {
		lo, hi, loC, hiC := r.Shown()
		l, h := fmt.Sprintf("%+.1f", 100*lo), fmt.Sprintf("%+.1f", 100*hi)
		if mean {
			l, h = pct(lo), pct(hi)
		}
		if loC {
			l += clippedMark
		}
		if hiC {
			h += clippedMark
		}
		if mean {
			cells[5] = "[" + l + "–" + h + "]"
		} else {
			cells[5] = "[" + l + ", " + h + "]"
		}
	} else if r.NA != "" {
		cells[5] = NAText + " (" + analysis.ExplainNA(r.NA) + ")"
	}
	if !math.IsNaN(r.SE) {
		cells[6] = fmt.Sprintf("%.1f", 100*r.SE)
	}
	if !math.IsNaN(r.DF) {
		cells[7] = dfText(r.DF)
	}
	if !math.IsNaN(r.P) {
		cells[8] = fmt.Sprintf("%.3f", r.P)
	}
	return cells
}

func dfText(df float64) string {
	if math.IsInf(df, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.1f", df)
}

var mrmcHeader = []string{"Comparison", "Path", "Stage", "Readers", "Records", "Estimate", "95 % CI", "SE", "df", "p"}

// pooledText marks a table or line of a panel that pools studies.
const pooledText = " (studies pooled by --pool-studies: readers of different studies count as different people, though one person may have read in both)"

// panelTitle names a panel in a table title: its oracle mode, study and
// arm, and whether it pools studies.
func panelTitle(p *analysis.Panel) string {
	s := "oracle " + p.OracleMode + ", " + p.Name()
	if p.Pooled() {
		s += pooledText
	}
	return s
}

// panelOf finds the panel of an MRMC row (nil for aided − unaided).
func panelOf(rr *analysis.ReadersResult, r *analysis.MRMCRow) *analysis.Panel {
	if r.Comparison == analysis.ComparisonAided {
		return nil
	}
	for i := range rr.Panels {
		if p := &rr.Panels[i]; p.OracleMode == r.OracleMode && p.Study == r.Study && p.Arm == r.Arm {
			return p
		}
	}
	return nil
}

// buildReaders lays out the readers-and-models part; nil without readers.
func buildReaders(res *analysis.Result) *readersDoc {
	rr := res.Readers
	if rr == nil {
		return nil
	}
	rd := &readersDoc{}
	for i := range rr.Panels {
		p := &rr.Panels[i]
		line := fmt.Sprintf("Oracle %s, %s: %d reader(s): %s (runs %s).", p.OracleMode, p.Name(), len(p.Readers), strings.Join(p.Readers, ", "), strings.Join(p.Runs, ", "))
		if p.Pooled() {
			line = strings.TrimSuffix(line, ".") + pooledText + "."
		}
		if !p.Compared() {
			line += " This arm saw a model's answers: it is compared with its unaided arm only."
		}
		if p.ReaderBlocks != nil {
			line += " Design: " + p.Design() + " — each reader read only the records of its block (" + blocksText(p) + "); the MRMC analysis estimates the readers' covariances within blocks (docs/mrmc.md), and its scores tables carry a block column. A model is not compared with a split-plot panel (N/A)."
		}
		rd.Notes = append(rd.Notes, line)
	}
	rd.Notes = append(rd.Notes, "Accuracy is end-to-end (all of stages 1..k correct). Each reader study is analysed apart, one panel per arm: a panel's readers are people, and one person may have read in two studies. Each row compares only the records every compared party answered (Records): the panel's mean on the records every reader answered, in percent, with the one-modality MRMC interval (random readers and records, Hillis 2007); a model's row is the model minus the readers' mean in points on the records the model and every reader answered, by the standalone-versus-panel MRMC analysis (the model a reader without reader variance), with its standard error (points), Hillis' degrees of freedom (∞: the normal) and p. A negative difference means the model falls short of the readers. N/A: no interval, and why (fewer than 2 readers or records, or no variance at all). See docs/mrmc.md.",
		"The tables' numbers, with 6 decimals (as fractions), are in "+strings.Join(readersCSVs, ", ")+" (ext_reader_switches.csv when an aided study's model run is among the inputs); each row of ext_reader_mrmc.csv names the scores table under "+scoresDir+"/ it was computed from, which chexpercept mrmc --scores reads (a model's row: with --algorithm and the model's run).")
	clipped := false
	for i := range rr.Panels {
		p := &rr.Panels[i]
		title := "Readers and models, " + panelTitle(p) + ": the readers' end-to-end accuracy (%) and each model − readers (points), MRMC on paired records"
		if !p.Compared() {
			title = "Readers, " + panelTitle(p) + ": the readers' end-to-end accuracy (%), MRMC"
		}
		t := rd.newTable(title, mrmcHeader...)
		for j := range rr.MRMC {
			r := &rr.MRMC[j]
			if panelOf(rr, r) == p {
				t.row(append([]string{mrmcLabel(r)}, mrmcCells(r)...)...)
				clipped = clipped || isClipped(r)
			}
		}
	}
	hdr := []string{"Question"}
	for i := range rr.Panels {
		hdr = append(hdr, panelColumn(&rr.Panels[i]))
	}
	kt := rd.newTable("Reader agreement per question type: Fleiss' κ (records every reader of the panel answered)", hdr...)
	for q := benchmark.Question(0); q < benchmark.NumQuestions; q++ {
		row := []string{q.Turn() + " " + q.Name()}
		for i := range rr.Panels {
			p := &rr.Panels[i]
			cell := NAText
			for _, k := range rr.Kappa {
				if k.OracleMode == p.OracleMode && k.Study == p.Study && k.Arm == p.Arm && k.Question == q && !math.IsNaN(k.Kappa) {
					cell = fmt.Sprintf("%.3f (%d records)", k.Kappa, k.NItems)
				}
			}
			row = append(row, cell)
		}
		kt.row(row...)
	}
	hdr[0] = "Stage"
	tt := rd.newTable("Reading time per stage: seconds per record, mean and median over the panel's records (the aided arm's time includes its unaided answer's)", hdr...)
	for _, k := range benchmark.Stages {
		row := []string{fmt.Sprintf("%d %s", k, k.Name())}
		for i := range rr.Panels {
			p := &rr.Panels[i]
			cell := NAText
			for _, tr := range rr.Time {
				if tr.OracleMode == p.OracleMode && tr.Study == p.Study && tr.Arm == p.Arm && tr.Stage == k && tr.NRecords > 0 {
					cell = fmt.Sprintf("mean %.1f, median %.1f (%d records)", tr.MeanS, tr.MedianS, tr.NRecords)
				}
			}
			row = append(row, cell)
		}
		tt.row(row...)
	}
	clipped = rd.aided(rr) || clipped
	if clipped {
		rd.Notes = append(rd.Notes, readersClipNote)
	}
	return rd
}

// blocksText lists a split-plot panel's blocks and their readers:
// "block 1: reader1, reader4; block 2: …".
func blocksText(p *analysis.Panel) string {
	var order []string
	members := map[string][]string{}
	for j, b := range p.ReaderBlocks {
		if _, ok := members[b]; !ok {
			order = append(order, b)
		}
		members[b] = append(members[b], p.Readers[j])
	}
	parts := make([]string, len(order))
	for i, b := range order {
		parts[i] = "block " + b + ": " + strings.Join(members[b], ", ")
	}
	return strings.Join(parts, "; ")
}

// panelColumn heads a panel's column in the agreement and time tables.
func panelColumn(p *analysis.Panel) string {
	s := p.OracleMode + ": " + p.Name()
	if p.Pooled() {
		s += " (pooled)"
	}
	return s
}

// isClipped reports whether the row's shown interval has a clipped bound.
func isClipped(r *analysis.MRMCRow) bool {
	if !r.Valid() {
		return false
	}
	_, _, lo, hi := r.Shown()
	return lo || hi
}

// aided lays out "Does the model help the readers?": per aided study,
// aided − unaided by the two-modality MRMC analysis and the switches. It
// reports whether a shown interval was clipped.
func (rd *readersDoc) aided(rr *analysis.ReadersResult) bool {
	clipped := false
	for _, st := range rr.Studies {
		note := fmt.Sprintf("Does the model help the readers? Oracle %s, aided study %s: %d reader(s) with both arms (%s); each answered every turn unaided, then saw %s's answer to it and gave a final answer.",
			st.OracleMode, st.Study, len(st.Readers), strings.Join(st.Readers, ", "), st.AidRun)
		if !st.Found {
			note += " That run is not among the report's inputs, so the switches after its answers are not counted; add its run directory to count them."
		}
		rd.Notes = append(rd.Notes, note)
		t := rd.newTable("Does the model help the readers? aided − unaided end-to-end accuracy (points), MRMC (random readers and records), oracle "+st.OracleMode+", study "+st.Study, mrmcHeader...)
		for i := range rr.MRMC {
			r := &rr.MRMC[i]
			if r.OracleMode == st.OracleMode && r.Comparison == analysis.ComparisonAided && r.Study == st.Study {
				t.row(append([]string{mrmcLabel(r)}, mrmcCells(r)...)...)
				clipped = clipped || isClipped(r)
			}
		}
		if !st.Found {
			continue
		}
		t = rd.newTable("Switches after the model's answer, oracle "+st.OracleMode+", study "+st.Study+": right → wrong after a wrong model answer, wrong → right after a right one (a stage's own answer)",
			"Reader", "Path", "Stage", "Records", "Right → wrong", "Wrong → right")
		for _, sw := range rr.Switches {
			if sw.OracleMode == st.OracleMode && sw.Study == st.Study {
				t.row(sw.Reader, string(sw.Path), itoa(int(sw.Stage)), itoa(sw.NRecords), ofText(sw.RightToWrong, sw.ModelWrong), ofText(sw.WrongToRight, sw.ModelRight))
			}
		}
	}
	return clipped
}

// ofText is "k of n", N/A without n.
func ofText(k, n int) string {
	if n == 0 {
		return NAText
	}
	return fmt.Sprintf("%d of %d", k, n)
}

// markdown renders the readers-and-models part.
func (rd *readersDoc) markdown(b *strings.Builder) {
	b.WriteString("\n## Readers and models\n")
	for _, n := range rd.Notes {
		b.WriteString("\n" + n + "\n")
	}
	for _, t := range rd.Tables {
		t.markdown(b)
	}
}

// readersBoards are the readers' leaderboards of one oracle mode's
// section: per panel, its readers and (unaided panels) the models, on
// the records every reader of the panel answered.
func readersBoards(s *sectionDoc) {
	rr := s.res.Readers
	if rr == nil {
		return
	}
	for pi := range rr.Panels {
		p := &rr.Panels[pi]
		if p.OracleMode != s.sec.Mode {
			continue
		}
		hdr := []string{"Reader or model"}
		for _, c := range analysis.BoardCells {
			hdr = append(hdr, fmt.Sprintf("E2E %s stage %d (%%)", pathAbbrev(c.Path), c.Stage))
		}
		hdr = append(hdr, "Records ("+strings.Join([]string{pathAbbrev(analysis.BoardCells[0].Path), pathAbbrev(analysis.BoardCells[1].Path), pathAbbrev(analysis.BoardCells[2].Path)}, "/")+")")
		title := "Readers and models on the readers' records, " + p.Name()
		if p.Pooled() {
			title += pooledText
		}
		t := newTable(s.sec, title+" "+s.on, hdr...)
		for _, b := range rr.Board {
			if b.Panel != pi {
				continue
			}
			name := b.Run
			if b.Reader != "" {
				name = "reader " + b.Reader + " (" + b.Run + ")"
			}
			row := []string{name}
			var ns []string
			for _, c := range b.Cells {
				row = append(row, pctCI(c, true))
				ns = append(ns, itoa(c.N))
			}
			t.row(append(row, strings.Join(ns, "/"))...)
		}
	}
}

// pathAbbrev is a path's abbreviation in the leaderboards' headers.
func pathAbbrev(p benchmark.Path) string {
	switch p {
	case benchmark.RevisionRequired:
		return "RR"
	case benchmark.RevisionFree:
		return "RF"
	}
	return "LF"
}

// readersCSVs are the readers part's data files, in readersFiles order;
// ext_reader_switches.csv joins them with an aided study.
var readersCSVs = []string{"ext_reader_mrmc.csv", "ext_reader_agreement.csv", "ext_reader_time.csv"}

// scoresDir holds the scores tables of the MRMC rows.
const scoresDir = "mrmc_scores"

// readersFiles are the data of the readers-and-models tables, the same
// numbers from the same rows, and the scores table of each MRMC row with
// records; none without readers, as the part itself is absent then (a
// models-only report keeps its set of files).
func readersFiles(res *analysis.Result) map[string][]byte {
	rr := res.Readers
	if rr == nil {
		return nil
	}
	names := scoresFileNames(rr)
	files := map[string][]byte{
		readersCSVs[0]: extReaderMRMC(rr, names),
		readersCSVs[1]: extReaderAgreement(rr),
		readersCSVs[2]: extReaderTime(rr),
	}
	for i := range rr.MRMC {
		if names[i] != "" {
			files[names[i]] = mrmc.FormatScores(rr.MRMC[i].Data)
		}
	}
	if slices.ContainsFunc(rr.Studies, func(st analysis.AidedStudy) bool { return st.Found }) {
		files["ext_reader_switches.csv"] = extReaderSwitches(rr)
	}
	return files
}

// scoresFileNames names the scores table of each MRMC row with records
// ("" for a row without): scoresDir/oracle_<mode>/<study>/<arm or
// aided-unaided>_<path>_stage<k>[_<model run>].csv, the study (or
// pooled studies) and the model run as safe file names, told apart by a
// number when two studies' or runs' names come out the same.
func scoresFileNames(rr *analysis.ReadersResult) []string {
	names := make([]string, len(rr.MRMC))
	dirs := map[[2]string]string{} // mode, study → folder
	taken := map[string]bool{}
	dirOf := func(mode, study string, pooled bool) string {
		key := [2]string{mode, study}
		if pooled {
			key[1] = "\x00" + study
		}
		if d, ok := dirs[key]; ok {
			return d
		}
		base := "study-" + fileSafe(study)
		switch {
		case pooled:
			base = "pooled-" + fileSafe(study)
		case study == "":
			base = "study-not-recorded"
		}
		d := path.Join(scoresDir, "oracle_"+fileSafe(mode), base)
		for n := 2; taken[d]; n++ {
			d = path.Join(scoresDir, "oracle_"+fileSafe(mode), fmt.Sprintf("%s-%d", base, n))
		}
		taken[d] = true
		dirs[key] = d
		return d
	}
	for i := range rr.MRMC {
		r := &rr.MRMC[i]
		if r.Data == nil {
			continue
		}
		kind := r.Arm
		if r.Comparison == analysis.ComparisonAided {
			kind = analysis.ComparisonAided
		}
		name := fmt.Sprintf("%s_%s_stage%d", fileSafe(kind), r.Path, r.Stage)
		if r.Model != "" {
			name += "_" + fileSafe(r.Model)
		}
		f := path.Join(dirOf(r.OracleMode, r.Study, r.Pooled), name+".csv")
		for n := 2; taken[f]; n++ { // two runs whose names come out the same
			f = path.Join(dirOf(r.OracleMode, r.Study, r.Pooled), fmt.Sprintf("%s-%d.csv", name, n))
		}
		taken[f] = true
		names[i] = f
	}
	return names
}

// fileSafe is s as a file name: letters, digits, ".", "-", "+" and "_"
// kept, any other character "_", never empty or starting with ".".
func fileSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '+' || c == '_' || c == '.' && i > 0) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// extReaderMRMC is every MRMC row: a panel's mean, each model − readers,
// aided − unaided, with the interval unclipped and the scores table it
// was computed from.
func extReaderMRMC(rr *analysis.ReadersResult, scores []string) []byte {
	header := []string{"comparison", "oracle_mode", "study", "arm", "pooled", "path", "stage", "n_readers", "n_records", "estimate", "se", "df", "ci_low", "ci_high", "p_value", "na_reason", "scores_file"}
	var rows [][]string
	for i := range rr.MRMC {
		r := &rr.MRMC[i]
		df := f6(r.DF)
		if math.IsInf(r.DF, 1) {
			df = "inf"
		}
		rows = append(rows, []string{r.Comparison, r.OracleMode, orNA(r.Study), orNA(r.Arm), boolStr(r.Pooled), string(r.Path), itoa(int(r.Stage)), itoa(r.NReaders), itoa(r.NRecords),
			f6(r.Estimate), f6(r.SE), df, f6(r.Lo), f6(r.Hi), f6(r.P), orNA(r.NA), orNA(scores[i])})
	}
	return results.CSV(header, rows)
}

// extReaderSwitches are the aided studies' switch counts per reader.
func extReaderSwitches(rr *analysis.ReadersResult) []byte {
	header := []string{"oracle_mode", "study", "aid_run", "reader", "path", "stage", "n_records",
		"model_wrong_reader_right", "right_to_wrong", "model_right_reader_wrong", "wrong_to_right"}
	var rows [][]string
	for _, sw := range rr.Switches {
		rows = append(rows, []string{sw.OracleMode, sw.Study, sw.AidRun, sw.Reader, string(sw.Path), itoa(int(sw.Stage)), itoa(sw.NRecords),
			itoa(sw.ModelWrong), itoa(sw.RightToWrong), itoa(sw.ModelRight), itoa(sw.WrongToRight)})
	}
	return results.CSV(header, rows)
}

// extReaderAgreement is Fleiss' κ per panel and question type.
func extReaderAgreement(rr *analysis.ReadersResult) []byte {
	header := []string{"oracle_mode", "study", "arm", "pooled", "question", "turn", "n_readers", "n_records", "kappa"}
	var rows [][]string
	for _, k := range rr.Kappa {
		rows = append(rows, []string{k.OracleMode, orNA(k.Study), k.Arm, boolStr(k.Pooled), k.Question.Name(), k.Question.Turn(), itoa(k.NReaders), itoa(k.NItems), f6(k.Kappa)})
	}
	return results.CSV(header, rows)
}

// extReaderTime is the reading time per panel and stage.
func extReaderTime(rr *analysis.ReadersResult) []byte {
	header := []string{"oracle_mode", "study", "arm", "pooled", "stage", "n_readers", "n_records", "time_s_mean", "time_s_median"}
	var rows [][]string
	for _, tr := range rr.Time {
		rows = append(rows, []string{tr.OracleMode, orNA(tr.Study), tr.Arm, boolStr(tr.Pooled), itoa(int(tr.Stage)), itoa(tr.NReaders), itoa(tr.NRecords), f6(tr.MeanS), f6(tr.MedianS)})
	}
	return results.CSV(header, rows)
}

// planParagraphs state each reader study's analysis plan, fixed at read
// init, and its primary result, for the top of the report: the plan
// first, then the primary endpoint's row, and every other number marked
// exploratory.
func planParagraphs(res *analysis.Result) []string {
	rr := res.Readers
	if rr == nil {
		return nil
	}
	var out []string
	for i := range rr.Panels {
		p := &rr.Panels[i]
		if p.Plan == nil || !p.Compared() {
			continue
		}
		pl := p.Plan
		design := "fully crossed"
		if pl.Design == results.DesignSplitPlot {
			design = fmt.Sprintf("split-plot, %d block(s)", pl.Blocks)
		}
		endpoint := fmt.Sprintf("end-to-end accuracy on path %s at stage %d", pl.Primary.Path, pl.Primary.Stage)
		if pl.Primary.Model != "" {
			endpoint = fmt.Sprintf("model %s − the readers, %s", pl.Primary.Model, endpoint)
		}
		text := fmt.Sprintf("**Analysis plan** of reader study %s (oracle %s), fixed at read init before the first record was read: primary endpoint %s; figure of merit %s; analysis %s; α %s; design %s; planned %d readers and %d records",
			orNA(p.Study), p.OracleMode, endpoint, pl.FOM, planAnalysisText(pl.Analysis), fmt.Sprint(pl.Alpha), design, pl.Readers, pl.Records)
		if pl.Margin > 0 {
			text += fmt.Sprintf("; non-inferiority margin %s points", pct(pl.Margin))
		}
		out = append(out, text+".")
		out = append(out, primaryResult(rr, p)+" Every other result in this report is exploratory.")
	}
	return out
}

// planAnalysisText names a plan's analysis.
func planAnalysisText(a string) string {
	switch a {
	case "rrrc":
		return "random readers, random cases (rrrc)"
	case "frrc":
		return "fixed readers, random cases (frrc)"
	case "rrfc":
		return "random readers, fixed cases (rrfc)"
	}
	return a
}

// primaryResult is the sentence of a panel's primary endpoint: its MRMC
// row (the readers' mean, or the planned model − readers), or why there
// is none.
func primaryResult(rr *analysis.ReadersResult, p *analysis.Panel) string {
	pl := p.Plan
	want := analysis.ComparisonReaders
	if pl.Primary.Model != "" {
		want = analysis.ComparisonModel + pl.Primary.Model
	}
	for i := range rr.MRMC {
		r := &rr.MRMC[i]
		if panelOf(rr, r) != p || r.Comparison != want || string(r.Path) != pl.Primary.Path || int(r.Stage) != pl.Primary.Stage {
			continue
		}
		what := fmt.Sprintf("the readers' end-to-end accuracy %s %%", pct(r.Estimate))
		unit := " %"
		if pl.Primary.Model != "" {
			what = fmt.Sprintf("%s − the readers %s points", pl.Primary.Model, pct(r.Estimate))
			unit = " points"
		}
		s := fmt.Sprintf("**Primary result** (%s, %d readers, %d records, %s): %s", r.Design, r.NReaders, r.NRecords, "random readers and records", what)
		if r.NA != "" {
			return s + fmt.Sprintf(", no interval (%s).", analysis.ExplainNA(r.NA))
		}
		s += fmt.Sprintf(", 95 %% CI %s to %s%s", pct(r.Lo), pct(r.Hi), unit)
		if !math.IsNaN(r.P) {
			s += fmt.Sprintf(", p %.4f", r.P)
		}
		if pl.Analysis != "rrrc" {
			s += fmt.Sprintf(" (the report's rows are random readers and records; the plan's %s is chexpercept mrmc's on this row's scores table)", planAnalysisText(pl.Analysis))
		}
		return s + "."
	}
	return "**Primary result**: not in this report (no run of the endpoint's model, or no records at its path and stage)."
}
