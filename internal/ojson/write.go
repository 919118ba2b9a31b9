package ojson

import (
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

type writer struct {
	buf    []byte
	indent bool
	ascii  bool
}

// Marshal writes v as Python's json.dump(v, indent=2, ensure_ascii=False)
// does: every member and element on its own line, ": " after keys, no
// trailing newline, raw non-ASCII, only '"', '\\' and control characters
// escaped.
func Marshal(v *Value) []byte {
	w := writer{indent: true}
	w.value(v, 0)
	return w.buf
}

// MarshalCompact writes v without whitespace (separators "," and ":"), as
// used for hashing and for JSON Lines.
func MarshalCompact(v *Value) []byte {
	w := writer{}
	w.value(v, 0)
	return w.buf
}

// MarshalASCII writes v like Marshal but escapes every character outside
// U+0020–U+007E as \uXXXX (surrogate pairs above U+FFFF), as Python's
// default ensure_ascii=True does.
func MarshalASCII(v *Value) []byte {
	w := writer{indent: true, ascii: true}
	w.value(v, 0)
	return w.buf
}

func (w *writer) newline(depth int) {
	if !w.indent {
		return
	}
	w.buf = append(w.buf, '\n')
	for i := 0; i < depth; i++ {
		w.buf = append(w.buf, ' ', ' ')
	}
}

func (w *writer) value(v *Value, depth int) {
	if v == nil {
		w.buf = append(w.buf, "null"...)
		return
	}
	switch v.Kind {
	case KindNull:
		w.buf = append(w.buf, "null"...)
	case KindBool:
		if v.B {
			w.buf = append(w.buf, "true"...)
		} else {
			w.buf = append(w.buf, "false"...)
		}
	case KindNumber:
		if v.N == "" {
			w.buf = append(w.buf, '0')
		} else {
			w.buf = append(w.buf, v.N...)
		}
	case KindString:
		w.str(v.S)
	case KindArray:
		if len(v.A) == 0 {
			w.buf = append(w.buf, '[', ']')
			return
		}
		w.buf = append(w.buf, '[')
		for i, el := range v.A {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.newline(depth + 1)
			w.value(el, depth+1)
		}
		w.newline(depth)
		w.buf = append(w.buf, ']')
	case KindObject:
		if len(v.O) == 0 {
			w.buf = append(w.buf, '{', '}')
			return
		}
		w.buf = append(w.buf, '{')
		for i, m := range v.O {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.newline(depth + 1)
			w.str(m.Key)
			w.buf = append(w.buf, ':')
			if w.indent {
				w.buf = append(w.buf, ' ')
			}
			w.value(m.Value, depth+1)
		}
		w.newline(depth)
		w.buf = append(w.buf, '}')
	}
}

func (w *writer) str(s string) {
	w.buf = append(w.buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				w.buf = append(w.buf, '\\', '"')
			case c == '\\':
				w.buf = append(w.buf, '\\', '\\')
			case c == '\n':
				w.buf = append(w.buf, '\\', 'n')
			case c == '\r':
				w.buf = append(w.buf, '\\', 'r')
			case c == '\t':
				w.buf = append(w.buf, '\\', 't')
			case c == '\b':
				w.buf = append(w.buf, '\\', 'b')
			case c == '\f':
				w.buf = append(w.buf, '\\', 'f')
			case c < 0x20 || (w.ascii && c == 0x7f):
				w.u4(rune(c))
			default:
				w.buf = append(w.buf, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if !w.ascii {
			// Invalid bytes cannot come from Python; write U+FFFD.
			w.buf = utf8.AppendRune(w.buf, r)
			continue
		}
		if r > 0xFFFF {
			r -= 0x10000
			w.u4(0xD800 + (r>>10)&0x3FF)
			w.u4(0xDC00 + r&0x3FF)
		} else {
			w.u4(r)
		}
	}
	w.buf = append(w.buf, '"')
}

func (w *writer) u4(r rune) {
	w.buf = append(w.buf, '\\', 'u',
		hexDigits[(r>>12)&0xF], hexDigits[(r>>8)&0xF], hexDigits[(r>>4)&0xF], hexDigits[r&0xF])
}
