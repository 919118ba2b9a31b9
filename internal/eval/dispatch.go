package eval

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/chexpercept/chexpercept/internal/provider"
)

// endpoint is one model server. All turns of a case go to the same
// endpoint (its prefix and image caches are reused); its call concurrency
// adapts to 429s (halve on a rate limit, grow back by one per window of
// successes), and repeated server/network failures take it out of
// rotation for a cool-down so that its cases move to the others.
type endpoint struct {
	name    string // scrubbed URL, for messages
	cacheID string // the endpoint as the response-cache key has it (respcache.Endpoint)
	client  provider.Client

	mu        sync.Mutex
	limit     float64 // current call-concurrency limit (AIMD)
	maxLimit  float64
	inflight  int // calls in flight
	cases     int // cases assigned
	waiters   []chan struct{}
	failures  int       // consecutive server/network/timeout failures
	downUntil time.Time // out of rotation until then
	lastCut   time.Time // last multiplicative decrease
	cuts      int       // 429-driven decreases (stats)

	// waiting, when set (tests), is called each time acquire finds no
	// free slot and is about to wait for a release.
	waiting func()
}

func newEndpoint(name, cacheID string, c provider.Client, max int) *endpoint {
	return &endpoint{name: name, cacheID: cacheID, client: c, limit: float64(max), maxLimit: float64(max)}
}

// acquire waits for a call slot.
func (e *endpoint) acquire(ctx context.Context) error {
	for {
		e.mu.Lock()
		if float64(e.inflight) < math.Max(1, math.Floor(e.limit)) {
			e.inflight++
			e.mu.Unlock()
			return nil
		}
		ch := make(chan struct{})
		e.waiters = append(e.waiters, ch)
		e.mu.Unlock()
		if e.waiting != nil {
			e.waiting()
		}
		select {
		case <-ch:
		case <-ctx.Done():
			e.mu.Lock()
			for i, w := range e.waiters {
				if w == ch {
					e.waiters = append(e.waiters[:i], e.waiters[i+1:]...)
					break
				}
			}
			e.mu.Unlock()
			return ctx.Err()
		}
	}
}

// release frees a slot and adapts the limit to the call's outcome.
func (e *endpoint) release(outcome error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inflight--
	var ce *provider.CallError
	switch {
	case outcome == nil:
		e.failures = 0
		if e.limit < e.maxLimit {
			e.limit = math.Min(e.maxLimit, e.limit+1/math.Max(1, e.limit))
		}
	case errors.As(outcome, &ce) && ce.Kind == provider.KindRateLimited:
		// One cut per second at most: a burst of 429s from calls that
		// were all sent before the first came back is one signal.
		if now := time.Now(); now.Sub(e.lastCut) > time.Second {
			e.limit = math.Max(1, e.limit/2)
			e.lastCut = now
			e.cuts++
		}
	case errors.As(outcome, &ce) && (ce.Kind == provider.KindServer || ce.Kind == provider.KindNetwork || ce.Kind == provider.KindTimeout):
		e.failures++
		if e.failures >= 3 {
			cool := time.Duration(min(60, 2<<min(e.failures-3, 5))) * time.Second
			e.downUntil = time.Now().Add(cool)
		}
	}
	// wake everyone: the limit may have grown, and a waiter that finds no
	// slot simply queues again
	for _, w := range e.waiters {
		close(w)
	}
	e.waiters = nil
}

func (e *endpoint) healthy(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !now.Before(e.downUntil)
}

// pool assigns cases to endpoints.
type pool struct {
	mu  sync.Mutex
	eps []*endpoint
}

// assign picks the endpoint for a new case: among healthy endpoints
// (all, if none is healthy) the least loaded by assigned cases per unit
// of limit, ties broken by a hash of the key so that equal loads spread.
func (p *pool) assign(key string, avoid *endpoint) *endpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	h := fnv.New32a()
	h.Write([]byte(key))
	start := int(h.Sum32() % uint32(len(p.eps)))
	var best *endpoint
	bestLoad := math.Inf(1)
	for pass := 0; pass < 2 && best == nil; pass++ {
		for k := range p.eps {
			e := p.eps[(start+k)%len(p.eps)]
			if pass == 0 && (e == avoid || !e.healthy(now)) {
				continue
			}
			e.mu.Lock()
			load := float64(e.cases) / math.Max(1, e.limit)
			e.mu.Unlock()
			if load < bestLoad {
				best, bestLoad = e, load
			}
		}
	}
	best.mu.Lock()
	best.cases++
	best.mu.Unlock()
	return best
}

func (p *pool) unassign(e *endpoint) {
	e.mu.Lock()
	e.cases--
	e.mu.Unlock()
}

// retryPolicy is the per-call retry schedule.
type retryPolicy struct {
	maxRetries int
	timeout    time.Duration
	base       time.Duration // first backoff
	cap        time.Duration // longest backoff (Retry-After may exceed it)
}

// MaxRetryAfter caps the Retry-After a server may ask for: a longer one
// is honoured only up to MaxRetryAfter or the attempt timeout, whichever
// is smaller, and the retry after it counts against --max-retries like
// any other. A server asking for days (Retry-After: 999999999) therefore
// costs at most max-retries × that cap before the call fails.
const MaxRetryAfter = 60 * time.Second

// backoff is the wait before retry number n (1-based): exponential with
// full jitter in [d/2, d], at least the server's Retry-After as capped by
// honoured.
func (rp retryPolicy) backoff(n int, retryAfter time.Duration) time.Duration {
	d := rp.base << min(n-1, 20)
	if d > rp.cap || d <= 0 {
		d = rp.cap
	}
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	return max(d, rp.honoured(retryAfter))
}

// honoured is the part of a server's Retry-After that is waited:
// at most MaxRetryAfter and at most the attempt timeout.
func (rp retryPolicy) honoured(retryAfter time.Duration) time.Duration {
	limit := MaxRetryAfter
	if rp.timeout > 0 {
		limit = min(limit, rp.timeout)
	}
	return min(max(retryAfter, 0), limit)
}

// limiters caps request and token rates across the run.
type limiters struct {
	rpm *rate.Limiter
	tpm *rate.Limiter
}

func newLimiters(rpm, tpm int) *limiters {
	l := &limiters{}
	if rpm > 0 {
		l.rpm = rate.NewLimiter(rate.Limit(float64(rpm)/60), 1)
	}
	if tpm > 0 {
		// a tenth of a minute's tokens as burst: a single large request
		// (clamped to it) can always go, and the per-minute quota holds
		l.tpm = rate.NewLimiter(rate.Limit(float64(tpm)/60), max(1, tpm/10))
	}
	return l
}

// A ctx that has ended does not stop a call that needs no wait: a record
// in flight when the run is stopped may still make a call the limits
// allow now, and is dropped only when it would have to wait.
func (l *limiters) wait(ctx context.Context, tokens int) error {
	if l.rpm != nil {
		if err := waitN(ctx, l.rpm, 1); err != nil {
			return err
		}
	}
	if l.tpm != nil {
		if err := waitN(ctx, l.tpm, min(max(tokens, 1), l.tpm.Burst())); err != nil {
			return err
		}
	}
	return nil
}

func waitN(ctx context.Context, lim *rate.Limiter, n int) error {
	err := lim.WaitN(ctx, n)
	if err != nil && ctx.Err() != nil && lim.AllowN(time.Now(), n) {
		return nil
	}
	return err
}

// charge books tokens that were used beyond the estimate (the reply).
func (l *limiters) charge(tokens int) {
	if l.tpm != nil && tokens > 0 {
		l.tpm.ReserveN(time.Now(), min(tokens, l.tpm.Burst()))
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
