// Package ojson is the project's JSON layer for files whose bytes matter.
//
// The reference tools write JSON with Python's json.dump: insertion-ordered
// keys, no HTML escaping, raw non-ASCII, Python float repr. Go's
// encoding/json differs in all of these, so this package provides an
// order-keeping value tree (Value), a parser that keeps member order,
// duplicate members and byte offsets (so validators can report them), and
// writers for the three forms the project uses (spec format.md §6):
// Marshal (indent 2), MarshalCompact (hashing and JSON Lines) and
// MarshalASCII (Python's default ensure_ascii, for all_results.json).
// Go structs are written and read with go-json-experiment set up to give
// the same bytes (EncodeCompact, EncodeIndent, ValueOf, Decode).
package ojson

import (
	"strconv"
	"strings"
)

// Kind is the JSON type of a Value.
type Kind uint8

const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

var kindNames = [...]string{"null", "bool", "number", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Value is one JSON value. Only the field matching Kind is meaningful.
// Numbers keep their literal text in N so that re-writing a parsed file
// keeps every digit and the int/float distinction.
type Value struct {
	Kind   Kind
	B      bool
	N      string
	S      string
	A      []*Value
	O      []Member
	Offset int // byte offset of the value in the parsed input; 0 for built values
}

// Member is one object member. Objects may hold duplicate keys after
// parsing; writers emit members in order, duplicates included.
type Member struct {
	Key    string
	Value  *Value
	Offset int // byte offset of the key in the parsed input
}

// Null returns a JSON null.
func Null() *Value { return &Value{Kind: KindNull} }

// Bool returns a JSON boolean.
func Bool(b bool) *Value { return &Value{Kind: KindBool, B: b} }

// Int returns an integer number.
func Int(i int64) *Value { return &Value{Kind: KindNumber, N: formatInt(i)} }

// Float returns a float number written as Python's repr writes it
// (0.0, 1e-05, 0.1234).
func Float(f float64) *Value { return &Value{Kind: KindNumber, N: FormatFloat(f)} }

// Num returns a number with the given literal text, written verbatim. The
// caller guarantees it is a valid JSON number.
func Num(literal string) *Value { return &Value{Kind: KindNumber, N: literal} }

// Str returns a string.
func Str(s string) *Value { return &Value{Kind: KindString, S: s} }

// Arr returns an array of the given elements (an empty array if none).
func Arr(vs ...*Value) *Value {
	if vs == nil {
		vs = []*Value{}
	}
	return &Value{Kind: KindArray, A: vs}
}

// Strs returns an array of strings.
func Strs(ss []string) *Value {
	a := make([]*Value, len(ss))
	for i, s := range ss {
		a[i] = Str(s)
	}
	return Arr(a...)
}

// Ints returns an array of integers.
func Ints(is []int) *Value {
	a := make([]*Value, len(is))
	for i, n := range is {
		a[i] = Int(int64(n))
	}
	return Arr(a...)
}

// NewObject returns an empty object; add members with Set.
func NewObject() *Value { return &Value{Kind: KindObject, O: []Member{}} }

// Set appends a member and returns v, so calls can be chained. It does not
// replace an existing member of the same name.
func (v *Value) Set(key string, val *Value) *Value {
	if val == nil {
		val = Null()
	}
	v.O = append(v.O, Member{Key: key, Value: val})
	return v
}

// Get returns the value of the first member named key, or nil when v is
// not an object or has no such member.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != KindObject {
		return nil
	}
	for _, m := range v.O {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

// Has reports whether the object v has a member named key.
func (v *Value) Has(key string) bool { return v.Get(key) != nil }

func formatInt(i int64) string {
	var buf [20]byte
	n := len(buf)
	neg := i < 0
	u := uint64(i)
	if neg {
		u = uint64(-i)
	}
	for {
		n--
		buf[n] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if neg {
		n--
		buf[n] = '-'
	}
	return string(buf[n:])
}

// KindName names a JSON kind for messages.
func KindName(v *Value) string {
	if v == nil {
		return "absent"
	}
	switch v.Kind {
	case KindNull:
		return "null"
	case KindBool:
		return "a boolean"
	case KindNumber:
		return "a number"
	case KindString:
		return "a string"
	case KindArray:
		return "an array"
	case KindObject:
		return "an object"
	}
	return "unknown"
}

// IntLiteral parses an integer literal (no fraction or exponent) that fits
// in an int.
func IntLiteral(v *Value) (int, bool) {
	if v == nil || v.Kind != KindNumber || strings.ContainsAny(v.N, ".eE") {
		return 0, false
	}
	n, err := strconv.Atoi(v.N)
	return n, err == nil
}
