package results

import (
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
)

func rec(key string, index int, status string) *Record {
	return &Record{KeyID: key, Lesion: "edema", QAPath: benchmark.LesionFree, Index: index, Status: status, OracleMode: "none",
		ParseMode: "reference", Turns: []Turn{}, OracleEvents: []Event{}}
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
