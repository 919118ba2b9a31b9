package registry

import "testing"

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"Qwen/Qwen3.6-27B":  "Qwen/Qwen3.6-27B",
		"--max-model-len":   "--max-model-len",
		`{"image": 7}`:      `'{"image": 7}'`,
		"it's":              `'it'\''s'`,
		"":                  "''",
		"a b":               "'a b'",
		"$(rm -rf /)":       "'$(rm -rf /)'",
		"org/model;reboot":  "'org/model;reboot'",
		"model@rev:tag+x=y": "model@rev:tag+x=y",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
