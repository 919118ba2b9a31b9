package eval

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/provider"
)

func TestBackoff(t *testing.T) {
	rp := retryPolicy{base: 100 * time.Millisecond, cap: time.Second}
	for n := 1; n <= 8; n++ {
		d := min(rp.base<<(n-1), rp.cap)
		for k := 0; k < 50; k++ {
			got := rp.backoff(n, 0)
			if got < d/2 || got > d {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", n, got, d/2, d)
			}
		}
	}
	if got := rp.backoff(1, 3*time.Second); got != 3*time.Second {
		t.Errorf("Retry-After 3s gave %v", got)
	}
}

func TestAdaptiveConcurrency(t *testing.T) {
	e := newEndpoint("x", "x", nil, 16)
	ctx := context.Background()
	rl := &provider.CallError{Kind: provider.KindRateLimited, Status: 429}
	if err := e.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	e.release(rl)
	if e.limit != 8 {
		t.Fatalf("limit after a 429 = %v, want 8", e.limit)
	}
	e.acquire(ctx)
	e.release(rl) // within a second: one signal, no second cut
	if e.limit != 8 {
		t.Fatalf("limit after a burst of 429s = %v, want 8", e.limit)
	}
	for i := 0; i < 200; i++ {
		e.acquire(ctx)
		e.release(nil)
	}
	if e.limit != 16 {
		t.Errorf("limit did not grow back to 16: %v", e.limit)
	}
	// slots: with limit 2, a third acquire waits until a release (or
	// until its context ends). The waiting hook tells when it waits.
	e.limit = 2
	e.acquire(ctx)
	e.acquire(ctx)
	waiting := make(chan struct{}, 1)
	e.waiting = func() { waiting <- struct{}{} }
	cancelled, cancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() { got <- e.acquire(cancelled) }()
	select {
	case <-waiting:
	case err := <-got:
		t.Fatalf("third acquire at limit 2 returned %v without waiting", err)
	}
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("third acquire at limit 2, context cancelled: %v", err)
	}
	if len(e.waiters) != 0 {
		t.Errorf("a cancelled acquire left %d waiters", len(e.waiters))
	}
	go func() { got <- e.acquire(ctx) }()
	select {
	case <-waiting:
	case err := <-got:
		t.Fatalf("third acquire at limit 2 returned %v before a release", err)
	}
	e.release(nil)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if e.inflight != 2 {
		t.Errorf("in flight after the release and the acquire: %d, want 2", e.inflight)
	}
}

func TestEndpointGoesDownAfterFailures(t *testing.T) {
	e := newEndpoint("x", "x", nil, 4)
	p := &pool{eps: []*endpoint{e, newEndpoint("y", "y", nil, 4)}}
	for i := 0; i < 3; i++ {
		e.acquire(context.Background())
		e.release(&provider.CallError{Kind: provider.KindServer, Status: 500})
	}
	if e.healthy(time.Now()) {
		t.Fatal("endpoint still healthy after 3 server errors")
	}
	for i := 0; i < 5; i++ {
		if got := p.assign("k"+string(rune('a'+i)), nil); got == e {
			t.Fatal("a case was assigned to the down endpoint")
		}
	}
}

func TestRPMCap(t *testing.T) {
	t.Parallel()
	o := baseOptions(sampleBench, t.TempDir(), model(t, "baseline", "first"))
	o.RPM = 1200 // 20 calls per second
	start := time.Now()
	s := run(t, o)
	calls := s.Results.Counts.Calls
	if min := time.Duration(calls-1) * time.Second / 20; time.Since(start) < min {
		t.Errorf("%d calls in %v, faster than the 20/s cap", calls, time.Since(start))
	}
}

func TestProgressOutput(t *testing.T) {
	for _, tty := range []bool{false, true} {
		var log bytes.Buffer
		o := baseOptions(sampleBench, t.TempDir(), model(t, "baseline", "first"))
		o.Log, o.TTY, o.LogInterval = &log, tty, time.Nanosecond
		run(t, o)
		out := log.String()
		if !strings.Contains(out, "done: 7 ok, 0 error") || !strings.Contains(out, "calls/s") {
			t.Errorf("tty=%v: log lacks the summary line or rate:\n%s", tty, out)
		}
		// Images are verified just in time: no pass before the first call,
		// and the counts in the progress and at the end.
		if strings.Contains(out, "verifying ") || !regexp.MustCompile(`images: [0-9]+ verified by decoding \([0-9]+ decodes\), [0-9]+ remembered from earlier runs, 0 failed`).MatchString(out) ||
			!tty && !regexp.MustCompile(`progress: .*; images [0-9]+ verified, [0-9]+ remembered, 0 failed`).MatchString(out) {
			t.Errorf("tty=%v: log lacks the image-check progress (log lines without a terminal, a bar with one):\n%s", tty, out)
		}
	}
}
