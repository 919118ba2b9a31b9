package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"net/http"
	"strings"
	"sync"

	"google.golang.org/genai"

	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// geminiClient speaks the Gemini API or Vertex AI through the official
// SDK (spec §11): system_instruction, then the history rebuilt as plain
// text + inline image bytes (no thought signatures carried over).
type geminiClient struct {
	c     *genai.Client
	pre   *genai.Client // the model lookup of the preflight, with its smaller reply cap
	jpeg  bool
	scrub scrubber
}

// retryAfterKey carries a per-call box that the transport fills with the
// Retry-After of a 429/503, which genai.APIError does not expose.
type retryAfterKey struct{}

type headerBox struct{ h http.Header }

type headerCapture struct{ next http.RoundTripper }

func (t headerCapture) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if resp != nil {
		if box, ok := r.Context().Value(retryAfterKey{}).(*headerBox); ok {
			box.h = resp.Header.Clone()
		}
	}
	return resp, err
}

func newGemini(cfg Config) (*geminiClient, error) {
	hc := wrapClient(cfg.HTTPClient, cfg.MaxReplyBytes, cfg.budget)
	wrapped := *hc
	wrapped.Transport = headerCapture{next: hc.Transport}

	switch cfg.GeminiImageFormat {
	case "", "png", "jpeg":
	default:
		return nil, fmt.Errorf("gemini: image format %q (want png or jpeg)", cfg.GeminiImageFormat)
	}
	key, err := cfg.apiKey("GEMINI_API_KEY", "GOOGLE_API_KEY")
	if err != nil {
		return nil, err
	}
	project := strings.TrimSpace(cfg.getenv("GOOGLE_CLOUD_PROJECT"))
	cc := &genai.ClientConfig{HTTPClient: &wrapped, HTTPOptions: genai.HTTPOptions{BaseURL: cfg.Endpoint}}
	switch {
	case cfg.GeminiVertex || (key == "" && project != ""):
		if project == "" {
			return nil, fmt.Errorf("gemini: Vertex AI needs GOOGLE_CLOUD_PROJECT")
		}
		cc.Backend, cc.Project, cc.Location = genai.BackendVertexAI, project, "global"
	case key != "":
		cc.Backend, cc.APIKey = genai.BackendGeminiAPI, key
	default:
		return nil, &missingError{"gemini: no credentials (set GEMINI_API_KEY or GOOGLE_API_KEY, or GOOGLE_CLOUD_PROJECT for Vertex AI)", ErrNoCredentials}
	}
	s := newScrubber(key)
	client, err := genai.NewClient(context.Background(), cc)
	if err != nil {
		return nil, fmt.Errorf("gemini: %s", s.clean(err.Error()))
	}
	pc := *cc
	pc.HTTPClient = wrapClient(cfg.HTTPClient, preflightCap(cfg.MaxReplyBytes), cfg.budget)
	pre, err := genai.NewClient(context.Background(), &pc)
	if err != nil {
		return nil, fmt.Errorf("gemini: %s", s.clean(err.Error()))
	}
	return &geminiClient{c: client, pre: pre, jpeg: cfg.GeminiImageFormat == "jpeg", scrub: s}, nil
}

func (g *geminiClient) build(req *Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	conf := &genai.GenerateContentConfig{}
	var contents []*genai.Content
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			conf.SystemInstruction = genai.NewContentFromText(m.Text, genai.RoleUser)
		case RoleAssistant:
			contents = append(contents, genai.NewContentFromParts([]*genai.Part{genai.NewPartFromText(m.Text)}, genai.RoleModel))
		default:
			parts := []*genai.Part{genai.NewPartFromText(m.Text)}
			for _, im := range m.Images {
				if g.jpeg {
					b, err := im.JPEG()
					if err != nil {
						return nil, nil, err
					}
					parts = append(parts, genai.NewPartFromBytes(b, "image/jpeg"))
				} else {
					parts = append(parts, genai.NewPartFromBytes(im.PNG, "image/png"))
				}
			}
			contents = append(contents, genai.NewContentFromParts(parts, genai.RoleUser))
		}
	}
	s := req.Sampling
	if s.Temperature != nil {
		conf.Temperature = genai.Ptr(float32(*s.Temperature))
	}
	if s.TopP != nil {
		conf.TopP = genai.Ptr(float32(*s.TopP))
	}
	switch {
	case s.MaxOutputTokens != nil:
		conf.MaxOutputTokens = int32(*s.MaxOutputTokens)
	case s.MaxTokens != nil:
		conf.MaxOutputTokens = int32(*s.MaxTokens)
	}
	if s.ThinkingLevel != "" {
		conf.ThinkingConfig = &genai.ThinkingConfig{ThinkingLevel: genai.ThinkingLevel(strings.ToUpper(s.ThinkingLevel))}
	}
	if s.FrequencyPenalty != nil {
		conf.FrequencyPenalty = genai.Ptr(float32(*s.FrequencyPenalty))
	}
	if s.PresencePenalty != nil {
		conf.PresencePenalty = genai.Ptr(float32(*s.PresencePenalty))
	}
	if s.Seed != nil {
		if *s.Seed < math.MinInt32 || *s.Seed > math.MaxInt32 {
			return nil, nil, fmt.Errorf("gemini: seed %d does not fit 32 bits", *s.Seed)
		}
		conf.Seed = genai.Ptr(int32(*s.Seed))
	}
	if s.ExtraBody != "" {
		// Never drop a setting silently: the run records what it sends.
		return nil, nil, fmt.Errorf("gemini: %w", runmodel.ErrNoExtraBody)
	}
	return contents, conf, nil
}

func (g *geminiClient) Complete(ctx context.Context, req *Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, ContextError(ctx, err)
	}
	contents, conf, err := g.build(req)
	if err != nil {
		return nil, &CallError{Kind: KindClient, Msg: err.Error()}
	}
	box := &headerBox{}
	resp, err := g.c.Models.GenerateContent(context.WithValue(ctx, retryAfterKey{}, box), req.Model, contents, conf)
	if err != nil {
		if ce := tooLarge(err); ce != nil {
			return nil, ce
		}
		var apiErr genai.APIError
		if errors.As(err, &apiErr) {
			msg := apiErr.Message
			if apiErr.Status != "" && !strings.Contains(msg, apiErr.Status) {
				msg = apiErr.Status + ": " + msg
			}
			return nil, statusError(apiErr.Code, box.h, msg, g.scrub)
		}
		if ctx.Err() == nil && strings.Contains(err.Error(), "unmarshalling response") {
			return nil, &CallError{Kind: KindMalformed, Status: 200, Msg: "reply body is not valid JSON"}
		}
		return nil, transportError(ctx, err, g.scrub)
	}
	r := mapGemini(resp)
	r.Text, r.Reasoning = g.scrub.redact(r.Text), g.scrub.redact(r.Reasoning)
	return r, nil
}

// Redactions implements Redactor.
func (g *geminiClient) Redactions() int64 { return g.scrub.redactions() }

// mapGemini maps a reply: text = the non-thought text parts of the first
// candidate; reasoning = its thought parts; a reply with no candidate (a
// blocked prompt) is an empty answer with finish content_filter.
func mapGemini(resp *genai.GenerateContentResponse) *Response {
	r := &Response{}
	if len(resp.Candidates) == 0 {
		if resp.PromptFeedback != nil && resp.PromptFeedback.BlockReason != "" {
			r.FinishReason = FinishContentFilter
		}
	} else {
		c := resp.Candidates[0]
		var text, thought strings.Builder
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				if p == nil {
					continue
				}
				if p.Thought {
					thought.WriteString(p.Text)
				} else {
					text.WriteString(p.Text)
				}
			}
		}
		r.Text, r.Reasoning = text.String(), thought.String()
		r.FinishReason = mapGeminiFinish(c.FinishReason)
	}
	if u := resp.UsageMetadata; u != nil {
		r.Usage = &runmodel.Usage{
			Input:       int64(u.PromptTokenCount),
			CachedInput: int64(u.CachedContentTokenCount),
			Output:      int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
			Thinking:    int64(u.ThoughtsTokenCount),
			Total:       int64(u.TotalTokenCount),
		}
	}
	return r
}

func mapGeminiFinish(f genai.FinishReason) string {
	switch f {
	case "":
		return ""
	case genai.FinishReasonStop:
		return FinishStop
	case genai.FinishReasonMaxTokens:
		return FinishLength
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return FinishContentFilter
	}
	return FinishOther
}

// jpegCache holds an image's JPEG re-encoding, made at most once.
type jpegCache struct {
	once sync.Once
	b    []byte
	err  error
}

// JPEGQuality is the quality of the Gemini JPEG mode (the reference's
// library default).
const JPEGQuality = 75

// JPEG returns the image re-encoded as JPEG at quality 75, computed once.
func (im *Image) JPEG() ([]byte, error) {
	im.jpeg.once.Do(func() {
		var src image.Image
		src, im.jpeg.err = imagefile.DecodePNG(im.PNG)
		if im.jpeg.err != nil {
			im.jpeg.err = fmt.Errorf("image %s: decoding PNG for JPEG re-encoding: %w", im.SHA256[:12], im.jpeg.err)
			return
		}
		var buf bytes.Buffer
		if im.jpeg.err = jpeg.Encode(&buf, src, &jpeg.Options{Quality: JPEGQuality}); im.jpeg.err == nil {
			im.jpeg.b = buf.Bytes()
		}
	})
	return im.jpeg.b, im.jpeg.err
}
