package provider

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
)

// The Chat Completions body is written here rather than by the SDK's
// encoder: the SDK marshals each nested union into its own buffer and
// copies it upwards, which for a call carrying 7 images of 1 MB cost about
// 1.5 s of CPU and 170 MB of allocations (measured with
// BenchmarkRoundTrip). Written directly, an image costs one copy of its
// precomputed base64, streamed to the connection without buffering the
// whole body. The shape is the SDK's: TestBodyMatchesSDK compares the two.
//
// Layout: {"model", "messages", then the sampling fields that are set, in
// the order of Sampling, then "chat_template_kwargs" when EnableThinking is
// set, then the extra members sorted by name}. System and assistant contents are strings; a user content is a
// string without images, else [text part, image_url parts…] with PNG data
// URLs and no "detail".

// bodyWriter accumulates the small JSON pieces; images are emitted as
// separate segments so that their base64 is never copied into a buffer.
type bodyWriter struct {
	segs []string // in order; image payloads are Image.Base64 itself
	buf  bytes.Buffer
	size int64
}

func (b *bodyWriter) lit(s string) { b.buf.WriteString(s) }

func (b *bodyWriter) str(s string) {
	enc := json.NewEncoder(&b.buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // cannot fail for a string into memory
	b.buf.Truncate(b.buf.Len() - 1)
}

func (b *bodyWriter) flush() {
	if b.buf.Len() > 0 {
		seg := b.buf.String()
		b.segs = append(b.segs, seg)
		b.size += int64(len(seg))
		b.buf.Reset()
	}
}

func (b *bodyWriter) raw(p string) {
	b.flush()
	b.segs = append(b.segs, p) // no copy: strings are immutable
	b.size += int64(len(p))
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// FormatNumber writes a parameter value the way it goes on the wire:
// shortest decimal, no exponent for ordinary values ("0", "0.95", "8192").
func FormatNumber(v float64) string { return num(v) }

// chatBody builds the request body as segments plus its exact length.
func chatBody(req *Request) *bodyWriter {
	b := &bodyWriter{}
	b.lit(`{"model":`)
	b.str(req.Model)
	b.lit(`,"messages":[`)
	for i, m := range req.Messages {
		if i > 0 {
			b.lit(",")
		}
		role := m.Role
		if role != RoleSystem && role != RoleAssistant {
			role = RoleUser
		}
		b.lit(`{"role":"` + string(role) + `","content":`)
		if role != RoleUser || len(m.Images) == 0 {
			b.str(m.Text)
			b.lit("}")
			continue
		}
		b.lit(`[{"type":"text","text":`)
		b.str(m.Text)
		b.lit("}")
		for _, im := range m.Images {
			b.lit(`,{"type":"image_url","image_url":{"url":"data:image/png;base64,`)
			b.raw(im.Base64)
			b.lit(`"}}`)
		}
		b.lit("]}")
	}
	b.lit("]")
	s := req.Sampling
	optF := func(name string, v *float64) {
		if v != nil {
			b.lit(`,"` + name + `":` + num(*v))
		}
	}
	optI := func(name string, v *int64) {
		if v != nil {
			b.lit(`,"` + name + `":` + strconv.FormatInt(*v, 10))
		}
	}
	optF("temperature", s.Temperature)
	optF("top_p", s.TopP)
	optI("max_tokens", s.MaxTokens)
	optI("max_completion_tokens", s.MaxCompletionTokens)
	if s.ReasoningEffort != "" {
		b.lit(`,"reasoning_effort":`)
		b.str(s.ReasoningEffort)
	}
	optF("frequency_penalty", s.FrequencyPenalty)
	optF("presence_penalty", s.PresencePenalty)
	if s.Seed != nil {
		b.lit(`,"seed":` + strconv.FormatInt(*s.Seed, 10))
	}
	if s.EnableThinking != nil {
		b.lit(`,"chat_template_kwargs":{"enable_thinking":` + strconv.FormatBool(*s.EnableThinking) + "}")
	}
	// Extra members were checked when set (Sampling.Apply, Validate):
	// valid JSON, no name the body already holds.
	if in := s.ExtraBody.Inner(); in != "" {
		b.lit("," + in)
	}
	b.lit("}")
	b.flush()
	return b
}

// reader streams the segments.
func (b *bodyWriter) reader() io.Reader {
	rs := make([]io.Reader, len(b.segs))
	for i, s := range b.segs {
		rs[i] = strings.NewReader(s)
	}
	return io.MultiReader(rs...)
}

// bytes returns the whole body (tests).
func (b *bodyWriter) bytes() []byte { return []byte(strings.Join(b.segs, "")) }
