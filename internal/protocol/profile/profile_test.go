package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestDefaultTexts(t *testing.T) {
	p := Default()
	texts := p.Texts()
	if len(texts) != 8 || texts[0] != p.System || texts[7] != p.SelectedMask {
		t.Fatalf("Texts order wrong: %q", texts)
	}
	// The hash is over the compact JSON array; recompute it by hand from
	// an independent serialisation of these ASCII texts (no escapes other
	// than \n and quotes are needed for them).
	var b strings.Builder
	b.WriteString("[")
	for i, s := range texts {
		if i > 0 {
			b.WriteString(",")
		}
		s = strings.ReplaceAll(s, `\`, `\\`)
		s = strings.ReplaceAll(s, `"`, `\"`)
		s = strings.ReplaceAll(s, "\n", `\n`)
		b.WriteString(`"` + s + `"`)
	}
	b.WriteString("]")
	sum := sha256.Sum256([]byte(b.String()))
	if got, want := p.Hash(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("Hash = %s, want %s", got, want)
	}
}

func TestO5(t *testing.T) {
	p := Default()
	got := p.O5(Operation{Name: "expansion", None: true}, Operation{Name: "contraction", Colors: []string{"yellow", "orange"}})
	want := "Verified finding: no expansion of the lesion mask is required.\n" +
		"Verified finding: the lesion mask must be revised by contraction at the yellow and orange points.\n" +
		"Treat these findings as certain, set your earlier answers aside, and answer the questions that follow on the premise of these findings."
	if got != want {
		t.Errorf("O5 =\n%q\nwant\n%q", got, want)
	}
}

func TestPointsAndSelectedMask(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"red"}, "red point"},
		{[]string{"red", "blue"}, "red and blue points"},
		{[]string{"red", "blue", "green"}, "red, blue, and green points"},
		{[]string{"green", "red", "blue", "pink"}, "green, red, blue, and pink points"},
	} {
		if got := Points(tc.in); got != tc.want {
			t.Errorf("Points(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Default().O6RR(4); !strings.HasPrefix(got, "Verified finding: the 4th mask is the one") || !strings.Contains(got, ".\nTreat") {
		t.Errorf("O6RR(4) = %q", got)
	}
}

func TestLoadFile(t *testing.T) {
	p, warns, err := Load("testdata/paper.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "paper-like" {
		t.Errorf("name %q", p.Name)
	}
	if p.System != "You are a radiologist. Reply with 'Answer: N'. Use {{braces}} literally." {
		t.Errorf("system %q", p.System)
	}
	if p.O3() != Default().O3() {
		t.Errorf("left-out key must keep the default")
	}
	if got := p.O5(Operation{Name: "expansion", Colors: []string{"red"}}, Operation{Name: "contraction", None: true}); !strings.HasPrefix(got, "Fix by expansion near red point.\nVerified finding: no contraction") {
		t.Errorf("O5 = %q", got)
	}
	if got := p.O6RR(2); got != "Mask 2nd is right.\n" {
		t.Errorf("O6RR = %q", got)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "oracle.selected_mask ends in a newline") {
		t.Errorf("warnings = %q", warns)
	}
	if p.Hash() == Default().Hash() {
		t.Error("different texts must hash differently")
	}
	if got := mustExpand(p.System, nil, nil); got != "You are a radiologist. Reply with 'Answer: N'. Use {braces} literally." {
		t.Errorf("escape expansion = %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"missing name", "system_prompt: x\n", `missing required key "profile"`},
		{"unknown top key", "profile: a\nsystem: x\n", `prompt profile t.yaml: line 2: unknown key "system"`},
		{"unknown oracle key", "profile: a\noracle:\n  lesion_absent: x\n", `prompt profile t.yaml: line 3: unknown key "oracle.lesion_absent"`},
		{"points in not-needed", "profile: a\noracle:\n  operation_not_needed: \"no {op} at {points}\"\n", "oracle.operation_not_needed: placeholder {points} is not allowed"},
		{"op in system", "profile: a\nsystem_prompt: \"{op}\"\n", "system_prompt: placeholder {op} is not allowed"},
		{"ordinal in closing", "profile: a\noracle:\n  operations_closing: \"{ordinal}\"\n", "oracle.operations_closing: placeholder {ordinal}"},
		{"lone open brace", "profile: a\noracle:\n  selected_mask: \"the {ordinal mask\"\n", "unmatched '{'"},
		{"lone close brace", "profile: a\nsystem_prompt: \"a } b\"\n", "single '}'"},
		{"not a mapping", "profile: a\noracle: [1, 2]\n", `prompt profile t.yaml: line 2: key "oracle": want a mapping, got a list`},
		{"not a string", "profile: a\nsystem_prompt: [x]\n", `prompt profile t.yaml: line 2: key "system_prompt": want a string, got a list`},
		{"empty file", "", "empty file"},
		{"two documents", "profile: a\n---\nprofile: b\n", `prompt profile t.yaml: line 2: a second YAML document starts here ("---")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tc.yaml), "t.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "yamlFile") || strings.Contains(err.Error(), "!!") {
				t.Errorf("error spans lines or names Go/YAML internals: %q", err)
			}
		})
	}
}
