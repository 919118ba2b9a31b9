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
	return fmt.Sprintf("Claim 3 rule: the readers of an oracle mode (runs of provider human, from chexpercept read export) are one group; their mean end-to-end accuracy has a two-level bootstrap 95 %% interval (readers resampled, then each resampled reader's records; B = %d), and each model's difference from it an interval from the model's own record bootstrap and the readers', replicate by replicate. The claim is supported when every model's interval lies below 0 at every path and stage, not supported when some model's interval lies above 0 somewhere, and undecided otherwise, with fewer than %d readers or without a model.",
		res.Options.Bootstrap, analysis.MinReaders)
}

// readersClaim is claim 3 with its verdicts; nil without readers.
func readersClaim(res *analysis.Result) *claimDoc {
	if res.Readers == nil {
		return nil
	}
	return &claimDoc{N: 3, Title: claim3Title, Sentence: claim3, Verdicts: res.Readers.Verdict}
}

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
	rd.Notes = append(rd.Notes, "Accuracy is end-to-end (all of stages 1..k correct), in percent; a model's row is its difference from the readers' mean in points, with a 95 % bootstrap interval. A negative difference means the model falls short of the readers.",
		"The tables' numbers, unrounded (accuracies and differences as fractions), are in "+strings.Join(readersCSVs, ", ")+".")
	for _, mode := range rr.Modes {
		hdr := []string{"Unit"}
		for _, c := range stageCells() {
			hdr = append(hdr, c.label())
		}
		t := rd.newTable("Readers and models: end-to-end accuracy of the readers (%) and each model's difference (points), oracle "+mode, hdr...)
		row := []string{"readers (mean)"}
		for _, c := range stageCells() {
			cell := NAText
			for _, g := range rr.Groups {
				if g.OracleMode == mode && g.Path == c.path && g.Stage == c.k {
					cell = ciText(g.Valid, g.Value, g.Lo, g.Hi)
				}
			}
			row = append(row, cell)
		}
		t.row(row...)
		var models []string
		for _, d := range rr.Diffs {
			if d.OracleMode == mode && !slices.Contains(models, d.ModelA) {
				models = append(models, d.ModelA)
			}
		}
		for _, m := range models {
			row := []string{m + " − readers"}
			for _, c := range stageCells() {
				cell := NAText
				for _, d := range rr.Diffs {
					if d.OracleMode == mode && d.ModelA == m && d.Path == c.path && d.Stage == c.k {
						cell = signedCI(d.Valid, d.Diff, d.Lo, d.Hi)
					}
				}
				row = append(row, cell)
			}
			t.row(row...)
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
	return rd
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

// readersCSVs are the readers part's data files, in readersFiles order.
var readersCSVs = []string{"ext_readers.csv", "ext_readers_diff.csv", "ext_reader_agreement.csv", "ext_reader_time.csv"}

// readersFiles are the data of the readers-and-models tables, the same
// numbers from the same rows; none without readers, as the part itself
// is absent then (a models-only report keeps its set of files).
func readersFiles(res *analysis.Result) map[string][]byte {
	rr := res.Readers
	if rr == nil {
		return nil
	}
	return map[string][]byte{
		readersCSVs[0]: extReaders(rr),
		readersCSVs[1]: extReadersDiff(res),
		readersCSVs[2]: extReaderAgreement(rr),
		readersCSVs[3]: extReaderTime(rr),
	}
}

// extReaders is the readers' mean per oracle mode, path and stage, as
// ext_domain.csv has a group's.
func extReaders(rr *analysis.ReadersResult) []byte {
	header := []string{"oracle_mode", "path", "stage", "n_readers", "n_records", "accuracy", "ci_low", "ci_high"}
	var rows [][]string
	for _, g := range rr.Groups {
		row := []string{g.OracleMode, string(g.Path), itoa(int(g.Stage)), itoa(g.NModels), itoa(g.NItems), NA, NA, NA}
		if g.Valid {
			row[5], row[6], row[7] = f6(g.Value), f6(g.Lo), f6(g.Hi)
		}
		rows = append(rows, row)
	}
	return results.CSV(header, rows)
}

// extReadersDiff is each model's difference from the readers' mean; its
// rows lead with the run columns so that they join samples.*.
func extReadersDiff(res *analysis.Result) []byte {
	header := withRun("path", "stage", "n_readers", "difference", "ci_low", "ci_high")
	var rows [][]string
	for _, d := range res.Readers.Diffs {
		var run *analysis.RunResult
		for _, r := range res.Runs {
			if r.Run.Name == d.ModelA && r.Run.OracleMode == d.OracleMode {
				run = r
			}
		}
		if run == nil {
			continue // a diff row is always of a run of the result
		}
		row := append(runCols(run), string(d.Path), itoa(int(d.Stage)), itoa(d.NB), NA, NA, NA)
		if d.Valid {
			row[len(row)-3], row[len(row)-2], row[len(row)-1] = f6(d.Diff), f6(d.Lo), f6(d.Hi)
		}
		rows = append(rows, row)
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
