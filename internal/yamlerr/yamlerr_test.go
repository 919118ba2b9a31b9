package yamlerr

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type inner struct {
	Name string `yaml:"name"`
}

type doc struct {
	N     int            `yaml:"n"`
	U     uint64         `yaml:"u"`
	F     float64        `yaml:"f"`
	B     bool           `yaml:"b"`
	S     string         `yaml:"s"`
	Ints  []int          `yaml:"ints"`
	Pair  [2]float64     `yaml:"pair"`
	M     map[string]int `yaml:"m"`
	Inner *inner         `yaml:"inner"`
}

func TestExplain(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown top key", "n: 1\nseeds: 3\n", `line 2: unknown key "seeds"`},
		{"unknown nested key", "inner:\n  name: a\n  nme: b\n", `line 3: unknown key "inner.nme"`},
		{"string for int", "n: many\n", `line 1: key "n": want an integer, got "many"`},
		{"negative for uint", "u: -1\n", `line 1: key "u": want a non-negative integer, got -1`},
		{"string for float", "f: abc\n", `line 1: key "f": want a number, got "abc"`},
		{"string for bool", "b: maybe\n", `line 1: key "b": want true or false, got "maybe"`},
		{"list for string", "s: [1]\n", `line 1: key "s": want a string, got a list`},
		{"list item", "ints: [1, 2, x]\n", `line 1: key "ints[2]": want an integer, got "x"`},
		{"scalar for list", "ints: 3\n", `line 1: key "ints": want a list, got 3`},
		{"map value", "m:\n  a: 1\n  b: two\n", `line 3: key "m.b": want an integer, got "two"`},
		{"scalar for struct", "inner: 1\n", `line 1: key "inner": want a mapping, got 1`},
		{"long value kept whole", "n: averyveryverylongword\n", `line 1: key "n": want an integer, got "averyveryverylongword"`},
		{"same value twice", "n: 1\nf: x\nints: [x]\n", `line 2: key "f": want a number, got "x"; line 3: key "ints[0]": want an integer, got "x"`},
		{"document is a list", "- 1\n", `line 1: want a mapping, got a list`},
		{"syntax error", "a: [\n", `line 1: did not find expected node content`},
		{"many errors: the first five", "ints:\n" + strings.Repeat("- x\n", 3000),
			`line 2: key "ints[0]": want an integer, got "x"; line 3: key "ints[1]": want an integer, got "x"; line 4: key "ints[2]": want an integer, got "x"; ` +
				`line 5: key "ints[3]": want an integer, got "x"; line 6: key "ints[4]": want an integer, got "x"; and 2995 more`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := yaml.NewDecoder(bytes.NewReader([]byte(tc.yaml)))
			dec.KnownFields(true)
			var d doc
			err := dec.Decode(&d)
			if err == nil {
				t.Fatal("no error")
			}
			got := Explain([]byte(tc.yaml), err)
			if got != tc.want {
				t.Errorf("got  %s\nwant %s\n(yaml: %q)", got, tc.want, err)
			}
			if strings.ContainsAny(got, "\n`") || strings.Contains(got, "yamlerr.") || strings.Contains(got, "!!") {
				t.Errorf("message leaks YAML/Go internals or spans lines: %q", got)
			}
		})
	}
}

// TestDecodeOneDocument: a second document is refused with its line, not
// ignored; one document with a leading "---" is fine.
func TestDecodeOneDocument(t *testing.T) {
	var v map[string]int
	cases := []struct{ doc, want string }{
		{"a: 1\n", ""},
		{"---\na: 1\n", ""},
		{"a: 1\n---\nb: 2\n", `line 2: a second YAML document starts here ("---"); the file must hold one`},
		{"a: 1\n\n--- \n\n\nb: x\n", "line 3: a second YAML document"},
		{"a: 1\n---\n", "line 2: a second YAML document"},
		{"a: 1\n---\n[", "line 3: did not find expected node content"},
	}
	for _, c := range cases {
		err := Decode([]byte(c.doc), &v, true)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: err %v, want %q", c.doc, err, c.want)
		}
	}
	if err := Decode([]byte("# nothing\n"), &v, true); err != io.EOF {
		t.Errorf("empty: %v", err)
	}
}

// TestDecodeBoundsAliases: a document whose aliases expand past MaxNodes
// is refused before decoding; the same values written out, or a few
// aliases, are decoded.
func TestDecodeBoundsAliases(t *testing.T) {
	laughs := func(levels int) string {
		var b strings.Builder
		b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
		for i := 1; i < levels; i++ {
			fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, yaml string
		refused    bool
	}{
		{"ten to the sixth", laughs(6), true},
		{"ten to the third", laughs(3), false},
		{"written out", "ints: [" + strings.Repeat("1, ", 60000) + "1]\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v map[string]any
			err := Decode([]byte(tc.yaml), &v, false)
			if refused := err != nil && strings.Contains(err.Error(), "expands to more than"); refused != tc.refused {
				t.Errorf("error %v, want refused %v", err, tc.refused)
			}
		})
	}
}

// TestDecodeRefusesEmptyListEntries: a null entry in a list is an error
// naming its line and key, not dropped.
func TestDecodeRefusesEmptyListEntries(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"inner_list: [null]\n", `line 1: key "inner_list[0]": an empty list entry (null)`},
		{"inner_list:\n  - {name: a}\n  - ~\n", `line 3: key "inner_list[1]": an empty list entry (null)`},
		{"inner_list:\n  - {name: a}\n  -\n", `line 3: key "inner_list[1]": an empty list entry (null)`},
	} {
		var v struct {
			List []inner `yaml:"inner_list"`
		}
		if err := Decode([]byte(tc.yaml), &v, true); err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.yaml, err, tc.want)
		}
	}
}
