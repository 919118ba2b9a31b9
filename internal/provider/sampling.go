package provider

import "fmt"

// Backend names (spec §11, §13).
const (
	BackendVLLM         = "vllm"
	BackendOpenAICompat = "openai_compat"
	BackendOpenAI       = "openai"
	BackendAzure        = "azure"
	BackendGemini       = "gemini"
	BackendBaseline     = "baseline"
)

// Backends lists every backend name.
var Backends = []string{BackendVLLM, BackendOpenAICompat, BackendOpenAI, BackendAzure, BackendGemini, BackendBaseline}

// Sampling is every generation parameter a backend may send. A nil field
// is not sent at all, so "unset" and "zero" stay distinct (openai_compat
// must send max_tokens only, while vllm must send temperature 0). The json
// names are the wire names and are what the manifest records; the yaml
// names are what models.yaml overrides use.
type Sampling struct {
	Temperature         *float64 `json:"temperature,omitempty" yaml:"temperature"`
	TopP                *float64 `json:"top_p,omitempty" yaml:"top_p"`
	MaxTokens           *int64   `json:"max_tokens,omitempty" yaml:"max_tokens"`
	MaxCompletionTokens *int64   `json:"max_completion_tokens,omitempty" yaml:"max_completion_tokens"`
	MaxOutputTokens     *int64   `json:"max_output_tokens,omitempty" yaml:"max_output_tokens"` // gemini
	ReasoningEffort     string   `json:"reasoning_effort,omitempty" yaml:"reasoning_effort"`   // openai/azure
	ThinkingLevel       string   `json:"thinking_level,omitempty" yaml:"thinking_level"`       // gemini
	FrequencyPenalty    *float64 `json:"frequency_penalty,omitempty" yaml:"frequency_penalty"`
	PresencePenalty     *float64 `json:"presence_penalty,omitempty" yaml:"presence_penalty"`
	// EnableThinking is sent as chat_template_kwargs {"enable_thinking": v}
	// (vLLM/SGLang chat templates); set only for thinking_toggle models
	// under --no-thinking.
	EnableThinking *bool `json:"enable_thinking,omitempty" yaml:"enable_thinking"`
}

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

// DefaultSampling returns the parameters spec §11 sends for backend.
func DefaultSampling(backend string) (Sampling, error) {
	switch backend {
	case BackendVLLM:
		return Sampling{Temperature: f64(0), TopP: f64(1), MaxTokens: i64(8192)}, nil
	case BackendOpenAICompat:
		return Sampling{MaxTokens: i64(8192)}, nil
	case BackendOpenAI, BackendAzure:
		return Sampling{Temperature: f64(1), ReasoningEffort: "medium", MaxCompletionTokens: i64(8192),
			FrequencyPenalty: f64(0), PresencePenalty: f64(0)}, nil
	case BackendGemini:
		return Sampling{Temperature: f64(1), ThinkingLevel: "medium", MaxOutputTokens: i64(8192)}, nil
	case BackendBaseline:
		return Sampling{}, nil
	}
	return Sampling{}, fmt.Errorf("unknown backend %q (want one of vllm, openai_compat, openai, azure, gemini, baseline)", backend)
}

// Merge returns s with every field that is set in o replacing s's.
func (s Sampling) Merge(o Sampling) Sampling {
	if o.Temperature != nil {
		s.Temperature = o.Temperature
	}
	if o.TopP != nil {
		s.TopP = o.TopP
	}
	if o.MaxTokens != nil {
		s.MaxTokens = o.MaxTokens
	}
	if o.MaxCompletionTokens != nil {
		s.MaxCompletionTokens = o.MaxCompletionTokens
	}
	if o.MaxOutputTokens != nil {
		s.MaxOutputTokens = o.MaxOutputTokens
	}
	if o.ReasoningEffort != "" {
		s.ReasoningEffort = o.ReasoningEffort
	}
	if o.ThinkingLevel != "" {
		s.ThinkingLevel = o.ThinkingLevel
	}
	if o.FrequencyPenalty != nil {
		s.FrequencyPenalty = o.FrequencyPenalty
	}
	if o.PresencePenalty != nil {
		s.PresencePenalty = o.PresencePenalty
	}
	if o.EnableThinking != nil {
		s.EnableThinking = o.EnableThinking
	}
	return s
}

// Deterministic reports whether the call is greedy (temperature 0), the
// only kind the response cache may store (spec §11).
func (s Sampling) Deterministic() bool { return s.Temperature != nil && *s.Temperature == 0 }

// Validate checks ranges, so that a typo in a registry override fails at
// load time with the field's name instead of at the first call.
func (s Sampling) Validate() error {
	if s.Temperature != nil && (*s.Temperature < 0 || *s.Temperature > 2) {
		return fmt.Errorf("sampling.temperature %v is outside [0, 2]", *s.Temperature)
	}
	if s.TopP != nil && (*s.TopP <= 0 || *s.TopP > 1) {
		return fmt.Errorf("sampling.top_p %v is outside (0, 1]", *s.TopP)
	}
	for _, t := range []struct {
		name string
		v    *int64
	}{{"max_tokens", s.MaxTokens}, {"max_completion_tokens", s.MaxCompletionTokens}, {"max_output_tokens", s.MaxOutputTokens}} {
		if t.v != nil && *t.v <= 0 {
			return fmt.Errorf("sampling.%s must be positive, not %d", t.name, *t.v)
		}
	}
	for _, p := range []struct {
		name string
		v    *float64
	}{{"frequency_penalty", s.FrequencyPenalty}, {"presence_penalty", s.PresencePenalty}} {
		if p.v != nil && (*p.v < -2 || *p.v > 2) {
			return fmt.Errorf("sampling.%s %v is outside [-2, 2]", p.name, *p.v)
		}
	}
	switch s.ReasoningEffort {
	case "", "none", "minimal", "low", "medium", "high", "xhigh":
	default:
		return fmt.Errorf("sampling.reasoning_effort %q is not one of none, minimal, low, medium, high, xhigh", s.ReasoningEffort)
	}
	switch s.ThinkingLevel {
	case "", "minimal", "low", "medium", "high":
	default:
		return fmt.Errorf("sampling.thinking_level %q is not one of minimal, low, medium, high", s.ThinkingLevel)
	}
	return nil
}

// FormatNumber writes a parameter value the way it goes on the wire:
// shortest decimal, no exponent for ordinary values ("0", "0.95", "8192").
func FormatNumber(v float64) string { return num(v) }
