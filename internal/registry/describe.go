package registry

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// ModelInfo is one alias as `chexpercept models --json` prints it. The
// key order is the field order and is documented in docs/evaluation.md:
// add keys at the end only.
type ModelInfo struct {
	Alias       string            `json:"alias"`
	DisplayName string            `json:"display_name"`
	Provider    string            `json:"provider"`
	Backend     string            `json:"backend"`
	ModelID     string            `json:"model_id"`
	Domain      string            `json:"domain"` // "" when the entry has none
	Quirks      []string          `json:"quirks"` // [] when none
	Sampling    runmodel.Sampling `json:"sampling"`
	Price       *PriceInfo        `json:"price"` // null: unpriced
	VLLM        *VLLMInfo         `json:"vllm"`  // null: not an open model
	Base        string            `json:"base"`  // a medical model's general-domain base alias; "" when none
}

// PriceInfo is the price entry that applies to a model id.
type PriceInfo struct {
	Key         string  `json:"key"` // the price-table key that matched the model id
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cached_input"`
	Output      float64 `json:"output"`
}

// VLLMInfo is how an open model is served with vLLM.
type VLLMInfo struct {
	MaxModelLen     *int     `json:"max_model_len"`
	ImageLimit      *int     `json:"image_limit"`
	TrustRemoteCode bool     `json:"trust_remote_code"`
	TPDivisorHint   *int     `json:"tp_divisor_hint"`
	Argv            []string `json:"argv"`        // vllm serve MODEL_ID flags…, one word each; [] when unsupported
	Serve           string   `json:"serve"`       // Argv as a shell command line; "" when unsupported
	MinVersion      string   `json:"min_version"` // first vLLM release for the architecture; "" when not recorded
	Unsupported     string   `json:"unsupported"` // why standard vLLM cannot serve it; "" when it can
}

// Describe gathers what `chexpercept models` prints about e: the sampling
// sent per call (as manifest.json records it, thinking left on), the
// price entry eval would use, and for an open model the vLLM serve
// command.
func Describe(e Entry, prices *Prices) (ModelInfo, error) {
	s, err := e.SamplingParams(false)
	if err != nil {
		return ModelInfo{}, fmt.Errorf("alias %s: %w", e.Alias, err)
	}
	m := ModelInfo{Alias: e.Alias, DisplayName: e.DisplayName, Provider: e.Provider, Backend: e.Backend,
		ModelID: e.ModelID, Domain: e.Domain, Quirks: append([]string{}, e.Quirks...), Sampling: s, Base: e.Base}
	if e.Backend != runmodel.BackendBaseline {
		if key, p, ok := prices.Lookup(e.ModelID); ok {
			m.Price = &PriceInfo{Key: key, Input: p.Input, CachedInput: p.CachedInput, Output: p.Output}
		}
	}
	if e.Provider == "opensource" {
		m.VLLM = &VLLMInfo{MaxModelLen: e.MaxModelLen, ImageLimit: e.ImageLimit, TrustRemoteCode: e.TrustRemoteCode,
			TPDivisorHint: e.TPDivisorHint, Argv: []string{}, MinVersion: e.VLLMMinVersion, Unsupported: e.VLLMUnsupported}
		// A model standard vLLM cannot load gets no command that would
		// not start.
		if e.VLLMUnsupported == "" {
			argv := VLLMServeArgv(e)
			quoted := make([]string, len(argv))
			for i, a := range argv {
				quoted[i] = textsafe.ShellQuote(a)
			}
			m.VLLM.Argv, m.VLLM.Serve = argv, strings.Join(quoted, " ")
		}
	}
	return m, nil
}

// VLLMServeArgv is the vllm serve command for an open model, spelled as
// docs/evaluation.md and deploy/kubernetes/vllm.yaml spell it. The model
// id is served under its own name, which is what eval sends as "model".
// No reasoning parser: the reply content must hold the raw text (spec
// protocol.md §11). The tensor-parallel hint is no flag (the size depends
// on the GPUs); the command lines print it as a comment.
func VLLMServeArgv(e Entry) []string {
	argv := []string{"vllm", "serve", e.ModelID}
	if e.MaxModelLen != nil {
		argv = append(argv, "--max-model-len", strconv.Itoa(*e.MaxModelLen))
	}
	if e.ImageLimit != nil {
		argv = append(argv, "--limit-mm-per-prompt", fmt.Sprintf(`{"image": %d}`, *e.ImageLimit))
	}
	if e.TrustRemoteCode {
		argv = append(argv, "--trust-remote-code")
	}
	return argv
}

// ServeLine is the copy-paste line of an open model: the command, then a
// comment naming the alias, the vLLM release it needs and the
// tensor-parallel hint; for a model standard vLLM cannot serve, a comment
// saying why instead. m.VLLM must not be nil.
func (m ModelInfo) ServeLine() string {
	v := m.VLLM
	if v.Unsupported != "" {
		return "# " + m.Alias + " (" + m.ModelID + "): not servable by standard vLLM: " + v.Unsupported
	}
	line := v.Serve + "  # " + m.Alias
	if v.MinVersion != "" {
		line += "; vLLM >= " + v.MinVersion
	}
	if v.TPDivisorHint != nil {
		line += fmt.Sprintf("; --tensor-parallel-size must divide %d", *v.TPDivisorHint)
	}
	return line
}

// WriteModelsJSON writes infos as `chexpercept models --json` prints
// them: a JSON array indented by two spaces, then a newline.
func WriteModelsJSON(w io.Writer, infos []ModelInfo) error {
	b, err := json.MarshalIndent(infos, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
