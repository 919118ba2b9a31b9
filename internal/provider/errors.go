package provider

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// maxMsgLen caps error messages: a server may echo a whole request (with
// megabytes of base64) into its error body.
const maxMsgLen = 400

var (
	// base64 payloads of data URLs, and long base64-looking runs in general
	dataURLRe = regexp.MustCompile(`data:[a-zA-Z0-9.+/-]+;base64,[A-Za-z0-9+/=_-]*`)
	longB64Re = regexp.MustCompile(`[A-Za-z0-9+/=_-]{200,}`)
	// credentials that carry their own marker, whatever their value
	bearerRe = regexp.MustCompile(`(?i)\b(bearer\s+)[^\s"',;&]+`)
	kvKeyRe  = regexp.MustCompile(`(?i)\b(api[-_]?key|x-goog-api-key|authorization|access[-_]token)(["']?\s*[:=]\s*["']?)[^\s"',;&]+`)
	keyParam = regexp.MustCompile(`(?i)([?&]key=)[^&\s"']+`)
)

// RedactedMarker replaces the configured API key wherever it appears in a
// reply or error text.
const RedactedMarker = "[redacted]"

// Redactor is implemented by the network clients. Redactions counts the
// exact occurrences of the configured API key replaced by RedactedMarker
// so far, in reply texts, reasoning and error messages (the run manifest
// records the total).
type Redactor interface {
	Redactions() int64
}

// scrubber removes known secrets and image payloads from messages.
type scrubber struct {
	secrets []string
	count   *atomic.Int64 // secrets replaced by redact
}

func newScrubber(secrets ...string) scrubber {
	var s []string
	for _, v := range secrets {
		// very short values would blank out ordinary words; placeholders
		// for keyless local servers are not secret
		if len(v) >= 6 && v != placeholderKey {
			s = append(s, v)
		}
	}
	return scrubber{secrets: s, count: new(atomic.Int64)}
}

// redact replaces every exact occurrence of a secret by RedactedMarker,
// counting them. A server that echoes the key into a successful reply
// must not get it into results.jsonl, the response cache or a log.
func (s scrubber) redact(text string) string {
	for _, v := range s.secrets {
		if n := strings.Count(text, v); n > 0 {
			text = strings.ReplaceAll(text, v, RedactedMarker)
			if s.count != nil {
				s.count.Add(int64(n))
			}
		}
	}
	return text
}

// redactions is the Redactor count of a client's scrubber.
func (s scrubber) redactions() int64 {
	if s.count == nil {
		return 0
	}
	return s.count.Load()
}

// clean returns msg without secrets, image payloads or control clutter,
// cut to maxMsgLen bytes (on a rune boundary).
func (s scrubber) clean(msg string) string {
	msg = s.redact(msg)
	msg = dataURLRe.ReplaceAllStringFunc(msg, func(m string) string {
		return m[:strings.Index(m, ",")+1] + "[…]"
	})
	msg = longB64Re.ReplaceAllString(msg, "[…]")
	msg = bearerRe.ReplaceAllString(msg, "$1[redacted]")
	msg = kvKeyRe.ReplaceAllString(msg, "$1$2[redacted]")
	msg = keyParam.ReplaceAllString(msg, "$1[redacted]")
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > maxMsgLen {
		cut := maxMsgLen
		for cut > 0 && !utf8Start(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// contextError classifies the end of a call's context: a passed deadline
// is a (retryable) timeout, a cancellation stops the run.
func contextError(ctx context.Context, err error) *CallError {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return &CallError{Kind: KindTimeout, Msg: "the call did not finish before its deadline"}
	}
	return &CallError{Kind: KindCanceled, Msg: "the call was cancelled"}
}

// transportError classifies an error that happened without a usable HTTP
// response: deadline, cancellation, or a network failure.
func transportError(ctx context.Context, err error, s scrubber) *CallError {
	if ctx.Err() != nil {
		return contextError(ctx, err)
	}
	err = withoutURLSecrets(err)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &CallError{Kind: KindTimeout, Msg: s.clean(err.Error())}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &CallError{Kind: KindTimeout, Msg: s.clean(err.Error())}
	}
	if errors.Is(err, context.Canceled) {
		return &CallError{Kind: KindCanceled, Msg: "the call was cancelled"}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) || errors.As(err, new(*net.OpError)) ||
		errors.As(err, new(*net.DNSError)) {
		return &CallError{Kind: KindNetwork, Msg: s.clean(err.Error())}
	}
	// Anything else from the transport (TLS, proxy, malformed HTTP) is
	// treated as a network failure: a retry on a fresh connection may help.
	return &CallError{Kind: KindNetwork, Msg: s.clean(err.Error())}
}

// withoutURLSecrets drops the user info, query and fragment of the URL an
// http.Client error names (Go masks only the password, and an endpoint
// from OPENAI_BASE_URL may carry a user name or a query token that is a
// credential). The error may be wrapped (the Gemini SDK does), so the
// URL is replaced in the message; errors.Is and As still see err.
func withoutURLSecrets(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	clean := "[endpoint]"
	if u, perr := url.Parse(ue.URL); perr == nil {
		u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
		clean = u.String()
	}
	msg := strings.ReplaceAll(err.Error(), ue.Error(), (&url.Error{Op: ue.Op, URL: clean, Err: ue.Err}).Error())
	return &scrubbedError{msg: msg, err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// statusError classifies a non-2xx HTTP status.
func statusError(status int, header http.Header, msg string, s scrubber) *CallError {
	e := &CallError{Status: status, Msg: s.clean(msg)}
	switch {
	case status == http.StatusTooManyRequests:
		e.Kind = KindRateLimited
	case status == http.StatusRequestTimeout:
		e.Kind = KindTimeout
	case status >= 500:
		e.Kind = KindServer
	default:
		e.Kind = KindClient
	}
	if e.Msg == "" {
		e.Msg = http.StatusText(status)
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		e.RetryAfter = ParseRetryAfter(header, time.Now())
	}
	return e
}

// ParseRetryAfter reads Retry-After (delta seconds or an HTTP date) or the
// OpenAI-style retry-after-ms header; 0 when absent or unparsable.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// ErrNoCredentials and ErrNoEndpoint are matched (errors.Is) by New's
// error when neither Config nor the environment supplies an API key (or
// Vertex AI project), or a server endpoint. The message names the
// environment variables; the command layer adds its flags.
var (
	ErrNoCredentials = errors.New("no credentials")
	ErrNoEndpoint    = errors.New("no endpoint")
)

// missingError is one of New's messages that matches kind.
type missingError struct {
	msg  string
	kind error
}

func (e *missingError) Error() string        { return e.msg }
func (e *missingError) Is(target error) bool { return target == e.kind }
