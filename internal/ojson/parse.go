package ojson

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// SyntaxError reports where and why input is not valid JSON.
type SyntaxError struct {
	Offset    int // byte offset
	Line, Col int // 1-based; Col counts bytes
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

// MaxDepth bounds nesting so that hostile input cannot exhaust the stack.
const MaxDepth = 512

// Parse parses one JSON value that must span the whole input (surrounding
// whitespace allowed). Invalid UTF-8 anywhere is an error. Objects keep
// member order and duplicate members; use Duplicates to find those.
func Parse(data []byte) (*Value, error) {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, newSyntaxError(data, off, "invalid UTF-8")
	}
	p := parser{data: data}
	p.skipWS()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipWS()
	if p.pos < len(p.data) {
		return nil, p.errf("unexpected data after the top-level value")
	}
	return v, nil
}

// LineCol converts a byte offset into a 1-based line and byte column.
func LineCol(data []byte, offset int) (line, col int) {
	line, col = 1, 1
	if offset > len(data) {
		offset = len(data)
	}
	for i := 0; i < offset; i++ {
		if data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

func newSyntaxError(data []byte, off int, msg string) *SyntaxError {
	l, c := LineCol(data, off)
	return &SyntaxError{Offset: off, Line: l, Col: c, Msg: msg}
}

type parser struct {
	data []byte
	pos  int
}

func (p *parser) errf(format string, args ...any) error {
	return newSyntaxError(p.data, p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) skipWS() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (*Value, error) {
	if depth > MaxDepth {
		return nil, p.errf("nesting deeper than %d", MaxDepth)
	}
	if p.pos >= len(p.data) {
		return nil, p.errf("unexpected end of input")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &Value{Kind: KindString, S: s, Offset: start}, nil
	case c == 't':
		return p.literal("true", &Value{Kind: KindBool, B: true, Offset: start})
	case c == 'f':
		return p.literal("false", &Value{Kind: KindBool, Offset: start})
	case c == 'n':
		return p.literal("null", &Value{Kind: KindNull, Offset: start})
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.errf("unexpected character %q", rune(c))
	}
}

func (p *parser) literal(word string, v *Value) (*Value, error) {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return nil, p.errf("invalid literal")
	}
	p.pos += len(word)
	return v, nil
}

func (p *parser) object(depth int) (*Value, error) {
	v := &Value{Kind: KindObject, O: []Member{}, Offset: p.pos}
	p.pos++ // {
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		p.skipWS()
		if p.pos >= len(p.data) {
			return nil, p.errf("unexpected end of input in object")
		}
		if p.data[p.pos] != '"' {
			return nil, p.errf("expected a string for an object key")
		}
		koff := p.pos
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errf("expected ':' after object key")
		}
		p.pos++
		p.skipWS()
		val, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v.O = append(v.O, Member{Key: key, Value: val, Offset: koff})
		p.skipWS()
		if p.pos >= len(p.data) {
			return nil, p.errf("unexpected end of input in object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return v, nil
		default:
			return nil, p.errf("expected ',' or '}' in object")
		}
	}
}

func (p *parser) array(depth int) (*Value, error) {
	v := &Value{Kind: KindArray, A: []*Value{}, Offset: p.pos}
	p.pos++ // [
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.skipWS()
		el, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v.A = append(v.A, el)
		p.skipWS()
		if p.pos >= len(p.data) {
			return nil, p.errf("unexpected end of input in array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return nil, p.errf("expected ',' or ']' in array")
		}
	}
}

func (p *parser) number() (*Value, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return nil, p.errf("invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return nil, p.errf("invalid number: digit expected after '.'")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return nil, p.errf("invalid number: digit expected in exponent")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	return &Value{Kind: KindNumber, N: string(d[start:i]), Offset: start}, nil
}

func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	d := p.data
	start := p.pos
	// Fast path: no escapes.
	for i := p.pos; i < len(d); i++ {
		c := d[i]
		if c == '"' {
			p.pos = i + 1
			return string(d[start:i]), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.pos = i
			return "", p.errf("control character in string")
		}
	}
	buf := make([]byte, 0, 64)
	for p.pos < len(d) {
		c := d[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.errf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		// escape
		if p.pos+1 >= len(d) {
			return "", p.errf("unexpected end of input in string escape")
		}
		e := d[p.pos+1]
		p.pos += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				// A high surrogate must be followed by \uDC00–\uDFFF;
				// anything else is kept as U+FFFD.
				if r < 0xDC00 && p.pos+1 < len(d) && d[p.pos] == '\\' && d[p.pos+1] == 'u' {
					save := p.pos
					p.pos += 2
					r2, err := p.hex4()
					if err != nil {
						return "", err
					}
					if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
						r = c
					} else {
						p.pos = save
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.pos -= 2
			return "", p.errf("invalid escape '\\%c' in string", e)
		}
	}
	return "", p.errf("unexpected end of input in string")
}

func (p *parser) hex4() (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.errf("unexpected end of input in \\u escape")
	}
	n, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, p.errf("invalid \\u escape")
	}
	p.pos += 4
	return rune(n), nil
}

// Duplicate is a repeated member name found by Duplicates.
type Duplicate struct {
	Pointer string // JSON Pointer of the object holding the duplicate
	Key     string
	Offset  int // offset of the repeated key
}

// Duplicates walks v and returns every member whose name already occurred
// in the same object, in document order.
func Duplicates(v *Value) []Duplicate {
	var out []Duplicate
	var walk func(v *Value, ptr string)
	walk = func(v *Value, ptr string) {
		switch v.Kind {
		case KindObject:
			seen := make(map[string]bool, len(v.O))
			for _, m := range v.O {
				if seen[m.Key] {
					out = append(out, Duplicate{Pointer: ptr, Key: m.Key, Offset: m.Offset})
				}
				seen[m.Key] = true
				walk(m.Value, ptr+"/"+EscapePointer(m.Key))
			}
		case KindArray:
			for i, el := range v.A {
				walk(el, ptr+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(v, "")
	return out
}

// EscapePointer escapes one JSON Pointer reference token (RFC 6901):
// "~" becomes "~0" and "/" becomes "~1".
func EscapePointer(tok string) string {
	if !strings.ContainsAny(tok, "~/") {
		return tok // the common case, without a copy
	}
	out := make([]byte, 0, len(tok)+2)
	for i := 0; i < len(tok); i++ {
		switch tok[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, tok[i])
		}
	}
	return string(out)
}
