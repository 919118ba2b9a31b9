package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

// The "Readers and models" part: when runs of human readers (`read
// export`, provider human) are among the runs, the readers' mean accuracy
// per path and stage beside each model's difference from it, the readers'
// agreement per question type and their reading time per stage; and
// claim 3 of the findings.

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
	return fmt.Sprintf("Claim 3 rule: the readers of an oracle mode (runs of provider human, from chexpercept read export) are one panel, compared with each model by multi-reader multi-case analysis (Obuchowski–Rockette with jackknife covariances over records, random readers and records; the model is a reader without reader variance; docs/mrmc.md) on the records the model and every reader answered. A path and stage counts when they share at least %d records. The claim is supported when every model's 95 %% interval lies below 0 at every path and stage and every cell counts, not supported when some model's interval lies above 0 in a counted cell, and undecided otherwise (too few records when cells fall short of %d), with fewer than %d readers or without a model.",
		analysis.MinReaderRecords, analysis.MinReaderRecords, analysis.MinReaders)
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

// mrmcCells are an MRMC row's cells after its label: path, stage,
// readers, records, estimate, 95 % interval, SE, df, p. The readers'
// mean is in percent, differences in points.
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
		if mean {
			cells[5] = fmt.Sprintf("[%s–%s]", pct(r.Lo), pct(r.Hi))
		} else {
			cells[5] = fmt.Sprintf("[%+.1f, %+.1f]", 100*r.Lo, 100*r.Hi)
		}
		cells[6] = fmt.Sprintf("%.1f", 100*r.SE)
		cells[7] = dfText(r.DF)
		if !math.IsNaN(r.P) {
			cells[8] = fmt.Sprintf("%.3f", r.P)
		}
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

// buildReaders lays out the readers-and-models part; nil without readers.
func buildReaders(res *analysis.Result) *readersDoc {
	rr := res.Readers
	if rr == nil {
		return nil
	}
	rd := &readersDoc{}
	for _, set := range rr.Readers {
		rd.Notes = append(rd.Notes, fmt.Sprintf("Oracle %s: %d reader(s): %s.", set.OracleMode, len(set.Runs), strings.Join(set.Runs, ", ")))
	}
	rd.Notes = append(rd.Notes, "Accuracy is end-to-end (all of stages 1..k correct). Each row compares only the records every compared party answered (Records): the readers' mean on the records every reader answered, in percent, with the one-modality MRMC interval (random readers and records, Hillis 2007); a model's row is the model minus the readers' mean in points on the records the model and every reader answered, by the standalone-versus-panel MRMC analysis (the model a reader without reader variance), with its standard error (points), Hillis' degrees of freedom and p. A negative difference means the model falls short of the readers. N/A: no interval (fewer than 2 readers or records, or no variance at all). See docs/mrmc.md.",
		"The tables' numbers, unrounded (as fractions), are in "+strings.Join(readersCSVs, ", ")+" (ext_reader_switches.csv when an aided study's model run is among the inputs).")
	for _, mode := range rr.Modes {
		t := rd.newTable("Readers and models, oracle "+mode+": the readers' end-to-end accuracy (%) and each model − readers (points), MRMC on paired records", mrmcHeader...)
		for i := range rr.MRMC {
			r := &rr.MRMC[i]
			if r.OracleMode == mode && r.Comparison != analysis.ComparisonAided {
				t.row(append([]string{mrmcLabel(r)}, mrmcCells(r)...)...)
			}
		}
	}
	hdr := []string{"Question"}
	hdr = append(hdr, rr.Modes...)
	kt := rd.newTable("Reader agreement per question type: Fleiss' κ (records every reader answered)", hdr...)
	for q := benchmark.Question(0); q < benchmark.NumQuestions; q++ {
		row := []string{q.Turn() + " " + q.Name()}
		for _, mode := range rr.Modes {
			cell := NAText
			for _, k := range rr.Kappa {
				if k.OracleMode == mode && k.Question == q && !math.IsNaN(k.Kappa) {
					cell = fmt.Sprintf("%.3f (%d records)", k.Kappa, k.NItems)
				}
			}
			row = append(row, cell)
		}
		kt.row(row...)
	}
	hdr = []string{"Stage"}
	hdr = append(hdr, rr.Modes...)
	tt := rd.newTable("Reading time per stage: seconds per record, mean and median over the readers' records", hdr...)
	for _, k := range benchmark.Stages {
		row := []string{fmt.Sprintf("%d %s", k, k.Name())}
		for _, mode := range rr.Modes {
			cell := NAText
			for _, tr := range rr.Time {
				if tr.OracleMode == mode && tr.Stage == k && tr.NRecords > 0 {
					cell = fmt.Sprintf("mean %.1f, median %.1f (%d records)", tr.MeanS, tr.MedianS, tr.NRecords)
				}
			}
			row = append(row, cell)
		}
		tt.row(row...)
	}
	rd.aided(rr)
	return rd
}

// aided lays out "Does the model help the readers?": per aided study,
// aided − unaided by the two-modality MRMC analysis and the switches.
func (rd *readersDoc) aided(rr *analysis.ReadersResult) {
	if len(rr.Studies) == 0 {
		return
	}
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

// readersCSVs are the readers part's data files, in readersFiles order;
// ext_reader_switches.csv joins them with an aided study.
var readersCSVs = []string{"ext_reader_mrmc.csv", "ext_reader_agreement.csv", "ext_reader_time.csv"}

// readersFiles are the data of the readers-and-models tables, the same
// numbers from the same rows; none without readers, as the part itself
// is absent then (a models-only report keeps its set of files).
func readersFiles(res *analysis.Result) map[string][]byte {
	rr := res.Readers
	if rr == nil {
		return nil
	}
	files := map[string][]byte{
		readersCSVs[0]: extReaderMRMC(rr),
		readersCSVs[1]: extReaderAgreement(rr),
		readersCSVs[2]: extReaderTime(rr),
	}
	if slices.ContainsFunc(rr.Studies, func(st analysis.AidedStudy) bool { return st.Found }) {
		files["ext_reader_switches.csv"] = extReaderSwitches(rr)
	}
	return files
}

// extReaderMRMC is every MRMC row: the readers' mean, each model −
// readers, aided − unaided.
func extReaderMRMC(rr *analysis.ReadersResult) []byte {
	header := []string{"comparison", "oracle_mode", "path", "stage", "n_readers", "n_records", "estimate", "se", "df", "ci_low", "ci_high", "p_value"}
	var rows [][]string
	for i := range rr.MRMC {
		r := &rr.MRMC[i]
		df := f6(r.DF)
		if math.IsInf(r.DF, 1) {
			df = "inf"
		}
		rows = append(rows, []string{r.Comparison, r.OracleMode, string(r.Path), itoa(int(r.Stage)), itoa(r.NReaders), itoa(r.NRecords),
			f6(r.Estimate), f6(r.SE), df, f6(r.Lo), f6(r.Hi), f6(r.P)})
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

// extReaderAgreement is Fleiss' κ per oracle mode and question type.
func extReaderAgreement(rr *analysis.ReadersResult) []byte {
	header := []string{"oracle_mode", "question", "turn", "n_readers", "n_records", "kappa"}
	var rows [][]string
	for _, k := range rr.Kappa {
		rows = append(rows, []string{k.OracleMode, k.Question.Name(), k.Question.Turn(), itoa(k.NReaders), itoa(k.NItems), f6(k.Kappa)})
	}
	return results.CSV(header, rows)
}

// extReaderTime is the reading time per oracle mode and stage.
func extReaderTime(rr *analysis.ReadersResult) []byte {
	header := []string{"oracle_mode", "stage", "n_records", "time_s_mean", "time_s_median"}
	var rows [][]string
	for _, tr := range rr.Time {
		rows = append(rows, []string{tr.OracleMode, itoa(int(tr.Stage)), itoa(tr.NRecords), f6(tr.MeanS), f6(tr.MedianS)})
	}
	return results.CSV(header, rows)
}
