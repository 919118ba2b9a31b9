package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/runmodel"
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
	if backend == runmodel.BackendGemini {
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
	for _, backend := range []string{runmodel.BackendVLLM, runmodel.BackendGemini} {
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
				_, err := c.Complete(ctx, conversation(runmodel.Sampling{}))
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
			_, err := c.Complete(ctx, conversation(runmodel.Sampling{}))
			var ce *CallError
			if !errors.As(err, &ce) || ce.Kind != KindTimeout {
				t.Fatalf("want a timeout, got %v", err)
			}
		})
	}
	// Exactly the cap is still accepted.
	body := `{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`
	srv, _ := fakeServer(t, reply(200, body))
	c := newTestClient(t, runmodel.BackendVLLM, srv.URL, int64(len(body)))
	if r, err := c.Complete(context.Background(), conversation(runmodel.Sampling{})); err != nil || r.Text != "ok" {
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
		{runmodel.BackendVLLM, openaiBody, "my key is [redacted], again [redacted]", "saw [redacted]"},
		{runmodel.BackendGemini, geminiBody, "Answer: [redacted]", "thinking of [redacted]"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			srv, _ := fakeServer(t, reply(200, tc.body))
			cfg := Config{Backend: tc.backend, Endpoint: srv.URL + "/v1",
				Getenv: env(map[string]string{"VLLM_API_KEY": key, "GEMINI_API_KEY": key})}
			if tc.backend == runmodel.BackendGemini {
				cfg.Endpoint = srv.URL
			}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.Complete(context.Background(), conversation(runmodel.Sampling{}))
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != tc.text || r.Reasoning != tc.reason {
				t.Errorf("text %q reasoning %q, want %q %q", r.Text, r.Reasoning, tc.text, tc.reason)
			}
			if n := c.(Redactor).Redactions(); n != 3 && tc.backend == runmodel.BackendVLLM || n != 2 && tc.backend == runmodel.BackendGemini {
				t.Errorf("Redactions() = %d", n)
			}
			// An error reply echoing the key counts too.
			srv2, _ := fakeServer(t, reply(400, `{"error":{"message":"bad key `+key+`","code":400,"status":"INVALID_ARGUMENT"}}`))
			cfg.Endpoint = strings.Replace(cfg.Endpoint, srv.URL, srv2.URL, 1)
			c2, _ := New(cfg)
			_, err = c2.Complete(context.Background(), conversation(runmodel.Sampling{}))
			if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[redacted]") || c2.(Redactor).Redactions() != 1 {
				t.Errorf("error %v, %d redactions", err, c2.(Redactor).Redactions())
			}
		})
	}
}

// netCounter sits under the bounded transport and counts the bytes read
// from the network by bodies not yet closed, and the peak of that sum: the
// reply memory the budget is meant to bound, seen from outside it.
type netCounter struct {
	next       http.RoundTripper
	open, peak atomic.Int64
}

func (c *netCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if resp != nil && resp.Body != nil {
		resp.Body = &countedBody{rc: resp.Body, c: c}
	}
	return resp, err
}

type countedBody struct {
	rc   io.ReadCloser
	c    *netCounter
	read int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.read += int64(n)
	o := b.c.open.Add(int64(n))
	for pk := b.c.peak.Load(); o > pk && !b.c.peak.CompareAndSwap(pk, o); pk = b.c.peak.Load() {
	}
	return n, err
}

func (b *countedBody) Close() error {
	b.c.open.Add(-b.read)
	b.read = 0
	return b.rc.Close()
}

// budgetClient is a client whose replies are capped at max within budget,
// over a fresh transport counted by nc.
func budgetClient(t *testing.T, backend, url string, max int64, budget *replyBudget, nc *netCounter) Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	nc.next = tr
	cfg := Config{Backend: backend, Endpoint: url + "/v1", MaxReplyBytes: max, budget: budget,
		HTTPClient: &http.Client{Transport: nc},
		Getenv:     env(map[string]string{"GEMINI_API_KEY": "AIza-gemini-secret-0123456789"})}
	if backend == runmodel.BackendGemini {
		cfg.Endpoint = url
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReplyBudget: many calls sent endless bodies at once all end in
// too_large, while the reply bytes held (reserved in the budget, and read
// from the network by open bodies) never pass the budget plus each call's
// free allowance; a cap above the budget reads alone instead of
// deadlocking; every reservation is given back.
func TestReplyBudget(t *testing.T) {
	const (
		calls = 24
		free  = 64 << 10
		size  = 3 << 20
	)
	for _, backend := range []string{runmodel.BackendVLLM, runmodel.BackendGemini} {
		for _, tc := range []struct {
			name     string
			max      int64
			handler  func(http.ResponseWriter, *http.Request)
			admitted int64 // calls that needed a reservation
		}{
			{"endless, cap under budget", 1 << 20, endless(200, 0), calls},
			{"endless 500, cap under budget", 1 << 20, endless(500, 0), calls},
			{"endless, cap over budget", 4 << 20, endless(200, 0), calls},
			{"declared 2 GB", 1 << 20, endless(200, 2<<30), 0},
		} {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				srv, _ := fakeServer(t, tc.handler)
				b, nc := newReplyBudget(size, free), &netCounter{}
				c := budgetClient(t, backend, srv.URL, tc.max, b, nc)
				var wg sync.WaitGroup
				errs := make([]error, calls)
				for i := range calls {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
						defer cancel()
						_, errs[i] = c.Complete(ctx, conversation(runmodel.Sampling{}))
					})
				}
				wg.Wait()
				for i, err := range errs {
					var ce *CallError
					if !errors.As(err, &ce) || ce.Kind != KindTooLarge {
						t.Fatalf("call %d: want too_large, got %v", i, err)
					}
				}
				// Reserved: never more than the budget. Read: a reservation
				// covers up to the cap plus the one byte that shows it is
				// passed; a cap over the budget reads alone.
				bound := int64(size + calls*free + calls)
				if tc.max > size {
					bound = tc.max + 1 + calls*free
				}
				if p := b.peak.Load(); p > size {
					t.Errorf("peak reserved %d > budget %d", p, size)
				}
				if p := nc.peak.Load(); p > bound {
					t.Errorf("peak bytes read by open bodies %d > %d", p, bound)
				}
				if h, o := b.held.Load(), nc.open.Load(); h != 0 || o != 0 {
					t.Errorf("after the calls: %d bytes reserved, %d read by open bodies", h, o)
				}
				if a := b.admitted.Load(); a != tc.admitted {
					t.Errorf("%d reservations, want %d", a, tc.admitted)
				}
			})
		}
	}
}

// await returns the next value sent on ch; a budget that never sends
// fails after a generous bound instead of hanging the test.
func await(t *testing.T, what string, ch <-chan int64) int64 {
	t.Helper()
	select {
	case n := <-ch:
		return n
	case <-time.After(30 * time.Second):
		t.Fatalf("never: %s", what)
		return 0
	}
}

// TestReplyBudgetWait: while one reply holds the whole budget, an ordinary
// reply does not wait, a large one waits and gives up when its context is
// cancelled or its deadline passes, and once the budget is back the next
// large reply is read (to its cap) normally.
func TestReplyBudgetWait(t *testing.T) {
	const free, max = 64 << 10, 1 << 20
	b := newReplyBudget(max, free)
	waits, helds := make(chan int64, 8), make(chan int64, 8)
	b.onWait = func(n int64) { waits <- n }
	b.onHeld = func(n int64) { helds <- n }
	prefix := `{"choices":[{"message":{"content":"`
	suffix := `"},"finish_reason":"stop"}]}`
	gate := make(chan struct{})
	long := strings.Repeat("a", 2*free) // past the allowance: needs the budget
	stall, _ := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		io.WriteString(w, prefix+long[:free+1])
		w.(http.Flusher).Flush()
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, long[free+1:]+suffix)
	})
	open := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(open) // before the server's Close, which waits for the handler
	small, _ := fakeServer(t, reply(200, okReply))
	flood, _ := fakeServer(t, endless(200, 0))
	client := func(url string) Client { return budgetClient(t, runmodel.BackendVLLM, url, max, b, &netCounter{}) }

	holder := make(chan error, 1)
	go func() {
		r, err := client(stall.URL).Complete(context.Background(), conversation(runmodel.Sampling{}))
		if err == nil && r.Text != long {
			err = fmt.Errorf("reply of %d bytes, want %d", len(r.Text), len(long))
		}
		holder <- err
	}()
	await(t, "the first reply asks for the budget", waits)
	if n := await(t, "the first reply holds the budget", helds); n != max {
		t.Fatalf("the first reply holds %d bytes, want the whole budget (%d)", n, max)
	}

	if r, err := client(small.URL).Complete(context.Background(), conversation(runmodel.Sampling{})); err != nil || r.Text == "" {
		t.Fatalf("an ordinary reply while the budget is held: %v, %v", r, err)
	}
	select {
	case n := <-waits:
		t.Fatalf("an ordinary reply asked the budget for %d bytes", n)
	default:
	}

	ctx, cancel := context.WithCancel(context.Background())
	waiter := make(chan error, 1)
	go func() { _, err := client(flood.URL).Complete(ctx, conversation(runmodel.Sampling{})); waiter <- err }()
	await(t, "the second reply waits", waits)
	cancel()
	if err := <-waiter; !isKind(err, KindCanceled) {
		t.Errorf("a cancelled waiter: %v", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer dcancel()
	if _, err := client(flood.URL).Complete(dctx, conversation(runmodel.Sampling{})); !isKind(err, KindTimeout) {
		t.Errorf("a waiter past its deadline: %v", err)
	}

	open()
	if err := <-holder; err != nil {
		t.Fatalf("the holder: %v", err)
	}
	if _, err := client(flood.URL).Complete(context.Background(), conversation(runmodel.Sampling{})); !isKind(err, KindTooLarge) {
		t.Errorf("after the budget is back: %v", err)
	}
	if h, w := b.held.Load(), b.waiting.Load(); h != 0 || w != 0 {
		t.Errorf("at the end: %d bytes reserved, %d waiting", h, w)
	}
}

func isKind(err error, k ErrorKind) bool {
	var ce *CallError
	return errors.As(err, &ce) && ce.Kind == k
}

// TestReplyBodiesIntact: bodies around the allowance and the cap, with and
// without Content-Length, reach the decoder byte for byte; only those past
// the allowance take a reservation, and all give it back.
func TestReplyBodiesIntact(t *testing.T) {
	const free, max = 64 << 10, 1 << 20
	prefix := `{"choices":[{"message":{"content":"`
	suffix := `"},"finish_reason":"stop"}]}`
	for _, tc := range []struct {
		size     int // whole body
		admitted int64
	}{
		{len(prefix) + len(suffix) + 10, 0}, {free, 0}, {free + 1, 1}, {max - 1, 1}, {max, 1},
	} {
		for _, declared := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d bytes, content-length %v", tc.size, declared), func(t *testing.T) {
				text := strings.Repeat("b", tc.size-len(prefix)-len(suffix))
				srv, _ := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
					if declared {
						w.Header().Set("Content-Length", strconv.Itoa(tc.size))
					}
					w.WriteHeader(200)
					// Written in odd pieces so that reads straddle chunks.
					body := prefix + text + suffix
					for len(body) > 0 {
						n := min(len(body), 7777)
						io.WriteString(w, body[:n])
						w.(http.Flusher).Flush()
						body = body[n:]
					}
				})
				b := newReplyBudget(max, free)
				r, err := budgetClient(t, runmodel.BackendVLLM, srv.URL, max, b, &netCounter{}).Complete(context.Background(), conversation(runmodel.Sampling{}))
				if err != nil || r.Text != text {
					t.Fatalf("err %v, or the text is not the %d bytes sent", err, len(text))
				}
				a, h := b.admitted.Load(), b.held.Load()
				if tc.size == free && !declared && a == 1 {
					// Without a length, a body of exactly the allowance may
					// need a reservation to see its end (when the EOF comes
					// in a read of its own).
					a = 0
				}
				if a != tc.admitted || h != 0 {
					t.Errorf("%d reservations (want %d), %d bytes still reserved", a, tc.admitted, h)
				}
			})
		}
	}
}
