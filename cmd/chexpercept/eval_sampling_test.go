package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// samplingSaid is the members of eval's "sampling sent with every call"
// line, name → value, and the origin each is said to come from.
func samplingSaid(t *testing.T, stderr string) (values, origins map[string]string) {
	t.Helper()
	const head = "sampling sent with every call: "
	var line string
	n := 0
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, head) {
			line, n = strings.TrimPrefix(l, head), n+1
		}
	}
	if n != 1 {
		t.Fatalf("%d sampling lines, want one:\n%s", n, stderr)
	}
	values, origins = map[string]string{}, map[string]string{}
	group := regexp.MustCompile(`^(.*) \(([^()]*(?:\([^()]*\))?)\)$`)
	for _, g := range strings.Split(line, "; ") {
		m := group.FindStringSubmatch(g)
		if m == nil {
			t.Fatalf("sampling line group %q is not `name=value … (origin)`", g)
		}
		for _, kv := range strings.Fields(m[1]) {
			k, v, _ := strings.Cut(kv, "=")
			values[k], origins[k] = v, m[2]
		}
	}
	return values, origins
}

// eval says, before it starts, what every call sends beside the
// conversation and where each value came from; the server receives
// exactly those members. --provider openai aimed at a server that is not
// OpenAI's says that OpenAI's settings go there and names the provider
// for vLLM-like servers; the other providers and OpenAI's own endpoint
// get no such hint.
func TestEvalSaysWhatItSends(t *testing.T) {
	t.Parallel()
	models := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(models, []byte("- alias: tuned-vl\n  provider: opensource\n  backend: vllm\n  model_id: org/tuned-vl\n  sampling:\n    top_p: 0.8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		args    []string
		origins map[string]string
		hint    bool
	}{
		{"openai at loopback", []string{"--provider", "openai", "--model", "my-model"},
			map[string]string{"temperature": "openai backend defaults", "reasoning_effort": "openai backend defaults",
				"max_completion_tokens": "openai backend defaults", "frequency_penalty": "openai backend defaults", "presence_penalty": "openai backend defaults"}, true},
		{"flags over defaults", []string{"--provider", "opensource", "--model", "my-model", "--temperature", "0.2", "--extra-body", "top_k=20"},
			map[string]string{"temperature": "--temperature", "top_p": "vllm backend defaults", "max_completion_tokens": "vllm backend defaults", "top_k": "--extra-body"}, false},
		{"registry entry", []string{"--provider", "opensource", "--model", "tuned-vl", "--models", models, "--max-tokens", "64"},
			map[string]string{"temperature": "vllm backend defaults", "top_p": "registry entry tuned-vl", "max_completion_tokens": "--max-tokens"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			spy, srv := newBodySpy(t)
			args := append([]string{"eval", "--benchmark", genBench, "--out", t.TempDir(), "--oracle", "none", "--limit", "1", "--no-cache",
				"--endpoint", srv.URL + "/v1"}, c.args...)
			_, stderr, code := runCLIEnv(t, nil, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			values, origins := samplingSaid(t, stderr)
			if len(origins) != len(c.origins) {
				t.Errorf("said %v, want the members %v", origins, c.origins)
			}
			for k, want := range c.origins {
				if origins[k] != want {
					t.Errorf("%s said to come from %q, want %q", k, origins[k], want)
				}
			}
			reqs := spy.requests()
			if len(reqs) == 0 {
				t.Fatal("no request reached the server")
			}
			for i, body := range reqs {
				got := map[string]string{}
				for k, raw := range body {
					if k == "model" {
						continue
					}
					var s string
					if json.Unmarshal(raw, &s) == nil {
						got[k] = s
					} else {
						got[k] = string(raw)
					}
				}
				if len(got) != len(values) {
					t.Errorf("request %d sends %v, the line said %v", i, got, values)
				}
				for k, v := range values {
					if g, ok := got[k]; !ok || !sameNumberOrText(g, v) {
						t.Errorf("request %d: %s = %q, the line said %q", i, k, g, v)
					}
				}
			}
			hint := strings.Contains(stderr, "hint: --provider openai speaks to OpenAI's API") &&
				strings.Contains(stderr, "reasoning_effort is a member only OpenAI's API knows") &&
				strings.Contains(stderr, "use --provider opensource") && strings.Contains(stderr, srv.URL+"/v1")
			if hint != c.hint {
				t.Errorf("openai hint shown %v, want %v:\n%s", hint, c.hint, stderr)
			}
		})
	}
}

// sameNumberOrText compares a member as sent with its value as said: as
// numbers when both are numbers (the wire may write 1 where the line
// writes 1), else as text.
func sameNumberOrText(a, b string) bool {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		return x == y
	}
	return a == b
}

// The hint is for servers that are not OpenAI's only.
func TestOpenAIHintOnlyElsewhere(t *testing.T) {
	t.Parallel()
	origins := []samplingOrigin{}
	if h := openAIHint([]string{"https://api.openai.com/v1"}, origins); h != "" {
		t.Errorf("OpenAI's own endpoint got the hint %q", h)
	}
	if h := openAIHint([]string{"http://user:pw@127.0.0.1:8000/v1?k=secret"}, origins); !strings.Contains(h, "http://127.0.0.1:8000/v1") || strings.Contains(h, "pw") || strings.Contains(h, "secret") {
		t.Errorf("loopback hint %q: want the endpoint without credentials", h)
	}
}
