package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// DefaultMaxReplyBytes is the default cap on one HTTP reply body: a chat
// completion with long reasoning is well under a megabyte, so 32 MiB only
// stops a broken or hostile server.
const DefaultMaxReplyBytes = 32 << 20

// replyBudgetBytes is the process-wide budget of reply bytes for replies
// longer than freeReplyBytes. All calls of a concurrent run may be sent a
// huge reply at once: without a shared budget, 16 calls cut off at 32 MiB
// each made eval peak at 850 MB to 1 GB. Such a reply is read on only
// while its possible size (its Content-Length, else the cap) is reserved
// here, so one reply of the default cap is read at a time; honest replies
// are far smaller and never wait. A cap above the budget reserves the whole
// budget: that reply is read alone, up to its own cap.
const replyBudgetBytes = DefaultMaxReplyBytes

// freeReplyBytes is how much of each reply is read without touching the
// budget: ordinary replies (a few KB, long reasoning a few hundred) never
// wait for one another.
const freeReplyBytes = 256 << 10

// ReplyTooLargeError is what reading a reply body past the cap returns;
// the clients turn it into a non-retryable CallError of KindTooLarge.
type ReplyTooLargeError struct{ Limit int64 }

func (e *ReplyTooLargeError) Error() string {
	return fmt.Sprintf("reply larger than %d bytes", e.Limit)
}

// replyBudget is a weighted semaphore of reply bytes. A body takes its
// whole reservation at once and holds nothing while it waits, so two
// bodies can never wait for each other (reserving as bytes arrive would
// let every body of a flood hold a part and wait for the rest until its
// deadline). A reservation larger than the budget is cut to the budget:
// such a body reads alone, up to its own cap.
type replyBudget struct {
	sem  *semaphore.Weighted
	size int64
	free int64 // bytes of each body read without a reservation

	// counters read by tests
	held, peak, waiting, admitted atomic.Int64
	// tests: called as a reservation of n bytes starts waiting and once
	// it is held (set before the budget is used)
	onWait, onHeld func(n int64)
}

func newReplyBudget(size, free int64) *replyBudget {
	return &replyBudget{sem: semaphore.NewWeighted(size), size: size, free: free}
}

// processBudget is shared by every client of the process.
var processBudget = newReplyBudget(replyBudgetBytes, freeReplyBytes)

// acquire reserves n bytes (at most the whole budget), waiting until they
// are free or ctx ends; it returns the amount reserved.
func (b *replyBudget) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(n, b.size)
	b.waiting.Add(1)
	if b.onWait != nil {
		b.onWait(n)
	}
	err := b.sem.Acquire(ctx, n)
	b.waiting.Add(-1)
	if err != nil {
		return 0, err
	}
	b.admitted.Add(1)
	h := b.held.Add(n)
	for p := b.peak.Load(); h > p && !b.peak.CompareAndSwap(p, h); p = b.peak.Load() {
	}
	if b.onHeld != nil {
		b.onHeld(n)
	}
	return n, nil
}

func (b *replyBudget) release(n int64) {
	if n > 0 {
		b.held.Add(-n)
		b.sem.Release(n)
	}
}

// boundedTransport reads every reply body whole before handing it on, so
// that a body over the cap is refused before any SDK buffers it. The first
// freeReplyBytes are read freely; the rest only under a reservation of the
// body's possible size in the process budget (its Content-Length, else the
// cap), held until the body is closed. The read stops one byte past the
// cap and as soon as the request's context ends, so a server streaming an
// endless body costs no more than the budget and the attempt's deadline.
type boundedTransport struct {
	next   http.RoundTripper
	max    int64
	budget *replyBudget
}

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp == nil {
		return resp, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Never followed: the request (and the API key with it) would go
		// where the user did not name, and a followed POST may arrive as
		// a GET whose reply is no chat completion.
		if resp.Body != nil {
			_ = resp.Body.Close() // unread: the redirect is the error
		}
		return nil, &RedirectError{Status: resp.StatusCode, Location: scrubURL(resp.Header.Get("Location"))}
	}
	if resp.Body == nil {
		return resp, nil
	}
	body, err := t.read(r.Context(), resp.Body, resp.ContentLength)
	_ = resp.Body.Close() // read (or given up, err below); closed before the reservation goes back
	if err != nil {
		_ = body.Close() // gives the reservation back; it cannot fail
		return nil, err
	}
	resp.Body, resp.ContentLength = body, body.size
	return resp, nil
}

// Chunk sizes of a body of unknown length: small replies take one small
// allocation, large ones a few dozen, never more than the bytes read plus
// one chunk.
const (
	firstChunk = 8 << 10
	lastChunk  = 4 << 20
)

// read takes the whole body (see boundedTransport). The body it returns
// holds the reservation even on error: the caller closes it.
func (t boundedTransport) read(ctx context.Context, rc io.Reader, declared int64) (b *heldBody, err error) {
	b = &heldBody{budget: t.budget}
	if declared > t.max {
		return b, &ReplyTooLargeError{Limit: t.max}
	}
	defer func() {
		if err != nil {
			var tl *ReplyTooLargeError
			if !errors.As(err, &tl) && ctx.Err() != nil {
				err = ctx.Err() // a cut connection because the deadline passed
			}
		}
	}()
	free := t.budget.free
	for next := int64(firstChunk); ; next = min(2*next, lastChunk) {
		if err := ctx.Err(); err != nil {
			return b, err
		}
		known := declared >= 0 && b.size >= declared // only the EOF is left to see
		if b.reserved == 0 && b.size >= free && !known {
			need := t.max
			if declared >= 0 {
				need = declared
			}
			if b.reserved, err = t.budget.acquire(ctx, need); err != nil {
				return b, err
			}
		}
		want := next
		if declared >= 0 {
			want = max(declared-b.size, 1)
		}
		// One byte past the cap tells "exactly max" from "more".
		want = min(want, t.max+1-b.size)
		if b.reserved == 0 && !known {
			want = min(want, free-b.size)
		}
		chunk := make([]byte, want)
		n, rerr := fill(rc, chunk)
		if n > 0 {
			b.chunks = append(b.chunks, chunk[:n])
			b.size += int64(n)
		}
		switch {
		case b.size > t.max:
			return b, &ReplyTooLargeError{Limit: t.max}
		case rerr == io.EOF:
			return b, nil
		case rerr != nil:
			return b, rerr
		}
	}
}

// fill reads until p is full or the reader fails; unlike io.ReadFull it
// returns the reader's own error (io.EOF at a clean end).
func fill(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// heldBody is a body read into memory; Close gives its reservation back.
type heldBody struct {
	budget *replyBudget

	mu       sync.Mutex
	chunks   [][]byte
	size     int64
	reserved int64
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for n < len(p) && len(b.chunks) > 0 {
		m := copy(p[n:], b.chunks[0])
		n += m
		if b.chunks[0] = b.chunks[0][m:]; len(b.chunks[0]) == 0 {
			b.chunks = b.chunks[1:]
		}
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Close releases the reservation: both SDKs close a body right after
// reading it, so the budget also covers their copy while it is made.
func (b *heldBody) Close() error {
	b.mu.Lock()
	n := b.reserved
	b.reserved, b.chunks = 0, nil
	b.mu.Unlock()
	b.budget.release(n)
	return nil
}

// wrapClient returns a copy of hc (the pooled default when nil) whose
// transport bounds reply bodies at max bytes (DefaultMaxReplyBytes when
// max ≤ 0) within budget (the process budget when nil).
func wrapClient(hc *http.Client, max int64, budget *replyBudget) *http.Client {
	if hc == nil {
		hc = defaultHTTPClient()
	}
	if max <= 0 {
		max = DefaultMaxReplyBytes
	}
	if budget == nil {
		budget = processBudget
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	wrapped := *hc
	wrapped.Transport = boundedTransport{next: rt, max: max, budget: budget}
	return &wrapped
}

// RedirectError is a reply with a 3xx status, which no client follows.
type RedirectError struct {
	Status   int
	Location string // without user info, query or fragment; "" when none
}

func (e *RedirectError) Error() string {
	to := ""
	if e.Location != "" {
		to = " to " + e.Location
	}
	return fmt.Sprintf("the server redirects (HTTP %d)%s; redirects are not followed, so give the endpoint that answers", e.Status, to)
}

// redirected maps a RedirectError anywhere in err's chain to the
// non-retryable call error naming the status, nil otherwise.
func redirected(err error) *CallError {
	var re *RedirectError
	if errors.As(err, &re) {
		return &CallError{Kind: KindClient, Status: re.Status, Msg: re.Error()}
	}
	return nil
}

// scrubURL drops the user info, query and fragment of a URL (they may
// carry a credential); a relative or unparsable one is kept to its path.
func scrubURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	return u.String()
}

// tooLarge maps a ReplyTooLargeError anywhere in err's chain to the
// non-retryable call error, nil otherwise.
func tooLarge(err error) *CallError {
	var tl *ReplyTooLargeError
	if errors.As(err, &tl) {
		return &CallError{Kind: KindTooLarge, Msg: tl.Error()}
	}
	return nil
}
