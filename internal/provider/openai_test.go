package provider

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// capture records the last request a fake server received.
type capture struct {
	mu     sync.Mutex
	path   string
	query  string
	header http.Header
	body   []byte
}

func (c *capture) get() (string, string, http.Header, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.path, c.query, c.header, c.body
}

// fakeServer answers every request with handler after recording it.
func fakeServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, *capture) {
	t.Helper()
	c := &capture{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.path, c.query, c.header, c.body = r.URL.Path, r.URL.RawQuery, r.Header.Clone(), b
		c.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, c
}

func reply(status int, body string, headers ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

const okReply = `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"<think>hm</think>Answer: 2","reasoning_content":"I looked closely."},"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":40,"total_tokens":1240,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":30}}}`

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// conversation is a two-turn request: system, user(text+2 images),
// assistant, user(text+1 image).
func conversation(s runmodel.Sampling) *Request {
	a, b, c := NewImage([]byte("PNG-A")), NewImage([]byte("PNG-B")), NewImage([]byte("PNG-C"))
	return &Request{
		Model: "Qwen/Qwen3.6-27B",
		Messages: []Message{
			{Role: RoleSystem, Text: "SYS"},
			{Role: RoleUser, Text: "Q1\n\nOptions:\n(1) Yes\n(2) No", Images: []*Image{a, b}},
			{Role: RoleAssistant, Text: "Answer: 1"},
			{Role: RoleUser, Text: "Q2", Images: []*Image{c}},
			{Role: RoleAssistant, Text: "Answer: 2"},
			{Role: RoleUser, Text: "Q3"},
		},
		Sampling: s,
	}
}

func expectedMessages() []any {
	img := func(b string) map[string]any {
		return map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + b}}
	}
	return []any{
		map[string]any{"role": "system", "content": "SYS"},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "Q1\n\nOptions:\n(1) Yes\n(2) No"}, img("UE5HLUE="), img("UE5HLUI=")}},
		map[string]any{"role": "assistant", "content": "Answer: 1"},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Q2"}, img("UE5HLUM=")}},
		map[string]any{"role": "assistant", "content": "Answer: 2"},
		map[string]any{"role": "user", "content": "Q3"},
	}
}

func mustSampling(t *testing.T, backend string) runmodel.Sampling {
	s, err := runmodel.DefaultSampling(backend)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenAIRequestBodies(t *testing.T) {
	no := false
	vllmNoThink := mustSampling(t, runmodel.BackendVLLM)
	vllmNoThink.EnableThinking = &no
	cases := []struct {
		name     string
		backend  string
		sampling runmodel.Sampling
		want     map[string]any // besides model and messages
	}{
		{"vllm", runmodel.BackendVLLM, mustSampling(t, runmodel.BackendVLLM),
			map[string]any{"temperature": 0.0, "top_p": 1.0, "max_completion_tokens": 8192.0}},
		{"vllm no thinking", runmodel.BackendVLLM, vllmNoThink,
			map[string]any{"temperature": 0.0, "top_p": 1.0, "max_completion_tokens": 8192.0,
				"chat_template_kwargs": map[string]any{"enable_thinking": false}}},
		{"openai_compat", runmodel.BackendOpenAICompat, mustSampling(t, runmodel.BackendOpenAICompat),
			map[string]any{"max_tokens": 8192.0}},
		{"openai", runmodel.BackendOpenAI, mustSampling(t, runmodel.BackendOpenAI),
			map[string]any{"temperature": 1.0, "reasoning_effort": "medium", "max_completion_tokens": 8192.0,
				"frequency_penalty": 0.0, "presence_penalty": 0.0}},
		{"azure", runmodel.BackendAzure, mustSampling(t, runmodel.BackendAzure),
			map[string]any{"temperature": 1.0, "reasoning_effort": "medium", "max_completion_tokens": 8192.0,
				"frequency_penalty": 0.0, "presence_penalty": 0.0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, cap := fakeServer(t, reply(200, okReply))
			cfg := Config{Backend: tc.backend, Endpoint: srv.URL + "/v1",
				Getenv: env(map[string]string{"OPENAI_API_KEY": "sk-test-openai-123456", "AZURE_OPENAI_API_KEY": "az-secret-key-987654"})}
			if tc.backend == runmodel.BackendAzure {
				cfg.Endpoint = srv.URL
			}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Complete(context.Background(), conversation(tc.sampling))
			if err != nil {
				t.Fatal(err)
			}
			path, query, hdr, body := cap.get()
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			want := map[string]any{"model": "Qwen/Qwen3.6-27B", "messages": expectedMessages()}
			for k, v := range tc.want {
				want[k] = v
			}
			if !reflect.DeepEqual(got, want) {
				gb, _ := json.MarshalIndent(got, "", " ")
				t.Errorf("request body mismatch:\n%s", gb)
			}
			if strings.Contains(string(body), `"detail"`) {
				t.Error("image_url carries a detail field")
			}
			switch tc.backend {
			case runmodel.BackendAzure:
				if path != "/openai/deployments/Qwen%2FQwen3.6-27B/chat/completions" && path != "/openai/deployments/Qwen/Qwen3.6-27B/chat/completions" {
					t.Errorf("azure path = %q", path)
				}
				if query != "api-version=2024-12-01-preview" {
					t.Errorf("azure query = %q", query)
				}
				if hdr.Get("api-key") != "az-secret-key-987654" || hdr.Get("Authorization") != "" {
					t.Errorf("azure auth headers: api-key=%q authorization=%q", hdr.Get("api-key"), hdr.Get("Authorization"))
				}
			case runmodel.BackendOpenAI:
				if path != "/v1/chat/completions" || hdr.Get("Authorization") != "Bearer sk-test-openai-123456" {
					t.Errorf("path %q, authorization %q", path, hdr.Get("Authorization"))
				}
			default:
				// local servers never receive the OpenAI key
				if path != "/v1/chat/completions" || hdr.Get("Authorization") != "Bearer EMPTY" {
					t.Errorf("path %q, authorization %q", path, hdr.Get("Authorization"))
				}
			}
			wantResp := &Response{Text: "<think>hm</think>Answer: 2", Reasoning: "I looked closely.", FinishReason: "stop",
				Usage: &runmodel.Usage{Input: 1200, CachedInput: 1024, Output: 40, Thinking: 30, Total: 1240}}
			if !reflect.DeepEqual(resp, wantResp) {
				t.Errorf("response = %+v, usage %+v", resp, resp.Usage)
			}
		})
	}
}

func TestOpenAIReplies(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		hdr    []string
		want   *Response // nil: an error is expected
		kind   ErrorKind
		retry  bool
		after  time.Duration
	}{
		{"empty content", 200, `{"choices":[{"message":{"role":"assistant","content":""},"finish_reason":"length"}]}`, nil,
			&Response{FinishReason: "length"}, 0, false, 0},
		{"null content and reasoning field", 200, `{"choices":[{"message":{"content":null,"reasoning":"all thought"},"finish_reason":"content_filter"}]}`, nil,
			&Response{Reasoning: "all thought", FinishReason: "content_filter"}, 0, false, 0},
		{"tool_calls finish is other", 200, `{"choices":[{"message":{"content":"x"},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`, nil,
			&Response{Text: "x", FinishReason: "other", Usage: &runmodel.Usage{Input: 5, Output: 1, Total: 6}}, 0, false, 0},
		{"missing finish reason", 200, `{"choices":[{"message":{"content":[{"type":"text","text":"Answer: "},{"type":"text","text":"3"}]}}]}`, nil,
			&Response{Text: "Answer: 3"}, 0, false, 0},
		{"429 with seconds", 429, `{"error":{"message":"slow down","type":"rate_limit"}}`, []string{"Retry-After", "7"},
			nil, KindRateLimited, true, 7 * time.Second},
		{"503 with date", 503, `{"error":{"message":"overloaded"}}`, []string{"Retry-After", time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)},
			nil, KindServer, true, 30 * time.Second},
		{"500", 500, `{"error":{"message":"boom"}}`, nil, nil, KindServer, true, 0},
		{"400", 400, `{"error":{"message":"bad image"}}`, nil, nil, KindClient, false, 0},
		{"401", 401, `{"error":{"message":"no"}}`, nil, nil, KindClient, false, 0},
		{"malformed json", 200, `{"choices":[{"mess`, nil, nil, KindMalformed, true, 0},
		{"html 200", 200, `<html>gateway</html>`, nil, nil, KindMalformed, true, 0},
		{"no choices", 200, `{"choices":[]}`, nil, nil, KindMalformed, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := fakeServer(t, reply(tc.status, tc.body, tc.hdr...))
			c, err := New(Config{Backend: runmodel.BackendVLLM, Endpoint: srv.URL + "/v1", Getenv: env(nil)})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Complete(context.Background(), conversation(mustSampling(t, runmodel.BackendVLLM)))
			if tc.want != nil {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(resp, tc.want) {
					t.Errorf("got %+v want %+v", resp, tc.want)
				}
				return
			}
			var ce *CallError
			if !errors.As(err, &ce) {
				t.Fatalf("want *CallError, got %v", err)
			}
			if ce.Kind != tc.kind || ce.Retryable() != tc.retry {
				t.Errorf("kind %v retryable %v, want %v %v (%v)", ce.Kind, ce.Retryable(), tc.kind, tc.retry, ce)
			}
			if d := ce.RetryAfter - tc.after; d < -2*time.Second || d > 0 {
				t.Errorf("RetryAfter = %v, want about %v", ce.RetryAfter, tc.after)
			}
		})
	}
}

func TestOpenAITimeoutAndNetwork(t *testing.T) {
	block := make(chan struct{})
	srv, _ := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	defer close(block)
	c, _ := New(Config{Backend: runmodel.BackendVLLM, Endpoint: srv.URL + "/v1", Getenv: env(nil)})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Complete(ctx, conversation(runmodel.Sampling{}))
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != KindTimeout || !ce.Retryable() {
		t.Fatalf("want retryable timeout, got %v", err)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := c.Complete(ctx2, conversation(runmodel.Sampling{})); !errors.As(err, &ce) || ce.Kind != KindCanceled || ce.Retryable() {
		t.Fatalf("want non-retryable cancel, got %v", err)
	}

	// a server that closes the connection without replying
	hj := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer hj.Close()
	c2, _ := New(Config{Backend: runmodel.BackendVLLM, Endpoint: hj.URL + "/v1", Getenv: env(nil)})
	if _, err := c2.Complete(context.Background(), conversation(runmodel.Sampling{})); !errors.As(err, &ce) || ce.Kind != KindNetwork || !ce.Retryable() {
		t.Fatalf("want retryable network error, got %v", err)
	}
}

// TestSecretsNeverInErrors: a server that echoes the credentials and the
// request body into its error reply must not get them into our errors.
func TestSecretsNeverInErrors(t *testing.T) {
	const envKey = "sk-live-ENVSECRET-abcdef0123456789"
	const fileKey = "sk-live-FILESECRET-9876543210fedcba"
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(fileKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	echo := func(status int) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			msg := "auth=" + r.Header.Get("Authorization") + " api-key: " + r.Header.Get("api-key") + " key " + r.Header.Get("api-key") + r.Header.Get("Authorization") + " body=" + string(b)
			out, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg}})
			w.WriteHeader(status)
			w.Write(out)
		}
	}
	for _, backend := range []string{runmodel.BackendOpenAI, runmodel.BackendAzure} {
		for _, status := range []int{400, 429, 500} {
			for _, useFile := range []bool{false, true} {
				srv, _ := fakeServer(t, echo(status))
				cfg := Config{Backend: backend, Endpoint: srv.URL + "/v1",
					Getenv: env(map[string]string{"OPENAI_API_KEY": envKey, "AZURE_OPENAI_API_KEY": envKey})}
				if backend == runmodel.BackendAzure {
					cfg.Endpoint = srv.URL
				}
				if useFile {
					cfg.APIKeyFile = keyFile
				}
				c, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				req := conversation(mustSampling(t, backend))
				_, err = c.Complete(context.Background(), req)
				if err == nil {
					t.Fatal("want error")
				}
				msg := err.Error()
				for _, bad := range []string{envKey, fileKey, "ENVSECRET", "FILESECRET", req.Messages[1].Images[0].Base64, "UE5HL"} {
					if strings.Contains(msg, bad) {
						t.Errorf("%s %d file=%v: error leaks %q: %s", backend, status, useFile, bad, msg)
					}
				}
				if len(msg) > maxMsgLen+100 {
					t.Errorf("error message too long (%d bytes)", len(msg))
				}
			}
		}
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
		is   error // matched by errors.Is when not nil
	}{
		{Config{Backend: runmodel.BackendOpenAI, Getenv: env(nil)}, "openai: no API key (set OPENAI_API_KEY)", ErrNoCredentials},
		{Config{Backend: runmodel.BackendAzure, Getenv: env(map[string]string{"AZURE_OPENAI_API_KEY": "k"})}, "azure: no endpoint (set AZURE_OPENAI_ENDPOINT)", ErrNoEndpoint},
		{Config{Backend: runmodel.BackendAzure, Getenv: env(map[string]string{"AZURE_OPENAI_ENDPOINT": "https://x"})}, "azure: no API key (set AZURE_OPENAI_API_KEY)", ErrNoCredentials},
		{Config{Backend: runmodel.BackendVLLM, Getenv: env(nil)}, "no endpoint (the server's base URL, e.g. http://127.0.0.1:8000/v1)", ErrNoEndpoint},
		{Config{Backend: runmodel.BackendVLLM, Endpoint: "http://x/v1", APIKeyFile: "/nonexistent/key"}, "api key file", nil},
		{Config{Backend: runmodel.BackendGemini, Getenv: env(nil)}, "gemini: no credentials (set GEMINI_API_KEY or GOOGLE_API_KEY, or GOOGLE_CLOUD_PROJECT for Vertex AI)", ErrNoCredentials},
		{Config{Backend: runmodel.BackendGemini, GeminiVertex: true, Getenv: env(map[string]string{"GEMINI_API_KEY": "k"})}, "needs GOOGLE_CLOUD_PROJECT", nil},
		{Config{Backend: runmodel.BackendGemini, GeminiImageFormat: "webp", Getenv: env(map[string]string{"GEMINI_API_KEY": "k"})}, "image format", nil},
		{Config{Backend: runmodel.BackendOpenAI, Endpoint: "not a url", Getenv: env(map[string]string{"OPENAI_API_KEY": "k"})}, "not a URL", nil},
		{Config{Backend: runmodel.BackendBaseline}, "package fakemodel", nil},
		{Config{Backend: "bogus"}, "unknown backend", nil},
	}
	for _, tc := range cases {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want error containing %q", tc.cfg.Backend, err, tc.want)
		}
		if tc.is != nil && (!errors.Is(err, tc.is) || strings.Contains(err.Error(), "--")) {
			t.Errorf("%+v: %v does not match %v or names a flag (the command adds it)", tc.cfg.Backend, err, tc.is)
		}
	}
}

// TestEndpointCredentialsNotInNetworkErrors: an endpoint URL with a user
// name, password and query token (e.g. from OPENAI_BASE_URL) that cannot
// be reached gives a network error naming none of them (Go's url.Error
// masks only the password).
func TestEndpointCredentialsNotInNetworkErrors(t *testing.T) {
	hj := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	defer hj.Close()
	for _, backend := range []string{runmodel.BackendVLLM, runmodel.BackendGemini} {
		ep := strings.Replace(hj.URL, "http://", "http://tok-user-name:pass-word-9@", 1) + "/v1?auth=query-token-7#frag-ment"
		c, err := New(Config{Backend: backend, Endpoint: ep, Getenv: env(map[string]string{"GEMINI_API_KEY": "gem-key-123456"})})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Complete(context.Background(), conversation(runmodel.Sampling{}))
		if err == nil {
			t.Fatalf("%s: want a network error", backend)
		}
		for _, secret := range []string{"tok-user-name", "pass-word-9", "query-token-7", "frag-ment"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: error shows %q: %v", backend, secret, err)
			}
		}
	}
}
