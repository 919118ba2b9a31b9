package webapp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// throttledApp is an app whose sign-in throttle runs on a hand-moved
// clock and flushes its log summary only when told; it logs to log.
type throttledApp struct {
	srv   *App
	h     http.Handler
	tok   map[string]string
	clock time.Time
	log   bytes.Buffer
}

func newThrottledApp(t *testing.T) *throttledApp {
	t.Helper()
	b := newFakeBackend("r1", "r2")
	srv := newTestApp(b, func(w http.ResponseWriter, status int, msg string) {
		w.WriteHeader(status)
		io.WriteString(w, msg)
	})
	ta := &throttledApp{srv: srv, tok: b.tokens, clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	lg := log.New(&ta.log, "", 0)
	srv.Logf = lg.Printf
	srv.throttle.now = func() time.Time { return ta.clock }
	srv.throttle.window = 0 // no timer: the test flushes
	ta.h = srv.Handler(http.NotFoundHandler())
	return ta
}

// signIn posts a token from remote (with X-Forwarded-For when xff is set)
// and returns the response.
func (ta *throttledApp) signIn(remote, xff, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = remote
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	rec := httptest.NewRecorder()
	ta.h.ServeHTTP(rec, req)
	return rec
}

func TestSignInThrottle(t *testing.T) {
	const (
		a  = "192.0.2.1:40000"
		b  = "198.51.100.2:40000"
		lo = "127.0.0.1:50000"
	)
	type step struct {
		remote, xff string
		right       bool          // the reviewer's token, else a wrong one
		advance     time.Duration // clock moves before the attempt
		repeat      int           // the attempt is made 1+repeat times
		want        int
	}
	wrong5 := step{remote: a, repeat: 4, want: http.StatusUnauthorized}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"five wrong tokens, then 429 even for the right one", []step{
			wrong5,
			{remote: a, want: http.StatusTooManyRequests},
			{remote: a, right: true, want: http.StatusTooManyRequests},
		}},
		{"other clients sign in meanwhile", []step{
			wrong5,
			{remote: a, want: http.StatusTooManyRequests},
			{remote: b, right: true, want: http.StatusSeeOther},
			{remote: b, want: http.StatusUnauthorized},
		}},
		{"one more try per 3 s", []step{
			wrong5,
			{remote: a, advance: 2 * time.Second, want: http.StatusTooManyRequests},
			{remote: a, advance: time.Second, want: http.StatusUnauthorized},
			{remote: a, want: http.StatusTooManyRequests},
			{remote: a, advance: 3 * time.Second, right: true, want: http.StatusSeeOther},
		}},
		{"a correct sign-in forgets earlier failures", []step{
			{remote: a, repeat: 3, want: http.StatusUnauthorized},
			{remote: a, right: true, want: http.StatusSeeOther},
			wrong5,
			{remote: a, want: http.StatusTooManyRequests},
		}},
		{"an IPv6 /64 is one client", []step{
			{remote: "[2001:db8::1]:1", repeat: 4, want: http.StatusUnauthorized},
			{remote: "[2001:db8::ff]:2", want: http.StatusTooManyRequests},
			{remote: "[2001:db8:0:1::1]:3", right: true, want: http.StatusSeeOther},
		}},
		{"behind a local proxy the forwarded address counts", []step{
			{remote: lo, xff: "203.0.113.9", repeat: 4, want: http.StatusUnauthorized},
			{remote: lo, xff: "10.0.0.1, 203.0.113.9", want: http.StatusTooManyRequests},
			{remote: lo, xff: "203.0.113.10", right: true, want: http.StatusSeeOther},
		}},
		{"a remote client cannot pick its address by header", []step{
			{remote: a, xff: "203.0.113.1", repeat: 4, want: http.StatusUnauthorized},
			{remote: a, xff: "203.0.113.2", want: http.StatusTooManyRequests},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ta := newThrottledApp(t)
			for i, s := range tc.steps {
				ta.clock = ta.clock.Add(s.advance)
				tok := "wrong-token"
				if s.right {
					tok = ta.tok["r1"]
				}
				for range 1 + s.repeat {
					rec := ta.signIn(s.remote, s.xff, tok)
					if rec.Code != s.want {
						t.Fatalf("step %d (%s): status %d, want %d", i, s.remote, rec.Code, s.want)
					}
					if rec.Code == http.StatusTooManyRequests && (rec.Header().Get("Retry-After") == "" ||
						!strings.Contains(rec.Body.String(), "Too many wrong tokens from your address")) {
						t.Fatalf("step %d: 429 without Retry-After or message: %v %s", i, rec.Header(), rec.Body)
					}
				}
			}
		})
	}
}

// TestSignInThrottleLog: 100 wrong tokens from one address give one line
// at once and one summary when the window ends, not 100 lines.
func TestSignInThrottleLog(t *testing.T) {
	ta := newThrottledApp(t)
	for range 100 {
		ta.signIn("192.0.2.7:1", "", "wrong")
	}
	ta.signIn("198.51.100.3:1", "", "wrong")
	lines := func() []string { return strings.Split(strings.TrimSpace(ta.log.String()), "\n") }
	if got := lines(); len(got) != 1 || got[0] != "sign-in refused from 192.0.2.7" {
		t.Fatalf("log before the summary: %q", got)
	}
	ta.srv.throttle.flush()
	want := "sign-in refused: 5 wrong token(s) and 95 throttled attempt(s) in the last 0s from 2 client(s): 192.0.2.7 ×4, 198.51.100.3 ×1"
	if got := lines(); len(got) != 2 || got[1] != want {
		t.Fatalf("log after the summary: %q\nwant second line %q", got, want)
	}
	// A quiet window closes the summary; the next failure is logged at once.
	ta.srv.throttle.flush()
	ta.srv.throttle.flush()
	ta.clock = ta.clock.Add(time.Hour)
	ta.signIn("192.0.2.7:1", "", "wrong")
	if got := lines(); len(got) != 3 || got[2] != "sign-in refused from 192.0.2.7" {
		t.Fatalf("log after a quiet window: %q", got)
	}
	if strings.Contains(ta.log.String(), "wrong-token") || strings.Contains(ta.log.String(), "token=") {
		t.Error("a token reached the log")
	}
}

// TestSignInThrottleBounded: the table of addresses never exceeds its
// size, and a throttled address outlives addresses with one failure.
func TestSignInThrottleBounded(t *testing.T) {
	ta := newThrottledApp(t)
	ta.srv.throttle.max = 3
	for range 5 {
		ta.signIn("192.0.2.1:1", "", "wrong")
	}
	for i := range 50 {
		ta.signIn(fmt.Sprintf("198.51.100.%d:1", i), "", "wrong")
		if n := len(ta.srv.throttle.clients); n > 3 {
			t.Fatalf("%d addresses remembered, limit 3", n)
		}
		if n := len(ta.srv.throttle.wrong); n > 3 {
			t.Fatalf("%d addresses in the log summary, limit 3", n)
		}
	}
	if rec := ta.signIn("192.0.2.1:1", "", ta.tok["r1"]); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the throttled address was forgotten: %d", rec.Code)
	}
	ta.srv.throttle.flush()
	if !strings.Contains(ta.log.String(), "54 wrong token(s) and 1 throttled attempt(s) in the last 0s from at least 3 client(s)") {
		t.Errorf("summary lost failures: %s", ta.log.String())
	}
}

// TestSignInThrottleConcurrent hammers the sign-in from several addresses
// at once (run with -race): every attempt is accounted for in the log.
func TestSignInThrottleConcurrent(t *testing.T) {
	ta := newThrottledApp(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				ta.signIn(fmt.Sprintf("192.0.2.%d:1", g%3), "", "wrong")
			}
		}()
	}
	wg.Wait()
	ta.srv.throttle.flush()
	var first string
	var wrong, throttled int
	lines := strings.Split(strings.TrimSpace(ta.log.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("log: %q", lines)
	}
	first = lines[0]
	if _, err := fmt.Sscanf(lines[1], "sign-in refused: %d wrong token(s) and %d throttled", &wrong, &throttled); err != nil {
		t.Fatalf("summary %q: %v", lines[1], err)
	}
	if !strings.HasPrefix(first, "sign-in refused from 192.0.2.") || 1+wrong+throttled != 160 || 1+wrong != 3*signInBurst {
		t.Errorf("1 + %d wrong + %d throttled, want 160 attempts with %d wrong", wrong, throttled, 3*signInBurst)
	}
}

// gatedBackend holds every Authenticate until the gate opens, and tells
// arrived when one starts.
type gatedBackend struct {
	*fakeBackend
	arrived chan struct{}
	gate    chan struct{}
}

func (g gatedBackend) Authenticate(ctx context.Context, token string) (*Account, error) {
	g.arrived <- struct{}{}
	<-g.gate
	return g.fakeBackend.Authenticate(ctx, token)
}

// TestSignInManyFromOneAddress: readers signing in at once from one
// address (a classroom behind one router) are never refused, however
// many attempts are being checked at the same moment; wrong tokens among
// them still spend the address's tries.
func TestSignInManyFromOneAddress(t *testing.T) {
	for _, tc := range []struct {
		name         string
		right, wrong int
		want429      int
	}{
		{"60 right tokens", 60, 0, 0},
		{"right tokens with a few wrong ones", 40, signInBurst - 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fb := newFakeBackend("r1")
			n := tc.right + tc.wrong
			events := make(chan struct{}, 4*n)
			gb := gatedBackend{fakeBackend: fb, arrived: events, gate: make(chan struct{})}
			app := newTestApp(gb, func(w http.ResponseWriter, status int, msg string) { w.WriteHeader(status) })
			app.throttle.onWait = func() {
				select { // never blocks: it runs under the throttle's lock
				case events <- struct{}{}:
				default:
				}
			}
			h := app.Handler(http.NotFoundHandler())
			codes := make(chan int, n)
			for i := range n {
				tok := fb.tokens["r1"]
				if i < tc.wrong {
					tok = "wrong"
				}
				go func() {
					req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					req.RemoteAddr = "192.0.2.50:1234"
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code == http.StatusTooManyRequests {
						events <- struct{}{}
					}
					codes <- rec.Code
				}()
			}
			// Every attempt is now being checked, waiting for a try, or
			// refused; only then are the checks let through.
			for range n {
				<-events
			}
			close(gb.gate)
			count := map[int]int{}
			for range n {
				count[<-codes]++
			}
			if count[http.StatusTooManyRequests] != tc.want429 || count[http.StatusSeeOther] != tc.right || count[http.StatusUnauthorized] != tc.wrong {
				t.Errorf("statuses %v, want %d × 303, %d × 401, %d × 429", count, tc.right, tc.wrong, tc.want429)
			}
		})
	}
}

// TestSignInWaitEndsWithRequest: an attempt waiting for one of its
// address's tries, all held by attempts still being checked, stops
// waiting when its request's context ends (the client went away), and
// the tries held settle as before.
func TestSignInWaitEndsWithRequest(t *testing.T) {
	t.Parallel()
	th := newSignInThrottle(func(string, ...any) {})
	var held []*attempt
	for range signInBurst {
		a, _, err := th.allow(context.Background(), "192.0.2.7")
		if a == nil || err != nil {
			t.Fatalf("try %d refused: %v", len(held)+1, err)
		}
		held = append(held, a)
	}
	waiting := make(chan struct{})
	var once sync.Once
	th.onWait = func() { once.Do(func() { close(waiting) }) }
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() {
		_, _, err := th.allow(ctx, "192.0.2.7")
		res <- err
	}()
	<-waiting
	cancel()
	select {
	case err := <-res:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the waiting attempt returned %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting attempt did not stop when its request ended")
	}
	th.onWait = nil
	for _, a := range held {
		th.done("192.0.2.7", a, tokenRight)
	}
	if a, _, err := th.allow(context.Background(), "192.0.2.7"); a == nil || err != nil {
		t.Fatalf("after the tries settled: attempt %v, %v", a, err)
	}
}
