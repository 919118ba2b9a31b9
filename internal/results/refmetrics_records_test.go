package results_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// viaExport is the route RefMetricsFromRecords replaced: export every ok
// record (last line per key, index order) and read the export, exactly
// as the former code did.
func viaExport(recs []*results.Record) *results.RefMetrics {
	var entries []*ojson.Value
	for _, r := range results.Latest(recs) {
		if r.Status == results.StatusOK {
			entries = append(entries, results.ExportRecord(r, "", ""))
		}
	}
	return results.RefMetricsFromExport(entries)
}

// viaAllResults reads the metrics back from all_results.json bytes.
func viaAllResults(t *testing.T, data []byte) *results.RefMetrics {
	t.Helper()
	v, err := ojson.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var entries []*ojson.Value
	for _, m := range v.O {
		entries = append(entries, m.Value)
	}
	return results.RefMetricsFromExport(entries)
}

func refCSVs(m *results.RefMetrics) string {
	return string(results.CSV(results.RefSummaryHeader, m.SummaryRows("m"))) +
		string(results.CSV(results.RefContourHeader, m.ContourRows("m"))) +
		string(results.CSV(results.RefAttributeHeader, m.AttributeRows("m")))
}

// sameMetrics checks the direct metrics against both export routes.
func sameMetrics(t *testing.T, name string, recs []*results.Record) {
	t.Helper()
	got := results.RefMetricsFromRecords(recs)
	for route, want := range map[string]*results.RefMetrics{
		"ExportRecord":     viaExport(recs),
		"all_results.json": viaAllResults(t, results.MarshalAllResults(recs, "/bench", "openai", "m")),
	} {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: RefMetricsFromRecords differs from the metrics of %s:\n%s\nwant:\n%s", name, route, refCSVs(got), refCSVs(want))
		}
	}
}

// TestRefMetricsFromRecordsGolden: on the golden records of every oracle
// and parse mode, the direct metrics equal those of the export and of
// the golden all_results.json files.
func TestRefMetricsFromRecordsGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "allresults", "results_*.jsonl"))
	if len(files) != 6 {
		t.Fatalf("found %d golden jsonl files", len(files))
	}
	for _, f := range files {
		recs, err := rundir.ReadResults(f)
		if err != nil {
			t.Fatal(err)
		}
		sameMetrics(t, f, recs)
		all := strings.Replace(strings.Replace(f, "results_", "all_results_", 1), ".jsonl", ".json", 1)
		data, err := os.ReadFile(all)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := results.RefMetricsFromRecords(recs), viaAllResults(t, data); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: differs from %s:\n%s\nwant:\n%s", f, all, refCSVs(got), refCSVs(want))
		}
	}
}

// TestRefMetricsFromRecordsSynthetic compares the routes on engine-made
// runs (every path, oracle and parse mode; unparsable replies, which
// leave stages {} in reference mode; failed records).
func TestRefMetricsFromRecordsSynthetic(t *testing.T) {
	dir := t.TempDir()
	b := syntheticBench(t, dir, 3)
	seed := 0
	for _, o := range []string{"none", "implicit", "explicit"} {
		for _, p := range []string{"reference", "strict"} {
			seed++
			recs := syntheticRun(t, dir, b, o, p, seed)
			name := o + "/" + p
			sameMetrics(t, name, recs)
			// The fixture must exercise what it claims to.
			var failed, empty int
			paths := map[benchmark.Path]bool{}
			for _, r := range recs {
				paths[r.QAPath] = true
				if r.Status != results.StatusOK {
					failed++
					continue
				}
				e := results.ExportRecord(r, "", "")
				for _, k := range []string{"detection_qa", "contour_evaluation_qa"} {
					if len(e.Get(k).O) == 0 && r.TurnByStep(k) != nil && r.TurnByStep(k).Status == results.TurnAsked {
						empty++
					}
				}
			}
			if failed == 0 || len(paths) != 3 || (p == "reference") != (empty > 0) {
				t.Errorf("%s: fixture has %d failed records, paths %v, %d unrecorded asked stages", name, failed, paths, empty)
			}
		}
	}
}

func bp(b bool) *bool     { return &b }
func sp(s string) *string { return &s }

// asked is an asked turn; parsed "" is a reply no rule parsed.
func asked(step, parsed string, correct *bool) results.Turn {
	return results.Turn{Step: step, Status: results.TurnAsked, ParsedText: sp(parsed), Correct: correct, GT: &[]int{1}}
}

func skipped(step, reason string) results.Turn {
	return results.Turn{Step: step, Status: results.TurnSkipped, SkipReason: sp(reason)}
}

var (
	rrSteps   = []string{"detection_qa", "contour_evaluation_qa", "contour_revision_qa_expansion", "contour_revision_qa_contraction", "contour_revision_qa_revision_result"}
	attrSteps = []string{"attribute_extraction_qa_distribution", "attribute_extraction_qa_location", "attribute_extraction_qa_severity/measurement", "attribute_extraction_qa_comparison"}
)

// hand builds a record whose turns answer correct[i] for steps[i] (nil:
// asked but unscored).
func hand(key string, path benchmark.Path, index int, parse string, steps []string, correct ...*bool) *results.Record {
	r := &results.Record{KeyID: key, QAPath: path, Index: index, Status: results.StatusOK, ParseMode: parse}
	for i, s := range steps {
		var c *bool
		if i < len(correct) {
			c = correct[i]
		}
		r.Turns = append(r.Turns, asked(s, "1", c))
	}
	return r
}

// TestRefMetricsFromRecordsEdges covers the rules one at a time.
func TestRefMetricsFromRecordsEdges(t *testing.T) {
	T, F := bp(true), bp(false)
	all := append(append([]string{}, rrSteps...), attrSteps...)
	rf := append([]string{"detection_qa", "contour_evaluation_qa"}, attrSteps...)
	type tc struct {
		name string
		recs []*results.Record
	}
	var cases []tc
	add := func(name string, f func() []*results.Record) { cases = append(cases, tc{name, f()}) }
	for _, parse := range []string{"reference", "strict"} {
		add(parse+"/all right and wrong", func() []*results.Record {
			return []*results.Record{
				hand("cardiomegaly_a", benchmark.RevisionRequired, 0, parse, all, T, T, T, T, T, T, T, T, T),
				hand("effusion_b", benchmark.RevisionRequired, 1, parse, all, T, F, T, F, T, T, F, T, F),
				hand("cardiomegaly_c", benchmark.RevisionFree, 2, parse, rf, T, T, F, T, T, T),
				hand("edema_d", benchmark.LesionFree, 3, parse, []string{"detection_qa"}, F),
				hand("cardiomegaly_e", benchmark.LesionFree, 4, parse, []string{"detection_qa"}, T),
			}
		})
		add(parse+"/unparsed and unscored turns", func() []*results.Record {
			r := hand("cardiomegaly_a", benchmark.RevisionRequired, 0, parse, all, T, T, T, T, T, T, T, T, T)
			r.Turns[1] = asked("contour_evaluation_qa", "", F) // {} in reference mode
			r.Turns[6] = asked(attrSteps[1], "", nil)
			s := hand("effusion_b", benchmark.RevisionFree, 1, parse, rf, nil, T, T, T, T, T)
			s.Turns[0].ParsedText = nil
			return []*results.Record{r, s}
		})
		add(parse+"/stages skipped whole, in part or never planned", func() []*results.Record {
			r := hand("effusion_a", benchmark.RevisionRequired, 0, parse, all, T, T, T, T, T, T, T, T, T)
			for i := 2; i < 5; i++ {
				r.Turns[i] = skipped(r.Turns[i].Step, results.SkipStagePrefix+"no contour_qa")
			}
			s := hand("cardiomegaly_b", benchmark.RevisionFree, 1, parse, rf, T, T, T, T, T, T)
			s.Turns[4] = skipped(attrSteps[2], "not applicable")
			u := hand("cardiomegaly_c", benchmark.RevisionRequired, 2, parse, rrSteps[:2], T, T) // no stage 3/4 turns
			v := hand("opacity_d", benchmark.RevisionFree, 3, parse, rf, T, T, T, T, T, T)
			for i := 2; i < 6; i++ {
				v.Turns[i] = skipped(v.Turns[i].Step, results.SkipStagePrefix+"null attributes")
			}
			w := hand("edema_e", benchmark.RevisionRequired, 4, parse, all, T, F, T, T, T, T, T, T, T)
			w.Turns[3] = results.Turn{Step: w.Turns[3].Step, Status: results.TurnError, Error: sp("HTTP 500")}
			return []*results.Record{r, s, u, v, w}
		})
		add(parse+"/failed, superseded, unknown path, out of order", func() []*results.Record {
			a := hand("cardiomegaly_a", benchmark.RevisionRequired, 3, parse, all, T, T, T, T, T, T, T, T, T)
			a2 := hand("cardiomegaly_a", benchmark.RevisionRequired, 3, parse, all)
			a2.Status, a2.Error = results.StatusError, sp("HTTP 500")
			b1 := hand("effusion_b", benchmark.RevisionFree, 1, parse, rf)
			b1.Status = results.StatusError
			b2 := hand("effusion_b", benchmark.RevisionFree, 1, parse, rf, T, F, T, T, T, T)
			c := hand("edema_c", "some_other_path", 0, parse, all, T, T, T, T, T, T, T, T, T)
			d := hand("edema_d", benchmark.LesionFree, 2, parse, []string{"detection_qa"}, T)
			return []*results.Record{a, b1, c, a2, d, b2}
		})
	}
	add("empty", func() []*results.Record { return nil })
	for _, c := range cases {
		sameMetrics(t, c.name, c.recs)
	}
	// The figures themselves, for one case, so that a rule broken in
	// both routes alike still shows.
	m := results.RefMetricsFromRecords(cases[0].recs)
	want := "revision_required,m,end_to_end,1.0,0.5,0.5,0.5,3.0\r\n"
	if got := refCSVs(m); !strings.Contains(got, want) {
		t.Errorf("summary:\n%s\nwant the line %q", got, want)
	}
	if got := fmt.Sprint(m.Paths[benchmark.LesionFree].Depth); got != "[0 1]" {
		t.Errorf("lesion-free depths %s, want [0 1]", got)
	}
}
