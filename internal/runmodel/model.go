// Package runmodel is the model of a run: which model (Model), with which
// sampling (Sampling, ExtraBody), served by whom (Identity, Identifier)
// and at what price (Price of a call's Usage). It is a leaf: the model
// clients (provider), the runner (eval), the run directory (results), the
// response cache and the registry all import it, and it imports nothing
// of theirs, so that storing or reading a run links no model SDK.
package runmodel

// Backend names (spec protocol.md §11, §13): the wire protocol a model is
// reached through.
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

// Baseline policy names (spec protocol.md §11): the models of backend
// baseline, answered in process.
const (
	PolicyRandom = "random"
	PolicyFirst  = "first"
	PolicyOracle = "oracle"
)

// Policies lists the built-in policies.
var Policies = []string{PolicyRandom, PolicyFirst, PolicyOracle}

// Model is the resolved model of a run (registry entry or raw id).
type Model struct {
	Name         string   // alias, raw id, or baseline policy (summary run.model)
	Alias        string   // registry alias; "" for a raw id or a baseline
	Provider     string   // opensource | openai | azure | gemini | baseline
	Backend      string   // vllm | openai_compat | openai | azure | gemini | baseline
	ModelID      string   // id sent to the backend (policy name for baselines)
	Revision     string   // model revision if known
	Label        string   // directory-safe label of the run name
	Quirks       []string // registry quirk flags
	GLMBoxUnwrap bool     // parse rule A0
	Sampling     Sampling
	Price        *Price // nil: unpriced (cost null)
}

// Price is USD per million tokens (spec protocol.md §12).
type Price struct {
	Input       float64
	CachedInput float64
	Output      float64
}

// Cost of one call's usage (§12): uncached input at the input price,
// cached input at the cached price, output (thinking included) at the
// output price.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.Input-u.CachedInput)*p.Input + float64(u.CachedInput)*p.CachedInput + float64(u.Output)*p.Output) / 1e6
}

// Usage is the token accounting of one call, mapped per spec protocol.md
// §11.
type Usage struct {
	Input       int64 `json:"input_tokens"`
	CachedInput int64 `json:"cached_input_tokens"`
	Output      int64 `json:"output_tokens"` // includes thinking
	Thinking    int64 `json:"thinking_tokens"`
	Total       int64 `json:"total_tokens"`
}
