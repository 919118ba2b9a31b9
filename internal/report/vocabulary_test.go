package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// vocabularyReport writes a report of the samples fixture (baselines, a
// strict run, a run with an error record) with comparisons, two runs in
// domain groups and a text-only control of the strict run, so that every
// ext_*.csv has rows: one report for the package, which its tests only
// read.
func vocabularyReport(t *testing.T) string {
	t.Helper()
	return shared.vocabulary.get(t, "vocabulary", writeVocabularyReport)
}

// writeVocabularyReport writes vocabularyReport's report under tmp.
func writeVocabularyReport(t *testing.T, tmp string) string {
	t.Helper()
	dir := samplesFixture(t, tmp)
	b, err := benchdir.Load(filepath.Join(tmp, "bench"))
	if err != nil {
		t.Fatal(err)
	}
	control := &analysistest.Run{Provider: "openai", Label: "strict", Oracle: "none", Parse: "strict", Policy: analysistest.First, Control: results.ControlTextOnly}
	if _, err := control.Write(dir, b); err != nil {
		t.Fatal(err)
	}
	df := filepath.Join(tmp, "domains.yaml")
	if err := os.WriteFile(df, []byte("openai_strict: general\nopenai_errors: medical\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "report")
	cfg := Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, DomainsFile: df,
		Analysis: analysis.Options{Bootstrap: 50, CompareBest: true}, Report: Options{Version: "test"}}
	if _, err := Generate(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return out
}

// csvTable is a CSV file read by column name.
type csvTable struct {
	header []string
	rows   [][]string
	col    map[string]int
}

func readCSVTable(t *testing.T, name string) *csvTable {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(read(t, name))).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %v", name, err)
	}
	ct := &csvTable{header: recs[0], rows: recs[1:], col: map[string]int{}}
	for i, h := range ct.header {
		ct.col[h] = i
	}
	return ct
}

func (ct *csvTable) get(row []string, name string) string { return row[ct.col[name]] }

// TestSamplesJoinExt joins samples.csv to every ext_*.csv that has a run
// on the documented key (docs/data-dictionary.md): run and oracle_mode
// (run_a / run_b in ext_pairwise.csv, unit for the model rows of
// ext_domain_decay.csv). Every row must match, and the model alias must
// be the one samples.csv gives the run.
func TestSamplesJoinExt(t *testing.T) {
	t.Parallel()
	out := vocabularyReport(t)
	samples := readCSVTable(t, filepath.Join(out, SamplesCSV))
	alias := map[[2]string]string{} // (run, oracle_mode) → model
	for _, r := range samples.rows {
		alias[[2]string{samples.get(r, "run"), samples.get(r, "oracle_mode")}] = samples.get(r, "model")
	}
	if len(alias) < 5 {
		t.Fatalf("samples.csv has %d runs", len(alias))
	}
	type join struct {
		file  string
		runs  []string // columns naming a run
		model bool     // the file has a model column
		only  func(ct *csvTable, row []string) bool
	}
	joins := []join{
		{"ext_stage_accuracy.csv", []string{"run"}, true, nil},
		{"ext_depth.csv", []string{"run"}, true, nil},
		{"ext_subquestion.csv", []string{"run"}, true, nil},
		{"ext_parse.csv", []string{"run"}, true, nil},
		{"ext_usage.csv", []string{"run"}, true, nil},
		{"ext_pairwise.csv", []string{"run_a", "run_b"}, false, nil},
		{"ext_domain_decay.csv", []string{"unit"}, false, func(ct *csvTable, row []string) bool { return ct.get(row, "kind") == "model" }},
		{ImageControlFile, []string{"run"}, false, nil},
	}
	for _, j := range joins {
		ct := readCSVTable(t, filepath.Join(out, j.file))
		need := append(slices.Clone(j.runs), "oracle_mode")
		if j.model {
			need = append(need, "model")
		}
		for _, c := range need {
			if _, ok := ct.col[c]; !ok {
				t.Errorf("%s: no %s column (header %q)", j.file, c, ct.header)
				continue
			}
		}
		if t.Failed() {
			continue
		}
		matched := 0
		for i, row := range ct.rows {
			if j.only != nil && !j.only(ct, row) {
				continue
			}
			for _, c := range j.runs {
				key := [2]string{ct.get(row, c), ct.get(row, "oracle_mode")}
				m, ok := alias[key]
				if !ok {
					t.Errorf("%s row %d: %s %v matches no row of samples.csv", j.file, i+2, c, key)
					continue
				}
				if j.model && ct.get(row, "model") != m {
					t.Errorf("%s row %d: model %q, samples.csv says %q", j.file, i+2, ct.get(row, "model"), m)
				}
			}
			matched++
		}
		if matched == 0 {
			t.Errorf("%s: no row to join", j.file)
		}
	}
}

// TestOneVocabulary checks every CSV the report writes, beside the
// reference-compatible ones: counts (n_…) are integers, never NA; the
// answer sets use ";"; no column uses a retired name.
func TestOneVocabulary(t *testing.T) {
	t.Parallel()
	out := vocabularyReport(t)
	retired := []string{"acc", "view", "n", "n_items", "correct_count", "diff", "model_a", "model_b", "runs", "p_correct",
		"chance_uniform", "majority_acc", "unparsed", "chosen", "dataset_sha256"}
	files, _ := filepath.Glob(filepath.Join(out, "*.csv"))
	if len(files) < 10 {
		t.Fatalf("%d CSV files", len(files))
	}
	// The readers' files are written only with readers.
	readers := readersReport(t)
	for _, f := range readersCSVs {
		files = append(files, filepath.Join(readers, f))
	}
	for _, f := range files {
		ct := readCSVTable(t, f)
		name := filepath.Base(f)
		for _, h := range ct.header {
			if slices.Contains(retired, h) {
				t.Errorf("%s: column %q is a retired name", name, h)
			}
		}
		for i, row := range ct.rows {
			for c, h := range ct.header {
				v := row[c]
				switch {
				case strings.HasPrefix(h, "n_"):
					if _, err := strconv.Atoi(v); err != nil {
						t.Errorf("%s row %d: count %s = %q, want an integer", name, i+2, h, v)
					}
				case h == "gt" || h == "parsed" || strings.HasSuffix(h, "_answer"):
					if strings.Contains(v, ",") {
						t.Errorf("%s row %d: %s = %q, want answers joined with ;", name, i+2, h, v)
					}
				}
			}
		}
	}
}
