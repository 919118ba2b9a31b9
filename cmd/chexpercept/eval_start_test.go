package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// eval exits 2 with nothing written when it cannot start, and a dry run
// names the directory it would write without creating it. The messages
// name the flags that help: the command adds them to the errors of the
// internal packages.
func TestEvalStartFailuresWriteNothing(t *testing.T) {
	t.Parallel()
	const bench = "../../internal/benchmark/testdata/sample"
	// An invalid benchmark: the sample without one of its images.
	invalid := filepath.Join(t.TempDir(), "invalid")
	if err := os.CopyFS(invalid, os.DirFS(bench)); err != nil {
		t.Fatal(err)
	}
	imgs, _ := filepath.Glob(filepath.Join(invalid, "chexpercept", "*", "detection_qa", "xray.png"))
	if len(imgs) == 0 || os.Remove(imgs[0]) != nil {
		t.Fatalf("cannot break the copy of %s", bench)
	}
	tests := []struct {
		name string
		args []string
		want string
		code int
	}{
		{"azure no key", []string{"--provider", "azure", "--model", "gpt-5.4"},
			"azure: no API key (set AZURE_OPENAI_API_KEY); or pass --api-key-file FILE", 2},
		{"gemini no credentials", []string{"--provider", "gemini", "--model", "gemini-3.1-flash"},
			"gemini: no credentials (set GEMINI_API_KEY or GOOGLE_API_KEY, or GOOGLE_CLOUD_PROJECT for Vertex AI); or pass --api-key-file FILE", 2},
		{"opensource no endpoint", []string{"--provider", "opensource", "--model", "some/model"},
			"vllm: no endpoint (the server's base URL, e.g. http://127.0.0.1:8000/v1); pass --endpoint URL", 2},
		{"invalid benchmark", []string{"--benchmark", invalid, "--provider", "baseline", "--model", "random"},
			"benchmark " + invalid + " fails validation with 1 error(s), first: E missing_image", 2},
		{"invalid benchmark hint", []string{"--benchmark", invalid, "--provider", "baseline", "--model", "random"},
			" (run `chexpercept validate` for all; --allow-invalid evaluates it anyway)", 2},
		{"bad shard", []string{"--provider", "baseline", "--model", "random", "--shard", "1/0"}, `--shard "1/0": n must be a positive integer`, 2},
		{"bad lesions", []string{"--provider", "baseline", "--model", "random", "--lesions", "edema,nope"}, `unknown lesion "nope" (this benchmark has cardiomegaly, consolidation, edema, atelectasis, pneumonia, opacity, effusion); check --lesions`, 2},
		{"missing key file", []string{"--provider", "openai", "--model", "gpt-5.4", "--api-key-file", "nonexist.txt"}, "nonexist.txt", 2},
		{"limit 0", []string{"--provider", "baseline", "--model", "random", "--limit", "0"}, "--limit 0 selects no record", 2},
		{"per-path-limit 0", []string{"--provider", "baseline", "--model", "random", "--per-path-limit", "0"}, "--per-path-limit 0", 2},
		{"dry run", []string{"--provider", "baseline", "--model", "random", "--dry-run"}, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "bad", "r")
			args := append([]string{"eval", "--benchmark", bench, "--out", out, "--oracle", "none", "--limit", "1", "--no-cache"}, tc.args...)
			stdout, stderr, code := runCLIEnv(t, nil, args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was created (stat: %v)", out, err)
			}
			if tc.code == 0 {
				if !strings.HasPrefix(lastLine(stdout), "would write to "+out) {
					t.Errorf("dry run printed %q, want \"would write to %s/…\"", lastLine(stdout), out)
				}
			} else if strings.TrimSpace(stdout) != "" {
				t.Errorf("a failed start printed %q", stdout)
			}
		})
	}
}
