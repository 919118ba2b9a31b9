package webapp

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Sign-in throttling. Tokens are 256-bit, so guessing is hopeless, but a
// client that keeps sending wrong tokens should cost neither CPU nor log
// lines. Only wrong tokens count: each client address may send
// signInBurst wrong tokens in a row, then one per signInEvery; while it
// waits, its attempts are answered 429 without looking at the token. A
// correct token never uses up a try, so any number of readers may sign
// in from one address (a classroom behind one router) at once: an attempt
// holds a try while its token is checked and gives it back when the token
// was right, and an attempt that finds every try held by attempts still
// being checked waits for them rather than being refused. Other addresses
// are not affected, and a correct sign-in forgets the address's earlier
// wrong tokens. Refused sign-ins are logged once when a quiet period
// ends, then as one summary line per signInLogEvery.
const (
	signInBurst    = 5
	signInEvery    = 3 * time.Second
	signInLogEvery = time.Minute
	signInClients  = 4096 // addresses remembered; beyond, the least throttled go
)

type throttleClient struct {
	lim      *rate.Limiter
	last     time.Time
	inflight int // attempts holding a try while their token is checked
}

type signInThrottle struct {
	mu sync.Mutex
	// settled is closed, and replaced, when an attempt gives back or
	// spends its try: an attempt waiting for one selects on it and on its
	// request's context, so a client that goes away stops waiting.
	settled chan struct{}
	onWait  func() // tests: called (t.mu held) before an attempt waits
	clients map[string]*throttleClient
	burst   int
	every   time.Duration
	max     int
	now     func() time.Time

	logf      func(format string, args ...any)
	window    time.Duration
	open      bool           // a summary window is running
	timer     *time.Timer    // ends the window; nil in tests that flush by hand
	wrong     map[string]int // wrong tokens per client in the window (at most max clients)
	nWrong    int            // all wrong tokens in the window
	throttled int            // attempts answered 429 in the window
}

func newSignInThrottle(logf func(string, ...any)) *signInThrottle {
	t := &signInThrottle{clients: map[string]*throttleClient{}, burst: signInBurst, every: signInEvery,
		max: signInClients, now: time.Now, logf: logf, window: signInLogEvery, wrong: map[string]int{},
		settled: make(chan struct{})}
	return t
}

// clientKey names the client of a request: its address, an IPv6 address
// by its /64 (one host usually owns the whole prefix). A request from a
// loopback address with X-Forwarded-For comes from a local TLS proxy: the
// client is then the last address of that header, the one the proxy saw.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if xff := r.Header.Values("X-Forwarded-For"); ip.IsLoopback() && len(xff) > 0 {
		parts := strings.Split(xff[len(xff)-1], ",")
		if fwd, err := netip.ParseAddr(strings.TrimSpace(parts[len(parts)-1])); err == nil {
			ip = fwd
		}
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// attempt is one sign-in attempt that holds a try of its client.
type attempt struct {
	c *throttleClient
	r *rate.Reservation
}

// allow reports whether the client may try a token now, and otherwise how
// long it has to wait. An allowed attempt holds one of the client's tries
// until done says whether its token was right, so concurrent wrong tokens
// cannot overdraw them; when every try is held by attempts still being
// checked, allow waits for them to settle, or for ctx (the request's) to
// end: then it returns ctx's error.
func (t *signInThrottle) allow(ctx context.Context, client string) (*attempt, time.Duration, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		now := t.now()
		c := t.clients[client]
		if c == nil {
			if len(t.clients) >= t.max {
				t.evict(now)
			}
			c = &throttleClient{lim: rate.NewLimiter(rate.Every(t.every), t.burst)}
			t.clients[client] = c
		}
		c.last = now
		if c.lim.TokensAt(now) >= 1 {
			c.inflight++
			return &attempt{c: c, r: c.lim.ReserveN(now, 1)}, 0, nil
		}
		if c.inflight == 0 {
			t.throttled++
			t.startWindow()
			return nil, time.Duration((1 - c.lim.TokensAt(now)) * float64(t.every)), nil
		}
		if t.onWait != nil {
			t.onWait()
		}
		settled := t.settled
		t.mu.Unlock()
		select {
		case <-settled:
		case <-ctx.Done():
		}
		t.mu.Lock()
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
	}
}

// verdict is how an attempt ended.
type verdict int

const (
	tokenWrong   verdict = iota // no account has this token
	tokenRight                  // signed in
	tokenUnknown                // the store failed: not the client's doing
)

// done settles an attempt: a wrong token keeps its try spent (and is
// booked for the log), a right one gives it back and forgets the client's
// earlier wrong tokens, an unknown one gives it back.
func (t *signInThrottle) done(client string, a *attempt, v verdict) {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer func() { close(t.settled); t.settled = make(chan struct{}) }()
	a.c.inflight--
	switch v {
	case tokenRight:
		a.c.lim = rate.NewLimiter(rate.Every(t.every), t.burst)
		return
	case tokenUnknown:
		a.r.CancelAt(t.now())
		return
	}
	if !t.open {
		t.logf("sign-in refused from %s", client)
		t.startWindow()
		return
	}
	t.nWrong++
	if _, ok := t.wrong[client]; ok || len(t.wrong) < t.max {
		t.wrong[client]++
	}
}

// evict drops the clients whose allowance has refilled, and when none
// has, the least throttled one (the oldest among equals), so a busy
// guesser is the last to be forgotten.
func (t *signInThrottle) evict(now time.Time) {
	victim, best := "", math.Inf(-1)
	var bestLast time.Time
	for k, c := range t.clients {
		if c.inflight > 0 {
			continue // its attempts settle on it
		}
		tok := c.lim.TokensAt(now)
		if tok >= float64(t.burst) {
			delete(t.clients, k)
			continue
		}
		if tok > best || tok == best && c.last.Before(bestLast) {
			victim, best, bestLast = k, tok, c.last
		}
	}
	if len(t.clients) >= t.max && victim != "" {
		delete(t.clients, victim)
	}
}

// startWindow opens a summary window unless one is open (t.mu held).
func (t *signInThrottle) startWindow() {
	if t.open {
		return
	}
	t.open = true
	if t.window > 0 {
		t.timer = time.AfterFunc(t.window, t.flush)
	}
}

// flush ends a summary window: one line for what it counted, and a new
// window if it counted anything, else quiet again.
func (t *signInThrottle) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timer = nil
	if t.nWrong == 0 && t.throttled == 0 {
		t.open = false
		return
	}
	t.logf("sign-in refused: %d wrong token(s) and %d throttled attempt(s) in the last %s from %s",
		t.nWrong, t.throttled, t.window, topClients(t.wrong, len(t.wrong) >= t.max))
	t.wrong, t.nWrong, t.throttled = map[string]int{}, 0, 0
	t.open = false
	t.startWindow()
}

// topClients lists the three clients with the most wrong tokens; full
// says the table stopped taking new clients.
func topClients(wrong map[string]int, full bool) string {
	if len(wrong) == 0 {
		return "clients already throttled"
	}
	keys := make([]string, 0, len(wrong))
	for k := range wrong {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if wrong[keys[i]] != wrong[keys[j]] {
			return wrong[keys[i]] > wrong[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys[:min(3, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, wrong[k]))
	}
	more := ""
	if full {
		more = "at least "
	}
	s := fmt.Sprintf("%s%d client(s): %s", more, len(keys), strings.Join(parts, ", "))
	if len(keys) > 3 {
		s += ", …"
	}
	return s
}
