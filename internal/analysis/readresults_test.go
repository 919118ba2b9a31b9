package analysis

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/results"
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
			path := filepath.Join(t.TempDir(), results.ResultsFile)
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
			s := &Set{}
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
