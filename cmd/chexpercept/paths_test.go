package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
)

// TestPathMistakesPointToTheFix: the usual wrong paths are refused before
// anything runs, in one line that says what to pass instead.
func TestPathMistakesPointToTheFix(t *testing.T) {
	t.Parallel()
	demo := t.TempDir() // the demo's layout: OUT/benchmark holds the benchmark
	bench := filepath.Join(demo, "benchmark")
	outdirtest.CopyTree(t, "../../internal/benchmark/testdata/sample", bench)
	os.MkdirAll(filepath.Join(demo, "source"), 0o755)
	two := t.TempDir() // two benchmarks one level down
	for _, d := range []string{"a", "b"} {
		outdirtest.CopyTree(t, "../../internal/benchmark/testdata/sample", filepath.Join(two, d))
	}
	dbDir := t.TempDir()
	os.WriteFile(filepath.Join(dbDir, "readers.sqlite"), nil, 0o600)
	json := filepath.Join(bench, "chexpercept.json")
	out := filepath.Join(t.TempDir(), "results")
	evalArgs := func(b string) []string {
		return []string{"eval", "--benchmark", b, "--provider", "baseline", "--model", "random", "--out", out}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"eval: the JSON file", evalArgs(json), "--benchmark " + json + " is the benchmark's file; pass the folder that holds it: --benchmark " + bench},
		{"eval: the demo folder", evalArgs(demo), "--benchmark " + demo + " holds no chexpercept.json; the benchmark is in " + bench + ": pass --benchmark " + bench},
		{"eval: two candidates", evalArgs(two), "benchmarks are in " + filepath.Join(two, "a") + ", " + filepath.Join(two, "b")},
		{"validate: positional JSON file", []string{"validate", json}, json + " is the benchmark's file; pass the folder that holds it: " + bench},
		{"validate: positional demo folder", []string{"validate", demo}, "the benchmark is in " + bench + ": pass " + bench},
		{"read init: the demo folder", []string{"read", "init", "--benchmark", demo, "--db", filepath.Join(t.TempDir(), "r.sqlite"), "--readers", "1"}, "pass --benchmark " + bench},
		{"report: the demo folder", []string{"report", out, "--benchmark", demo, "--out", filepath.Join(t.TempDir(), "rep")}, "pass --benchmark " + bench},
		{"read serve: a folder for --db", []string{"read", "serve", "--db", dbDir}, "--db " + dbDir + " is a folder; pass the database file: " + filepath.Join(dbDir, "readers.sqlite")},
		{"review serve: a folder for --review-db", []string{"review", "serve", "--review-db", demo}, "--review-db " + demo + " is a folder; pass the database file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLIEnv(t, nil, tc.args...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", code, stdout, stderr, tc.want)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused eval created %s", out)
	}
}

// TestPriceWarningOnlyForAPIModels: open models are unpriced on purpose,
// so only an API model without a price entry is warned about.
func TestPriceWarningOnlyForAPIModels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		prov, model string
		warn        bool
	}{
		{"opensource", "qwen3.6-27b", false},
		{"opensource", "Qwen/Qwen3-VL-8B-Instruct", false},
		{"openai", "gpt-9", true},
		{"gemini", "gemini-9-pro", true},
		{"openai", "gpt-5.4", false}, // priced
	} {
		stdout, stderr, code := runCLIEnv(t, nil, "eval", "--benchmark", "../../internal/benchmark/testdata/sample", "--provider", tc.prov,
			"--model", tc.model, "--out", t.TempDir(), "--dry-run", "--limit", "1")
		if got := strings.Contains(stderr, "no price entry matches"); code != 0 || got != tc.warn {
			t.Errorf("--provider %s --model %s: exit %d, price warning %v, want %v\n%s%s", tc.prov, tc.model, code, got, tc.warn, stdout, stderr)
		}
	}
}
