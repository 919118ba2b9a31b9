package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// bodySpy is an OpenAI-compatible server (serve-baseline's, policy first)
// that keeps the top-level members of every request body but messages,
// as the raw JSON the client sent, so tests see the wire types.
type bodySpy struct {
	mu     sync.Mutex
	bodies []map[string]json.RawMessage
	auth   []string
}

func newBodySpy(t *testing.T) (*bodySpy, *httptest.Server) {
	t.Helper()
	base, err := fakemodel.NewServer(fakemodel.ServerConfig{Policy: "first"})
	if err != nil {
		t.Fatal(err)
	}
	spy := &bodySpy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // the preflight: not a chat request
			base.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			http.Error(w, "body is not a JSON object: "+err.Error(), http.StatusBadRequest)
			return
		}
		delete(m, "messages")
		spy.mu.Lock()
		spy.bodies = append(spy.bodies, m)
		spy.auth = append(spy.auth, r.Header.Get("Authorization"))
		spy.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		base.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { base.Close(); srv.Close() })
	return spy, srv
}

func (s *bodySpy) requests() []map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]json.RawMessage(nil), s.bodies...)
}

const genBench = "../../internal/benchmark/testdata/sample"

// eval --temperature, --top-p, --max-tokens, --gen-seed and --extra-body
// reach the server with their JSON types, replace the registry's
// settings, and are what the manifest records; --provider vllm is
// opensource (run name and manifest).
func TestEvalGenerationSettingsReachServer(t *testing.T) {
	t.Parallel()
	spy, srv := newBodySpy(t)
	out := t.TempDir()
	stdout, stderr, code := runCLIEnv(t, nil, "eval", "--benchmark", genBench, "--out", out, "--oracle", "none", "--limit", "1", "--no-cache",
		"--provider", "vllm", "--model", "Qwen/Qwen3-VL-8B", "--endpoint", srv.URL+"/v1",
		"--temperature", "0.2", "--top-p", "0.9", "--max-tokens", "512", "--gen-seed", "7",
		"--extra-body", "top_k=20", "--extra-body", `chat_template_kwargs={ "enable_thinking" : false }`,
		"--extra-body", "repetition_penalty=1.05", "--extra-body", `guided_choice=["1","2"]`)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	runDir := filepath.Join(out, "opensource_Qwen--Qwen3-VL-8B", "oracle_none")
	if lastLine(stdout) != runDir {
		t.Fatalf("run directory %q, want %q", lastLine(stdout), runDir)
	}
	want := map[string]string{
		"model": `"Qwen/Qwen3-VL-8B"`, "temperature": `0.2`, "top_p": `0.9`, "max_completion_tokens": `512`, "seed": `7`,
		"top_k": `20`, "chat_template_kwargs": `{"enable_thinking":false}`, "repetition_penalty": `1.05`,
		"guided_choice": `["1","2"]`,
	}
	reqs := spy.requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the server")
	}
	for i, m := range reqs {
		for k, v := range want {
			if string(m[k]) != v {
				t.Errorf("request %d: %s = %s, want %s", i, k, m[k], v)
			}
		}
		if len(m) != len(want) {
			t.Errorf("request %d: members %v, want exactly %d", i, keysOf(m), len(want))
		}
	}
	man, err := rundir.ReadManifest(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if man.Model.Provider != "opensource" || man.RunName != "opensource_Qwen--Qwen3-VL-8B" {
		t.Errorf("manifest provider %q run name %q, want opensource", man.Model.Provider, man.RunName)
	}
	if got, want := man.Sampling.Text(), `temperature=0.2 top_p=0.9 max_completion_tokens=512 seed=7 chat_template_kwargs={"enable_thinking":false} guided_choice=["1","2"] repetition_penalty=1.05 top_k=20`; got != want {
		t.Errorf("manifest sampling %s\nwant %s", got, want)
	}
	raw, _ := os.ReadFile(filepath.Join(runDir, rundir.ManifestFile))
	if !strings.Contains(string(raw), "\"extra_body\": {\n      \"chat_template_kwargs\": {\n        \"enable_thinking\": false\n      },") ||
		!strings.Contains(string(raw), `"top_k": 20`) || !strings.Contains(string(raw), `"seed": 7`) {
		t.Errorf("manifest.json does not record the settings as JSON members:\n%s", raw)
	}
	// Restarting into the run with other settings is refused, naming them.
	_, stderr, code = runCLIEnv(t, nil, "eval", "--benchmark", genBench, "--out", out, "--oracle", "none", "--limit", "1", "--no-cache",
		"--provider", "opensource", "--model", "Qwen/Qwen3-VL-8B", "--endpoint", srv.URL+"/v1",
		"--temperature", "0.2", "--top-p", "0.9", "--max-tokens", "512", "--gen-seed", "7",
		"--extra-body", "top_k=21", "--extra-body", `chat_template_kwargs={"enable_thinking":false}`,
		"--extra-body", "repetition_penalty=1.05", "--extra-body", `guided_choice=["1","2"]`)
	if code != 2 || !strings.Contains(stderr, "sampling: ") || !strings.Contains(stderr, `"top_k":21`) {
		t.Errorf("resume with another --extra-body: exit %d\n%s", code, stderr)
	}
}

func keysOf(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// A registry alias keeps its own settings where no flag is given, and
// --max-tokens goes to the member the backend sends (openai/azure:
// max_completion_tokens).
func TestEvalMaxTokensUsesBackendMember(t *testing.T) {
	t.Parallel()
	spy, srv := newBodySpy(t)
	out := t.TempDir()
	_, stderr, code := runCLIEnv(t, nil, "eval", "--benchmark", genBench, "--out", out, "--oracle", "none", "--limit", "1", "--no-cache",
		"--provider", "openai", "--model", "gpt-test", "--endpoint", srv.URL+"/v1", "--max-tokens", "100")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	reqs := spy.requests()
	if len(reqs) == 0 {
		t.Fatal("no request")
	}
	m := reqs[0]
	if string(m["max_completion_tokens"]) != "100" || m["max_tokens"] != nil || string(m["temperature"]) != "1" || string(m["reasoning_effort"]) != `"medium"` || m["seed"] != nil {
		t.Errorf("openai body members %v: max_completion_tokens %s max_tokens %s temperature %s", keysOf(m), m["max_completion_tokens"], m["max_tokens"], m["temperature"])
	}
}

// OPENAI_BASE_URL is the endpoint of --provider openai without
// --endpoint: the calls go there, and the manifest records it without
// the credentials it may carry.
func TestEvalHonoursOpenAIBaseURL(t *testing.T) {
	spy, srv := newBodySpy(t)
	withCreds := strings.Replace(srv.URL, "http://", "http://user:s3cr3t-pass@", 1) + "/v1?token=s3cr3t-token"
	t.Setenv("OPENAI_BASE_URL", withCreds)
	out := t.TempDir()
	stdout, stderr, code := runCLIEnv(t, nil, "eval", "--benchmark", genBench, "--out", out, "--oracle", "none", "--limit", "1", "--no-cache",
		"--provider", "openai", "--model", "gpt-test")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if len(spy.requests()) == 0 {
		t.Fatal("no request reached OPENAI_BASE_URL")
	}
	man, err := rundir.ReadManifest(lastLine(stdout))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{srv.URL + "/v1"}; !equalStrings(man.Model.Endpoints, want) {
		t.Errorf("manifest endpoints %q, want %q", man.Model.Endpoints, want)
	}
	raw, _ := os.ReadFile(filepath.Join(lastLine(stdout), rundir.ManifestFile))
	for _, secret := range []string{"s3cr3t"} {
		if strings.Contains(string(raw), secret) || strings.Contains(stderr, secret) || strings.Contains(stdout, secret) {
			t.Errorf("a credential of OPENAI_BASE_URL was written out")
		}
	}
	// --endpoint wins over the variable.
	spy2, srv2 := newBodySpy(t)
	stdout, stderr, code = runCLIEnv(t, nil, "eval", "--benchmark", genBench, "--out", t.TempDir(), "--oracle", "none", "--limit", "1", "--no-cache",
		"--provider", "openai", "--model", "gpt-test", "--endpoint", srv2.URL+"/v1")
	if code != 0 || len(spy2.requests()) == 0 {
		t.Fatalf("with --endpoint: exit %d, %d requests\n%s", code, len(spy2.requests()), stderr)
	}
	if man, err := rundir.ReadManifest(lastLine(stdout)); err != nil || !equalStrings(man.Model.Endpoints, []string{srv2.URL + "/v1"}) {
		t.Errorf("with --endpoint: manifest %v, %v", man, err)
	}
	// A value that is no URL is refused without being echoed.
	t.Setenv("OPENAI_BASE_URL", "not a url s3cr3t")
	_, stderr, code = runCLIEnv(t, nil, "eval", "--benchmark", genBench, "--out", t.TempDir(), "--oracle", "none", "--limit", "1", "--no-cache",
		"--provider", "openai", "--model", "gpt-test")
	if code != 2 || !strings.Contains(stderr, "OPENAI_BASE_URL is not a URL") || strings.Contains(stderr, "s3cr3t") {
		t.Errorf("bad OPENAI_BASE_URL: exit %d, stderr %q", code, stderr)
	}
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

// The response cache stores only calls whose effective temperature is 0:
// --temperature 0 makes an openai call (default 1) cacheable, and
// --temperature 0.2 makes a vllm call (default 0) uncacheable. A changed
// --extra-body misses the cache.
func TestEvalCacheFollowsEffectiveSettings(t *testing.T) {
	t.Parallel()
	spy, srv := newBodySpy(t)
	cache := t.TempDir()
	run := func(args ...string) int {
		t.Helper()
		before := len(spy.requests())
		base := []string{"eval", "--benchmark", genBench, "--out", t.TempDir(), "--oracle", "none", "--limit", "1",
			"--cache-dir", cache, "--endpoint", srv.URL + "/v1"}
		_, stderr, code := runCLIEnv(t, nil, append(base, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		return len(spy.requests()) - before
	}
	openai0 := []string{"--provider", "openai", "--model", "gpt-test", "--temperature", "0"}
	if n := run(openai0...); n == 0 {
		t.Fatal("first run sent nothing")
	}
	if n := run(openai0...); n != 0 {
		t.Errorf("--temperature 0 on openai: second run sent %d calls, want all from the cache", n)
	}
	if n := run(append(openai0, "--extra-body", "top_k=20")...); n == 0 {
		t.Errorf("a different --extra-body was served from the cache")
	}
	vllm := []string{"--provider", "vllm", "--model", "some/model", "--temperature", "0.2"}
	run(vllm...)
	if n := run(vllm...); n == 0 {
		t.Errorf("--temperature 0.2 on vllm was served from the cache")
	}
}

// Bad generation flags are refused before anything starts, with one line
// naming the flag (and the key) and the reason; nothing is written.
func TestEvalGenerationFlagErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no equals", []string{"--extra-body", "top_k"}, `--extra-body "top_k" has no '=': want KEY=JSON`},
		{"no key", []string{"--extra-body", "=20"}, `--extra-body "=20" has no key before '='`},
		{"invalid JSON", []string{"--extra-body", "top_k=twenty"}, `--extra-body top_k: value "twenty" is not valid JSON`},
		{"two values", []string{"--extra-body", "top_k=1 2"}, `--extra-body top_k: value "1 2" is not valid JSON`},
		{"empty value", []string{"--extra-body", "top_k="}, `--extra-body top_k: value "" is not valid JSON`},
		{"messages", []string{"--extra-body", `messages=[]`}, "--extra-body: messages is a core request member: it is written by chexpercept"},
		{"model", []string{"--extra-body", `model="x"`}, "--extra-body: model is a core request member"},
		{"temperature", []string{"--extra-body", `temperature=0.5`}, "--extra-body temperature: temperature is a core request member: it has its own setting; use --temperature"},
		{"stream", []string{"--extra-body", `stream=true`}, "--extra-body: stream is a core request member"},
		{"space in key", []string{"--extra-body", "top k=1"}, `--extra-body: member name "top k" has spaces, control or format characters`},
		{"newline in key", []string{"--extra-body", "top\nk=1"}, `--extra-body: member name "top\nk" has spaces, control or format characters`},
		{"bidi in key", []string{"--extra-body", "top\u202ek=1"}, `--extra-body: member name "top\u202ek" has spaces, control or format characters`},
		{"twice", []string{"--extra-body", "top_k=1", "--extra-body", "top_k=2"}, "--extra-body top_k is given twice"},
		{"gemini", []string{"--provider", "gemini", "--model", "gemini-3.1-flash", "--extra-body", "top_k=1"},
			"--extra-body: backend gemini: only OpenAI-compatible backends (vllm, openai_compat, openai, azure) take extra body members"},
		{"baseline", []string{"--provider", "baseline", "--model", "random", "--temperature", "0.5"},
			"--temperature: the baseline provider samples nothing"},
		{"thinking toggle", []string{"--model", "qwen3.6-27b", "--no-thinking", "--extra-body", `chat_template_kwargs={"enable_thinking":true}`},
			"--extra-body chat_template_kwargs conflicts with --no-thinking"},
		{"max_tokens", []string{"--extra-body", `max_tokens=5`}, "--extra-body max_tokens: max_tokens is a core request member: it has its own setting; use --max-tokens"},
		{"seed", []string{"--extra-body", `seed=5`}, "use --gen-seed"},
		// Depth and size caps, invalid UTF-8, reserved names in any
		// case, names that differ only in case.
		{"deep", []string{"--extra-body", "top_k=1", "--extra-body", "k=" + strings.Repeat("[", 65) + strings.Repeat("]", 65)},
			"--extra-body: k: value is nested 65 levels deep, more than 64"},
		{"very deep", []string{"--extra-body", "top_k=1", "--extra-body", "k=" + strings.Repeat("[", 10000) + strings.Repeat("]", 10000)},
			"--extra-body: k: value is nested 10000 levels deep, more than 64"},
		{"large", []string{"--extra-body", `k="` + strings.Repeat("x", 40000) + `"`, "--extra-body", `l="` + strings.Repeat("x", 40000) + `"`},
			"--extra-body l: the values are more than 65536 bytes together"},
		{"invalid UTF-8", []string{"--extra-body", "k=\"a\xff\""}, `--extra-body k: value "\"a\xff\"" is not valid UTF-8`},
		{"invalid UTF-8 key", []string{"--extra-body", "k\xff=1"}, `--extra-body: member name "k\xff" is not valid UTF-8`},
		{"Model", []string{"--extra-body", `Model="evil"`}, "--extra-body: Model is a core request member"},
		{"TEMPERATURE", []string{"--extra-body", `TEMPERATURE=1`}, "--extra-body TEMPERATURE: TEMPERATURE is a core request member: it has its own setting; use --temperature"},
		{"case twins", []string{"--extra-body", "top_k=1", "--extra-body", "Top_K=2"}, "--extra-body: Top_K and top_k name the same member for a server that ignores case"},
		{"temperature range", []string{"--temperature", "2.5"}, "--temperature 2.5 is outside [0, 2]"},
		{"top-p range", []string{"--top-p", "0"}, "--top-p 0 is outside (0, 1]"},
		{"max-tokens", []string{"--max-tokens", "0"}, "--max-tokens 0 must be at least 1"},
		{"gemini seed", []string{"--provider", "gemini", "--model", "gemini-3.1-flash", "--gen-seed", "5000000000"},
			"--gen-seed: seed 5000000000 does not fit Gemini's 32-bit seed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r")
			args := []string{"eval", "--benchmark", genBench, "--out", out, "--oracle", "none", "--limit", "1", "--no-cache"}
			if !contains(tc.args, "--provider") {
				args = append(args, "--provider", "opensource", "--endpoint", "http://127.0.0.1:9/v1")
			}
			if !contains(tc.args, "--model") {
				args = append(args, "--model", "some/model")
			}
			stdout, stderr, code := runCLIEnv(t, nil, append(args, tc.args...)...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 and %q", code, stderr, tc.want)
			}
			for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
				if strings.HasPrefix(l, "notice: ") || strings.HasPrefix(l, "warning: ") {
					continue
				}
				if !strings.Contains(l, tc.want) {
					t.Errorf("the error takes more than one line: %q", stderr)
				}
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was created", out)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// --sample-seed (and its older spelling --seed) is the seed of --sample
// (spec protocol.md §2.3): given without --sample it warns that it does
// not reach the model.
func TestEvalSeedWithoutSampleWarns(t *testing.T) {
	t.Parallel()
	_, stderr, code := runCLIEnv(t, nil, "eval", "--benchmark", genBench, "--out", t.TempDir(), "--oracle", "none", "--limit", "1", "--no-cache",
		"--provider", "baseline", "--model", "first", "--seed", "3")
	if code != 0 || !strings.Contains(stderr, "warning: --sample-seed only seeds --sample") || !strings.Contains(stderr, "--gen-seed") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestParseExtraBodyBounded: a huge or deeply nested --extra-body value is
// refused with a short one-line error that quotes only its start, and the
// values together are bounded.
func TestParseExtraBodyBounded(t *testing.T) {
	t.Parallel()
	nested := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	big := `"` + strings.Repeat("x", 65536/4) + `"`
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"deep nesting", []string{"a=" + nested}, "(40000 bytes)"},
		{"no equals", []string{strings.Repeat("y", 5000)}, "(5000 bytes)"},
		{"too large together", []string{"a=" + big, "b=" + big, "c=" + big, "d=" + big, "e=" + big}, "more than 65536 bytes together"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseExtraBody(tc.args)
			if err == nil {
				t.Fatal("want an error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || len(msg) > 400 || strings.Contains(msg, "\n") {
				t.Errorf("want a short one-line error with %q, got %d bytes: %.300s", tc.want, len(msg), msg)
			}
		})
	}
}
