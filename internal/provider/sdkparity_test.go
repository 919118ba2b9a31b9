package provider

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// buildParams translates a Request. System and assistant messages are
// plain strings; a user message is a plain string when it has no images,
// else an array of parts: the text, then one image_url part per image as
// a PNG data URL with no detail field.
func sdkParams(req *Request) openai.ChatCompletionNewParams {
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages))
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			msgs = append(msgs, openai.SystemMessage(m.Text))
		case RoleAssistant:
			msgs = append(msgs, openai.AssistantMessage(m.Text))
		default:
			if len(m.Images) == 0 {
				msgs = append(msgs, openai.UserMessage(m.Text))
				continue
			}
			parts := make([]openai.ChatCompletionContentPartUnionParam, 0, 1+len(m.Images))
			parts = append(parts, openai.TextContentPart(m.Text))
			for _, im := range m.Images {
				parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: im.DataURL()}))
			}
			msgs = append(msgs, openai.UserMessage(parts))
		}
	}
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(req.Model), Messages: msgs}
	s := req.Sampling
	if s.Temperature != nil {
		p.Temperature = openai.Float(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = openai.Float(*s.TopP)
	}
	if s.MaxTokens != nil {
		p.MaxTokens = openai.Int(*s.MaxTokens)
	}
	if s.MaxCompletionTokens != nil {
		p.MaxCompletionTokens = openai.Int(*s.MaxCompletionTokens)
	}
	if s.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(s.ReasoningEffort)
	}
	if s.FrequencyPenalty != nil {
		p.FrequencyPenalty = openai.Float(*s.FrequencyPenalty)
	}
	if s.PresencePenalty != nil {
		p.PresencePenalty = openai.Float(*s.PresencePenalty)
	}
	if s.Seed != nil {
		p.Seed = openai.Int(*s.Seed)
	}
	extra := map[string]any{}
	if s.EnableThinking != nil {
		extra["chat_template_kwargs"] = map[string]any{"enable_thinking": *s.EnableThinking}
	}
	for k, v := range s.ExtraBody.Members() {
		extra[k] = v
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	return p
}

// TestBodyMatchesSDK: our hand-written body is, as JSON, exactly what the
// official SDK would send for the same request, for every backend's
// sampling and with and without chat_template_kwargs.
func TestBodyMatchesSDK(t *testing.T) {
	off := false
	extra := runmodel.Overrides{Seed: ptrI(11), ExtraBody: map[string]json.RawMessage{"top_k": json.RawMessage(`20`),
		"repetition_penalty": json.RawMessage(`1.05`), "stop": json.RawMessage(`["</s>"]`)}}
	for _, backend := range []string{runmodel.BackendVLLM, runmodel.BackendOpenAICompat, runmodel.BackendOpenAI, runmodel.BackendAzure} {
		for _, v := range []struct {
			think *bool
			o     runmodel.Overrides
		}{{nil, runmodel.Overrides{}}, {&off, runmodel.Overrides{}}, {nil, extra}} {
			think := v.think
			s, err := mustSampling(t, backend).Apply(backend, v.o)
			if err != nil {
				t.Fatal(err)
			}
			s.EnableThinking = think
			req := conversation(s)
			req.Messages[0].Text = "quotes \" <tags> & unicode é \u2028 \\ end"
			sdk, err := json.Marshal(sdkParams(req))
			if err != nil {
				t.Fatal(err)
			}
			ours := chatBody(req)
			if int64(len(ours.bytes())) != ours.size {
				t.Errorf("size %d != body length %d", ours.size, len(ours.bytes()))
			}
			var a, b any
			if err := json.Unmarshal(sdk, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(ours.bytes(), &b); err != nil {
				t.Fatalf("our body is not JSON: %v\n%s", err, ours.bytes())
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s think=%v:\nsdk  %s\nours %s", backend, think, sdk, ours.bytes())
			}
		}
	}
}
