package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// samplesColumns are the documented columns (docs/samples.md), in order.
var samplesColumns = []string{"run", "provider", "model", "oracle_mode", "parse_mode",
	"key_id", "record_index", "record_status", "lesion", "path", "stage", "question", "multi_select",
	"turn", "turn_index", "status", "skip_reason", "gt", "parsed", "correct", "jaccard",
	"parse_outcome", "parse_rule", "finish_reason", "patched_at", "cached", "attempts",
	"latency_ms", "total_ms", "input_tokens", "cached_input_tokens", "output_tokens",
	"thinking_tokens", "cost_usd", "error", "server", "study", "reader", "arm"}

// sampleReadRow is what the test reads back from samples.parquet: columns
// matched by name, independently of the writer's struct.
type sampleReadRow struct {
	Run          string   `parquet:"run"`
	OracleMode   string   `parquet:"oracle_mode"`
	KeyID        string   `parquet:"key_id"`
	Turn         string   `parquet:"turn"`
	TurnIndex    int32    `parquet:"turn_index"`
	Status       string   `parquet:"status"`
	GT           *string  `parquet:"gt,optional"`
	Parsed       *string  `parquet:"parsed,optional"`
	Correct      *bool    `parquet:"correct,optional"`
	ParseOutcome *string  `parquet:"parse_outcome,optional"`
	InputTokens  *int64   `parquet:"input_tokens,optional"`
	OutputTokens *int64   `parquet:"output_tokens,optional"`
	CostUSD      *float64 `parquet:"cost_usd,optional"`
	LatencyMS    *int64   `parquet:"latency_ms,optional"`
	Attempts     int32    `parquet:"attempts"`
	TotalMS      *int64   `parquet:"total_ms,optional"`
	Error        *string  `parquet:"error,optional"`
}

// samplesRuns are the baseline runs plus a strict run with an empty, an
// out-of-range and an unparsable reply, and a run with an error record.
func samplesRuns() []*analysistest.Run {
	strict := analysistest.Table(map[string]string{
		"pneumonia_s57001234_positive_0/T1":   "",
		"atelectasis_s56543210_positive_1/T2": "Answer: 9",
		"edema_s50414267_negative_3/T1":       "no idea",
	}, analysistest.Oracle)
	return append(baselineRuns(),
		&analysistest.Run{Provider: "openai", Label: "strict", Oracle: "none", Parse: "strict", Policy: strict},
		&analysistest.Run{Provider: "openai", Label: "errors", Oracle: "explicit",
			Policy: analysistest.Table(map[string]string{"edema_s50414267_negative_3/T1": "Answer: 9"}, analysistest.First),
			Errors: map[string]bool{"opacity_ph0007_positive_0": true}})
}

// sampleJSONLTurns reads a run's results.jsonl (last line per key_id) into
// "key_id/turn" → turn, independently of the analysis loader.
func sampleJSONLTurns(t *testing.T, path string) map[string]*results.Turn {
	t.Helper()
	out := map[string]*results.Turn{}
	for line := range strings.SplitSeq(strings.TrimSuffix(string(read(t, path)), "\n"), "\n") {
		rec, err := results.UnmarshalLine([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		for k := range out {
			if strings.HasPrefix(k, rec.KeyID+"/") {
				delete(out, k)
			}
		}
		for i := range rec.Turns {
			out[rec.KeyID+"/"+rec.Turns[i].Turn] = &rec.Turns[i]
		}
	}
	return out
}

func readSamplesParquet(t *testing.T, name string) ([]sampleReadRow, *parquet.File) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.Read[sampleReadRow](f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return rows, pf
}

func sampleOptStr(p *string) string {
	if p == nil {
		return NA
	}
	return *p
}

func sampleInts(p *[]int) string {
	if p == nil || len(*p) == 0 {
		return NA
	}
	var parts []string
	for _, x := range *p {
		parts = append(parts, strconv.Itoa(x))
	}
	return strings.Join(parts, ";")
}

// samplesFixture writes the sample benchmark without one record's
// points image, so that its T3 is skipped, and runs over it.
func samplesFixture(t *testing.T, tmp string) string {
	t.Helper()
	b, err := analysistest.WriteBench(filepath.Join(tmp, "bench"), benchtest.Sample())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(b.Dir, "chexpercept", "opacity_ph0007_positive_0", "contour_qa", "contour_revision_qa", "xray_with_mask_and_points.png")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "results")
	for _, r := range samplesRuns() {
		if _, err := r.Write(dir, b); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSamples reads samples.parquet back with parquet-go and checks it
// row by row against every run's results.jsonl, and samples.csv against
// the Parquet rows.
func TestSamples(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dir := samplesFixture(t, tmp)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 50}, Report: Options{Version: "test"}}); err != nil {
		t.Fatal(err)
	}
	rows, pf := readSamplesParquet(t, filepath.Join(out, SamplesParquet))

	// Every turn of every results.jsonl is one row, and no more.
	turns := map[string]*results.Turn{}
	for _, r := range samplesRuns() {
		for k, v := range sampleJSONLTurns(t, filepath.Join(dir, r.Name(), "oracle_"+r.Oracle, rundir.ResultsFile)) {
			turns[r.Name()+"/"+k] = v
		}
	}
	if len(rows) != len(turns) || len(turns) < 60 {
		t.Fatalf("%d rows, %d turns in results.jsonl", len(rows), len(turns))
	}
	seen := map[string]bool{}
	outcomes, statuses := map[string]int{}, map[string]int{}
	for i, r := range rows {
		id := r.Run + "/" + r.KeyID + "/" + r.Turn
		tu := turns[id]
		if tu == nil || seen[id] {
			t.Fatalf("row %d: %s is not a turn of results.jsonl, or repeated", i, id)
		}
		seen[id] = true
		if i > 0 {
			p := rows[i-1]
			if c := strings.Compare(p.Run+"\x00"+p.OracleMode+"\x00"+p.KeyID, r.Run+"\x00"+r.OracleMode+"\x00"+r.KeyID); c > 0 || c == 0 && p.TurnIndex >= r.TurnIndex {
				t.Errorf("row %d (%s) sorts before row %d", i, id, i-1)
			}
		}
		var in, outTok *int64
		if tu.Usage != nil && tu.Status == results.TurnAsked {
			in, outTok = &tu.Usage.InputTokens, &tu.Usage.OutputTokens
		}
		asked := tu.Status == results.TurnAsked
		var totalMS any = NA
		if tu.Status != results.TurnSkipped {
			totalMS = tu.TotalMS
		}
		var parsed, correct string = NA, NA
		if asked {
			parsed = sampleInts(tu.Parsed)
			correct = strconv.FormatBool(*tu.Correct)
		}
		gotCorrect := NA
		if r.Correct != nil {
			gotCorrect = strconv.FormatBool(*r.Correct)
		}
		for _, c := range []struct{ what, got, want string }{
			{"status", r.Status, tu.Status},
			{"gt", sampleOptStr(r.GT), sampleInts(tu.GT)},
			{"parsed", sampleOptStr(r.Parsed), parsed},
			{"correct", gotCorrect, correct},
			{"input_tokens", fmt.Sprint(sampleDeref(r.InputTokens)), fmt.Sprint(sampleDeref(in))},
			{"output_tokens", fmt.Sprint(sampleDeref(r.OutputTokens)), fmt.Sprint(sampleDeref(outTok))},
			{"error", sampleOptStr(r.Error), sampleOptStr(tu.Error)},
			{"cost_usd set", fmt.Sprint(r.CostUSD != nil), fmt.Sprint(asked && tu.CostUSD != nil)},
			{"latency_ms set", fmt.Sprint(r.LatencyMS != nil), fmt.Sprint(asked)},
			// Counts are never null: a skipped turn made 0 attempts; an
			// error turn keeps the attempts and time it cost.
			{"attempts", fmt.Sprint(r.Attempts), fmt.Sprint(tu.Attempts)},
			{"total_ms", fmt.Sprint(sampleDeref(r.TotalMS)), fmt.Sprint(totalMS)},
		} {
			if c.got != c.want {
				t.Errorf("%s: %s = %q, results.jsonl %q", id, c.what, c.got, c.want)
			}
		}
		outcomes[r.Run+" "+r.KeyID+" "+r.Turn+" "+sampleOptStr(r.ParseOutcome)]++
		statuses[r.Status]++
	}
	if statuses[results.TurnAsked] == 0 || statuses[results.TurnSkipped] == 0 || statuses[results.TurnError] != 1 {
		t.Errorf("statuses %v: want asked, skipped and one error turn", statuses)
	}
	for _, want := range []string{
		"openai_strict pneumonia_s57001234_positive_0 T1 empty",
		"openai_strict atelectasis_s56543210_positive_1 T2 fail", // strict: out of range is a fail:* rule
		"openai_strict edema_s50414267_negative_3 T1 fail",
		"baseline_random pneumonia_s57001234_positive_0 T1 ok",
		"openai_errors edema_s50414267_negative_3 T1 out_of_range",
		"baseline_oracle opacity_ph0007_positive_0 T3 NA", // skipped
	} {
		if outcomes[want] != 1 {
			t.Errorf("no row %q", want)
		}
	}
	if tu := turns["openai_errors/opacity_ph0007_positive_0/T1"]; tu == nil || tu.Status != results.TurnError || tu.Attempts != 6 || tu.TotalMS != 1500 {
		t.Errorf("the error run's record has no error turn: %+v", tu)
	}

	// Schema and fixed metadata: no timestamp, our created_by.
	var names []string
	for _, f := range pf.Schema().Fields() {
		names = append(names, f.Name())
	}
	if !slices.Equal(names, samplesColumns) {
		t.Errorf("parquet columns %q", names)
	}
	md := pf.Metadata()
	if md.CreatedBy != "chexpercept version test" || len(md.KeyValueMetadata) != 1 || md.KeyValueMetadata[0].Value != samplesSchema {
		t.Errorf("created_by %q, key-value metadata %+v", md.CreatedBy, md.KeyValueMetadata)
	}

	checkSamplesCSV(t, filepath.Join(out, SamplesCSV), rows)
}

func sampleDeref[T any](p *T) any {
	if p == nil {
		return NA
	}
	return *p
}

// checkSamplesCSV checks that samples.csv has the documented header and
// the Parquet file's rows.
func checkSamplesCSV(t *testing.T, name string, rows []sampleReadRow) {
	t.Helper()
	data := read(t, name)
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0], samplesColumns) {
		t.Fatalf("csv header %q", recs[0])
	}
	if len(recs)-1 != len(rows) {
		t.Fatalf("csv has %d rows, parquet %d", len(recs)-1, len(rows))
	}
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
	for i, r := range rows {
		c := recs[i+1]
		cost := NA
		if r.CostUSD != nil {
			cost = strconv.FormatFloat(*r.CostUSD, 'f', -1, 64)
		}
		got := []string{c[col["run"]], c[col["key_id"]], c[col["turn"]], c[col["status"]], c[col["gt"]], c[col["parsed"]],
			c[col["correct"]], c[col["input_tokens"]], c[col["cost_usd"]], c[col["error"]], c[col["parse_outcome"]]}
		want := []string{r.Run, r.KeyID, r.Turn, r.Status, sampleOptStr(r.GT), sampleOptStr(r.Parsed),
			fmt.Sprint(sampleDeref(r.Correct)), fmt.Sprint(sampleDeref(r.InputTokens)), cost, sampleOptStr(r.Error), sampleOptStr(r.ParseOutcome)}
		if !slices.Equal(got, want) {
			t.Errorf("csv row %d: %q, parquet %q", i+1, got, want)
		}
		for j, v := range c {
			if v == "" && recs[0][j] != "error" && recs[0][j] != "skip_reason" {
				t.Errorf("csv row %d: empty %s (null is NA)", i+1, recs[0][j])
			}
		}
	}
}

// The same runs give the same bytes, whatever the worker count.
func TestSamplesDeterministic(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dir := samplesFixture(t, tmp)
	var got [2][2][]byte
	for i, workers := range []int{1, 4} {
		out := filepath.Join(tmp, fmt.Sprintf("report-%d", i))
		cfg := Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 50}, Report: Options{Version: "test", Workers: workers}}
		if _, err := Generate(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		got[i] = [2][]byte{read(t, filepath.Join(out, SamplesCSV)), read(t, filepath.Join(out, SamplesParquet))}
	}
	if !bytes.Equal(got[0][0], got[1][0]) || !bytes.Equal(got[0][1], got[1][1]) {
		t.Error("samples.csv or samples.parquet differ between two reports of the same runs")
	}
}

// A FIFO named samples.csv in an earlier report is neither written into
// (which would block) nor replaced (it is not the report's): the report stops
// naming it; a directory named samples.parquet is a clear error naming
// it, and leaves no temporary files.
func TestSamplesHostileNames(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dir := fixture(t, tmp, benchtest.Sample(), baselineRuns()...)
	out := filepath.Join(tmp, "report")
	cfg := Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 10}}
	if _, err := Generate(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(out, SamplesCSV))
	if err := syscall.Mkfifo(filepath.Join(out, SamplesCSV), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, err := Generate(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), SamplesCSV+" is not a regular file (named pipe)") {
		t.Fatalf("error %v, want a refusal naming %s", err, SamplesCSV)
	}
	if st, err := os.Lstat(filepath.Join(out, SamplesCSV)); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", st, err)
	}
	os.Remove(filepath.Join(out, SamplesCSV))
	pq := filepath.Join(out, SamplesParquet)
	os.Remove(pq)
	os.MkdirAll(filepath.Join(pq, "keep"), 0o755)
	_, err := Generate(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), out) || !strings.Contains(err.Error(), SamplesParquet+" is a directory") {
		t.Fatalf("error %v, want one naming %s", err, pq)
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

// A run without manifest.json has no model name: NA in the CSV, null in
// Parquet, never an empty cell.
func TestSamplesNoManifest(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dir := fixture(t, tmp, benchtest.Sample(), baselineRuns()...)
	if err := os.Remove(filepath.Join(dir, "baseline_random", "oracle_none", rundir.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 10}}); err != nil {
		t.Fatal(err)
	}
	type modelRow struct {
		Run   string  `parquet:"run"`
		Model *string `parquet:"model,optional"`
	}
	pq := filepath.Join(out, SamplesParquet)
	st, err := os.Stat(pq)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(pq)
	defer f.Close()
	rows, err := parquet.Read[modelRow](f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	nulls := 0
	for _, r := range rows {
		if (r.Model == nil) != (r.Run == "baseline_random") {
			t.Fatalf("run %s: model %v", r.Run, r.Model)
		}
		if r.Model == nil {
			nulls++
		}
	}
	csvRows, err := csv.NewReader(bytes.NewReader(read(t, filepath.Join(out, SamplesCSV)))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	na := 0
	for _, r := range csvRows[1:] {
		if r[0] == "baseline_random" && r[2] == NA {
			na++
		}
	}
	if nulls == 0 || na != nulls {
		t.Errorf("%d null models in Parquet, %d NA in the CSV", nulls, na)
	}
}
