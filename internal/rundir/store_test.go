package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

func rec(key string, index int, status string) *results.Record {
	return &results.Record{KeyID: key, Lesion: "edema", QAPath: benchmark.LesionFree, Index: index, Status: status, OracleMode: "none",
		ParseMode: "reference", Turns: []results.Turn{}, OracleEvents: []results.Event{}}
}

func TestStoreTruncatesPartialLineAndAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), ResultsFile)
	s, prev, err := OpenStore(path)
	if err != nil || len(prev) != 0 {
		t.Fatalf("new store: %v %d", err, len(prev))
	}
	for i, k := range []string{"edema_a", "edema_b"} {
		if err := s.Append(rec(k, i, results.StatusOK)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	full, _ := os.ReadFile(path)
	// a kill during a write leaves a prefix of the next line
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"key_id":"edema_c","les`)
	f.Close()
	if recs, err := ReadResults(path); err != nil || len(recs) != 2 {
		t.Fatalf("ReadResults with a partial line: %d records, %v", len(recs), err)
	}
	s, prev, err = OpenStore(path)
	if err != nil || len(prev) != 2 || prev[1].KeyID != "edema_b" {
		t.Fatalf("reopen: %v %d", err, len(prev))
	}
	if b, _ := os.ReadFile(path); string(b) != string(full) {
		t.Fatal("the partial line was not truncated")
	}
	if err := s.Append(rec("edema_c", 2, results.StatusError)); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(rec("edema_c", 2, results.StatusOK)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	recs, err := ReadResults(path)
	if err != nil || len(recs) != 4 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	latest := results.Latest(recs)
	if len(latest) != 3 || latest[2].Status != results.StatusOK {
		t.Fatalf("Latest: %d records, last status %s", len(latest), latest[2].Status)
	}
}

func TestReadResultsRejectsCorruptLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), ResultsFile)
	line, _ := rec("edema_a", 0, results.StatusOK).MarshalLine()
	os.WriteFile(path, append(append(line, []byte("{not json}\n")...), line...), 0o644)
	_, err := ReadResults(path)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v does not name the file and line", err)
	}
	if recs, err := ReadResults(filepath.Join(t.TempDir(), "missing.jsonl")); err != nil || recs != nil {
		t.Fatalf("missing file: %v %v", recs, err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "x.json")
	for _, s := range []string{"one", "two"} {
		if err := atomicfile.WriteFile(nil, name, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(name); string(b) != s {
			t.Fatalf("content %q", b)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left: %d entries", len(entries))
	}
}

// Finalize writes the run's summary.json as BuildSummary makes it: its
// schema version first.
func TestFinalizeWritesSummary(t *testing.T) {
	dir := t.TempDir()
	if _, err := Finalize(nil, dir, &results.Manifest{RunName: "baseline_random"}, 1, 1.5); err != nil {
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
