package runmodel

import (
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

func mustSampling(t *testing.T, backend string) Sampling {
	t.Helper()
	s, err := DefaultSampling(backend)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
