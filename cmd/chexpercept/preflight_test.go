package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// errorLines drops the notice, warning and hint lines a command may
// print before it starts (registry and price notices, what eval sends).
func errorLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		if !strings.HasPrefix(l, "notice: ") && !strings.HasPrefix(l, "warning: ") && !strings.HasPrefix(l, "hint: ") &&
			!strings.HasPrefix(l, "sampling sent with every call: ") && l != "" {
			out = append(out, l)
		}
	}
	return out
}

// eval against a closed port stops at the preflight: exit 2, one line
// naming the endpoint, no retries, nothing written. (Before the
// preflight it retried every call for about a minute and printed a line
// per failed record.)
func TestEvalClosedPortOneLine(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	out := t.TempDir()
	_, stderr, code := runCLIEnv(t, nil, "eval", "--benchmark", genBench, "--out", out, "--oracle", "none",
		"--provider", "opensource", "--model", "qwen3.6-27b", "--endpoint", endpoint, "--cache-dir", t.TempDir())
	lines := errorLines(stderr)
	if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "preflight of "+endpoint) || !strings.Contains(lines[0], "unreachable") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and one line naming the unreachable endpoint", code, stderr)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("the failed run wrote %d entries into --out", len(ents))
	}
}

// A refused key, a model the server does not serve and a server without
// a models endpoint each fail in one line; the key is never printed,
// even when the server echoes it.
func TestEvalPreflightFailures(t *testing.T) {
	t.Parallel()
	const key = "sk-preflightSECRET-0123456789"
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		want    []string
	}{
		{"refused key", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"invalid key %s"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		}, []string{"the API key was refused (HTTP 401)"}},
		{"model not served", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"other-model","object":"model","owned_by":"vllm","root":"x/other","max_model_len":4096}]}`)
		}, []string{`does not serve model "gpt-test"`, `"other-model"`, "check --model"}},
		{"no models endpoint", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"detail":"Not Found"}`)
		}, []string{"HTTP 404", "--no-preflight"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			out := t.TempDir()
			_, stderr, code := runCLIEnv(t, []string{"OPENAI_API_KEY=" + key}, "eval", "--benchmark", genBench, "--out", out,
				"--provider", "openai", "--model", "gpt-test", "--endpoint", srv.URL+"/v1", "--no-cache")
			lines := errorLines(stderr)
			if code != 2 || len(lines) != 1 {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and one line", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("error line %q lacks %q", lines[0], w)
				}
			}
			if strings.Contains(stderr, key) || strings.Contains(stderr, "preflightSECRET") {
				t.Errorf("the key was printed:\n%s", stderr)
			}
			if ents, _ := os.ReadDir(out); len(ents) != 0 {
				t.Errorf("the failed run wrote %d entries into --out", len(ents))
			}
		})
	}
}
