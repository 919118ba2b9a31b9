package fakemodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

func numberedQuestion(i int, opts ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Question %d about the image.\n\nOptions:", i)
	for k, o := range opts {
		fmt.Fprintf(&b, "\n(%d) %s", k+1, o)
	}
	return b.String()
}

func request(i int) *provider.Request {
	img := provider.NewImage([]byte(fmt.Sprintf("png %d", i)))
	opts := [][]string{{"Yes", "No"}, {"a", "b", "c", "d"}, {"red point", "blue point", "None"}}[i%3]
	return &provider.Request{
		Model: "any/model",
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Text: "SYS"},
			{Role: provider.RoleUser, Text: numberedQuestion(i, "Yes", "No"), Images: []*provider.Image{img}},
			{Role: provider.RoleAssistant, Text: "Answer: 1"},
			{Role: provider.RoleUser, Text: numberedQuestion(i+1000, opts...), Images: []*provider.Image{img, img}},
		},
	}
}

func client(t *testing.T, url string) provider.Client {
	t.Helper()
	c, err := provider.New(provider.Config{Backend: runmodel.BackendVLLM, Endpoint: url, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServerMatchesInProcess: the HTTP server, reached through the real
// OpenAI-compatible client, answers exactly as the in-process policy.
func TestServerMatchesInProcess(t *testing.T) {
	for _, policy := range []string{runmodel.PolicyRandom, runmodel.PolicyFirst} {
		url, _, stop, err := StartServer(context.Background(), ServerConfig{Policy: policy, PolicySeed: 42})
		if err != nil {
			t.Fatal(err)
		}
		c := client(t, url)
		local, _ := NewClient(policy, 42)
		for i := 0; i < 60; i++ {
			req := request(i)
			got, err := c.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := local.Complete(context.Background(), req)
			if got.Text != want.Text || got.FinishReason != "stop" {
				t.Fatalf("%s #%d: server %q, in-process %q", policy, i, got.Text, want.Text)
			}
			if *got.Usage != *want.Usage {
				t.Errorf("%s #%d: usage server %+v, in-process %+v", policy, i, *got.Usage, *want.Usage)
			}
		}
		stop()
	}
}

func TestFaultRates(t *testing.T) {
	cfg := ServerConfig{Policy: runmodel.PolicyRandom, Fail429: 0.1, Fail500: 0.1, FailMalformed: 0.1, FailEmpty: 0.1, RetryAfter: 2 * time.Second, FaultSeed: 3}
	url, srv, stop, err := StartServer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := client(t, url)
	const N = 1000
	kinds := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < N; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			resp, err := c.Complete(context.Background(), request(i))
			k := "ok"
			var ce *provider.CallError
			switch {
			case errors.As(err, &ce):
				k = ce.Kind.String()
				if ce.Kind == provider.KindRateLimited && ce.RetryAfter != 2*time.Second {
					t.Errorf("429 RetryAfter = %v", ce.RetryAfter)
				}
			case err != nil:
				t.Errorf("unclassified error %v", err)
			case resp.Text == "":
				k = "empty"
			}
			mu.Lock()
			kinds[k]++
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	// each fault ~ Binomial(1000, 0.1): sd ≈ 9.5, allow ±4 sd
	for _, k := range []string{"rate_limited", "server", "malformed", "empty"} {
		if math.Abs(float64(kinds[k])-100) > 38 {
			t.Errorf("%s: %d of %d, want about 100 (%v)", k, kinds[k], N, kinds)
		}
	}
	st := srv.Stats()
	if st.Requests != N || st.Fail429 != int64(kinds["rate_limited"]) || st.Empty != int64(kinds["empty"]) {
		t.Errorf("stats %+v vs client view %v", st, kinds)
	}
}

// TestFaultsAreNotSticky: retrying the same request eventually succeeds,
// with an answer equal to the in-process one.
func TestFaultsAreNotSticky(t *testing.T) {
	url, _, stop, err := StartServer(context.Background(), ServerConfig{Policy: runmodel.PolicyRandom, Fail500: 0.5, FailMalformed: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := client(t, url)
	local, _ := NewClient(runmodel.PolicyRandom, 0)
	req := request(1)
	want, _ := local.Complete(context.Background(), req)
	for attempt := 0; attempt < 60; attempt++ {
		resp, err := c.Complete(context.Background(), req)
		if err == nil {
			if resp.Text != want.Text {
				t.Fatalf("answer %q, want %q", resp.Text, want.Text)
			}
			return
		}
	}
	t.Fatal("60 attempts of the same request all failed")
}

func TestTimeoutFault(t *testing.T) {
	srv, err := NewServer(ServerConfig{Policy: runmodel.PolicyFirst, FailTimeout: 1})
	if err != nil {
		t.Fatal(err)
	}
	hung := make(chan struct{}, 2)
	srv.onHang = func() { hung <- struct{}{} }
	url, stop, err := srv.start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Complete(ctx, request(0))
	var ce *provider.CallError
	if !errors.As(err, &ce) || ce.Kind != provider.KindTimeout {
		t.Fatalf("want timeout, got %v", err)
	}
	if time.Since(start) < 100*time.Millisecond {
		t.Error("hung request returned early")
	}
	// stop releases a request that is still hanging: the second one,
	// once its handler hangs (the first one's has hung too).
	done := make(chan struct{})
	go func() { c.Complete(context.Background(), request(0)); close(done) }()
	for deadline := time.After(30 * time.Second); srv.Stats().FailTimeout < 2; {
		select {
		case <-hung:
		case <-deadline:
			t.Fatalf("%d of 2 requests reached their injected hang", srv.Stats().FailTimeout)
		}
	}
	stop()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not release a hanging request")
	}
}

func TestLatency(t *testing.T) {
	url, _, stop, err := StartServer(context.Background(), ServerConfig{Policy: runmodel.PolicyFirst, Latency: 80 * time.Millisecond, Jitter: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	start := time.Now()
	if _, err := client(t, url).Complete(context.Background(), request(0)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Errorf("reply after %v, before the configured latency", d)
	}
}

// slowBody delivers body after a delay, as a request whose bytes arrive
// slowly.
type slowBody struct {
	delay time.Duration
	r     io.Reader
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.delay > 0 {
		time.Sleep(b.delay)
		b.delay = 0
	}
	return b.r.Read(p)
}

// TestLatencyFromArrival: the latency runs from the request's arrival,
// so the time the server spends reading the body counts towards it: with
// a body that takes 300 ms to arrive and 400 ms of latency the reply
// comes after 400 ms, never sooner, and not after 700 ms.
func TestLatencyFromArrival(t *testing.T) {
	const latency, reading = 400 * time.Millisecond, 300 * time.Millisecond
	srv, err := NewServer(ServerConfig{Policy: runmodel.PolicyRandom, Latency: latency})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"m","messages":[{"role":"user","content":"Q\nOptions:\n(1) Yes\n(2) No"}]}`
	for _, delay := range []time.Duration{0, reading} {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", &slowBody{delay, strings.NewReader(body)})
		rec := httptest.NewRecorder()
		start := time.Now()
		srv.ServeHTTP(rec, req)
		d := time.Since(start)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		if d < latency {
			t.Errorf("body after %v: reply after %v, before the latency", delay, d)
		}
		if delay > 0 && d >= latency+delay-50*time.Millisecond {
			t.Errorf("body after %v: reply after %v, the reading added to the latency", delay, d)
		}
	}
}

func TestHTTPErrors(t *testing.T) {
	srv, err := NewServer(ServerConfig{Policy: runmodel.PolicyRandom, MaxBody: 1024})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cases := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"GET", "/v1/models", "", 200, `"baseline-random"`},
		{"POST", "/v1/models", "", 405, "use GET"},
		{"GET", "/v1/chat/completions", "", 405, "use POST"},
		{"GET", "/nope", "", 404, "no route"},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}]}`, 413, "exceeds 1024 bytes"},
		{"POST", "/v1/chat/completions", `{"messages":`, 400, "not a valid"},
		{"POST", "/v1/chat/completions", `{"messages":[]}`, 400, "messages is empty"},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hello"}]}`, 400, "Options"},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"Q\n\nOptions:\n"},{"type":"text","text":"(1) a\n(2) b"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`, 200, `"Answer: `},
	}
	// Over the limit, announced or not, whatever the body holds: 413.
	over := []struct{ body string }{
		{strings.Repeat("A", 2000)},
		{`{"messages":[{"role":"user","content":"hello"}]}` + strings.Repeat(" ", 2000)},
	}
	for _, o := range over {
		for _, chunked := range []bool{false, true} {
			var body io.Reader = strings.NewReader(o.body)
			if chunked {
				body = io.MultiReader(body) // no length known: sent chunked
			}
			req, _ := http.NewRequest("POST", hs.URL+"/v1/chat/completions", body)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 413 || !strings.Contains(string(b), "exceeds 1024 bytes") {
				t.Errorf("%.20q… (chunked %v): %d %s, want 413", o.body, chunked, resp.StatusCode, b)
			}
		}
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, hs.URL+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %s, want %d containing %q", tc.method, tc.path, resp.StatusCode, b, tc.status, tc.want)
		}
	}
}

// GET /v1/models says the server is a baseline, with its policy and seed.
func TestModelsEntrySaysBaseline(t *testing.T) {
	srv, err := NewServer(ServerConfig{Policy: runmodel.PolicyFirst, PolicySeed: 42})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 1 {
		t.Fatalf("%d entries, want 1", len(list.Data))
	}
	e := list.Data[0]
	if e["owned_by"] != provider.BaselineOwner || e["policy"] != runmodel.PolicyFirst || e["policy_seed"] != 42.0 || e["id"] != "baseline-first" {
		t.Errorf("entry %v, want owned_by %q, policy first, policy_seed 42", e, provider.BaselineOwner)
	}
}

func TestConfigValidation(t *testing.T) {
	bad := []ServerConfig{
		{Policy: "oracle"},
		{Policy: "random", Fail429: -0.1},
		{Policy: "random", Fail500: 1.5},
		{Policy: "random", Fail429: 0.6, FailEmpty: 0.6},
		{Policy: "random", Latency: -time.Second},
	}
	for _, c := range bad {
		if _, err := NewServer(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestClientIdentity: the in-process baseline is its policy and seed,
// learned in process, and is not the served baseline of the same policy
// and seed.
func TestClientIdentity(t *testing.T) {
	url, _, stop, err := StartServer(context.Background(), ServerConfig{Policy: runmodel.PolicyRandom, PolicySeed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	served, err := client(t, url).(runmodel.Identifier).Identify(context.Background(), "qwen3.6-27b")
	if err != nil || *served.Policy != runmodel.PolicyRandom || *served.PolicySeed != 5 {
		t.Fatalf("served identity %+v, error %v", served, err)
	}
	in, _ := NewClient(runmodel.PolicyRandom, 5)
	local, err := in.(runmodel.Identifier).Identify(context.Background(), "random")
	if err != nil || local.Source != runmodel.IdentityInProcess || *local.PolicySeed != 5 || local.Same(served) {
		t.Errorf("in-process identity %+v, error %v", local, err)
	}
}

// TestReplyBytes: the reply's bytes are those of the map the server
// encoded before it had a reply type (encoding/json writes map members in
// name order), escapes included.
func TestReplyBytes(t *testing.T) {
	srv, err := NewServer(ServerConfig{Policy: runmodel.PolicyFirst})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model, answer string
	}{{"", "Answer: 1"}, {"any/model", ""}, {"m\"<&>\u2028", "Answer: 2 \\ \"é\"\n"}} {
		req := &parsedRequest{model: tc.model, texts: []string{"S", "Q"}, images: 3}
		got := srv.reply(7, req, tc.answer)
		var v map[string]any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatal(err)
		}
		u := EstimateUsage(req.texts, req.images, tc.answer)
		model := tc.model
		if model == "" {
			model = "baseline-first"
		}
		want, err := json.Marshal(map[string]any{
			"id":      "chatcmpl-baseline-7",
			"object":  "chat.completion",
			"created": int64(v["created"].(float64)),
			"model":   model,
			"choices": []any{map[string]any{
				"index":         0,
				"message":       map[string]any{"role": "assistant", "content": tc.answer},
				"finish_reason": "stop",
			}},
			"usage": map[string]any{"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Total},
		})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("reply\n%s\nwant\n%s", got, want)
		}
	}
}

// A request still waiting out its latency when the server stops gets a
// 503, not an empty 200.
func TestStopDuringLatency(t *testing.T) {
	t.Parallel()
	srv, err := NewServer(ServerConfig{Policy: runmodel.PolicyRandom, Latency: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	body := `{"messages":[{"role":"user","content":[{"type":"text","text":"Q\n\nOptions:\n(1) a\n(2) b"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`
	time.AfterFunc(200*time.Millisecond, srv.Close)
	start := time.Now()
	resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "shutting down") {
		t.Errorf("stopped during the latency: %d %s, want 503", resp.StatusCode, b)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the reply waited %v after the stop", d)
	}
}
