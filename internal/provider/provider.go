// Package provider is the protocol-translation layer between the evaluator
// and the model backends (spec protocol.md §1, §11).
//
// The evaluator speaks one neutral conversation model: a Request holds the
// full message list of one call (system text, then alternating user and
// assistant turns, each user turn being text followed by its images) and
// the sampling parameters to send. A Client turns that into one backend's
// wire format — OpenAI-compatible Chat Completions (vllm, openai_compat,
// openai, azure), the Gemini API / Vertex AI, or an in-process baseline
// policy — and maps the reply back to a Response with the spec's usage and
// finish-reason vocabulary. Every failed call comes back as a *CallError
// whose Kind tells the runner whether a retry can help; this package never
// retries itself, and the SDKs' own retries are switched off.
//
// Nothing here knows about benchmarks: a Request holds what is sent and
// nothing else, so no answer can reach a model through it (the in-process
// oracle baseline is handed its answer beside the request, by the runner;
// fakemodel.AnswerKeyed). Images are sent as raw bytes only (format.md
// §7): no file name ever reaches a model.
package provider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// Role is the author of a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Image is one PNG image, encoded once by the caller and shared by every
// call that sends it. Clients never re-encode or decode PNG (except the
// Gemini JPEG mode, which converts once per Image and caches the result).
type Image struct {
	SHA256 string // lowercase hex of PNG; the image's identity in cache keys
	PNG    []byte // the file bytes, unchanged
	Base64 string // standard base64 of PNG, for data URLs

	jpeg jpegCache

	payloadOnce sync.Once
	payloadKey  string
}

// PayloadKey is the lowercase hex SHA-256 of the image's base64 text, the
// identity under which the random baseline keys its draw (it is what an
// HTTP server sees of the image). Computed once per image.
func (im *Image) PayloadKey() string {
	im.payloadOnce.Do(func() { im.payloadKey = PayloadKey(im.Base64) })
	return im.payloadKey
}

// PayloadKey hashes the base64 text of an image (the part of a data URL
// after "base64,").
func PayloadKey(b64 string) string {
	sum := sha256.Sum256([]byte(b64))
	return hex.EncodeToString(sum[:])
}

// PayloadKeyBytes is PayloadKey of base64 text held in bytes.
func PayloadKeyBytes(b64 []byte) string {
	sum := sha256.Sum256(b64)
	return hex.EncodeToString(sum[:])
}

// NewImage wraps PNG file bytes, computing the hash and base64 once.
func NewImage(png []byte) *Image {
	sum := sha256.Sum256(png)
	return &Image{SHA256: hex.EncodeToString(sum[:]), PNG: png, Base64: base64.StdEncoding.EncodeToString(png)}
}

// DataURL is the image as sent to OpenAI-compatible servers.
func (im *Image) DataURL() string { return "data:image/png;base64," + im.Base64 }

// Message is one message of a conversation. In a user message the text
// comes first, then Images in order; other roles carry text only.
type Message struct {
	Role   Role
	Text   string
	Images []*Image
}

// Request is one call: the full conversation so far and what to send.
// Every field is sent; nothing that a model must not see belongs here.
type Request struct {
	Model    string // model id / deployment / HF id as the backend knows it
	Messages []Message
	Sampling runmodel.Sampling
}

// Finish reasons of Response.FinishReason (spec §9.2); "" means unknown.
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
	FinishOther         = "other"
)

// Response is a successful call. Text may be empty (a safety block, or all
// tokens spent thinking); that is an answer to record, not an error.
type Response struct {
	Text         string          // the content, raw; fed back verbatim
	Reasoning    string          // reasoning the backend returned in a separate field; never fed back
	FinishReason string          // stop | length | content_filter | other | "" (unknown)
	Usage        *runmodel.Usage // nil when the backend reported none
}

// Client performs one call. Implementations are safe for concurrent use.
type Client interface {
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// ErrorKind classifies a failed call for the retry policy.
type ErrorKind int

const (
	KindClient      ErrorKind = iota // other 4xx, bad configuration: not retryable
	KindRateLimited                  // 429
	KindServer                       // 5xx
	KindTimeout                      // the call's deadline passed
	KindNetwork                      // connection refused/reset, EOF mid-response
	KindMalformed                    // 2xx whose body is not valid JSON or has no choices
	KindCanceled                     // the caller cancelled (not a timeout): stop, do not retry
	KindTooLarge                     // the reply body passed the size cap: not retryable
)

func (k ErrorKind) String() string {
	switch k {
	case KindClient:
		return "client"
	case KindRateLimited:
		return "rate_limited"
	case KindServer:
		return "server"
	case KindTimeout:
		return "timeout"
	case KindNetwork:
		return "network"
	case KindMalformed:
		return "malformed"
	case KindCanceled:
		return "canceled"
	case KindTooLarge:
		return "too_large"
	}
	return "unknown"
}

// CallError is the one error type Complete returns. Msg has been scrubbed
// of credentials and image payloads and is short enough to log.
type CallError struct {
	Kind       ErrorKind
	Status     int           // HTTP status, 0 when there was no response
	RetryAfter time.Duration // from Retry-After on 429/503, else 0
	Msg        string
}

func (e *CallError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s error (HTTP %d): %s", e.Kind, e.Status, e.Msg)
	}
	return fmt.Sprintf("%s error: %s", e.Kind, e.Msg)
}

// Retryable reports whether another attempt may succeed: rate limits,
// server errors, timeouts, network failures and malformed 2xx bodies.
func (e *CallError) Retryable() bool {
	switch e.Kind {
	case KindRateLimited, KindServer, KindTimeout, KindNetwork, KindMalformed:
		return true
	}
	return false
}
