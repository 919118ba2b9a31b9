package runmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

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
	// Seed is the generation seed (eval --gen-seed); no backend sends
	// one by default (spec §11).
	Seed *int64 `json:"seed,omitempty" yaml:"seed"`
	// EnableThinking is sent as chat_template_kwargs {"enable_thinking": v}
	// (vLLM/SGLang chat templates); set only for thinking_toggle models
	// under --no-thinking.
	EnableThinking *bool `json:"enable_thinking,omitempty" yaml:"enable_thinking"`
	// ExtraBody holds free-form top-level members of an OpenAI-compatible
	// request body (vLLM's top_k, repetition_penalty,
	// chat_template_kwargs…), sent after the members above. Only the
	// command line sets them.
	ExtraBody ExtraBody `json:"extra_body,omitempty" yaml:"-"`
}

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

// DefaultSampling returns the parameters spec §11 sends for backend.
func DefaultSampling(backend string) (Sampling, error) {
	switch backend {
	case BackendVLLM:
		// vLLM's OpenAI-compatible server takes max_completion_tokens and
		// deprecates max_tokens, as OpenAI's API does.
		return Sampling{Temperature: f64(0), TopP: f64(1), MaxCompletionTokens: i64(8192)}, nil
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
	if o.Seed != nil {
		s.Seed = o.Seed
	}
	if o.EnableThinking != nil {
		s.EnableThinking = o.EnableThinking
	}
	if o.ExtraBody != "" {
		m := s.ExtraBody.Members()
		if m == nil {
			m = map[string]json.RawMessage{}
		}
		maps.Copy(m, o.ExtraBody.Members())
		s.ExtraBody = canonicalExtra(m)
	}
	return s
}

// Member is one parameter a Sampling sends: its name (the wire name;
// enable_thinking for the chat_template_kwargs member it becomes) and its
// value as Text shows it.
type Member struct{ Name, Value string }

// Members lists the parameters that are sent, in wire order, then the
// extra members sorted by name (values as compact JSON, strings
// unquoted).
func (s Sampling) Members() []Member {
	var out []Member
	f := func(name string, v *float64) {
		if v != nil {
			out = append(out, Member{name, strconv.FormatFloat(*v, 'g', -1, 64)})
		}
	}
	i := func(name string, v *int64) {
		if v != nil {
			out = append(out, Member{name, strconv.FormatInt(*v, 10)})
		}
	}
	str := func(name, v string) {
		if v != "" {
			out = append(out, Member{name, v})
		}
	}
	f("temperature", s.Temperature)
	f("top_p", s.TopP)
	i("max_tokens", s.MaxTokens)
	i("max_completion_tokens", s.MaxCompletionTokens)
	i("max_output_tokens", s.MaxOutputTokens)
	str("reasoning_effort", s.ReasoningEffort)
	str("thinking_level", s.ThinkingLevel)
	f("frequency_penalty", s.FrequencyPenalty)
	f("presence_penalty", s.PresencePenalty)
	i("seed", s.Seed)
	if s.EnableThinking != nil {
		out = append(out, Member{"enable_thinking", strconv.FormatBool(*s.EnableThinking)})
	}
	extra := s.ExtraBody.Members()
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		v := string(extra[k])
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		out = append(out, Member{k, v})
	}
	return out
}

// Text renders the parameters as "name=value" (Members), space-separated;
// "none" when nothing is sent. Reports show it per run.
func (s Sampling) Text() string {
	ms := s.Members()
	if len(ms) == 0 {
		return "none"
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Name + "=" + m.Value
	}
	return strings.Join(parts, " ")
}

// Deterministic reports whether the call is greedy (temperature 0), the
// only kind the response cache may store (spec §11).
func (s Sampling) Deterministic() bool { return s.Temperature != nil && *s.Temperature == 0 }

// Validate checks ranges, so that a typo in a registry override fails at
// load time with the field's name instead of at the first call.
func (s Sampling) Validate() error {
	// Written as !(inside) so that NaN, which compares false with
	// everything, is outside every range.
	if s.Temperature != nil && !(*s.Temperature >= 0 && *s.Temperature <= 2) {
		return fmt.Errorf("sampling.temperature %v is outside [0, 2]", *s.Temperature)
	}
	if s.TopP != nil && !(*s.TopP > 0 && *s.TopP <= 1) {
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
		if p.v != nil && !(*p.v >= -2 && *p.v <= 2) {
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
	if s.ExtraBody != "" {
		m := s.ExtraBody.Members()
		if m == nil {
			return errors.New("sampling.extra_body is not a JSON object")
		}
		if _, err := MakeExtraBody(m); err != nil {
			return fmt.Errorf("sampling.extra_body: %w", err)
		}
	}
	return nil
}

// reservedMembers are the request-body members an extra member may not
// name, with the reason: chexpercept writes them itself (an extra one
// would send the member twice, or send something other than what the run
// records), or they change the reply's shape (the reply reader takes
// one non-streamed choice).
var reservedMembers = map[string]string{
	"model":                 "is written by chexpercept (the model id)",
	"messages":              "is written by chexpercept (the conversation)",
	"temperature":           "has its own setting",
	"top_p":                 "has its own setting",
	"max_tokens":            "has its own setting",
	"max_completion_tokens": "has its own setting",
	"max_output_tokens":     "has its own setting",
	"seed":                  "has its own setting",
	"reasoning_effort":      "is set per model in the registry (sampling.reasoning_effort)",
	"frequency_penalty":     "is set per model in the registry (sampling.frequency_penalty)",
	"presence_penalty":      "is set per model in the registry (sampling.presence_penalty)",
	"stream":                "would stream the reply, which chexpercept reads whole",
	"stream_options":        "would stream the reply, which chexpercept reads whole",
	"n":                     "would ask for several choices; chexpercept reads one",
}

// CheckExtraKey checks the name of an extra request-body member: not
// empty and not reserved.
func CheckExtraKey(key string) error {
	if strings.TrimSpace(key) == "" {
		return fmt.Errorf("empty member name")
	}
	if strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0 {
		return fmt.Errorf("member name %q has spaces, control or format characters", key)
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("member name %q is not valid UTF-8", key)
	}
	// Servers differ in how they match member names (Go's encoding/json,
	// behind many proxies, ignores case), so "Model" counts as "model".
	if why, ok := reservedMembers[strings.ToLower(key)]; ok {
		return fmt.Errorf("%s is a core request member: it %s", key, why)
	}
	return nil
}

// Caps of the extra request members together: they are sent with every
// call and stored in the run manifest, which is read back on every
// restart.
const (
	MaxExtraBodyBytes = 64 << 10 // the compact object
	MaxExtraBodyDepth = 64       // nested arrays and objects in one value
)

// checkExtraValue checks one member's value: valid UTF-8 (invalid bytes
// would be sent as they are but recorded as U+FFFD, so the run's settings
// would not match what was sent), one JSON value, nested at most
// MaxExtraBodyDepth deep.
func checkExtraValue(v []byte) error {
	if !utf8.Valid(v) {
		return errors.New("value is not valid UTF-8")
	}
	if d := jsonDepth(v); d > MaxExtraBodyDepth {
		return fmt.Errorf("value is nested %d levels deep, more than %d", d, MaxExtraBodyDepth)
	}
	if !json.Valid(v) {
		return errors.New("value is not valid JSON")
	}
	return nil
}

// jsonDepth is the deepest nesting of arrays and objects in a JSON text
// (brackets inside strings do not count).
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escape := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escape:
				escape = false
			case c == '\\':
				escape = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// Overrides are generation settings that replace a model's defaults
// (eval's command line). A nil field keeps the default.
type Overrides struct {
	Temperature *float64
	TopP        *float64
	MaxTokens   *int64 // goes to the backend's own max-tokens member
	Seed        *int64
	ExtraBody   map[string]json.RawMessage
}

func (o Overrides) empty() bool {
	return o.Temperature == nil && o.TopP == nil && o.MaxTokens == nil && o.Seed == nil && len(o.ExtraBody) == 0
}

// ErrNoExtraBody is returned for extra body members on a backend whose
// request has no free-form body (gemini).
var ErrNoExtraBody = errors.New("only OpenAI-compatible backends (vllm, openai_compat, openai, azure) take extra body members")

// Apply returns s with o's settings replacing its own for backend.
// MaxTokens replaces every max-tokens member s sends, or with none goes
// to the backend's (max_completion_tokens for openai/azure/vllm,
// max_output_tokens for gemini, else max_tokens: openai_compat servers
// may predate max_completion_tokens). Extra
// members are stored compact; they are refused for gemini, when reserved
// (CheckExtraKey), and when chat_template_kwargs collides with the one
// the thinking_toggle quirk writes (EnableThinking). The baseline takes
// no settings at all.
func (s Sampling) Apply(backend string, o Overrides) (Sampling, error) {
	if o.empty() {
		return s, nil
	}
	if backend == BackendBaseline {
		return s, errors.New("the baseline backend samples nothing; generation settings do not apply to it")
	}
	if len(o.ExtraBody) > 0 && backend == BackendGemini {
		return s, fmt.Errorf("backend %s: %w", backend, ErrNoExtraBody)
	}
	if _, ok := o.ExtraBody["chat_template_kwargs"]; ok && s.EnableThinking != nil {
		return s, fmt.Errorf("chat_template_kwargs is already sent, with enable_thinking %v, for this model's thinking_toggle quirk; give enable_thinking in the extra member instead", *s.EnableThinking)
	}
	if o.Seed != nil && backend == BackendGemini && (*o.Seed < math.MinInt32 || *o.Seed > math.MaxInt32) {
		return s, fmt.Errorf("seed %d does not fit Gemini's 32-bit seed", *o.Seed)
	}
	add := Sampling{Temperature: o.Temperature, TopP: o.TopP, Seed: o.Seed}
	if o.MaxTokens != nil {
		// Every max-tokens member the model sends is replaced (a
		// registry entry may add one to the backend's); with none, the
		// backend's own member is sent.
		if s.MaxTokens != nil {
			add.MaxTokens = o.MaxTokens
		}
		if s.MaxCompletionTokens != nil {
			add.MaxCompletionTokens = o.MaxTokens
		}
		if s.MaxOutputTokens != nil {
			add.MaxOutputTokens = o.MaxTokens
		}
		if s.MaxTokens == nil && s.MaxCompletionTokens == nil && s.MaxOutputTokens == nil {
			switch backend {
			case BackendOpenAI, BackendAzure, BackendVLLM:
				add.MaxCompletionTokens = o.MaxTokens
			case BackendGemini:
				add.MaxOutputTokens = o.MaxTokens
			default:
				add.MaxTokens = o.MaxTokens
			}
		}
	}
	extra, err := MakeExtraBody(o.ExtraBody)
	if err != nil {
		return s, err
	}
	add.ExtraBody = extra
	s = s.Merge(add)
	return s, s.Validate()
}

// ExtraBody is a set of extra top-level request members: one compact JSON
// object with its members sorted by name, or "" for none. It is a string
// so that Sampling stays comparable and encodes the same everywhere (the
// cache key, the manifest); it marshals as the object itself.
type ExtraBody string

// MakeExtraBody checks the members (CheckExtraKey; each value one JSON
// value) and returns them as an ExtraBody.
func MakeExtraBody(m map[string]json.RawMessage) (ExtraBody, error) {
	folded := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := CheckExtraKey(k); err != nil {
			return "", err
		}
		if prev, dup := folded[strings.ToLower(k)]; dup {
			return "", fmt.Errorf("%s and %s name the same member for a server that ignores case", prev, k)
		}
		folded[strings.ToLower(k)] = k
		if err := checkExtraValue(m[k]); err != nil {
			return "", fmt.Errorf("%s: %w", k, err)
		}
	}
	e := canonicalExtra(m)
	if len(e) > MaxExtraBodyBytes {
		return "", fmt.Errorf("the extra members are %d bytes together, more than %d", len(e), MaxExtraBodyBytes)
	}
	return e, nil
}

// canonicalExtra writes valid members as a compact object sorted by name.
func canonicalExtra(m map[string]json.RawMessage) ExtraBody {
	if len(m) == 0 {
		return ""
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k) // a string always encodes
		b.Write(kb)
		b.WriteByte(':')
		if err := json.Compact(&b, m[k]); err != nil {
			b.WriteString("null") // unreachable: callers pass valid values
		}
	}
	b.WriteByte('}')
	return ExtraBody(b.String())
}

// Members decodes the set; nil when it is empty or not a JSON object.
func (e ExtraBody) Members() map[string]json.RawMessage {
	if e == "" {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(e), &m) != nil {
		return nil
	}
	return m
}

// Inner is the object's members without the braces, for splicing into a
// request body ("" when none).
func (e ExtraBody) Inner() string {
	if len(e) < 2 {
		return ""
	}
	return string(e[1 : len(e)-1])
}

// MarshalJSON writes the object itself (null when empty).
func (e ExtraBody) MarshalJSON() ([]byte, error) {
	if e == "" {
		return []byte("null"), nil
	}
	return []byte(e), nil
}

// UnmarshalJSON reads an object (or null) and keeps it in canonical form;
// member names are not checked here, so that any manifest stays readable.
func (e *ExtraBody) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("extra_body: want a JSON object of request members: %w", err)
	}
	*e = canonicalExtra(m)
	return nil
}
