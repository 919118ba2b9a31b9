package provider

import (
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
