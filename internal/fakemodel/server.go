// The baseline server: an OpenAI-compatible Chat Completions server that
// answers with a baseline policy (protocol.md §11) or a simulated model.
//
// It exists to smoke-test a setup without a GPU and to give tests and
// throughput benchmarks a real HTTP peer: answers come from the same
// function as the in-process policy (PolicyAnswer over the request's
// message texts), so a run against the server and an in-process run agree
// answer for answer. Latency, jitter and injected faults (429 with
// Retry-After, 500, hangs, malformed 2xx bodies, empty answers) exercise a
// client's retry path. Each request draws its fault afresh from (fault
// seed, request number), so a retried request can succeed.

package fakemodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// PolicySimulated serves a simulated model (Simulated): the
// benchmark's ground truth at a set accuracy per stage, found from the
// request's radiograph and question text alone.
const PolicySimulated = "simulated"

// DefaultMaxBody caps a request body: 7 images of ~1 MB as base64 take
// about 10 MB, so 64 MiB leaves ample room and still bounds memory.
const DefaultMaxBody = 64 << 20

// ServerConfig configures a server. Rates are probabilities in [0, 1] whose sum
// must not exceed 1; one uniform draw per request picks at most one fault.
type ServerConfig struct {
	Policy     string // random | first | simulated
	PolicySeed int64
	// Simulated answers for the simulated policy (required by it).
	Simulated *Simulated

	// Latency is the least time from a request's arrival to its reply:
	// the server's own reading, parsing and encoding happen within it.
	Latency time.Duration
	Jitter  time.Duration // plus a uniform extra delay in [0, Jitter)

	Fail429       float64
	Fail500       float64
	FailTimeout   float64 // hang until the client gives up
	FailMalformed float64 // 200 with a body that is not JSON
	FailEmpty     float64 // 200 with empty content, finish_reason stop

	FaultSeed  int64         // seeds the per-request fault and jitter draws
	RetryAfter time.Duration // sent with injected 429s; default 1s, negative: no header
	MaxBody    int64         // default DefaultMaxBody
}

// Stats counts what the server did.
type Stats struct {
	Requests, OK, Empty, Fail429, Fail500, FailTimeout, FailMalformed, BadRequest int64
}

// Server is the http.Handler.
type Server struct {
	cfg   ServerConfig
	seq   atomic.Int64
	stats struct {
		requests, ok, empty, f429, f500, ftimeout, fmalformed, bad atomic.Int64
	}
	done chan struct{} // closed by Close: releases hanging handlers
	once sync.Once
	bufs sync.Pool // *[]byte: request bodies' buffers, reused

	onHang func() // tests: called as a handler starts hanging on an injected timeout
}

// NewServer validates cfg and returns a server.
func NewServer(cfg ServerConfig) (*Server, error) {
	switch {
	case cfg.Policy == PolicySimulated && cfg.Simulated == nil:
		return nil, fmt.Errorf("serve-baseline: the simulated policy needs a simulated model (a benchmark to answer)")
	case cfg.Policy != runmodel.PolicyRandom && cfg.Policy != runmodel.PolicyFirst && cfg.Policy != PolicySimulated:
		return nil, fmt.Errorf("serve-baseline: policy %q is not servable (want random, first or simulated; oracle needs ground truth)", cfg.Policy)
	}
	rates := []struct {
		name string
		v    float64
	}{{"fail-429", cfg.Fail429}, {"fail-500", cfg.Fail500}, {"fail-timeout", cfg.FailTimeout},
		{"fail-malformed", cfg.FailMalformed}, {"fail-empty", cfg.FailEmpty}}
	sum := 0.0
	for _, r := range rates {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			return nil, fmt.Errorf("serve-baseline: --%s %v is not a rate in [0, 1]", r.name, r.v)
		}
		sum += r.v
	}
	if sum > 1+1e-9 {
		return nil, fmt.Errorf("serve-baseline: fault rates add up to %v, more than 1", sum)
	}
	if cfg.Latency < 0 || cfg.Jitter < 0 {
		return nil, fmt.Errorf("serve-baseline: latency and jitter must not be negative")
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = time.Second
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	return &Server{cfg: cfg, done: make(chan struct{})}, nil
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	return Stats{Requests: s.stats.requests.Load(), OK: s.stats.ok.Load(), Empty: s.stats.empty.Load(),
		Fail429: s.stats.f429.Load(), Fail500: s.stats.f500.Load(), FailTimeout: s.stats.ftimeout.Load(),
		FailMalformed: s.stats.fmalformed.Load(), BadRequest: s.stats.bad.Load()}
}

// Close releases handlers that are hanging on an injected timeout.
func (s *Server) Close() { s.once.Do(func() { close(s.done) }) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		s.complete(w, r)
	case "/v1/models", "/models":
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			writeError(w, http.StatusMethodNotAllowed, "use GET")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{s.modelEntry()}})
	default:
		writeError(w, http.StatusNotFound, "no route "+r.URL.Path)
	}
}

// modelEntry is the server's one entry of GET /v1/models. It says that
// this is a baseline (owned_by provider.BaselineOwner, which the
// evaluator's preflight takes to answer any model id) and which: its
// policy and seed enter the identity of every run against it, so runs
// against baselines of different policies never share cached replies.
func (s *Server) modelEntry() map[string]any {
	return map[string]any{"id": "baseline-" + s.cfg.Policy, "object": "model", "created": 0,
		"owned_by": provider.BaselineOwner, "policy": s.cfg.Policy, "policy_seed": s.cfg.PolicySeed}
}

// fault kinds drawn per request
const (
	faultNone = iota
	fault429
	fault500
	faultTimeout
	faultMalformed
	faultEmpty
)

func (s *Server) draw(n int64) (fault int, extra time.Duration) {
	r := rng.New("chexpercept/serve-baseline/faults/" + strconv.FormatInt(s.cfg.FaultSeed, 10) + "/" + strconv.FormatInt(n, 10))
	u := r.Float64()
	c := s.cfg
	switch {
	case u < c.Fail429:
		fault = fault429
	case u < c.Fail429+c.Fail500:
		fault = fault500
	case u < c.Fail429+c.Fail500+c.FailTimeout:
		fault = faultTimeout
	case u < c.Fail429+c.Fail500+c.FailTimeout+c.FailMalformed:
		fault = faultMalformed
	case u < c.Fail429+c.Fail500+c.FailTimeout+c.FailMalformed+c.FailEmpty:
		fault = faultEmpty
	}
	if c.Jitter > 0 {
		extra = time.Duration(r.UintN(uint64(c.Jitter)))
	}
	return fault, extra
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	// The latency runs from the request's arrival: the server's own work
	// (reading and parsing the body, choosing the answer, encoding the
	// reply) happens inside it, as a model server's time to answer
	// includes reading the request.
	arrived := time.Now()
	n := s.seq.Add(1)
	s.stats.requests.Add(1)
	if r.ContentLength > s.cfg.MaxBody {
		// Announced too large: refused before a byte of it is read.
		s.stats.bad.Add(1)
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", s.cfg.MaxBody))
		return
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	// A client that stops sending halfway does not hold its handler for
	// ever; the deadline covers the body only, not the latency's wait.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(arrived.Add(bodyReadTimeout)) // only fails on a connection without deadlines, which needs none
	buf := s.getBuf(r.ContentLength)
	data, readErr := readBody(body, *buf, r.ContentLength)
	_ = rc.SetReadDeadline(time.Time{}) // as above
	req, err := parseChat(data, readErr, s.cfg.Policy != runmodel.PolicyFirst)
	*buf = data
	s.putBuf(buf) // nothing parsed refers to the body's bytes
	if err != nil {
		s.stats.bad.Add(1)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit))
			return
		}
		writeError(w, http.StatusBadRequest, "request body is not a valid chat completion request: "+err.Error())
		return
	}
	_, _ = io.Copy(io.Discard, body) // the request is parsed; the rest is drained for the connection's reuse
	if len(req.texts) == 0 {
		s.stats.bad.Add(1)
		writeError(w, http.StatusBadRequest, "messages is empty")
		return
	}
	texts := req.texts
	// Decide the answer before any fault so a bad request is a 400 at once.
	var answer string
	if s.cfg.Policy == PolicySimulated {
		answer, err = s.cfg.Simulated.Answer(req.firstImage, texts)
	} else {
		answer, err = PolicyAnswer(s.cfg.Policy, s.cfg.PolicySeed, texts, req.firstImage)
	}
	if err != nil {
		s.stats.bad.Add(1)
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	fault, extra := s.draw(n)
	var reply []byte
	if fault == faultNone || fault == faultEmpty {
		if fault == faultEmpty {
			answer = ""
		}
		reply = s.reply(n, req, answer)
	}
	if !s.sleepUntil(r.Context(), arrived.Add(s.cfg.Latency+extra)) {
		s.refuseIfClosing(w)
		return
	}
	switch fault {
	case fault429:
		s.stats.f429.Add(1)
		if ra := s.cfg.RetryAfter; ra > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(ra.Seconds())), 10))
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(ra.Milliseconds(), 10))
		}
		writeError(w, http.StatusTooManyRequests, "injected rate limit")
		return
	case fault500:
		s.stats.f500.Add(1)
		writeError(w, http.StatusInternalServerError, "injected server error")
		return
	case faultTimeout:
		s.stats.ftimeout.Add(1)
		if s.onHang != nil {
			s.onHang()
		}
		select {
		case <-r.Context().Done():
		case <-s.done:
			s.refuseIfClosing(w)
		}
		return
	case faultMalformed:
		s.stats.fmalformed.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"id":"chatcmpl-baseline","choices":[{"index":0,"message":{"role":"assis`)
		return
	case faultEmpty:
		s.stats.empty.Add(1)
	default:
		s.stats.ok.Add(1)
	}
	writeBytes(w, http.StatusOK, reply)
}

// completion is the reply's JSON: the members in name order, as
// encoding/json writes a map's, so the bytes are those of the map the
// server once encoded.
type completion struct {
	Choices []choice `json:"choices"`
	Created int64    `json:"created"`
	ID      string   `json:"id"`
	Model   string   `json:"model"`
	Object  string   `json:"object"`
	Usage   usage    `json:"usage"`
}

type choice struct {
	FinishReason string  `json:"finish_reason"`
	Index        int     `json:"index"`
	Message      message `json:"message"`
}

type message struct {
	Content string `json:"content"`
	Role    string `json:"role"`
}

type usage struct {
	CompletionTokens int64 `json:"completion_tokens"`
	PromptTokens     int64 `json:"prompt_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// reply encodes the completion of request n.
func (s *Server) reply(n int64, req *parsedRequest, answer string) []byte {
	u := EstimateUsage(req.texts, req.images, answer)
	model := req.model
	if model == "" {
		model = "baseline-" + s.cfg.Policy
	}
	return encodeJSON(completion{
		ID:      "chatcmpl-baseline-" + strconv.FormatInt(n, 10),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   model,
		Choices: []choice{{Index: 0, Message: message{Role: "assistant", Content: answer}, FinishReason: "stop"}},
		Usage:   usage{PromptTokens: u.Input, CompletionTokens: u.Output, TotalTokens: u.Total},
	})
}

// maxPooledBody is the largest body buffer kept for reuse; larger ones
// (requests with full-size images) are left to the collector: pooled,
// many stayed idle between collections (serve-baseline's peak RSS in
// BenchmarkEvalBytes doubled with a 16 MiB bound).
const maxPooledBody = 1 << 20

// maxPrealloc bounds the buffer allocated before a body arrives on the
// word of its Content-Length (a request of 7 full-size images takes about
// 10 MB), so a client that announces a large body and sends little holds
// at most this much; a larger body grows the buffer as it arrives.
const maxPrealloc = 16 << 20

// getBuf returns an empty buffer for a body of size bytes (-1: unknown):
// from the pool for a small body, else a new one.
func (s *Server) getBuf(size int64) *[]byte {
	// One byte beyond the announced size lets the read see the end
	// without growing the buffer.
	want := min(size+1, maxPrealloc)
	if size > maxPooledBody {
		b := make([]byte, 0, want)
		return &b
	}
	buf, _ := s.bufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	if int64(cap(*buf)) < want {
		*buf = make([]byte, 0, want)
	}
	*buf = (*buf)[:0]
	return buf
}

func (s *Server) putBuf(buf *[]byte) {
	if cap(*buf) <= maxPooledBody {
		s.bufs.Put(buf)
	}
}

// readBody appends r's bytes to buf until the end or an error; the
// reader bounds the size (http.MaxBytesReader). A full buffer doubles,
// but never beyond size+1 when the body announced size bytes (-1: not
// announced), so a body that arrives as announced is copied at most once
// or twice however large, and the buffer is never more than twice what
// arrived.
func readBody(r io.Reader, buf []byte, size int64) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			c := max(2*cap(buf), 512)
			if size >= int64(len(buf)) {
				c = int(min(int64(c), size+1))
			}
			buf = append(make([]byte, 0, c), buf...)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// fineSleep is the last stretch of a reply's latency, slept with
// sleepFine: the runtime's timers can wake up to a millisecond late, so a
// timer alone would add about half a millisecond to every call's latency.
const fineSleep = 2 * time.Millisecond

// bodyReadTimeout bounds the time a request's body may take to arrive.
const bodyReadTimeout = 2 * time.Minute

// refuseIfClosing answers 503 to a request cut short by the server's
// stop, instead of the empty 200 a handler that writes nothing would give.
func (s *Server) refuseIfClosing(w http.ResponseWriter) {
	select {
	case <-s.done:
		writeError(w, http.StatusServiceUnavailable, "the server is shutting down")
	default:
	}
}

// sleepUntil waits until deadline; false when the client went away or the
// server closed first. Up to fineSleep before the deadline it waits on a
// timer (and for the client and the server); the rest it sleeps with
// sleepFine, so the reply never leaves before the deadline and leaves
// within microseconds of it.
func (s *Server) sleepUntil(ctx context.Context, deadline time.Time) bool {
	if d := time.Until(deadline) - fineSleep; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		case <-s.done:
			return false
		}
	}
	for d := time.Until(deadline); d > 0; d = time.Until(deadline) {
		sleepFine(d)
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) { writeBytes(w, status, encodeJSON(v)) }

// encodeJSON is v's JSON, or nil when it cannot be encoded.
func encodeJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// writeBytes sends a JSON body (nil: a failed encoding, sent as a 500).
func writeBytes(w http.ResponseWriter, status int, b []byte) {
	if b == nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding reply"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	} else if status == http.StatusTooManyRequests {
		typ = "rate_limit_error"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}

// StartServer serves cfg on a random loopback port until ctx ends or stop is
// called. url is the API base, e.g. "http://127.0.0.1:41234/v1".
func StartServer(ctx context.Context, cfg ServerConfig) (url string, srv *Server, stop func(), err error) {
	return StartServerOn(ctx, "127.0.0.1:0", cfg)
}

// StartServerOn is StartServer on a given listen address.
func StartServerOn(ctx context.Context, addr string, cfg ServerConfig) (url string, srv *Server, stop func(), err error) {
	srv, err = NewServer(cfg)
	if err != nil {
		return "", nil, nil, err
	}
	url, stop, err = srv.start(ctx, addr)
	if err != nil {
		return "", nil, nil, err
	}
	return url, srv, stop, nil
}

// start serves s on addr until stop is called or ctx ends.
func (s *Server) start(ctx context.Context, addr string) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("serve-baseline: listen on %s: %w", addr, err)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }() // http.ErrServerClosed once stopped; clients report a server that stopped answering
	var once sync.Once
	stop = func() {
		once.Do(func() {
			s.Close()
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if hs.Shutdown(sctx) != nil {
				_ = hs.Close() // the graceful shutdown ran out of time: the connections are cut, nothing is left to report to
			}
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-s.done:
		}
	}()
	return "http://" + ln.Addr().String() + "/v1", stop, nil
}
