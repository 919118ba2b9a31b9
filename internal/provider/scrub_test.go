package provider

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestScrub(t *testing.T) {
	s := newScrubber("sk-known-secret-value", "EMPTY", "abc")
	cases := []struct{ in, want string }{
		{"Incorrect API key provided: sk-known-secret-value.", "Incorrect API key provided: [redacted]."},
		{"header Authorization: Bearer sk-unknown-zzz9 was rejected", "header Authorization: [redacted] [redacted] was rejected"},
		{`{"api_key": "k-123456"}`, `{"api_key": "[redacted]"}`},
		{"GET /v1beta/models?key=AIzaXYZ&alt=json", "GET /v1beta/models?key=[redacted]&alt=json"},
		{"image data:image/png;base64,iVBORw0KGgoAAAANSUhEUg== too big", "image data:image/png;base64,[…] too big"},
		{"blob " + strings.Repeat("QUJD", 100) + " end", "blob […] end"},
		{"authorization failed for this deployment", "authorization failed for this deployment"},
		{"line1\n\n  line2\ttab", "line1 line2 tab"},
		{"EMPTY key and abc stay", "EMPTY key and abc stay"}, // placeholder and too-short values are not secrets
	}
	for _, tc := range cases {
		if got := s.clean(tc.in); got != tc.want {
			t.Errorf("clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := s.clean(strings.Repeat("é word ", 200))
	if len(long) > maxMsgLen+len("…") || !strings.HasSuffix(long, "…") {
		t.Errorf("not truncated: %d bytes", len(long))
	}
	if !strings.HasPrefix(s.clean(strings.Repeat("é", 300)), "é") {
		t.Error("cut inside a rune")
	}
}

// TestRedactForms: the key is redacted in any letter
// case, URL- or percent-encoded, base64-encoded at any alignment (also
// inside a longer base64 text), and as any run of 16 or more of its
// characters; each stretch counts once, and text without the key is left
// as it is.
func TestRedactForms(t *testing.T) {
	const key = "sk-Proj/abcDEF+ghij0123456789xyz"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cases := []struct{ name, in, want string }{
		{"exact", "key " + key + " end", "key [redacted] end"},
		{"upper", "KEY " + strings.ToUpper(key) + " END", "KEY [redacted] END"},
		{"lower", strings.ToLower(key), "[redacted]"},
		{"query-escaped", "k=" + url.QueryEscape(key) + "&x=1", "k=[redacted]&x=1"},
		{"path-escaped lower hex", "/v1/" + strings.ToLower(url.PathEscape(key)) + "/x", "/v1/[redacted]/x"},
		{"every byte percent-encoded", "q=%73%6B%2D" + strings.TrimPrefix(pctAll(key), "%73%6B%2D"), "q=[redacted]"},
		{"base64", "echo " + b64(key), "echo [redacted]"},
		{"base64 inside Basic auth", "Basic " + b64("user:"+key), "Basic dXNlcjp[redacted]"}, // base64("user:") stays
		{"base64 URL alphabet", base64.URLEncoding.EncodeToString([]byte("x" + key)), "eH[redacted]"},
		{"prefix run", "got " + key[:16] + "…", "got [redacted]…"},
		{"middle run, mixed case", "got " + strings.ToUpper(key[5:25]) + ".", "got [redacted]."},
		{"15 characters stay", "got " + key[:15] + ".", "got " + key[:15] + "."},
		{"twice", key + " and " + key[3:], "[redacted] and [redacted]"},
		{"clean", "Answer: 2", "Answer: 2"},
	}
	for _, tc := range cases {
		s := newScrubber(key)
		got := s.redact(tc.in)
		if tc.name == "base64 inside Basic auth" || tc.name == "base64 URL alphabet" {
			// the stretch may keep a character or two that also depends on
			// what surrounds the key
			if !strings.HasPrefix(got, tc.want) || len(got) > len(tc.want)+3 {
				t.Errorf("%s: %q", tc.name, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s: redact(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
		if want := int64(strings.Count(tc.want, "[redacted]")); s.redactions() != want {
			t.Errorf("%s: %d redactions, want %d", tc.name, s.redactions(), want)
		}
	}
}

func pctAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}
