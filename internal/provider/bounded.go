package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// DefaultMaxReplyBytes is the default cap on one HTTP reply body: a chat
// completion with long reasoning is well under a megabyte, so 32 MiB only
// stops a broken or hostile server.
const DefaultMaxReplyBytes = 32 << 20

// ReplyTooLargeError is what reading a reply body past the cap returns;
// the clients turn it into a non-retryable CallError of KindTooLarge.
type ReplyTooLargeError struct{ Limit int64 }

func (e *ReplyTooLargeError) Error() string {
	return fmt.Sprintf("reply larger than %d bytes", e.Limit)
}

// boundedTransport caps every reply body at max bytes, whatever reads it
// (our code or an SDK's io.ReadAll), and stops reading as soon as the
// request's context ends, so a server streaming an endless body costs at
// most max bytes of memory and no more than the attempt's deadline.
type boundedTransport struct {
	next http.RoundTripper
	max  int64
}

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if resp != nil && resp.Body != nil {
		resp.Body = &boundedBody{rc: resp.Body, ctx: r.Context(), left: t.max, max: t.max, declared: resp.ContentLength}
	}
	return resp, err
}

type boundedBody struct {
	rc       io.ReadCloser
	ctx      context.Context
	left     int64 // bytes still allowed
	max      int64
	declared int64 // Content-Length, -1 when unknown
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	if b.declared > b.max {
		return 0, &ReplyTooLargeError{Limit: b.max}
	}
	if b.left < 0 {
		return 0, &ReplyTooLargeError{Limit: b.max}
	}
	// Read one byte past the cap to tell "exactly max" from "more".
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), &ReplyTooLargeError{Limit: b.max}
	}
	if err != nil && b.ctx.Err() != nil {
		err = b.ctx.Err() // a cut connection because the deadline passed
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// wrapClient returns a copy of hc (the pooled default when nil) whose
// transport bounds reply bodies at max bytes (DefaultMaxReplyBytes when
// max ≤ 0).
func wrapClient(hc *http.Client, max int64) *http.Client {
	if hc == nil {
		hc = defaultHTTPClient()
	}
	if max <= 0 {
		max = DefaultMaxReplyBytes
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	wrapped := *hc
	wrapped.Transport = boundedTransport{next: rt, max: max}
	return &wrapped
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
