package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// openaiClient speaks Chat Completions for the vllm, openai_compat, openai
// and azure backends through the official SDK. The SDK builds the request
// and handles auth and transport; the reply body is taken raw and decoded
// here, so that a malformed 2xx body is classified (not swallowed) and
// reasoning returned in a non-standard field (reasoning_content, reasoning)
// is kept.
type openaiClient struct {
	svc     openai.ChatCompletionService
	backend string
	scrub   scrubber
	azure   bool

	azureEndpoint string // resource URL without trailing slash

	models        openai.ModelService // the preflight's model list or lookup
	preflightHTTP *http.Client        // the HTTP client with the preflight's smaller reply cap
}

func newOpenAI(cfg Config) (*openaiClient, error) {
	hc := wrapClient(cfg.HTTPClient, cfg.MaxReplyBytes, cfg.budget)
	opts := []option.RequestOption{option.WithHTTPClient(hc), option.WithMaxRetries(0)}
	c := &openaiClient{backend: cfg.Backend, preflightHTTP: wrapClient(cfg.HTTPClient, preflightCap(cfg.MaxReplyBytes), cfg.budget)}
	switch cfg.Backend {
	case runmodel.BackendAzure:
		key, err := cfg.apiKey("AZURE_OPENAI_API_KEY")
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, &missingError{"azure: no API key (set AZURE_OPENAI_API_KEY)", ErrNoCredentials}
		}
		ep := cfg.Endpoint
		if ep == "" {
			ep = strings.TrimSpace(cfg.getenv("AZURE_OPENAI_ENDPOINT"))
		}
		if ep == "" {
			return nil, &missingError{"azure: no endpoint (set AZURE_OPENAI_ENDPOINT)", ErrNoEndpoint}
		}
		if _, err := url.ParseRequestURI(ep); err != nil {
			return nil, fmt.Errorf("azure: endpoint is not a URL")
		}
		ver := cfg.AzureAPIVersion
		if ver == "" {
			ver = DefaultAzureAPIVersion
		}
		// The deployment goes into the path per call (see Complete), the
		// key into the api-key header: Azure's own REST contract. No
		// Authorization header is sent, so no OpenAI key can leak here.
		c.azureEndpoint = strings.TrimRight(ep, "/")
		opts = append(opts, option.WithBaseURL(c.azureEndpoint+"/openai/"),
			option.WithQuery("api-version", ver), option.WithHeader("api-key", key))
		c.azure = true
		c.scrub = newScrubber(key)
	default:
		envs := []string{"OPENAI_API_KEY"}
		if cfg.Backend != runmodel.BackendOpenAI {
			// local servers: never send an OpenAI key to them by accident
			envs = []string{"VLLM_API_KEY"}
		}
		key, err := cfg.apiKey(envs...)
		if err != nil {
			return nil, err
		}
		ep := cfg.Endpoint
		if ep == "" {
			if cfg.Backend != runmodel.BackendOpenAI {
				return nil, &missingError{string(cfg.Backend) + ": no endpoint (the server's base URL, e.g. http://127.0.0.1:8000/v1)", ErrNoEndpoint}
			}
			ep = DefaultOpenAIEndpoint
		}
		if _, err := url.ParseRequestURI(ep); err != nil {
			return nil, fmt.Errorf("%s: endpoint is not a URL", cfg.Backend)
		}
		if key == "" {
			if ep == DefaultOpenAIEndpoint {
				return nil, &missingError{"openai: no API key (set OPENAI_API_KEY)", ErrNoCredentials}
			}
			key = placeholderKey
		}
		opts = append(opts, option.WithBaseURL(strings.TrimRight(ep, "/")+"/"), option.WithAPIKey(key))
		c.scrub = newScrubber(key)
	}
	c.svc = openai.NewChatCompletionService(opts...)
	c.models = openai.NewModelService(opts...)
	return c, nil
}

func (c *openaiClient) Complete(ctx context.Context, req *Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, ContextError(ctx, err)
	}
	body := chatBody(req)
	var raw []byte
	opts := []option.RequestOption{
		// The SDK serialises the (empty) params first; this replaces them.
		option.WithRequestBody("application/json", body.reader()),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			r.ContentLength = body.size // a streamed body still gets a Content-Length
			return next(r)
		}),
		option.WithResponseBodyInto(&raw),
	}
	if c.azure {
		opts = append(opts, option.WithBaseURL(c.azureBase(req.Model)))
	}
	_, err := c.svc.New(ctx, openai.ChatCompletionNewParams{}, opts...)
	if err != nil {
		if ce := tooLarge(err); ce != nil {
			return nil, ce
		}
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			var h http.Header
			if apiErr.Response != nil {
				h = apiErr.Response.Header
			}
			msg := apiErr.Message
			if msg == "" {
				msg = apiErr.RawJSON()
			}
			return nil, statusError(apiErr.StatusCode, h, msg, c.scrub)
		}
		return nil, transportError(ctx, err, c.scrub)
	}
	return decodeChatCompletion(raw, c.scrub)
}

// Redactions implements Redactor.
func (c *openaiClient) Redactions() int64 { return c.scrub.redactions() }

// azureBase is the per-deployment base URL; the SDK appends
// "chat/completions" and the api-version query.
func (c *openaiClient) azureBase(deployment string) string {
	return c.azureEndpoint + "/openai/deployments/" + url.PathEscape(deployment) + "/"
}

// chatCompletion is the part of a Chat Completions reply we read.
type chatCompletion struct {
	Choices []struct {
		Message struct {
			Content          json.RawMessage `json:"content"`
			ReasoningContent *string         `json:"reasoning_content"`
			Reasoning        *string         `json:"reasoning"`
			Refusal          *string         `json:"refusal"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

// decodeChatCompletion maps a 2xx body. Not JSON, or no choices, is a
// malformed (retryable) reply; missing or null content is an empty answer.
func decodeChatCompletion(raw []byte, s scrubber) (*Response, error) {
	var cc chatCompletion
	if err := json.Unmarshal(raw, &cc); err != nil {
		return nil, &CallError{Kind: KindMalformed, Status: 200, Msg: "reply body is not a valid chat completion: " + s.clean(err.Error())}
	}
	if len(cc.Choices) == 0 {
		return nil, &CallError{Kind: KindMalformed, Status: 200, Msg: "reply has no choices"}
	}
	ch := cc.Choices[0]
	text, err := contentText(ch.Message.Content)
	if err != nil {
		return nil, &CallError{Kind: KindMalformed, Status: 200, Msg: "reply content: " + s.clean(err.Error())}
	}
	r := &Response{Text: s.redact(text)}
	switch {
	case ch.Message.ReasoningContent != nil:
		r.Reasoning = s.redact(*ch.Message.ReasoningContent)
	case ch.Message.Reasoning != nil:
		r.Reasoning = s.redact(*ch.Message.Reasoning)
	}
	if ch.FinishReason != nil {
		r.FinishReason = mapOpenAIFinish(*ch.FinishReason)
	}
	if u := cc.Usage; u != nil {
		r.Usage = &runmodel.Usage{Input: u.PromptTokens, Output: u.CompletionTokens, Total: u.TotalTokens}
		if u.PromptTokensDetails != nil {
			r.Usage.CachedInput = u.PromptTokensDetails.CachedTokens
		}
		if u.CompletionTokensDetails != nil {
			r.Usage.Thinking = u.CompletionTokensDetails.ReasoningTokens
		}
	}
	return r, nil
}

// contentText accepts the content as a string, null/absent (empty
// answer), or an array of parts whose text parts are concatenated (some
// compatible servers reply that way).
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content is neither a string nor a list of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

func mapOpenAIFinish(s string) string {
	switch s {
	case "stop", "length", "content_filter":
		return s
	case "":
		return ""
	}
	return FinishOther
}
