package provider

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func ptrF(v float64) *float64 { return &v }
func ptrI(v int64) *int64     { return &v }

// Apply puts command-line settings over a backend's sampling: the
// max-tokens setting lands in the member the backend sends, extra
// members become one canonical object, and what a backend cannot send is
// refused rather than dropped.
func TestSamplingApply(t *testing.T) {
	no := false
	qwenNoThink := func() Sampling { s := mustSampling(t, BackendVLLM); s.EnableThinking = &no; return s }
	cases := []struct {
		name    string
		backend string
		base    Sampling
		o       Overrides
		want    string // json of the result
		err     string
	}{
		{"nothing", BackendVLLM, mustSampling(t, BackendVLLM), Overrides{}, `{"temperature":0,"top_p":1,"max_completion_tokens":8192}`, ""},
		{"vllm", BackendVLLM, mustSampling(t, BackendVLLM), Overrides{Temperature: ptrF(0.2), TopP: ptrF(0.9), MaxTokens: ptrI(64), Seed: ptrI(-3)},
			`{"temperature":0.2,"top_p":0.9,"max_completion_tokens":64,"seed":-3}`, ""},
		{"openai_compat gets a temperature", BackendOpenAICompat, mustSampling(t, BackendOpenAICompat), Overrides{Temperature: ptrF(0)},
			`{"temperature":0,"max_tokens":8192}`, ""},
		{"openai max tokens", BackendOpenAI, mustSampling(t, BackendOpenAI), Overrides{MaxTokens: ptrI(100)},
			`{"temperature":1,"max_completion_tokens":100,"reasoning_effort":"medium","frequency_penalty":0,"presence_penalty":0}`, ""},
		{"azure max tokens", BackendAzure, mustSampling(t, BackendAzure), Overrides{MaxTokens: ptrI(100)},
			`{"temperature":1,"max_completion_tokens":100,"reasoning_effort":"medium","frequency_penalty":0,"presence_penalty":0}`, ""},
		{"gemini max tokens and seed", BackendGemini, mustSampling(t, BackendGemini), Overrides{MaxTokens: ptrI(100), Seed: ptrI(9)},
			`{"temperature":1,"max_output_tokens":100,"thinking_level":"medium","seed":9}`, ""},
		{"registry entry with two max members", BackendVLLM, Sampling{MaxTokens: ptrI(8192), MaxCompletionTokens: ptrI(4096)}, Overrides{MaxTokens: ptrI(10)},
			`{"max_tokens":10,"max_completion_tokens":10}`, ""},
		{"no max member", BackendOpenAI, Sampling{}, Overrides{MaxTokens: ptrI(10)}, `{"max_completion_tokens":10}`, ""},
		{"no max member gemini", BackendGemini, Sampling{}, Overrides{MaxTokens: ptrI(10)}, `{"max_output_tokens":10}`, ""},
		{"no max member vllm", BackendVLLM, Sampling{}, Overrides{MaxTokens: ptrI(10)}, `{"max_completion_tokens":10}`, ""},
		{"no max member openai_compat", BackendOpenAICompat, Sampling{}, Overrides{MaxTokens: ptrI(10)}, `{"max_tokens":10}`, ""},
		{"extra members canonical", BackendVLLM, mustSampling(t, BackendVLLM),
			Overrides{ExtraBody: map[string]json.RawMessage{"top_k": json.RawMessage(" 20 "), "chat_template_kwargs": json.RawMessage(`{ "enable_thinking" : false }`)}},
			`{"temperature":0,"top_p":1,"max_completion_tokens":8192,"extra_body":{"chat_template_kwargs":{"enable_thinking":false},"top_k":20}}`, ""},
		{"extra on openai", BackendOpenAI, Sampling{}, Overrides{ExtraBody: map[string]json.RawMessage{"user": json.RawMessage(`"me"`)}},
			`{"extra_body":{"user":"me"}}`, ""},
		{"extra on gemini", BackendGemini, mustSampling(t, BackendGemini), Overrides{ExtraBody: map[string]json.RawMessage{"top_k": json.RawMessage(`1`)}},
			"", "only OpenAI-compatible backends"},
		{"baseline", BackendBaseline, Sampling{}, Overrides{Seed: ptrI(1)}, "", "baseline backend samples nothing"},
		{"reserved", BackendVLLM, Sampling{}, Overrides{ExtraBody: map[string]json.RawMessage{"messages": json.RawMessage(`[]`)}}, "", "messages is a core request member"},
		{"invalid value", BackendVLLM, Sampling{}, Overrides{ExtraBody: map[string]json.RawMessage{"top_k": json.RawMessage(`x`)}}, "", "top_k: value is not valid JSON"},
		{"thinking toggle", BackendVLLM, qwenNoThink(), Overrides{ExtraBody: map[string]json.RawMessage{"chat_template_kwargs": json.RawMessage(`{}`)}}, "", "thinking_toggle"},
		{"gemini seed range", BackendGemini, Sampling{}, Overrides{Seed: ptrI(1 << 40)}, "", "32-bit"},
		{"out of range", BackendVLLM, Sampling{}, Overrides{Temperature: ptrF(3)}, "", "sampling.temperature 3 is outside [0, 2]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.base.Apply(tc.backend, tc.o)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
	if _, err := mustSampling(t, BackendGemini).Apply(BackendGemini, Overrides{ExtraBody: map[string]json.RawMessage{"a": json.RawMessage(`1`)}}); !errors.Is(err, ErrNoExtraBody) {
		t.Errorf("gemini extra body: %v, want ErrNoExtraBody", err)
	}
}

// Sampling stays comparable (a struct key, ==) and a set of extra members
// reads back from JSON in canonical form whatever its spacing and order.
func TestExtraBodyJSON(t *testing.T) {
	var s Sampling
	if err := json.Unmarshal([]byte(`{"extra_body":{"top_k": 20, "a":{"x" : [1, 2]}}}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.ExtraBody != `{"a":{"x":[1,2]},"top_k":20}` {
		t.Errorf("extra body %s", s.ExtraBody)
	}
	if s != (Sampling{ExtraBody: `{"a":{"x":[1,2]},"top_k":20}`}) {
		t.Error("not equal to its canonical form")
	}
	if err := json.Unmarshal([]byte(`{"extra_body":[1]}`), &s); err == nil {
		t.Error("an array was accepted as extra_body")
	}
	if b, _ := json.Marshal(Sampling{}); string(b) != `{}` {
		t.Errorf("empty sampling marshals as %s", b)
	}
}

// The Chat Completions body carries seed and the extra members at the top
// level with their own JSON types, after the sampling members.
func TestOpenAIBodyExtraMembers(t *testing.T) {
	s, err := mustSampling(t, BackendVLLM).Apply(BackendVLLM, Overrides{Temperature: ptrF(0.2), Seed: ptrI(7),
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
	s := mustSampling(t, BackendGemini)
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
		o       Overrides
		want    string
		notWant string
	}{
		{BackendVLLM, Overrides{}, `"max_completion_tokens":8192`, `"max_tokens"`},
		{BackendVLLM, Overrides{MaxTokens: ptrI(77)}, `"max_completion_tokens":77`, `"max_tokens"`},
		{BackendOpenAICompat, Overrides{}, `"max_tokens":8192`, `"max_completion_tokens"`},
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
