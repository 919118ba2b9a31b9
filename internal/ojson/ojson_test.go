package ojson

import (
	"errors"
	"strings"
	"testing"
)

// Expected strings below were produced by CPython 3.11's repr and
// json.dumps on the same inputs.
func TestFormatFloat(t *testing.T) {
	cases := []struct {
		f    float64
		want string
	}{
		{0.0, "0.0"}, {1.0, "1.0"}, {0.1, "0.1"}, {1e-05, "1e-05"}, {2.5e-07, "2.5e-07"},
		{1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {123456789012345.6, "123456789012345.6"},
		{0.0001, "0.0001"}, {0.00012345, "0.00012345"}, {1.0 / 3, "0.3333333333333333"},
		{0.184, "0.184"}, {1e22, "1e+22"}, {-1.5e-10, "-1.5e-10"}, {5e-324, "5e-324"},
		{1.7976931348623157e308, "1.7976931348623157e+308"}, {100.0, "100.0"},
		{12345678901234567.0, "1.2345678901234568e+16"}, {-2.0, "-2.0"},
	}
	for _, c := range cases {
		if got := FormatFloat(c.f); got != c.want {
			t.Errorf("FormatFloat(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

func TestMarshalMatchesPython(t *testing.T) {
	v := NewObject().
		Set("a", Arr(Int(1), NewObject(), Arr())).
		Set("b", Str("x\u2028<&>\x7f\x01é😀")).
		Set("c", NewObject().Set("d", Null()).Set("e", Bool(true)))
	want := "{\n  \"a\": [\n    1,\n    {},\n    []\n  ],\n  \"b\": \"x\u2028<&>\x7f\\u0001é😀\",\n  \"c\": {\n    \"d\": null,\n    \"e\": true\n  }\n}"
	if got := string(Marshal(v)); got != want {
		t.Errorf("Marshal:\n%s\nwant:\n%s", got, want)
	}
	asc := NewObject().Set("b", Str("x\u2028<&>\x7f\x01é😀\n"))
	wantASCII := "{\n  \"b\": \"x\\u2028<&>\\u007f\\u0001\\u00e9\\ud83d\\ude00\\n\"\n}"
	if got := string(MarshalASCII(asc)); got != wantASCII {
		t.Errorf("MarshalASCII = %s, want %s", got, wantASCII)
	}
	if got := string(MarshalCompact(v)); got != `{"a":[1,{},[]],"b":"x`+"\u2028"+`<&>`+"\x7f"+`\u0001é😀","c":{"d":null,"e":true}}` {
		t.Errorf("MarshalCompact = %s", got)
	}
}

func TestParseRoundTrip(t *testing.T) {
	in := "{\n  \"k\": [\n    1.50,\n    -0,\n    1e5,\n    \"\\u00e9\\ud83d\\ude00\\/\"\n  ],\n  \"n\": null\n}"
	v, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := string(Marshal(v))
	want := "{\n  \"k\": [\n    1.50,\n    -0,\n    1e5,\n    \"é😀/\"\n  ],\n  \"n\": null\n}"
	if got != want {
		t.Errorf("round trip:\n%s\nwant\n%s", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		in, msg string
		line    int
	}{
		{`{"a": 1`, "end of input", 1},
		{"{\n\"a\": 1,\n}", "expected a string", 3},
		{`{"a": 1} x`, "after the top-level value", 1},
		{"\"\xff\"", "invalid UTF-8", 1},
		{`[01]`, "expected ','", 1},
		{`{"a": tru}`, "invalid literal", 1},
		{`"a` + "\x01" + `"`, "control character", 1},
		{`"\x"`, "invalid escape", 1},
		{``, "end of input", 1},
		{strings.Repeat("[", MaxDepth+5), "nesting", 1},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) error = %v, want SyntaxError", c.in, err)
			continue
		}
		if !strings.Contains(se.Msg, c.msg) || se.Line != c.line {
			t.Errorf("Parse(%q) = %v, want %q on line %d", c.in, err, c.msg, c.line)
		}
	}
}

func TestDuplicates(t *testing.T) {
	v, err := Parse([]byte(`{"a": {"x/y": 1, "x/y": 2}, "b": [{"c": 1, "c": 2}], "a": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	d := Duplicates(v)
	if len(d) != 3 {
		t.Fatalf("got %d duplicates: %+v", len(d), d)
	}
	if d[0].Pointer != "/a" || d[0].Key != "x/y" || d[1].Pointer != "/b/0" || d[2].Pointer != "" || d[2].Key != "a" {
		t.Errorf("duplicates = %+v", d)
	}
	if EscapePointer("severity/measurement") != "severity~1measurement" {
		t.Error("EscapePointer")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `[1,2,{"a":"b"}]`, `{"a":1,"a":2}`, `"\ud800"`, `1e999`, `{"x":[[[[]]]]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses must re-parse after writing, to the same compact form.
		out := MarshalCompact(v)
		v2, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse of %q failed: %v", out, err)
		}
		if string(MarshalCompact(v2)) != string(out) {
			t.Fatalf("unstable output for %q", data)
		}
	})
}
