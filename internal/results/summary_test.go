package results

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
)

func bp(b bool) *bool { return &b }

func staged(key string, path benchmark.Path, status string, s1, s2, s3, s4 *bool, applicable [4]bool) *Record {
	r := rec(key, 0, status)
	r.QAPath = path
	r.Stages = Stages{
		Detection:           Stage{Applicable: applicable[0], Asked: true, Correct: s1},
		ContourEvaluation:   Stage{Applicable: applicable[1], Asked: true, Correct: s2},
		ContourRevision:     RevisionStage{Applicable: applicable[2], Correct: s3},
		AttributeExtraction: AttributeStage{Applicable: applicable[3], Correct: s4},
	}
	return r
}

func TestStageAccuracies(t *testing.T) {
	all := [4]bool{true, true, true, true}
	heart := [4]bool{true, true, true, false}
	recs := []*Record{
		staged("a", benchmark.RevisionRequired, StatusOK, bp(true), bp(true), bp(false), bp(true), all),   // op4 right, e2e4 wrong
		staged("b", benchmark.RevisionRequired, StatusOK, bp(true), bp(true), bp(true), nil, heart),       // no stage 4
		staged("c", benchmark.RevisionRequired, StatusError, bp(true), bp(true), bp(true), bp(true), all), // excluded
		staged("d", benchmark.LesionFree, StatusOK, bp(false), nil, nil, nil, [4]bool{true}),
	}
	for i, r := range recs {
		r.Index = i
	}
	got := map[string]string{}
	for _, a := range StageAccuracies(recs) {
		v := "null"
		if a.E2E != nil {
			v = fmt.Sprintf("%v/%v", *a.E2E, *a.OraclePassed)
		}
		got[fmt.Sprintf("%s%d", a.Path, a.Stage)] = fmt.Sprintf("%s n%d", v, a.N)
	}
	want := map[string]string{
		"revision_required1": "1/1 n2", "revision_required2": "1/1 n2", "revision_required3": "0.5/0.5 n2",
		"revision_required4": "0/1 n1", "revision_free1": "null n0", "revision_free2": "null n0",
		"revision_free4": "null n0", "lesion_free1": "0/0 n1",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d entries, want %d: %v", len(got), len(want), got)
	}
}

func TestBuildSummaryCounts(t *testing.T) {
	s := func(v string) *string { return &v }
	c := 0.5
	r1 := rec("a", 0, StatusOK)
	r1.Usage = Usage{InputTokens: 10, OutputTokens: 2, CostUSD: &c}
	r1.Turns = []Turn{
		{Status: TurnAsked, Raw: s(""), ParseOK: bp(false), FinishReason: s("length")},
		{Status: TurnAsked, Raw: s("Answer: 1"), ParseOK: bp(true), Cached: true},
		{Status: TurnSkipped},
	}
	r2 := rec("b", 1, StatusError)
	r2.Turns = []Turn{{Status: TurnAsked, Raw: s("x"), ParseOK: bp(false), ParseRule: s("fail:no_marker")}}
	sum := BuildSummary(RunInfo{Name: "baseline_x"}, 3, []*Record{r1, r2}, 1.5)
	want := Counts{RecordsSelected: 3, RecordsOK: 1, RecordsError: 1, Calls: 3, ParseFailures: 2, EmptyAnswers: 1, Truncations: 1, CacheHits: 1}
	if sum.Counts != want {
		t.Errorf("counts %+v, want %+v", sum.Counts, want)
	}
	if sum.Usage.CostUSD != nil {
		t.Error("cost must be null when a record is unpriced")
	}
	b, err := sum.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"run": {`, `"counts": {`, `"usage": {`, `"wall_time_s": 1.5`, `"accuracy": [`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("summary.json lacks %s", key)
		}
	}
	if strings.Index(string(b), `"run"`) > strings.Index(string(b), `"counts"`) {
		t.Error("key order")
	}
}

// A run's summary.json says its schema version, first.
func TestSummarySchemaVersion(t *testing.T) {
	dir := t.TempDir()
	s := BuildSummary(RunInfo{Name: "baseline_random"}, 1, []*Record{rec("edema_a", 0, StatusOK)}, 1.5)
	if s.SchemaVersion != SummarySchemaVersion {
		t.Fatalf("schema version %d", s.SchemaVersion)
	}
	if _, err := Finalize(nil, dir, &Manifest{RunName: "baseline_random"}, 1, 1.5); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "{\n  \"schema_version\": 2,\n") {
		t.Errorf("summary.json starts %.60q, want the schema version first", b)
	}
}
