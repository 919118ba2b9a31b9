package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFIFOInputsFailFast: a FIFO given as the source, or named in it as an
// image, gives a one-line error naming it instead of hanging build or
// review init (a blocking open would hang this test).
func TestFIFOInputsFailFast(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	for _, args := range [][]string{
		{"build", "--source", fifo, "--out", filepath.Join(dir, "bench"), "--accept-all"},
		{"review", "init", "--source", fifo, "--review-db", filepath.Join(dir, "r.db"), "--reviewers", "1"},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "chexpercept: "+fifo+": cannot read: not a regular file (named pipe)\n") {
			t.Errorf("%s: exit %d, stderr %q", args[0], code, stderr)
		}
	}
	man := filepath.Join(dir, "manifest.jsonl")
	line := `{"case_id": "ph1_negative_0", "lesion": "edema", "label": "negative", "image": "fifo"}` + "\n"
	if err := os.WriteFile(man, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "review", "init", "--source", man, "--review-db", filepath.Join(dir, "r.db"), "--reviewers", "1")
	if code != 2 || !strings.Contains(stderr, "warning: edema_ph1_negative_0 skipped: image_unreadable: image "+fifo+": not a regular file (named pipe)") {
		t.Errorf("review init with a FIFO image: exit %d, stderr %q", code, stderr)
	}
}

// TestErrorsEscapeBidiControls: an error quoting a key from a file shows a
// bidirectional override (or ESC) as an escape, not raw.
func TestErrorsEscapeBidiControls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reviews := filepath.Join(dir, "reviews.jsonl")
	if err := os.WriteFile(reviews, []byte(`{"key_id":"edema_ph1\u202egnp.exe_positive_0\u001b[2J","decision":"maybe"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "build", "--source", filepath.Join(dir, "m.jsonl"), "--out", filepath.Join(dir, "b"), "--reviews", reviews)
	if code != 2 || !strings.Contains(stderr, `key_id edema_ph1\u202egnp.exe_positive_0\x1b[2J: decision "maybe"`) ||
		strings.ContainsAny(stderr, "\u202e\x1b") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
