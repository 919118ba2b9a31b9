package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/benchmark"
)

func rec(key string, index int, status string) *Record {
	return &Record{KeyID: key, Lesion: "edema", QAPath: benchmark.LesionFree, Index: index, Status: status, OracleMode: "none",
		ParseMode: "reference", Turns: []Turn{}, OracleEvents: []Event{}}
}

func TestStoreTruncatesPartialLineAndAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), ResultsFile)
	s, prev, err := OpenStore(path)
	if err != nil || len(prev) != 0 {
		t.Fatalf("new store: %v %d", err, len(prev))
	}
	for i, k := range []string{"edema_a", "edema_b"} {
		if err := s.Append(rec(k, i, StatusOK)); err != nil {
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
	if err := s.Append(rec("edema_c", 2, StatusError)); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(rec("edema_c", 2, StatusOK)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	recs, err := ReadResults(path)
	if err != nil || len(recs) != 4 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	latest := Latest(recs)
	if len(latest) != 3 || latest[2].Status != StatusOK {
		t.Fatalf("Latest: %d records, last status %s", len(latest), latest[2].Status)
	}
}

func TestReadResultsRejectsCorruptLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), ResultsFile)
	line, _ := rec("edema_a", 0, StatusOK).MarshalLine()
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

// Every written line says its schema version; a line written before the
// member existed reads as version 1; a line of a later version is refused
// with the key_id and the versions this one reads.
func TestRecordSchemaVersion(t *testing.T) {
	line, err := rec("edema_a", 0, StatusOK).MarshalLine()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(line), `{"schema_version":2,"key_id":"edema_a",`) {
		t.Fatalf("line starts %.60s, want the schema version first", line)
	}
	r, err := UnmarshalLine(line)
	if err != nil || r.SchemaVersion != RecordSchemaVersion {
		t.Fatalf("read back: version %v, error %v", r, err)
	}
	old := strings.Replace(string(line), `"schema_version":2,`, "", 1)
	r, err = UnmarshalLine([]byte(old))
	if err != nil || r.SchemaVersion != 1 || r.KeyID != "edema_a" {
		t.Fatalf("a line without schema_version: %+v, %v; want it read as version 1", r, err)
	}
	// re-written, it is a line of the current version
	again, _ := r.MarshalLine()
	if string(again) != string(line) {
		t.Errorf("a version-1 record re-written:\n%s\nwant\n%s", again, line)
	}
	for _, v := range []string{"3", "-1"} {
		bad := strings.Replace(string(line), `"schema_version":2`, `"schema_version":`+v, 1)
		if _, err := UnmarshalLine([]byte(bad)); err == nil || !strings.Contains(err.Error(), "edema_a") || !strings.Contains(err.Error(), "schema_version "+v) {
			t.Errorf("schema_version %s: error %v", v, err)
		}
	}
}
