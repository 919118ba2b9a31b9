package report

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/mrmc"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// twoStudies writes what docs/reading.md shows exported into one folder:
// an unaided study ("study", readers reader1 and reader2, runs
// human_reader1 and human_reader2) and a sequential aided study
// ("aided-pilot", the same two reader names, runs human_<reader>_unaided
// and human_<reader>_aided) whose shown model is one of two models; and
// reports it, pooling the studies when pool is set.
func twoStudies(t *testing.T, pool bool) (string, []*benchmark.Record) {
	t.Helper()
	tmp := t.TempDir()
	recs := benchtest.Full(2)
	index := map[string]int{}
	for i, r := range recs {
		index[r.KeyID] = i
	}
	miss := func(every, shift int) analysistest.Policy {
		return func(rec *benchmark.Record, p protocol.PlannedTurn) string {
			if p.Q == benchmark.QDetection && (index[rec.KeyID]+shift)%every == 0 {
				return "Answer: " + strconv.Itoa(p.GT[0]%p.NOptions+1)
			}
			return analysistest.Oracle(rec, p)
		}
	}
	const aid = "opensource_shown"
	runs := []*analysistest.Run{
		{Provider: "opensource", Label: "shown", Oracle: "none", Policy: miss(3, 0)},
		{Provider: "opensource", Label: "first", Oracle: "none", Policy: analysistest.First},
	}
	for i, reader := range []string{"reader1", "reader2"} {
		runs = append(runs,
			&analysistest.Run{Provider: "human", Label: reader, Oracle: "none", Policy: miss(4, i),
				Reading: &results.ReadingArm{Study: "study", Reader: reader, Arm: results.ArmUnaided}},
			&analysistest.Run{Provider: "human", Label: reader + "_unaided", Oracle: "none", Policy: miss(5, i),
				Reading: &results.ReadingArm{Study: "aided-pilot", Reader: reader, Arm: results.ArmUnaided, AidRun: aid}},
			&analysistest.Run{Provider: "human", Label: reader + "_aided", Oracle: "none", Policy: miss(3, 0),
				Reading: &results.ReadingArm{Study: "aided-pilot", Reader: reader, Arm: results.ArmAided, AidRun: aid}})
	}
	dir := fixture(t, tmp, recs, runs...)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out,
		Analysis: analysis.Options{Bootstrap: 50, PoolStudies: pool}}); err != nil {
		t.Fatal(err)
	}
	return out, recs
}

// TestTwoStudiesTwoPanels: an unaided and an aided study exported into
// one folder are two panels of readers compared with the models, each
// named by its study (the same two people are never one panel of four),
// each with its own claim-3 verdict; samples.csv says whose run is
// whose; every row of ext_reader_mrmc.csv is recomputed from samples.csv.
func TestTwoStudiesTwoPanels(t *testing.T) {
	t.Parallel()
	out, recs := twoStudies(t, false)
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, want := range []string{
		"Oracle none, study aided-pilot, unaided: 2 reader(s): reader1, reader2 (runs human_reader1_unaided, human_reader2_unaided).",
		"Oracle none, study aided-pilot, aided: 2 reader(s): reader1, reader2 (runs human_reader1_aided, human_reader2_aided).",
		"Oracle none, study study, unaided: 2 reader(s): reader1, reader2 (runs human_reader1, human_reader2).",
		"Readers and models, oracle none, study aided-pilot, unaided:",
		"Readers and models, oracle none, study study, unaided:",
		"- Oracle none, study aided-pilot, unaided: **",
		"- Oracle none, study study, unaided: **",
		"Readers and models on the readers' records, study study, unaided (oracle none)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(md, "4 reader(s)") || strings.Contains(md, "studies pooled") || strings.Contains(md, " pooled, unaided") {
		t.Error("report.md puts the two studies' readers in one panel")
	}
	// The models' leaderboard has no reader; the readers' leaderboards
	// have each reader once, beside the models, on the readers' records.
	lb := sectionTable(t, md, "### Leaderboard (oracle none)")
	if strings.Contains(lb, "human_") || !strings.Contains(lb, "opensource_first") {
		t.Errorf("the models' leaderboard:\n%s", lb)
	}
	rb := sectionTable(t, md, "### Readers and models on the readers' records, study study, unaided (oracle none)")
	for _, want := range []string{"| reader reader1 (human_reader1) |", "| reader reader2 (human_reader2) |", "| opensource_first |", "| opensource_shown |"} {
		if !strings.Contains(rb, want) {
			t.Errorf("the readers' leaderboard lacks %q:\n%s", want, rb)
		}
	}
	if strings.Contains(rb, "human_reader1_unaided") {
		t.Error("the study's leaderboard has the other study's reader")
	}

	// samples.csv: study, reader and arm of every reader's run, NA for
	// the models.
	samples := readCSVTable(t, filepath.Join(out, SamplesCSV))
	want := map[string]string{
		"human_reader1":         "study/reader1/unaided",
		"human_reader2_unaided": "aided-pilot/reader2/unaided",
		"human_reader1_aided":   "aided-pilot/reader1/aided",
		"opensource_shown":      "NA/NA/NA",
		"opensource_first":      "NA/NA/NA",
		"human_reader2":         "study/reader2/unaided",
		"human_reader2_aided":   "aided-pilot/reader2/aided",
		"human_reader1_unaided": "aided-pilot/reader1/unaided",
	}
	seen := map[string]bool{}
	for i, row := range samples.rows {
		run := samples.get(row, "run")
		got := samples.get(row, "study") + "/" + samples.get(row, "reader") + "/" + samples.get(row, "arm")
		if got != want[run] {
			t.Errorf("samples.csv row %d (%s): study/reader/arm %s, want %s", i+2, run, got, want[run])
		}
		seen[run] = true
	}
	if len(seen) != len(want) {
		t.Errorf("samples.csv runs %v", seen)
	}

	problems, checked, err := analysistest.RecheckReaderMRMC(out, "none", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	// 8 cells × (aided-pilot: unaided mean + 2 models, aided mean,
	// aided − unaided; study: mean + 2 models).
	if checked.Rows != 8*8 || checked.ScoresFiles != 8*8 || checked.WithInterval == 0 {
		t.Errorf("%+v, want 64 rows and scores tables, some with an interval", checked)
	}
	ct := readCSVTable(t, filepath.Join(out, "ext_reader_mrmc.csv"))
	studies := map[string]int{}
	for _, row := range ct.rows {
		studies[ct.get(row, "study")+"/"+ct.get(row, "arm")+"/"+ct.get(row, "pooled")]++
	}
	if studies["study/unaided/false"] != 24 || studies["aided-pilot/unaided/false"] != 24 || studies["aided-pilot/aided/false"] != 8 || studies["aided-pilot/NA/false"] != 8 {
		t.Errorf("rows per study/arm/pooled: %v", studies)
	}
}

// TestPoolStudies: told to pool, the report makes one unaided panel of
// the two studies' four readers, names them by study, and says on every
// table and line of the panel that it pools studies.
func TestPoolStudies(t *testing.T) {
	t.Parallel()
	out, recs := twoStudies(t, true)
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, want := range []string{
		"Oracle none, studies aided-pilot + study pooled, unaided: 4 reader(s): aided-pilot/reader1, aided-pilot/reader2, study/reader1, study/reader2 (runs human_reader1_unaided, human_reader2_unaided, human_reader1, human_reader2)" + pooledText + ".",
		"Readers and models, oracle none, studies aided-pilot + study pooled, unaided" + pooledText + ":",
		"Readers and models on the readers' records, studies aided-pilot + study pooled, unaided" + pooledText + " (oracle none)",
		"none: studies aided-pilot + study pooled, unaided (pooled)",
		"- Oracle none, studies aided-pilot + study pooled, unaided: **",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	problems, checked, err := analysistest.RecheckReaderMRMC(out, "none", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	// 8 cells × (pooled unaided mean + 2 models, aided mean, aided −
	// unaided).
	if checked.Rows != 8*5 || checked.ScoresFiles != 8*5 {
		t.Errorf("%+v, want 40 rows and scores tables", checked)
	}
	for _, f := range []string{"ext_reader_mrmc.csv", "ext_reader_agreement.csv", "ext_reader_time.csv"} {
		ct := readCSVTable(t, filepath.Join(out, f))
		pooled := 0
		for i, row := range ct.rows {
			if ct.get(row, "arm") == results.ArmUnaided {
				if ct.get(row, "pooled") != "true" || ct.get(row, "study") != "aided-pilot + study" {
					t.Errorf("%s row %d: study %q, pooled %s", f, i+2, ct.get(row, "study"), ct.get(row, "pooled"))
				}
				pooled++
			}
		}
		if pooled == 0 {
			t.Errorf("%s: no pooled row", f)
		}
	}
}

// sectionTable is the markdown table under a heading of report.md.
func sectionTable(t *testing.T, md, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, heading+"\n")
	if !ok {
		t.Fatalf("report.md has no %q", heading)
	}
	rest, _, _ = strings.Cut(rest, "\n###")
	rest, _, _ = strings.Cut(rest, "\n## ")
	return rest
}

// TestReadersInfiniteDF: three readers all wrong through stage 3 on the
// 7 revision-required records they read, a model right on 2 of them:
// MS(R) of the differences is 0, so Hillis' degrees of freedom are
// infinite and the interval is the normal's, 2/7 ± 1.96·√((2/7)(5/7)/6)
// = (−0.0758, 0.6472) with p 0.121 — not the df of 1.5e64, interval
// [−1, 1] and p 1 of a t quantile taken at such df. With three readers
// claim 3 gives the numbers but no verdict.
func TestReadersInfiniteDF(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	recs := benchtest.Full(4)
	seven := map[string]bool{}
	var order []string
	for _, r := range recs {
		if r.Path() == benchmark.RevisionRequired && !r.IsHeartType() && len(seven) < 7 {
			seven[r.KeyID] = true
			order = append(order, r.KeyID)
		}
	}
	if len(seven) != 7 {
		t.Fatalf("%d revision-required records", len(seven))
	}
	wrong := func(p protocol.PlannedTurn) string { return "Answer: " + strconv.Itoa(p.GT[0]%p.NOptions+1) }
	// Readers wrong at stage 1, 2 or 3 of every record: end-to-end 0 at
	// stage 3, each in their own way.
	wrongAt := func(q benchmark.Question) analysistest.Policy {
		return func(rec *benchmark.Record, p protocol.PlannedTurn) string {
			if p.Q == q {
				return wrong(p)
			}
			return analysistest.Oracle(rec, p)
		}
	}
	right := map[string]bool{order[2]: true, order[5]: true}
	model := func(rec *benchmark.Record, p protocol.PlannedTurn) string {
		if p.Q == benchmark.QRevisionResult && seven[rec.KeyID] && !right[rec.KeyID] {
			return wrong(p)
		}
		return analysistest.Oracle(rec, p)
	}
	dir := fixture(t, tmp, recs,
		&analysistest.Run{Provider: "human", Label: "r1", Oracle: "none", Policy: wrongAt(benchmark.QDetection), Only: seven},
		&analysistest.Run{Provider: "human", Label: "r2", Oracle: "none", Policy: wrongAt(benchmark.QContourEval), Only: seven},
		&analysistest.Run{Provider: "human", Label: "r3", Oracle: "none", Policy: wrongAt(benchmark.QRevisionResult), Only: seven},
		&analysistest.Run{Provider: "openai", Label: "sim-general-base", Oracle: "none", Policy: model})
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 50}}); err != nil {
		t.Fatal(err)
	}
	// The closed form: the readers' accuracies are all 0, so the
	// difference's variance is the model's jackknife variance p(1−p)/(c−1).
	p, c := 2.0/7, 7.0
	se := math.Sqrt(p * (1 - p) / (c - 1))
	z := distuv.UnitNormal.Quantile(0.975)
	wantP := 2 * distuv.UnitNormal.Survival(p/se)
	want := []string{"model:openai_sim-general-base", "none", "NA", "unaided", "false", "revision_required", "3", "3", "7",
		f6(p), f6(se), "inf", f6(p - z*se), f6(p + z*se), f6(wantP), "NA"}
	if want[12] != "-0.075758" || want[13] != "0.647186" || want[14] != "0.121335" {
		t.Fatalf("the closed form gives %v", want[11:])
	}
	ct := readCSVTable(t, filepath.Join(out, "ext_reader_mrmc.csv"))
	found := false
	for _, row := range ct.rows {
		if ct.get(row, "comparison") == want[0] && ct.get(row, "path") == "revision_required" && ct.get(row, "stage") == "3" {
			found = true
			if got := strings.Join(row[:len(want)], ","); got != strings.Join(want, ",") {
				t.Errorf("ext_reader_mrmc.csv:\n%s\nwant\n%s", got, strings.Join(want, ","))
			}
		}
	}
	if !found {
		t.Fatal("no row of the model at revision_required stage 3")
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	if row := "| openai_sim-general-base − readers | revision_required | 3 | 3 | 7 | +28.6 | [-7.6, +64.7] | 18.4 | ∞ | 0.121 |"; !strings.Contains(md, row) {
		t.Errorf("report.md lacks %q", row)
	}
	_, claim, _ := strings.Cut(md, "**Claim 3 (models fall short of expert readers).**")
	claim, _, _ = strings.Cut(claim, "Claim 3 rule")
	if !strings.Contains(claim, "**"+analysis.Undecided+"**. too few readers for a verdict (3; at least 4 are needed); the numbers: 3 readers, 1 model(s)") {
		t.Errorf("claim 3 with three readers: %q", claim)
	}
}

// TestScoresFileNames: every MRMC row with records gets a scores table
// of its own, named by safe names: a study or a run whose name comes
// out the same as another's as a file name is told apart, never
// written over; a row without records gets none.
func TestScoresFileNames(t *testing.T) {
	t.Parallel()
	d := &mrmc.Data{Cases: []string{"k"}}
	row := func(comparison, study, model string, data *mrmc.Data) analysis.MRMCRow {
		return analysis.MRMCRow{Comparison: comparison, OracleMode: "none", Study: study, Arm: "unaided", Model: model,
			Path: benchmark.RevisionRequired, Stage: 3, Data: data}
	}
	rr := &analysis.ReadersResult{MRMC: []analysis.MRMCRow{
		row("readers", "a b", "", d),
		row("model:x y", "a b", "x y", d),
		row("model:x_y", "a b", "x_y", d),
		row("readers", "a_b", "", d),
		row("readers", "", "", d),
		row("readers", "../up", "", d),
		row("model:z", "a b", "z", nil),
	}}
	got := scoresFileNames(rr)
	want := []string{
		"mrmc_scores/oracle_none/study-a_b/unaided_revision_required_stage3.csv",
		"mrmc_scores/oracle_none/study-a_b/unaided_revision_required_stage3_x_y.csv",
		"mrmc_scores/oracle_none/study-a_b/unaided_revision_required_stage3_x_y-2.csv",
		"mrmc_scores/oracle_none/study-a_b-2/unaided_revision_required_stage3.csv",
		"mrmc_scores/oracle_none/study-not-recorded/unaided_revision_required_stage3.csv",
		"mrmc_scores/oracle_none/study-_._up/unaided_revision_required_stage3.csv",
		"",
	}
	if !slices.Equal(got, want) {
		t.Errorf("scores files\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
