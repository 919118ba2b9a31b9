package runset

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// TestReadResultsStopsAtOverlongLine: a results.jsonl whose last line is
// a 256 MiB run of NUL bytes (a damaged or sparse tail) is left out with
// a warning naming the file and the line, after allocating less than the
// file's size; a file cut short inside a record keeps its complete
// records, as before.
func TestReadResultsStopsAtOverlongLine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tail    int64
		records int
		warn    string
	}{
		{"damaged tail", 256 << 20, 0, "results.jsonl: line 3: longer than the 67108864-byte limit of a record line"},
		{"cut short", 40, 2, "results.jsonl: the last line is incomplete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), rundir.ResultsFile)
			var data []byte
			for i := range 2 {
				line, err := (&results.Record{KeyID: fmt.Sprintf("k%d", i), Index: i, Status: "ok"}).MarshalLine()
				if err != nil {
					t.Fatal(err)
				}
				data = append(data, line...)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			size := int64(len(data)) + tc.tail
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			s := newState()
			var recs []*results.Record
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			recs, _ = s.readResults(path)
			runtime.ReadMemStats(&after)
			if len(recs) != tc.records {
				t.Errorf("%d records, want %d", len(recs), tc.records)
			}
			if len(s.Warnings) == 0 || !strings.Contains(s.Warnings[0], tc.warn) {
				t.Errorf("warnings %q, want one containing %q", s.Warnings, tc.warn)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n >= uint64(size) && size > 1<<20 {
				t.Errorf("allocated %d bytes reading a %d-byte file", n, size)
			}
		})
	}
}

// TestReadAllResultsStreams: an all_results.json is read one entry at a
// time: a 256 MiB file of NUL bytes (invalid at its first byte) and one
// whose first entry is followed by a 256 MiB hole are refused naming the
// line and column, after allocating a small part of the file's size; a
// valid file gives its entries in file order.
func TestReadAllResultsStreams(t *testing.T) {
	const valid = "{\n  \"k2\": {\"a\": 1},\n  \"k1\": {\"b\": [2]}\n}\n"
	for _, tc := range []struct {
		name    string
		head    string
		tail    int64
		entries string
		err     string
	}{
		{"NUL bytes", "", 256 << 20, "", "not valid JSON: line 1, column 1:"},
		{"a hole after an entry", "{\n  \"k1\": {\"a\": 1},\n", 256 << 20, "", "not valid JSON: line 3, column 1:"},
		{"valid", valid, 0, `{"a":1};{"b":[2]}`, ""},
		{"an entry not an object", `{"k1": {"a": 1}, "k2": 3}`, 0, "", `entry "k2" is not an object`},
		{"an array", `[{"a": 1}]`, 0, "", "top level is not an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), rundir.AllResultsFile)
			if err := os.WriteFile(path, []byte(tc.head), 0o644); err != nil {
				t.Fatal(err)
			}
			size := int64(len(tc.head)) + tc.tail
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			entries, err := readAllResults(path)
			runtime.ReadMemStats(&after)
			if tc.err == "" {
				var got []string
				for _, e := range entries {
					got = append(got, string(ojson.MarshalCompact(e)))
				}
				if err != nil || strings.Join(got, ";") != tc.entries {
					t.Fatalf("entries %q, err %v; want %q", got, err, tc.entries)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line starting %q", err, tc.err)
			}
			if n := after.TotalAlloc - before.TotalAlloc; size > 1<<20 && n >= uint64(size)/8 {
				t.Errorf("allocated %d bytes refusing a %d-byte file", n, size)
			}
		})
	}
}
