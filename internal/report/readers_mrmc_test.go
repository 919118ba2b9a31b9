package report

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// readerStudyFixture writes four readers of different skill over the
// records of index divisible by 3 (the first also over record 1) and three models
// over every record, in oracle mode none, and reports them.
func readerStudyFixture(t *testing.T) (string, []*benchmark.Record) {
	t.Helper()
	tmp := t.TempDir()
	recs := benchtest.Full(4)
	index := map[string]int{}
	sample := map[string]bool{}
	for i, r := range recs {
		index[r.KeyID] = i
		if i%3 == 0 {
			sample[r.KeyID] = true
		}
	}
	extra := map[string]bool{recs[1].KeyID: true}
	for k := range sample {
		extra[k] = true
	}
	missEvery := func(n int, badStage3 bool) analysistest.Policy {
		return func(rec *benchmark.Record, p protocol.PlannedTurn) string {
			if index[rec.KeyID]%n == 0 && p.Q == benchmark.QDetection {
				return "Answer: " + strconv.Itoa(p.GT[0]%p.NOptions+1)
			}
			if badStage3 && index[rec.KeyID]%4 == 2 && p.Q == benchmark.QRevisionResult {
				return "Answer: " + strconv.Itoa(p.GT[0]%p.NOptions+1)
			}
			return analysistest.Oracle(rec, p)
		}
	}
	runs := []*analysistest.Run{
		{Provider: "human", Label: "expert", Oracle: "none", Policy: analysistest.Oracle, Only: extra},
		{Provider: "human", Label: "good", Oracle: "none", Policy: missEvery(7, false), Only: sample},
		{Provider: "human", Label: "fair", Oracle: "none", Policy: missEvery(5, true), Only: sample},
		{Provider: "human", Label: "weak", Oracle: "none", Policy: missEvery(2, true), Only: sample},
		{Provider: "opensource", Label: "first", Oracle: "none", Policy: analysistest.First},
		{Provider: "opensource", Label: "random", Oracle: "none", Policy: analysistest.Random(3)},
		{Provider: "opensource", Label: "near", Oracle: "none", Policy: missEvery(4, true)},
	}
	dir := fixture(t, tmp, recs, runs...)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 50}}); err != nil {
		t.Fatal(err)
	}
	return out, recs
}

// TestReaderMRMCRecomputed: every row of ext_reader_mrmc.csv is
// recomputed from samples.csv alone, on the records every compared
// party answered, by a brute-force jackknife; n_records is the readers'
// record count (the models answered a superset).
func TestReaderMRMCRecomputed(t *testing.T) {
	t.Parallel()
	out, recs := readerStudyFixture(t)
	problems, checked, err := analysistest.RecheckReaderMRMC(out, "none", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if checked.WithInterval < 20 || checked.ScoresFiles < 30 {
		t.Errorf("only %d rows with an interval, %d scores tables checked", checked.WithInterval, checked.ScoresFiles)
	}
	// n_records is the readers' count (the second reader read only the
	// sample; the models answered a superset), and every path and stage
	// has a row per comparison.
	so, err := analysistest.ReadOutcomes(out, "none", recs)
	if err != nil {
		t.Fatal(err)
	}
	ct := readCSVTable(t, filepath.Join(out, "ext_reader_mrmc.csv"))
	seen := map[string]int{}
	for i, row := range ct.rows {
		r := mrmcRowOf(t, ct, row)
		seen[r.Comparison]++
		n := 0
		for key := range so.Path {
			if _, ok := so.E2E("human_good", key, r.Path, r.Stage); ok {
				n++
			}
		}
		if r.NRecords != n {
			t.Errorf("row %d (%s %s %d): n_records %d, the readers have %d", i+2, r.Comparison, r.Path, r.Stage, r.NRecords, n)
		}
	}
	want := map[string]int{analysis.ComparisonReaders: 8, "model:opensource_first": 8, "model:opensource_random": 8, "model:opensource_near": 8}
	for k, n := range want {
		if seen[k] != n {
			t.Errorf("%d rows of %s, want %d (every path and stage)", seen[k], k, n)
		}
	}
}

// TestClaim3TooFewRecords: two readers on two revision-required records
// give no claim-3 verdict, however far a model is from them.
func TestClaim3TooFewRecords(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	recs := benchtest.Full(4)
	two := map[string]bool{}
	for _, r := range recs {
		if r.Path() == benchmark.RevisionRequired && !r.IsHeartType() && len(two) < 2 {
			two[r.KeyID] = true
		}
	}
	dir := fixture(t, tmp, recs,
		&analysistest.Run{Provider: "human", Label: "r1", Oracle: "none", Policy: analysistest.First, Only: two},
		&analysistest.Run{Provider: "human", Label: "r2", Oracle: "none", Policy: analysistest.Random(1), Only: two},
		&analysistest.Run{Provider: "opensource", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle},
		&analysistest.Run{Provider: "opensource", Label: "first", Oracle: "none", Policy: analysistest.First})
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 50}}); err != nil {
		t.Fatal(err)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	_, claim, ok := strings.Cut(md, "**Claim 3 (models fall short of expert readers).**")
	if !ok {
		t.Fatal("no claim 3 in report.md")
	}
	claim, _, _ = strings.Cut(claim, "Claim 3 rule")
	if !strings.Contains(claim, analysis.Undecided) || !strings.Contains(claim, "too few records") || !strings.Contains(claim, "at most 2 record(s)") {
		t.Errorf("claim 3: %q, want undecided for too few records", claim)
	}
	ct := readCSVTable(t, filepath.Join(out, "ext_reader_mrmc.csv"))
	for i, row := range ct.rows {
		if n := ct.get(row, "n_records"); ct.get(row, "path") == string(benchmark.RevisionRequired) && n != "2" {
			t.Errorf("row %d: %s %s stage %s: n_records %s, want the readers' 2", i+2, ct.get(row, "comparison"), ct.get(row, "path"), ct.get(row, "stage"), n)
		}
	}
}

// TestAidedStudy: three readers' unaided and aided arms with the model
// run shown give aided − unaided rows and switch counts that samples.csv
// reproduces.
func TestAidedStudy(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	recs := benchtest.Full(4)
	index := map[string]int{}
	for i, r := range recs {
		index[r.KeyID] = i
	}
	// The shown model misses detection on every third record; unaided
	// readers miss it on every fourth (shifted per reader); aided, they
	// take the model's detection answer, right or wrong.
	modelWrong := func(rec *benchmark.Record) bool { return index[rec.KeyID]%3 == 0 }
	wrong := func(p protocol.PlannedTurn) string { return "Answer: " + strconv.Itoa(p.GT[0]%p.NOptions+1) }
	model := func(rec *benchmark.Record, p protocol.PlannedTurn) string {
		if p.Q == benchmark.QDetection && modelWrong(rec) {
			return wrong(p)
		}
		return analysistest.Oracle(rec, p)
	}
	unaided := func(shift int) analysistest.Policy {
		return func(rec *benchmark.Record, p protocol.PlannedTurn) string {
			if p.Q == benchmark.QDetection && (index[rec.KeyID]+shift)%4 == 0 {
				return wrong(p)
			}
			return analysistest.Oracle(rec, p)
		}
	}
	const aid = "opensource_shown"
	runs := []*analysistest.Run{{Provider: "opensource", Label: "shown", Oracle: "none", Policy: model}}
	readers := []string{"ana", "ben", "cy"}
	for i, name := range readers {
		runs = append(runs,
			&analysistest.Run{Provider: "human", Label: name + "_unaided", Oracle: "none", Policy: unaided(i),
				Reading: &results.ReadingArm{Study: "s1", Reader: name, Arm: results.ArmUnaided, AidRun: aid}},
			&analysistest.Run{Provider: "human", Label: name + "_aided", Oracle: "none", Policy: model,
				Reading: &results.ReadingArm{Study: "s1", Reader: name, Arm: results.ArmAided, AidRun: aid}})
	}
	dir := fixture(t, tmp, recs, runs...)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 50}}); err != nil {
		t.Fatal(err)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, want := range []string{"Does the model help the readers?", "aided study s1: 3 reader(s) with both arms (ana, ben, cy)", "| aided − unaided (s1) | revision_required | 1 | 3 |", "Switches after the model's answer"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// One panel per arm, each named by the study: the unaided arms are
	// compared with the models, the aided arm with its unaided arm only.
	for _, want := range []string{"Oracle none, study s1, unaided: 3 reader(s): ana, ben, cy (runs human_ana_unaided, human_ben_unaided, human_cy_unaided).",
		"Oracle none, study s1, aided: 3 reader(s): ana, ben, cy (runs human_ana_aided, human_ben_aided, human_cy_aided). This arm saw a model's answers"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks the panel line %q", want)
		}
	}
	problems, mchecked, err := analysistest.RecheckReaderMRMC(out, "none", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	// Per cell: each arm's mean, the shown model − unaided readers,
	// aided − unaided.
	if mchecked.Rows != 8*4 || mchecked.ScoresFiles != 8*4 {
		t.Errorf("%d rows, %d scores tables checked; want 8 cells × 4", mchecked.Rows, mchecked.ScoresFiles)
	}
	so, err := analysistest.ReadOutcomes(out, "none", recs)
	if err != nil {
		t.Fatal(err)
	}
	ct := readCSVTable(t, filepath.Join(out, "ext_reader_mrmc.csv"))
	aided := 0
	for i, row := range ct.rows {
		r := mrmcRowOf(t, ct, row)
		if r.Comparison != analysis.ComparisonAided {
			continue
		}
		aided++
		var runsA, runsU []string
		for _, name := range readers {
			runsA, runsU = append(runsA, "human_"+name+"_aided"), append(runsU, "human_"+name+"_unaided")
		}
		figs := so.Paired(append(runsA, runsU...), r.Path, r.Stage)
		var want float64
		for j := range readers {
			want += (mean(figs[j]) - mean(figs[len(readers)+j])) / float64(len(readers))
		}
		if r.NReaders != 3 || r.NRecords != len(figs[0]) || math.Abs(r.Estimate-want) > 1e-6 {
			t.Errorf("row %d (%s %d): %d readers, %d records, aided − unaided %v; samples.csv: %d records, %v", i+2, r.Path, r.Stage, r.NReaders, r.NRecords, r.Estimate, len(figs[0]), want)
		}
		if r.Path == benchmark.RevisionRequired && r.Stage == 1 && !(r.Valid() && r.SE > 0) {
			t.Errorf("row %d: no interval for aided − unaided at detection: %+v", i+2, r)
		}
	}
	if aided != 8 {
		t.Errorf("%d aided − unaided rows, want 8 (every path and stage)", aided)
	}
	sw := readCSVTable(t, filepath.Join(out, "ext_reader_switches.csv"))
	if got := strings.Join(sw.header, ","); got != "oracle_mode,study,aid_run,reader,path,stage,n_records,model_wrong_reader_right,right_to_wrong,model_right_reader_wrong,wrong_to_right" {
		t.Errorf("ext_reader_switches.csv header %s", got)
	}
	problems, checked, err := analysistest.RecheckReaderSwitches(out, "none", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if len(sw.rows) != 3*8 || checked.Rows != 3*8 {
		t.Errorf("%d switch rows, %d recomputed, want 3 readers × 8 cells", len(sw.rows), checked.Rows)
	}
	if checked.AtDetection == 0 {
		t.Error("no reader switched at detection, though the aided answers follow the model")
	}

	// Without the shown model's run among the inputs: aided − unaided
	// still, no switches, and the report says why.
	var inputs []string
	for _, name := range readers {
		inputs = append(inputs, filepath.Join(dir, "human_"+name+"_unaided"), filepath.Join(dir, "human_"+name+"_aided"))
	}
	out2 := filepath.Join(tmp, "report-no-model")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader(inputs, runset.Options{}), Out: out2, Analysis: analysis.Options{Bootstrap: 50}}); err != nil {
		t.Fatal(err)
	}
	md2 := string(read(t, filepath.Join(out2, "report.md")))
	if !strings.Contains(md2, "| aided − unaided (s1) | revision_required | 1 | 3 |") || !strings.Contains(md2, "is not among the report's inputs") || strings.Contains(md2, "Switches after") {
		t.Error("without the model run: want aided − unaided, the note, and no switch table")
	}
	if _, err := os.Stat(filepath.Join(out2, "ext_reader_switches.csv")); !os.IsNotExist(err) {
		t.Errorf("ext_reader_switches.csv without the model run: %v", err)
	}
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x / float64(len(xs))
	}
	return s
}
