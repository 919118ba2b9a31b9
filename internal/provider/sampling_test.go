package provider

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/runmodel"
)

func ptrF(v float64) *float64 { return &v }
func ptrI(v int64) *int64     { return &v }

// The Chat Completions body carries seed and the extra members at the top
// level with their own JSON types, after the sampling members.
func TestOpenAIBodyExtraMembers(t *testing.T) {
	s, err := mustSampling(t, runmodel.BackendVLLM).Apply(runmodel.BackendVLLM, runmodel.Overrides{Temperature: ptrF(0.2), Seed: ptrI(7),
		ExtraBody: map[string]json.RawMessage{"top_k": json.RawMessage(`20`), "chat_template_kwargs": json.RawMessage(`{"enable_thinking":false}`),
			"guided_choice": json.RawMessage(`["1","2"]`)}})
	if err != nil {
		t.Fatal(err)
	}
	b := chatBody(conversation(s))
	body := string(b.bytes())
	tail := body[strings.Index(body, `],"temperature"`):]
	want := `],"temperature":0.2,"top_p":1,"max_completion_tokens":8192,"seed":7,"chat_template_kwargs":{"enable_thinking":false},"guided_choice":["1","2"],"top_k":20}`
	if tail != want {
		t.Errorf("body tail\n got %s\nwant %s", tail, want)
	}
	if int64(len(b.bytes())) != b.size {
		t.Errorf("size %d, body %d bytes", b.size, len(b.bytes()))
	}
}

// Gemini sends the seed, and refuses extra members instead of dropping
// them: the run records what it sends.
func TestGeminiSeedAndExtraBody(t *testing.T) {
	srv, cap := fakeServer(t, reply(200, geminiOK))
	c := geminiClientFor(t, srv.URL, Config{})
	s := mustSampling(t, runmodel.BackendGemini)
	s.Seed = ptrI(42)
	if _, err := c.Complete(context.Background(), conversation(s)); err != nil {
		t.Fatal(err)
	}
	_, _, _, body := cap.get()
	var got struct {
		GenerationConfig map[string]any `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &got); err != nil || got.GenerationConfig["seed"] != 42.0 {
		t.Errorf("generationConfig %v (%v), want seed 42", got.GenerationConfig, err)
	}
	s.ExtraBody = `{"top_k":1}`
	_, err := c.Complete(context.Background(), conversation(s))
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != KindClient || !strings.Contains(err.Error(), "extra body") {
		t.Errorf("extra body on gemini: %v", err)
	}
}

// TestVLLMSendsMaxCompletionTokens: vLLM's OpenAI-compatible server takes
// max_completion_tokens and deprecates max_tokens, so the vllm backend
// sends the former by default and for --max-tokens; openai_compat keeps
// max_tokens (servers that predate the newer member).
func TestVLLMSendsMaxCompletionTokens(t *testing.T) {
	for _, tc := range []struct {
		backend string
		o       runmodel.Overrides
		want    string
		notWant string
	}{
		{runmodel.BackendVLLM, runmodel.Overrides{}, `"max_completion_tokens":8192`, `"max_tokens"`},
		{runmodel.BackendVLLM, runmodel.Overrides{MaxTokens: ptrI(77)}, `"max_completion_tokens":77`, `"max_tokens"`},
		{runmodel.BackendOpenAICompat, runmodel.Overrides{}, `"max_tokens":8192`, `"max_completion_tokens"`},
	} {
		s, err := mustSampling(t, tc.backend).Apply(tc.backend, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		body := string(chatBody(conversation(s)).bytes())
		if !strings.Contains(body, tc.want) || strings.Contains(body, tc.notWant) {
			t.Errorf("%s %+v: body sampling %s, want %s and no %s", tc.backend, tc.o, body[strings.Index(body, `],"`)+2:], tc.want, tc.notWant)
		}
	}
}
