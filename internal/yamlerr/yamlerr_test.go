package yamlerr

import (
	"bytes"
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
