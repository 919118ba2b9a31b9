package ojson

import (
	"fmt"
	"math"
	"strconv"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// The struct codec: Go values ↔ JSON with go-json-experiment, set up to
// write what the Value writers write. Struct fields come in declaration
// order, named and filtered by `json` tags with encoding/json's meaning of
// omitempty (false, 0, "", nil and empty collections are left out);
// untagged embedded structs are inlined; floats are written as Python's
// repr writes them (FormatFloat); map keys are sorted; nil slices are []
// and nil maps null; only '"', '\\' and control characters are escaped,
// and invalid UTF-8 becomes U+FFFD. NaN and the infinities are an error:
// the files written this way are read by JSON parsers that reject them.
var (
	encodeOptions = json.JoinOptions(
		json.WithMarshalers(json.JoinMarshalers(
			json.MarshalToFunc(func(enc *jsontext.Encoder, f float64) error { return writeFloat(enc, f, 64) }),
			json.MarshalToFunc(func(enc *jsontext.Encoder, f float32) error { return writeFloat(enc, float64(f), 32) }),
		)),
		json.Deterministic(true),
		json.FormatNilMapAsNull(true),
		jsonv1.OmitEmptyWithLegacySemantics(true),
		jsontext.AllowInvalidUTF8(true),
	)
	// indentOptions give Marshal's layout: two-space indent, ": ".
	indentOptions = json.JoinOptions(encodeOptions, jsontext.WithIndent("  "), jsontext.SpaceAfterColon(true))
	decodeOptions = json.RejectUnknownMembers(true)
)

func writeFloat(enc *jsontext.Encoder, f float64, bits int) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("ojson: cannot encode the float %v", f)
	}
	if bits == 32 {
		// The float32's own value, in float64 digits, as Python would
		// see it after a widening conversion.
		f = float64(float32(f))
	}
	var buf [32]byte
	return enc.WriteValue(appendFloat(buf[:0], f))
}

// appendFloat appends FormatFloat(f) for a finite f.
func appendFloat(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		// Integral values below 1e16 are the common case (0.0, 1.0,
		// counts): Python writes the integer and ".0".
		dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
		return append(dst, '.', '0')
	}
	return append(dst, FormatFloat(f)...)
}

// EncodeCompact writes x with the struct codec without whitespace, as
// MarshalCompact writes a Value (hashing and JSON Lines).
func EncodeCompact(x any) ([]byte, error) {
	return json.Marshal(x, encodeOptions)
}

// EncodeIndent writes x with the struct codec in Marshal's layout (indent
// 2, no trailing newline).
func EncodeIndent(x any) ([]byte, error) {
	return json.Marshal(x, indentOptions)
}

// ValueOf encodes x with the struct codec and returns it as a tree, for
// callers that add members or place it inside a larger tree.
func ValueOf(x any) (*Value, error) {
	b, err := EncodeCompact(x)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Decode reads one JSON value into x with the struct codec: member names
// match tags exactly, and an unknown or duplicate member, a wrongly typed
// value or trailing data is an error.
func Decode(data []byte, x any) error {
	return json.Unmarshal(data, x, decodeOptions)
}
