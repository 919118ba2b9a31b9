package ojson

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

type Embedded struct {
	Z float64 `json:"z"`
}

type codecSample struct {
	B      string             `json:"b"`
	A      int                `json:"a"`
	Skip   string             `json:"-"`
	Empty  string             `json:"empty,omitempty"`
	Zero   int                `json:"zero,omitempty"`
	False  bool               `json:"false,omitempty"`
	NilP   *int               `json:"nil_p,omitempty"`
	EmptyP *struct{}          `json:"empty_p,omitempty"`
	List   []int              `json:"list"`
	Ptr    *int               `json:"ptr"`
	Map    map[string]float64 `json:"map"`
	NilMap map[string]int     `json:"nil_map"`
	Embedded
	F32  float32   `json:"f32"`
	Fs   []float64 `json:"fs"`
	Text string    `json:"severity/measurement"`
	U    uint64    `json:"u"`
	Nest [][2]int  `json:"nest"`
}

// TestEncodeStruct: the struct codec writes what the Value writers write
// for the same tree built by hand (member order, omitempty as
// encoding/json means it, Python floats, escaping, layout).
func TestEncodeStruct(t *testing.T) {
	x := codecSample{B: "x", A: 2, Skip: "no", EmptyP: &struct{}{}, Map: map[string]float64{"z": 1, "a": 0.1},
		Embedded: Embedded{Z: 1}, F32: 0.1, Fs: []float64{1e-05, 1e16, math.Copysign(0, -1), 123.5},
		Text: "é\x01\n\"\\<&>\u2028\x7f😀\xff", U: math.MaxUint64}
	want := NewObject().Set("b", Str("x")).Set("a", Int(2)).Set("empty_p", NewObject()).Set("list", Arr()).
		Set("ptr", Null()).Set("map", NewObject().Set("a", Float(0.1)).Set("z", Float(1))).Set("nil_map", Null()).
		Set("z", Float(1)).Set("f32", Num("0.10000000149011612")).
		Set("fs", Arr(Num("1e-05"), Num("1e+16"), Num("-0.0"), Num("123.5"))).
		Set("severity/measurement", Str("é\x01\n\"\\<&>\u2028\x7f😀\uFFFD")).Set("u", Num("18446744073709551615")).Set("nest", Arr())
	got, err := EncodeCompact(x)
	if err != nil || string(got) != string(MarshalCompact(want)) {
		t.Errorf("EncodeCompact = %s, %v\nwant %s", got, err, MarshalCompact(want))
	}
	got, err = EncodeIndent(x)
	if err != nil || string(got) != string(Marshal(want)) {
		t.Errorf("EncodeIndent = %s, %v\nwant %s", got, err, Marshal(want))
	}
	v, err := ValueOf(x)
	if err != nil || string(Marshal(v)) != string(Marshal(want)) {
		t.Errorf("ValueOf = %s, %v", Marshal(v), err)
	}
	for _, bad := range []any{math.NaN(), []float64{math.Inf(1)}, float32(math.Inf(-1))} {
		if b, err := EncodeCompact(bad); err == nil || !strings.Contains(err.Error(), "cannot encode the float") {
			t.Errorf("EncodeCompact(%v) = %s, %v; want an error", bad, b, err)
		}
	}
}

// TestAppendFloat: the codec's float writer agrees with FormatFloat.
func TestAppendFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fs := []float64{0, math.Copysign(0, -1), 1, -1, 1e15, 1e16 - 2, 1e16, 9007199254740993, 5e-324, math.MaxFloat64}
	for e := -30; e < 30; e++ {
		for _, m := range []float64{1, 9.999999999999999, 1.0000000000000002, 5, 9007199254740993} {
			f := m * math.Pow(10, float64(e))
			fs = append(fs, f, -f, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)))
		}
	}
	for i := 0; i < 100000; i++ {
		fs = append(fs, math.Float64frombits(r.Uint64()), float64(r.Int64N(1<<60)), float64(r.IntN(1000))/100, r.NormFloat64())
	}
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		if got := string(appendFloat(nil, f)); got != FormatFloat(f) {
			t.Fatalf("appendFloat(%v) = %s, FormatFloat %s", f, got, FormatFloat(f))
		}
	}
}

// TestDecode: names match exactly and once; unknown members, wrong types
// and trailing data are errors.
func TestDecode(t *testing.T) {
	type rec struct {
		K string   `json:"key"`
		F *float64 `json:"f"`
	}
	var r rec
	if err := Decode([]byte(`{"key":"a","f":0.5}`), &r); err != nil || r.K != "a" || *r.F != 0.5 {
		t.Fatalf("Decode = %+v, %v", r, err)
	}
	for _, bad := range []string{`{"key":"a","x":1}`, `{"KEY":"a"}`, `{"key":"a","key":"b"}`, `{"key":1}`, `{"key":"a"} {}`, `{"key":"a"`} {
		if err := Decode([]byte(bad), &rec{}); err == nil {
			t.Errorf("Decode(%s) must fail", bad)
		}
	}
}
