// Package csvcap bounds a CSV stream before encoding/csv reads it:
// encoding/csv buffers a whole record, however long, and has no limit of
// its own, so a damaged or hostile file with one endless line would be
// held in memory whole. It is a leaf: it imports nothing of the project,
// so that any reader of a CSV file (the CheXmask source, the mrmc scores
// table) can share it.
package csvcap

import (
	"errors"
	"fmt"
	"io"
)

// Error is the error of a stream past a cap: Line is the 1-based line
// where the offending record began (or the current line, for the caps on
// the whole stream).
type Error struct {
	Line int
	Kind Kind
	Msg  string
}

// Kind is the cap an Error is of.
type Kind int

// The caps of a Reader.
const (
	Record Kind = iota // one record
	Total              // the whole stream
	Ratio              // the decompression ratio
)

func (e *Error) Error() string { return e.Msg }

// Reader passes a CSV stream through and fails with *Error once one
// record (counted from the last newline outside quotes, so that a quoted
// cell may span lines) exceeds MaxRecord bytes or the whole stream
// exceeds MaxTotal bytes. Make it with New.
type Reader struct {
	r                   io.Reader
	maxRecord, maxTotal int64
	n, total            int64
	inQuote             bool
	line, start         int // current line; line where the current record began

	// Packed, when set, is the compressed bytes read so far; past
	// RatioAfter bytes out, the stream may not be MaxRatio times larger.
	Packed     func() int64
	RatioAfter int64
	MaxRatio   int64
}

// New returns a Reader of r with the given caps on one record and on the
// whole stream.
func New(r io.Reader, maxRecord, maxTotal int64) *Reader {
	return &Reader{r: r, maxRecord: maxRecord, maxTotal: maxTotal, line: 1, start: 1}
}

func (c *Reader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for _, b := range p[:n] {
		c.n++
		switch b {
		case '"':
			c.inQuote = !c.inQuote // "" inside a quoted cell toggles twice
		case '\n':
			c.line++
			if !c.inQuote {
				c.n, c.start = 0, c.line
			}
		}
		if c.n > c.maxRecord {
			return 0, &Error{c.start, Record, fmt.Sprintf("record longer than %d bytes", c.maxRecord)}
		}
	}
	c.total += int64(n)
	if c.total > c.maxTotal {
		return 0, &Error{c.line, Total, fmt.Sprintf("more than %d bytes", c.maxTotal)}
	}
	if c.Packed != nil && c.total > c.RatioAfter && c.total > c.MaxRatio*c.Packed() {
		return 0, &Error{c.line, Ratio, fmt.Sprintf("expands more than %d-fold when decompressed", c.MaxRatio)}
	}
	return n, err
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var ce *Error
	ok := errors.As(err, &ce)
	return ce, ok
}
