package ojson

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// NotObjectError is the error of a stream whose top-level value is not an
// object.
type NotObjectError struct{ Kind Kind }

func (e *NotObjectError) Error() string {
	return fmt.Sprintf("the top level is a %s, not an object", e.Kind)
}

// ErrMemberTooLarge matches the error of an object member whose value is
// longer than the cap given to ParseObjectStream.
var ErrMemberTooLarge = errors.New("member value longer than its cap")

// memberTooLarge names the member and the cap, and matches ErrMemberTooLarge.
type memberTooLarge struct {
	key string
	max int64
}

func (e *memberTooLarge) Error() string {
	if e.key == "" {
		return fmt.Sprintf("more than %d bytes without a complete member", e.max)
	}
	return fmt.Sprintf("member %q: value longer than %d bytes", e.key, e.max)
}

func (e *memberTooLarge) Is(target error) bool { return target == ErrMemberTooLarge }

// capReader counts the bytes read and fails once the decoder has read
// more than max bytes past mark (the start of the stretch being read:
// a member, or the white space around the object).
type capReader struct {
	r       io.Reader
	n, mark int64
	max     int64
	key     string
}

func (c *capReader) Read(p []byte) (int, error) {
	left := c.max - (c.n - c.mark)
	if left < 0 {
		return 0, &memberTooLarge{c.key, c.max}
	}
	if int64(len(p)) > left+1 {
		p = p[:left+1]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ParseObjectStream reads one JSON object from rs, from its start, member
// by member: fn gets each member's key and value (parsed as Parse parses
// a document: member order and duplicates kept, offsets counted from the
// value's first byte) in file order. Only the member being read is held,
// so memory is that of one member plus what fn keeps; a member whose
// value is longer than maxValue bytes is an error matching
// ErrMemberTooLarge once about maxValue bytes of it are read. Input that
// is not valid JSON is a *SyntaxError as Parse's (its line and column
// are counted by reading rs again from its start); a top-level value that
// is not an object is a *NotObjectError; fn's error ends the read and is
// returned as it is.
func ParseObjectStream(rs io.ReadSeeker, maxValue int64, fn func(key string, v *Value) error) error {
	// The decoder reads ahead in chunks; the slack bounds what it may
	// hold past the cap before the cap is noticed.
	const slack = 1 << 20
	// Every stretch is capped: the white space before the object, each
	// member (its name, value and the white space before it), and what
	// follows the object.
	cr := &capReader{r: rs, max: maxValue + slack}
	dec := jsontext.NewDecoder(cr, jsontext.AllowDuplicateNames(true))
	fail := func(err error) error {
		if errors.Is(err, ErrMemberTooLarge) {
			return &memberTooLarge{cr.key, maxValue}
		}
		var se *jsontext.SyntacticError
		if errors.As(err, &se) {
			if errors.Is(se.Err, io.ErrUnexpectedEOF) {
				return syntaxAt(rs, se.ByteOffset, "unexpected end of input")
			}
			return syntaxAt(rs, se.ByteOffset, syntacticMsg(se))
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return syntaxAt(rs, cr.n, "unexpected end of input")
		}
		return err
	}
	switch k := dec.PeekKind(); k {
	case '{':
	case 0:
		_, err := dec.ReadToken()
		return fail(err)
	default:
		return &NotObjectError{kindOf(k)}
	}
	if _, err := dec.ReadToken(); err != nil {
		return fail(err)
	}
	for {
		cr.key, cr.mark = "", dec.InputOffset()
		if dec.PeekKind() == '}' {
			break
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return fail(err)
		}
		key := tok.String()
		cr.key = key
		raw, err := dec.ReadValue()
		if err != nil {
			return fail(err)
		}
		if int64(len(raw)) > maxValue {
			return &memberTooLarge{cr.key, maxValue}
		}
		start := dec.InputOffset() - int64(len(raw))
		v, err := Parse(raw)
		if err != nil {
			var pe *SyntaxError
			if errors.As(err, &pe) {
				return syntaxAt(rs, start+int64(pe.Offset), pe.Msg)
			}
			return err
		}
		if err := fn(key, v); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return fail(err)
	}
	cr.key, cr.mark = "", dec.InputOffset()
	// Only white space may follow (a decoder reads a stream of values).
	if dec.PeekKind() == 0 {
		_, err := dec.ReadToken()
		if err == io.EOF {
			return nil
		}
		if se := (*jsontext.SyntacticError)(nil); !errors.As(err, &se) {
			return err
		}
	}
	off := dec.InputOffset()
	for _, b := range dec.UnreadBuffer() {
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' {
			break
		}
		off++
	}
	return syntaxAt(rs, off, "unexpected data after the top-level value")
}

// kindOf is the Kind of a jsontext kind.
func kindOf(k jsontext.Kind) Kind {
	switch k {
	case '[':
		return KindArray
	case '"':
		return KindString
	case '0':
		return KindNumber
	case 't', 'f':
		return KindBool
	case 'n':
		return KindNull
	}
	return KindObject
}

// syntacticMsg is a jsontext syntax error's reason without its prefix and
// location (they are given as line and column instead).
func syntacticMsg(se *jsontext.SyntacticError) string {
	if se.Err != nil {
		return se.Err.Error()
	}
	return "invalid JSON"
}

// syntaxAt is a *SyntaxError at byte offset off of rs, its line and
// column counted by reading rs again from its start up to off.
func syntaxAt(rs io.ReadSeeker, off int64, msg string) *SyntaxError {
	e := &SyntaxError{Offset: int(off), Line: 1, Col: 1, Msg: msg}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return e
	}
	br := bufio.NewReaderSize(io.LimitReader(rs, off), 64<<10)
	for {
		b, err := br.ReadByte()
		if err != nil {
			break
		}
		if b == '\n' {
			e.Line, e.Col = e.Line+1, 1
		} else {
			e.Col++
		}
	}
	return e
}
