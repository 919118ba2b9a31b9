package provider

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chexpercept/chexpercept/internal/textsafe"
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
	secrets []*secretForms
	count   *atomic.Int64 // redactions made by redact
}

// minKeyRun is the shortest run of a key's characters that counts as the
// key: a server may echo a prefix, a suffix or a middle part of it.
const minKeyRun = 16

// secretForms are the spellings of one secret that redact looks for.
type secretForms struct {
	folded []string            // ASCII-lower-cased: the key, its URL-encoded and fully percent-encoded forms
	exact  []string            // case-sensitive: the key's base64 forms (standard and URL alphabets, any alignment)
	runs   map[string]struct{} // every ASCII-lower-cased run of minKeyRun bytes of the key
}

func newScrubber(secrets ...string) scrubber {
	var s []*secretForms
	for _, v := range secrets {
		// very short values would blank out ordinary words; placeholders
		// for keyless local servers are not secret
		if len(v) >= 6 && v != placeholderKey {
			s = append(s, formsOf(v))
		}
	}
	return scrubber{secrets: s, count: new(atomic.Int64)}
}

func formsOf(key string) *secretForms {
	f := &secretForms{}
	seen := map[string]bool{}
	addFolded := func(v string) {
		v = asciiLower(v)
		if !seen[v] {
			seen[v] = true
			f.folded = append(f.folded, v)
		}
	}
	addFolded(key)
	addFolded(url.QueryEscape(key))
	addFolded(url.PathEscape(key))
	var pct strings.Builder
	for i := 0; i < len(key); i++ {
		fmt.Fprintf(&pct, "%%%02X", key[i])
	}
	addFolded(pct.String())
	// A key inside a longer base64 text (say "Basic " + base64(user:key))
	// is encoded at one of three alignments; the characters that depend on
	// the key's bytes alone are the same whatever surrounds them.
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		f.exact = append(f.exact, enc.EncodeToString([]byte(key))) // the whole key, padding included
	}
	for pad := 0; pad < 3; pad++ {
		b := append(make([]byte, pad), key...)
		start, end := (pad*8+5)/6, len(b)*8/6
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			if core := enc.EncodeToString(b)[start:end]; len(core) >= 8 && !slices.Contains(f.exact, core) {
				f.exact = append(f.exact, core)
			}
		}
	}
	if lk := asciiLower(key); len(lk) >= minKeyRun {
		f.runs = map[string]struct{}{}
		for i := 0; i+minKeyRun <= len(lk); i++ {
			f.runs[lk[i:i+minKeyRun]] = struct{}{}
		}
	}
	return f
}

// asciiLower lower-cases ASCII letters only, so that byte offsets stay
// those of s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// redact replaces every spelling of a secret by RedactedMarker, counting
// the replaced stretches: the key in any letter case, URL- or
// percent-encoded, base64-encoded, and any run of minKeyRun or more of its
// characters. A server that echoes the key into a successful reply must
// not get it into results.jsonl, the response cache or a log.
func (s scrubber) redact(text string) string {
	if len(s.secrets) == 0 || text == "" {
		return text
	}
	var hit []bool
	mark := func(i, n int) {
		if hit == nil {
			hit = make([]bool, len(text))
		}
		for j := i; j < i+n; j++ {
			hit[j] = true
		}
	}
	lower := asciiLower(text)
	find := func(hay, needle string) {
		for off := 0; ; {
			i := strings.Index(hay[off:], needle)
			if i < 0 {
				return
			}
			mark(off+i, len(needle))
			off += i + 1
		}
	}
	for _, f := range s.secrets {
		for _, v := range f.folded {
			find(lower, v)
		}
		for _, v := range f.exact {
			find(text, v)
		}
		if f.runs != nil {
			for i := 0; i+minKeyRun <= len(lower); i++ {
				if _, ok := f.runs[lower[i:i+minKeyRun]]; ok {
					mark(i, minKeyRun)
				}
			}
		}
	}
	if hit == nil {
		return text
	}
	var b strings.Builder
	n := int64(0)
	for i := 0; i < len(text); {
		if !hit[i] {
			b.WriteByte(text[i])
			i++
			continue
		}
		for i < len(text) && hit[i] {
			i++
		}
		b.WriteString(RedactedMarker)
		n++
	}
	if s.count != nil {
		s.count.Add(n)
	}
	return b.String()
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
	return textsafe.Clip(textsafe.Squash(msg), maxMsgLen)
}

// ContextError classifies the end of a call's context: a passed deadline
// is a (retryable) timeout, a cancellation stops the run.
func ContextError(ctx context.Context, err error) *CallError {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return &CallError{Kind: KindTimeout, Msg: "the call did not finish before its deadline"}
	}
	return &CallError{Kind: KindCanceled, Msg: "the call was cancelled"}
}

// transportError classifies an error that happened without a usable HTTP
// response: deadline, cancellation, or a network failure.
func transportError(ctx context.Context, err error, s scrubber) *CallError {
	if ctx.Err() != nil {
		return ContextError(ctx, err)
	}
	if ce := redirected(err); ce != nil {
		ce.Msg = s.clean(ce.Msg)
		return ce
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
