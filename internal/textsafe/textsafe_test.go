package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestOneLineEscapes: control and format characters are shown as Go
// escapes — NUL and ESC, and the bidirectional controls that would
// reorder a key on a terminal (U+202E and friends); Printable keeps line
// feeds and tabs.
func TestOneLineEscapes(t *testing.T) {
	for _, tc := range []struct{ in, one, printable string }{
		{"plain key_id é 中", "plain key_id é 中", "plain key_id é 中"},
		{"nul\x00esc\x1b[31m", `nul\x00esc\x1b[31m`, `nul\x00esc\x1b[31m`},
		{"a\nb\tc\rd", `a\nb\tc\rd`, "a\nb\tc\\rd"},
		{"del\x7f c1\u0085 ls\u2028", `del\x7f c1\u0085 ls\u2028`, `del\x7f c1\u0085 ls\u2028`},
		{"edema_abc\u202egnp.exe_positive_0", `edema_abc\u202egnp.exe_positive_0`, `edema_abc\u202egnp.exe_positive_0`},
		{"\u202a\u202b\u202c\u202d\u202e", `\u202a\u202b\u202c\u202d\u202e`, `\u202a\u202b\u202c\u202d\u202e`},
		{"\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`, `\u2066\u2067\u2068\u2069`},
		{"lrm\u200e rlm\u200f alm\u061c", `lrm\u200e rlm\u200f alm\u061c`, `lrm\u200e rlm\u200f alm\u061c`},
		{"zw\u200b\u200d bom\ufeff shy\u00ad tag\U000e0041", `zw\u200b\u200d bom\ufeff shy\u00ad tag\U000e0041`, `zw\u200b\u200d bom\ufeff shy\u00ad tag\U000e0041`},
	} {
		if got := OneLine(tc.in); got != tc.one {
			t.Errorf("OneLine(%q) = %q, want %q", tc.in, got, tc.one)
		}
		if got := Printable(tc.in); got != tc.printable {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.printable)
		}
	}
}

// TestClip: a text within the bound is returned as it is; a longer one is
// cut at the last character boundary within the bound and marked, never
// inside a UTF-8 character, for every bound.
func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 5, "short"},
		{"shorter", 5, "short…"},
		{"", 0, ""},
		{"abc", 0, "…"},
		{"ééé", 3, "é…"}, // é is 2 bytes: byte 3 is inside the second
		{"ééé", 4, "éé…"},
		{"中文字", 5, "中…"},
		{"a😀b", 2, "a…"},
		{"a😀b", 5, "a😀…"},
	} {
		if got := Clip(tc.in, tc.max); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
	s := "añ中😀b\u202e"
	for max := 0; max <= len(s)+1; max++ {
		got := Clip(s, max)
		if !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q: not valid UTF-8", s, max, got)
		}
		if body := strings.TrimSuffix(got, Ellipsis); len(body) > max || !strings.HasPrefix(s, body) {
			t.Errorf("Clip(%q, %d) = %q: not a prefix within the bound", s, max, got)
		}
	}
}

func TestClipWithAndRunes(t *testing.T) {
	if got := ClipWith("a long series name", 6, "~"); got != "a long~" {
		t.Errorf("ClipWith = %q", got)
	}
	if got := ClipWith("short", 6, "~"); got != "short" {
		t.Errorf("ClipWith = %q", got)
	}
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"héllo wörld", 5, "héllo…"},
		{"héllo", 5, "héllo"},
		{"中文字", 2, "中文…"},
		{"", 0, ""},
		{"a", 0, "…"},
	} {
		if got := ClipRunes(tc.in, tc.n); got != tc.want {
			t.Errorf("ClipRunes(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestQuoteClipped(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"a\nb", 10, `"a\nb"`},
		{strings.Repeat("x", 12), 10, `"xxxxxxxxxx"… (12 bytes)`},
		{"ééééé\x00", 5, `"éé"… (11 bytes)`},
	} {
		if got := QuoteClipped(tc.in, tc.max); got != tc.want {
			t.Errorf("QuoteClipped(%q, %d) = %s, want %s", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestSquash(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "",
		"  one\n\ttwo  three ": "one two three",
		"line\r\nbreak":        "line break",
	} {
		if got := Squash(in); got != want {
			t.Errorf("Squash(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/demo-1/out.csv": "/tmp/demo-1/out.csv",
		"a=b,c:d@e%f+g":       "a=b,c:d@e%f+g",
		"":                    "''",
		"two words":           "'two words'",
		"it's":                `'it'\''s'`,
		"$(rm -rf x)":         "'$(rm -rf x)'",
		"new\nline":           "'new\nline'",
		"Qwen/Qwen3.6-27B":    "Qwen/Qwen3.6-27B",
		"--max-model-len":     "--max-model-len",
		`{"image": 7}`:        `'{"image": 7}'`,
		"org/model;reboot":    "'org/model;reboot'",
		"model@rev:tag+x=y":   "model@rev:tag+x=y",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
