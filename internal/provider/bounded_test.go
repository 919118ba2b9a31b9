package provider

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// endless streams a body far over the test's cap (64 MiB of one JSON
// string, as fast as the client reads, until the client goes away; bounded
// so that a client without a cap fails the test instead of the machine).
func endless(status int, contentLength int64) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if contentLength > 0 {
			w.Header().Set("Content-Length", strconv.FormatInt(contentLength, 10))
		}
		w.WriteHeader(status)
		w.Write([]byte(`{"choices":[{"message":{"content":"`))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for i := 0; i < 1024 && r.Context().Err() == nil; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
}

// drip sends a valid-looking start, then one byte now and then, never
// reaching the cap: only the attempt's deadline can end the read.
func drip(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	w.Write([]byte(`{"choices":[{"message":{"content":"`))
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
			w.Write([]byte("a"))
			w.(http.Flusher).Flush()
		}
	}
}

func newTestClient(t *testing.T, backend, url string, max int64) Client {
	t.Helper()
	cfg := Config{Backend: backend, Endpoint: url + "/v1", MaxReplyBytes: max,
		Getenv: env(map[string]string{"GEMINI_API_KEY": "AIza-gemini-secret-0123456789"})}
	if backend == BackendGemini {
		cfg.Endpoint = url
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReplyTooLarge: an endless body is cut off at the cap with a
// non-retryable "reply larger than N bytes", for both SDKs, for 2xx and
// error statuses, with or without a (lying) Content-Length; a body that
// trickles is cut off by the attempt's deadline.
func TestReplyTooLarge(t *testing.T) {
	const max = 1 << 20
	for _, backend := range []string{BackendVLLM, BackendGemini} {
		for _, tc := range []struct {
			name    string
			handler func(http.ResponseWriter, *http.Request)
		}{
			{"endless 200", endless(200, 0)},
			{"endless 500", endless(500, 0)},
			{"declared 2 GB", endless(200, 2<<30)},
		} {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				srv, _ := fakeServer(t, tc.handler)
				c := newTestClient(t, backend, srv.URL, max)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := c.Complete(ctx, conversation(Sampling{}))
				var ce *CallError
				if !errors.As(err, &ce) || ce.Kind != KindTooLarge || ce.Retryable() {
					t.Fatalf("want a non-retryable too_large error, got %v", err)
				}
				if want := "reply larger than 1048576 bytes"; !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			})
		}
		t.Run(backend+"/drip", func(t *testing.T) {
			srv, _ := fakeServer(t, drip)
			c := newTestClient(t, backend, srv.URL, max)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := c.Complete(ctx, conversation(Sampling{}))
			var ce *CallError
			if !errors.As(err, &ce) || ce.Kind != KindTimeout {
				t.Fatalf("want a timeout, got %v", err)
			}
		})
	}
	// Exactly the cap is still accepted.
	body := `{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`
	srv, _ := fakeServer(t, reply(200, body))
	c := newTestClient(t, BackendVLLM, srv.URL, int64(len(body)))
	if r, err := c.Complete(context.Background(), conversation(Sampling{})); err != nil || r.Text != "ok" {
		t.Errorf("a reply of exactly the cap: %v, %v", r, err)
	}
}

// TestKeyRedactedFromReplies: a server that echoes the key into a
// successful reply (text and reasoning) or an error gets [redacted] into
// our results instead, and every replacement is counted.
func TestKeyRedactedFromReplies(t *testing.T) {
	const key = "sk-echoed-KEY-0123456789abcdef"
	openaiBody := `{"choices":[{"message":{"content":"my key is ` + key + `, again ` + key + `","reasoning_content":"saw ` + key + `"},"finish_reason":"stop"}]}`
	geminiBody := `{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking of ` + key + `","thought":true},{"text":"Answer: ` + key + `"}]},"finishReason":"STOP"}]}`
	for _, tc := range []struct {
		backend, body string
		text, reason  string
	}{
		{BackendVLLM, openaiBody, "my key is [redacted], again [redacted]", "saw [redacted]"},
		{BackendGemini, geminiBody, "Answer: [redacted]", "thinking of [redacted]"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			srv, _ := fakeServer(t, reply(200, tc.body))
			cfg := Config{Backend: tc.backend, Endpoint: srv.URL + "/v1",
				Getenv: env(map[string]string{"VLLM_API_KEY": key, "GEMINI_API_KEY": key})}
			if tc.backend == BackendGemini {
				cfg.Endpoint = srv.URL
			}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.Complete(context.Background(), conversation(Sampling{}))
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != tc.text || r.Reasoning != tc.reason {
				t.Errorf("text %q reasoning %q, want %q %q", r.Text, r.Reasoning, tc.text, tc.reason)
			}
			if n := c.(Redactor).Redactions(); n != 3 && tc.backend == BackendVLLM || n != 2 && tc.backend == BackendGemini {
				t.Errorf("Redactions() = %d", n)
			}
			// An error reply echoing the key counts too.
			srv2, _ := fakeServer(t, reply(400, `{"error":{"message":"bad key `+key+`","code":400,"status":"INVALID_ARGUMENT"}}`))
			cfg.Endpoint = strings.Replace(cfg.Endpoint, srv.URL, srv2.URL, 1)
			c2, _ := New(cfg)
			_, err = c2.Complete(context.Background(), conversation(Sampling{}))
			if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[redacted]") || c2.(Redactor).Redactions() != 1 {
				t.Errorf("error %v, %d redactions", err, c2.(Redactor).Redactions())
			}
		})
	}
}
