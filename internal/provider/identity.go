package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"

	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// BaselineOwner is the owned_by of serve-baseline's model entry. Such an
// entry answers any model id, so the preflight accepts it for any.
const BaselineOwner = runmodel.BaselineOwner

// maxPreflightBytes caps the preflight's reply: a model list of a few
// hundred entries is well under a megabyte.
const maxPreflightBytes = 4 << 20

// preflightCap is the preflight's reply cap: maxPreflightBytes, or the
// run's own cap when that is smaller.
func preflightCap(maxReply int64) int64 {
	if maxReply > 0 && maxReply < maxPreflightBytes {
		return maxReply
	}
	return maxPreflightBytes
}

// maxIdentityText bounds each text the server reports; longer ones are
// cut, so that a hostile server cannot bloat the manifest.
const maxIdentityText = 512

// PreflightError is a failed preflight. Reason is one line without
// credentials; Unreachable, Refused and NotServed tell the common causes
// apart (none is set for other failures).
type PreflightError struct {
	Reason      string
	Unreachable bool // no HTTP reply at all
	Refused     bool // HTTP 401 or 403: the key was refused
	NotServed   bool // the server does not serve the model id
	NoEndpoint  bool // the server has no models endpoint (HTTP 404/405 on the list)
}

func (e *PreflightError) Error() string { return e.Reason }

// Sentinels a PreflightError matches with errors.Is, for the command's
// hints.
var (
	ErrNoModelsEndpoint = errors.New("the server has no models endpoint")
	ErrModelNotServed   = errors.New("the server does not serve the model")
)

func (e *PreflightError) Is(target error) bool {
	return (target == ErrNoModelsEndpoint && e.NoEndpoint) || (target == ErrModelNotServed && e.NotServed)
}

// PreflightTimeout bounds one endpoint's preflight.
const PreflightTimeout = 10 * time.Second

// preflightFailure maps a failed lookup to a PreflightError.
func preflightFailure(ctx context.Context, err error, status int, msg string, s scrubber, what string) *PreflightError {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &PreflightError{Refused: true, Reason: fmt.Sprintf("the API key was refused (HTTP %d)", status)}
	case status != 0:
		m := s.clean(msg)
		if m == "" {
			m = http.StatusText(status)
		}
		return &PreflightError{Reason: fmt.Sprintf("%s failed (HTTP %d): %s", what, status, m)}
	}
	if ce := tooLarge(err); ce != nil {
		return &PreflightError{Reason: fmt.Sprintf("%s: %s", what, ce.Msg)}
	}
	if ce := redirected(err); ce != nil {
		return &PreflightError{Reason: fmt.Sprintf("%s: %s", what, s.clean(ce.Msg))}
	}
	ce := transportError(ctx, err, s)
	if ce.Kind == KindTimeout {
		return &PreflightError{Unreachable: true, Reason: fmt.Sprintf("unreachable: no reply within %s", PreflightTimeout)}
	}
	return &PreflightError{Unreachable: true, Reason: "unreachable: " + ce.Msg}
}

// modelEntry is the part of a model-list entry the identity uses:
// OpenAI's members, vLLM's root and max_model_len, serve-baseline's
// policy and policy_seed.
type modelEntry struct {
	ID          string  `json:"id"`
	OwnedBy     *string `json:"owned_by"`
	Root        *string `json:"root"`
	MaxModelLen *int64  `json:"max_model_len"`
	Policy      *string `json:"policy"`
	PolicySeed  *int64  `json:"policy_seed"`
}

func (e modelEntry) identity(s scrubber) runmodel.Identity {
	id := runmodel.Identity{Verified: true, Source: runmodel.IdentityModelsList, ID: identityText(e.ID, s), MaxModelLen: e.MaxModelLen, PolicySeed: e.PolicySeed}
	if e.OwnedBy != nil {
		id.OwnedBy = identityText(*e.OwnedBy, s)
	}
	if e.Root != nil {
		id.Root = identityText(*e.Root, s)
	}
	if e.Policy != nil {
		id.Policy = identityText(*e.Policy, s)
	}
	return id.Seal()
}

// identityText is a text of the server's reply as the identity keeps it:
// without the API key in any of its forms (a server may echo it, and the
// identity is printed and written to the manifest), and clipped.
func identityText(v string, s scrubber) *string {
	t := textsafe.Clip(s.redact(v), maxIdentityText)
	return &t
}

// matchModel finds model in a models list reply. serve-baseline's single
// entry (owned_by BaselineOwner) answers any model id.
func matchModel(raw []byte, model string, s scrubber) (runmodel.Identity, error) {
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &list); err != nil || list.Data == nil {
		return runmodel.Identity{}, &PreflightError{Reason: "GET /models: the reply is not a model list"}
	}
	var ids []string
	var baseline []modelEntry
	for _, d := range list.Data {
		var e modelEntry
		if err := json.Unmarshal(d, &e); err != nil {
			return runmodel.Identity{}, &PreflightError{Reason: "GET /models: an entry is not a model: " + s.clean(err.Error())}
		}
		if e.ID == model {
			return e.identity(s), nil
		}
		ids = append(ids, e.ID)
		if e.OwnedBy != nil && *e.OwnedBy == BaselineOwner {
			baseline = append(baseline, e)
		}
	}
	if len(baseline) == 1 && len(list.Data) == 1 {
		return baseline[0].identity(s), nil
	}
	return runmodel.Identity{}, &PreflightError{NotServed: true, Reason: fmt.Sprintf("does not serve model %s (it serves %s)", strconv.Quote(model), servedList(ids, s))}
}

// servedList names at most five served ids for a message.
func servedList(ids []string, s scrubber) string {
	if len(ids) == 0 {
		return "no model"
	}
	const show = 5
	var q []string
	for i, id := range ids {
		if i == show {
			q = append(q, fmt.Sprintf("and %d more", len(ids)-show))
			break
		}
		q = append(q, strconv.Quote(s.clean(textsafe.Clip(id, maxIdentityText))))
	}
	return strings.Join(q, ", ")
}

// Identify implements Identifier. OpenAI-compatible servers and OpenAI
// list their models (GET {endpoint}/models; vLLM and most compatible
// servers have no lookup of one model); Azure OpenAI is asked for the
// deployment through the SDK's model lookup.
func (c *openaiClient) Identify(ctx context.Context, model string) (runmodel.Identity, error) {
	ctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
	defer cancel()
	var raw []byte
	opts := []option.RequestOption{option.WithHTTPClient(c.preflightHTTP), option.WithResponseBodyInto(&raw)}
	var err error
	what := "GET /models"
	if c.azure {
		what = "model lookup"
		_, err = c.models.Get(ctx, model, opts...)
	} else {
		_, err = c.models.List(ctx, opts...)
	}
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			msg := apiErr.Message
			if msg == "" {
				msg = apiErr.RawJSON()
			}
			pe := preflightFailure(ctx, err, apiErr.StatusCode, msg, c.scrub, what)
			switch {
			case c.azure && apiErr.StatusCode == http.StatusNotFound:
				pe.NotServed, pe.Reason = true, fmt.Sprintf("does not serve deployment %s (HTTP 404)", strconv.Quote(model))
			case apiErr.StatusCode == http.StatusNotFound || apiErr.StatusCode == http.StatusMethodNotAllowed:
				pe.NoEndpoint = true
			}
			return runmodel.Identity{}, pe
		}
		return runmodel.Identity{}, preflightFailure(ctx, err, 0, "", c.scrub, what)
	}
	if c.azure {
		var e modelEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return runmodel.Identity{}, &PreflightError{Reason: "model lookup: the reply is not a model"}
		}
		id := e.identity(c.scrub)
		id.Source = runmodel.IdentityModelLookup
		return id.Seal(), nil
	}
	return matchModel(raw, model, c.scrub)
}

// Identify implements Identifier through the Gemini SDK's model lookup.
func (g *geminiClient) Identify(ctx context.Context, model string) (runmodel.Identity, error) {
	ctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
	defer cancel()
	m, err := g.pre.Models.Get(ctx, model, nil)
	if err != nil {
		var apiErr genai.APIError
		if errors.As(err, &apiErr) {
			pe := preflightFailure(ctx, err, apiErr.Code, apiErr.Message, g.scrub, "model lookup")
			if apiErr.Code == http.StatusNotFound {
				pe.NotServed, pe.Reason = true, fmt.Sprintf("does not serve model %s (HTTP 404)", strconv.Quote(model))
			}
			return runmodel.Identity{}, pe
		}
		return runmodel.Identity{}, preflightFailure(ctx, err, 0, "", g.scrub, "model lookup")
	}
	id := runmodel.Identity{Verified: true, Source: runmodel.IdentityModelLookup, ID: identityText(m.Name, g.scrub)}
	if m.Version != "" {
		id.Version = identityText(m.Version, g.scrub)
	}
	if m.InputTokenLimit != 0 {
		v := int64(m.InputTokenLimit)
		id.InputTokenLimit = &v
	}
	if m.OutputTokenLimit != 0 {
		v := int64(m.OutputTokenLimit)
		id.OutputTokenLimit = &v
	}
	return id.Seal(), nil
}
