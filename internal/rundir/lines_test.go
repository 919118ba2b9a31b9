package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/results"
)

// damagedResults writes a results.jsonl of two records followed by a
// tail of tailBytes NUL bytes (a sparse file: a damaged or corrupted
// disk), with or without a final newline.
func damagedResults(t *testing.T, tailBytes int64, newline bool) (string, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), ResultsFile)
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
	size := int64(len(data)) + tailBytes
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	if newline {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("\n")); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		size++
	}
	return path, size
}

// allocated is the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestReadersRefuseOverlongLine: every reader of results.jsonl (resume's
// OpenStore, ReadResults, NoRecordsError, ScanLines) refuses a file
// whose line 3 is longer than any record (a 256 MiB run of NUL bytes)
// with an error naming the file and the line, after allocating less than
// the file's size (one line at most, not the file); OpenStore leaves the
// file as it was.
func TestReadersRefuseOverlongLine(t *testing.T) {
	for _, newline := range []bool{false, true} {
		path, size := damagedResults(t, 256<<20, newline)
		for _, tc := range []struct {
			name string
			read func() error
		}{
			{"OpenStore", func() error {
				st, _, err := OpenStore(path)
				if err == nil {
					st.Close()
				}
				return err
			}},
			{"ReadResults", func() error { _, err := ReadResults(path); return err }},
			{"NoRecordsError", func() error { return NoRecordsError(path) }},
			{"ScanLines", func() error {
				_, _, err := ScanLines(path, func(int, []byte) error { return nil })
				return err
			}},
		} {
			t.Run(fmt.Sprintf("%s, final newline %v", tc.name, newline), func(t *testing.T) {
				var err error
				n := allocated(func() { err = tc.read() })
				want := path + ": line 3: longer than the 67108864-byte limit of a record line"
				if err == nil || !errors.Is(err, ErrLineTooLong) || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %v; want one line beginning %q", err, want)
				}
				if n >= uint64(size) {
					t.Errorf("allocated %d bytes reading a %d-byte file", n, size)
				}
				if fi, err := os.Stat(path); err != nil || fi.Size() != size {
					t.Errorf("the file changed: %v, %v", fi.Size(), err)
				}
			})
		}
	}
}

// TestLineReaderLimit: a line of exactly MaxLineBytes is read, with or
// without its newline; one byte more is refused.
func TestLineReaderLimit(t *testing.T) {
	for _, tc := range []struct {
		n       int
		newline bool
		ok      bool
	}{
		{MaxLineBytes, true, true},
		{MaxLineBytes, false, true},
		{MaxLineBytes + 1, true, false},
		{MaxLineBytes + 1, false, false},
	} {
		data := strings.Repeat("x", tc.n)
		if tc.newline {
			data += "\n"
		}
		lr := newLineReader(strings.NewReader(data), "f")
		b, complete, err := lr.next()
		if tc.ok != (err == nil) || tc.ok && (len(b) != tc.n || complete != tc.newline) {
			t.Errorf("%d bytes, newline %v: %d bytes, complete %v, %v", tc.n, tc.newline, len(b), complete, err)
		}
	}
}

// TestStoreRefusesOverlongLine: a record whose line would be longer than
// MaxLineBytes is not written (no reader would take it back).
func TestStoreRefusesOverlongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), ResultsFile)
	st, _, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	raw := strings.Repeat("y", MaxLineBytes)
	r := &results.Record{KeyID: "big", Status: "ok", Turns: []results.Turn{{Turn: "T1", Raw: &raw}}}
	if err := st.Append(r); err == nil || !strings.Contains(err.Error(), "record big is a") {
		t.Errorf("Append = %v", err)
	}
	if err := st.AppendBatch([]*results.Record{{KeyID: "small"}, r}); err == nil {
		t.Error("AppendBatch wrote an over-long line")
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the file holds %d bytes, %v", fi.Size(), err)
	}
}
