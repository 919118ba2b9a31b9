package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"256MiB": 256 << 20, "1GiB": 1 << 30, "512MB": 512e6, "1000": 1000, "64 KiB": 64 << 10} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1MiB", "lots", "0"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}

func TestEvalCommandPrintsRunDirLast(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	cmd := findCommand(t, "eval")
	stdout, stderr, err := runCommand(t, cmd, "--benchmark", "../../internal/benchmark/testdata/sample", "--provider", "baseline",
		"--model", "oracle", "--out", out, "--no-cache", "--oracle", "none", "--parse-mode", "strict")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	want := filepath.Join(out, "baseline_oracle_strict", "oracle_none")
	if lines[len(lines)-1] != want {
		t.Fatalf("last line %q, want %q", lines[len(lines)-1], want)
	}
	for _, f := range []string{"manifest.json", "results.jsonl", "all_results.json", "summary.json", "model_performance_summary.csv",
		"model_performance_detail_contour_revision.csv", "model_performance_detail_attribute_extraction.csv"} {
		if _, err := os.Stat(filepath.Join(want, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	// a bad flag value is a usage error (exit 2) naming the flag
	_, _, err = runCommand(t, cmd, "--benchmark", "x", "--provider", "baseline", "--model", "oracle", "--out", out, "--oracle", "sometimes")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--oracle") {
		t.Errorf("bad --oracle: %v", err)
	}
}
