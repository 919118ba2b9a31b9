package provider

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/runmodel"
)

const geminiOK = `{"candidates":[{"content":{"role":"model","parts":[{"text":"weighing options","thought":true},{"text":"<b>Answer: 2</b>"}]},"finishReason":"STOP"}],
"usageMetadata":{"promptTokenCount":900,"cachedContentTokenCount":512,"candidatesTokenCount":12,"thoughtsTokenCount":88,"totalTokenCount":1000}}`

func geminiClientFor(t *testing.T, url string, cfg Config) Client {
	t.Helper()
	cfg.Backend = runmodel.BackendGemini
	cfg.Endpoint = url
	if cfg.Getenv == nil {
		cfg.Getenv = env(map[string]string{"GEMINI_API_KEY": "AIza-gemini-secret-0123456789"})
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGeminiRequestAndReply(t *testing.T) {
	srv, cap := fakeServer(t, reply(200, geminiOK))
	c := geminiClientFor(t, srv.URL, Config{})
	req := conversation(mustSampling(t, runmodel.BackendGemini))
	req.Model = "gemini-3.1-pro-preview"
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	path, _, hdr, body := cap.get()
	if !strings.HasSuffix(path, "/models/gemini-3.1-pro-preview:generateContent") {
		t.Errorf("path %q", path)
	}
	if hdr.Get("x-goog-api-key") != "AIza-gemini-secret-0123456789" {
		t.Errorf("api key header %q", hdr.Get("x-goog-api-key"))
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	text := func(s string) map[string]any { return map[string]any{"text": s} }
	img := func(raw string) map[string]any {
		return map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString([]byte(raw))}}
	}
	want := map[string]any{
		"contents": []any{
			map[string]any{"role": "user", "parts": []any{text("Q1\n\nOptions:\n(1) Yes\n(2) No"), img("PNG-A"), img("PNG-B")}},
			map[string]any{"role": "model", "parts": []any{text("Answer: 1")}},
			map[string]any{"role": "user", "parts": []any{text("Q2"), img("PNG-C")}},
			map[string]any{"role": "model", "parts": []any{text("Answer: 2")}},
			map[string]any{"role": "user", "parts": []any{text("Q3")}},
		},
		"systemInstruction": map[string]any{"role": "user", "parts": []any{text("SYS")}},
		"generationConfig": map[string]any{"temperature": 1.0, "maxOutputTokens": 8192.0,
			"thinkingConfig": map[string]any{"thinkingLevel": "MEDIUM"}},
	}
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.MarshalIndent(got, "", " ")
		t.Errorf("request body:\n%s", gb)
	}
	wantResp := &Response{Text: "<b>Answer: 2</b>", Reasoning: "weighing options", FinishReason: "stop",
		Usage: &runmodel.Usage{Input: 900, CachedInput: 512, Output: 100, Thinking: 88, Total: 1000}}
	if !reflect.DeepEqual(resp, wantResp) {
		t.Errorf("response %+v usage %+v", resp, resp.Usage)
	}
}

func TestGeminiJPEG(t *testing.T) {
	srv, cap := fakeServer(t, reply(200, geminiOK))
	c := geminiClientFor(t, srv.URL, Config{GeminiImageFormat: "jpeg"})
	m := image.NewGray(image.Rect(0, 0, 16, 16))
	for i := range m.Pix {
		m.Pix[i] = uint8(i)
	}
	var buf bytes.Buffer
	png.Encode(&buf, m)
	im := NewImage(buf.Bytes())
	req := &Request{Model: "g", Messages: []Message{{Role: RoleUser, Text: "Q", Images: []*Image{im}}}}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	_, _, _, body := cap.get()
	if !strings.Contains(string(body), `"mimeType":"image/jpeg"`) || strings.Contains(string(body), "image/png") {
		t.Errorf("body does not carry a JPEG: %.300s", body)
	}
	j1, _ := im.JPEG()
	j2, _ := im.JPEG()
	if &j1[0] != &j2[0] || !bytes.HasPrefix(j1, []byte{0xFF, 0xD8}) {
		t.Error("JPEG not computed once, or not a JPEG")
	}
	// an image that is not a PNG fails the call as a client error
	bad := &Request{Model: "g", Messages: []Message{{Role: RoleUser, Text: "Q", Images: []*Image{NewImage([]byte("nope"))}}}}
	var ce *CallError
	if _, err := c.Complete(context.Background(), bad); !errors.As(err, &ce) || ce.Retryable() {
		t.Errorf("bad image: %v", err)
	}
}

func TestGeminiReplies(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		hdr    []string
		want   *Response
		kind   ErrorKind
		after  time.Duration
	}{
		{"max tokens, all thinking", 200, `{"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":10,"thoughtsTokenCount":8192,"totalTokenCount":8202}}`, nil,
			&Response{FinishReason: "length", Usage: &runmodel.Usage{Input: 10, Output: 8192, Thinking: 8192, Total: 8202}}, 0, 0},
		{"safety", 200, `{"candidates":[{"finishReason":"SAFETY"}]}`, nil, &Response{FinishReason: "content_filter"}, 0, 0},
		{"blocked prompt", 200, `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}`, nil, &Response{FinishReason: "content_filter"}, 0, 0},
		{"429", 429, `{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}`, []string{"Retry-After", "12"}, nil, KindRateLimited, 12 * time.Second},
		{"503", 503, `{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`, nil, nil, KindServer, 0},
		{"400", 400, `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`, nil, nil, KindClient, 0},
		{"malformed", 200, `{"candidates":[{"con`, nil, nil, KindMalformed, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := fakeServer(t, reply(tc.status, tc.body, tc.hdr...))
			c := geminiClientFor(t, srv.URL, Config{})
			resp, err := c.Complete(context.Background(), conversation(mustSampling(t, runmodel.BackendGemini)))
			if tc.want != nil {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(resp, tc.want) {
					t.Errorf("got %+v (usage %+v), want %+v", resp, resp.Usage, tc.want)
				}
				return
			}
			var ce *CallError
			if !errors.As(err, &ce) || ce.Kind != tc.kind || ce.RetryAfter != tc.after {
				t.Errorf("got %v (%#v), want kind %v after %v", err, ce, tc.kind, tc.after)
			}
		})
	}
}

func TestGeminiTimeoutAndSecrets(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	srv, _ := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	c := geminiClientFor(t, srv.URL, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var ce *CallError
	if _, err := c.Complete(ctx, conversation(runmodel.Sampling{})); !errors.As(err, &ce) || ce.Kind != KindTimeout {
		t.Errorf("want timeout, got %v", err)
	}

	const key = "AIza-SECRET-gemini-key-42424242"
	echo, _ := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		msg := "key " + r.Header.Get("x-goog-api-key") + " url " + r.URL.String()
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 403, "message": msg, "status": "PERMISSION_DENIED"}})
		w.WriteHeader(403)
		w.Write(b)
	})
	c2 := geminiClientFor(t, echo.URL, Config{Getenv: env(map[string]string{"GOOGLE_API_KEY": key})})
	_, err := c2.Complete(context.Background(), conversation(runmodel.Sampling{}))
	if err == nil || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("error leaks the key or is nil: %v", err)
	}
}
