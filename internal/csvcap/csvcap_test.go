package csvcap

import (
	"encoding/csv"
	"io"
	"strings"
	"testing"
)

func TestCaps(t *testing.T) {
	body := strings.Repeat("a,b\n", 1000) // 4000 bytes, 1000 records
	for _, c := range []struct {
		name                string
		body                string
		maxRecord, maxTotal int64
		packed              int64 // 0: not compressed
		kind                Kind
		line                int
		msg                 string // "" = no error
	}{
		{"under both caps", body, 4, 4000, 0, 0, 0, ""},
		{"over the total", body, 100, 2000, 0, Total, 0, "more than 2000 bytes"},
		{"a long record", "a,b\n" + strings.Repeat("x", 200) + "\nc,d\n", 100, 1 << 20, 0, Record, 2, "record longer than 100 bytes"},
		{"a quoted cell spans lines", "a,b\n\"" + strings.Repeat("x\n", 60) + "\",y\n", 100, 1 << 20, 0, Record, 2, "record longer than 100 bytes"},
		{"quoted lines under the cap", "a,b\n\"" + strings.Repeat("x\n", 30) + "\",y\n", 100, 1 << 20, 0, 0, 0, ""},
		{"expands too much", body, 100, 1 << 20, 10, Ratio, 0, "expands more than 10-fold when decompressed"},
		{"expands within the ratio", body, 100, 1 << 20, 400, 0, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := New(strings.NewReader(c.body), c.maxRecord, c.maxTotal)
			if c.packed > 0 {
				r.Packed, r.RatioAfter, r.MaxRatio = func() int64 { return c.packed }, 1000, 10
			}
			_, err := io.ReadAll(r)
			if c.msg == "" {
				if err != nil {
					t.Fatalf("err %v, want none", err)
				}
				return
			}
			ce, ok := As(err)
			if !ok || ce.Msg != c.msg || ce.Kind != c.kind || (c.line != 0 && ce.Line != c.line) {
				t.Fatalf("err %#v, want kind %d line %d %q", err, c.kind, c.line, c.msg)
			}
		})
	}
}

// encoding/csv reading through a Reader stops at the cap with the
// Reader's error, not after buffering the record.
func TestThroughEncodingCSV(t *testing.T) {
	cr := csv.NewReader(New(strings.NewReader("a,b\n"+strings.Repeat("x", 1<<20)), 1000, 1<<30))
	var err error
	for err == nil {
		_, err = cr.Read()
	}
	if ce, ok := As(err); !ok || ce.Kind != Record || ce.Line != 2 {
		t.Fatalf("err %v, want the record cap on line 2", err)
	}
}
