package eval

import (
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/results"
)

// TestErrorLineEscapesKeys: a record error printed to the log shows a
// key's bidirectional override or escape sequence as an escape, not raw.
func TestErrorLineEscapesKeys(t *testing.T) {
	var log strings.Builder
	p := &progress{o: &Options{Log: &log}, quit: make(chan struct{})}
	msg := "image x.png: bad\x1b[2J"
	p.record(&results.Record{KeyID: "edema_a\u202egnp_positive_0", Status: results.StatusError, Error: &msg})
	want := "error: edema_a\\u202egnp_positive_0: image x.png: bad\\x1b[2J\n"
	if log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
}
