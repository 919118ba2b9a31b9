// Package registry is the model registry and price table (spec
// protocol.md §12, §13, §9.1).
//
// The registry maps a CLI model name to everything the evaluator needs to
// call it: the provider (the run directory's prefix), the backend (the
// wire protocol, see package provider), the model id sent on the wire, the
// quirks the parser and sampler honour, and per-model sampling overrides.
// The 17 default entries are embedded (models.yaml); users extend or
// override them with their own YAML files of the same shape. A name that
// is no alias is a raw model id for the chosen provider and gets that
// backend's defaults. Routing is by each entry's explicit backend, never by
// substrings of its name.
//
// Prices (prices.yaml, USD per million tokens) are looked up by the
// longest key that is a substring of the lower-cased model id.
package registry

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	_ "embed"

	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/yamlerr"
)

//go:embed models.yaml
var defaultModels []byte

// Quirk flags (spec §13).
const (
	QuirkThinkingToggle = "thinking_toggle" // sends enable_thinking: false under --no-thinking
	QuirkGLMBoxUnwrap   = "glm_box_unwrap"  // enables parse rule A0
)

// Providers are the provider names (run-directory prefixes).
var Providers = []string{"opensource", "openai", "azure", "gemini", "baseline"}

// providerAliases are other spellings a user may give for a provider.
// Runs record the canonical name, so that a run made with either
// spelling has one run name and resumes, merges and reports as one.
var providerAliases = map[string]string{"vllm": "opensource"}

// CanonicalProvider returns the provider name prov stands for: itself,
// or the provider an alias names ("vllm" → "opensource").
func CanonicalProvider(prov string) string {
	if c, ok := providerAliases[prov]; ok {
		return c
	}
	return prov
}

var (
	domains = []string{"general", "medical", "proprietary"}
	quirks  = []string{QuirkThinkingToggle, QuirkGLMBoxUnwrap}
)

// Entry is one model. Raw is true for a synthetic entry made from a raw
// model id (no alias in the registry).
type Entry struct {
	Alias           string `yaml:"alias"`
	DisplayName     string `yaml:"display_name"`
	Domain          string `yaml:"domain"`
	Provider        string `yaml:"provider"`
	Backend         string `yaml:"backend"`
	ModelID         string `yaml:"model_id"`
	MaxModelLen     *int   `yaml:"max_model_len"`
	ImageLimit      *int   `yaml:"image_limit"`
	TrustRemoteCode bool   `yaml:"trust_remote_code"`
	TPDivisorHint   *int   `yaml:"tp_divisor_hint"`
	// VLLMMinVersion is the first vLLM release that serves the model's
	// architecture ("0.17.0"); empty when not recorded.
	VLLMMinVersion string `yaml:"vllm_min_version"`
	// VLLMUnsupported says why standard vLLM cannot serve the model
	// (empty: it can); such a model gets no vllm serve line.
	VLLMUnsupported string            `yaml:"vllm_unsupported"`
	Quirks          []string          `yaml:"quirks"`
	Sampling        runmodel.Sampling `yaml:"sampling"`
	// Base is the alias of a medical model's general-domain base model
	// (empty: none documented, or none in the registry).
	Base string `yaml:"base"`

	Raw bool `yaml:"-"`
}

// HasQuirk reports whether the entry has quirk q.
func (e *Entry) HasQuirk(q string) bool { return slices.Contains(e.Quirks, q) }

// Label is the run-name label (§9.1): the alias, or for a raw id the id
// made directory-safe.
func (e *Entry) Label() string {
	if e.Raw {
		return RunLabel(e.ModelID)
	}
	return e.Alias
}

// SamplingParams returns what is sent per call: the backend's defaults of
// §11, then the entry's overrides, then enable_thinking false when
// noThinking is set and the entry has the thinking_toggle quirk.
func (e *Entry) SamplingParams(noThinking bool) (runmodel.Sampling, error) {
	s, err := runmodel.DefaultSampling(e.Backend)
	if err != nil {
		return s, err
	}
	s = s.Merge(e.Sampling)
	if noThinking && e.HasQuirk(QuirkThinkingToggle) {
		off := false
		s.EnableThinking = &off
	}
	return s, nil
}

// Registry holds the entries in file order (defaults first, then new
// aliases from user files in their order).
type Registry struct {
	entries []Entry
	src     []string // the file each entry came from, for errors
	byAlias map[string]int
}

// Default returns the embedded registry.
func Default() (*Registry, error) { return Load() }

// Load returns the embedded registry extended by the given files: an
// entry whose alias exists replaces it, a new alias is appended.
// maxTableBytes bounds a user's model registry or price table file.
const maxTableBytes = yamlerr.MaxFileBytes

func Load(files ...string) (*Registry, error) {
	r := &Registry{byAlias: map[string]int{}}
	if err := r.add("models.yaml (embedded)", defaultModels); err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := safefile.ReadFile(f, maxTableBytes, safefile.Follow)
		if err != nil {
			return nil, fmt.Errorf("model registry: %w", err)
		}
		if err := r.add(f, b); err != nil {
			return nil, err
		}
	}
	// A base may name an alias defined in a later file, so it is checked
	// once every file is in.
	for i, e := range r.entries {
		switch _, ok := r.byAlias[e.Base]; {
		case e.Base == "":
		case e.Base == e.Alias:
			return nil, fmt.Errorf("%s: entry %q: field base names the entry itself", r.src[i], e.Alias)
		case !ok:
			return nil, fmt.Errorf("%s: entry %q: field base %q is not a registry alias", r.src[i], e.Alias, e.Base)
		}
	}
	return r, nil
}

func (r *Registry) add(name string, data []byte) error {
	var list []Entry
	if err := yamlerr.Decode(data, &list, true); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %v", name, err)
	}
	if len(list) == 0 {
		// Most likely the wrong file, or a list left commented out.
		return fmt.Errorf("%s: no model entries (want a YAML list of entries with alias, provider, backend and model_id)", name)
	}
	seen := map[string]bool{}
	for i, e := range list {
		where := fmt.Sprintf("%s: entry %d", name, i+1)
		if e.Alias != "" {
			where = fmt.Sprintf("%s: entry %q", name, e.Alias)
		}
		if err := e.validate(); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if seen[e.Alias] {
			return fmt.Errorf("%s: alias defined twice in the same file", where)
		}
		seen[e.Alias] = true
		if j, ok := r.byAlias[e.Alias]; ok {
			r.entries[j], r.src[j] = e, name
		} else {
			r.byAlias[e.Alias] = len(r.entries)
			r.entries, r.src = append(r.entries, e), append(r.src, name)
		}
	}
	return nil
}

func (e *Entry) validate() error {
	switch {
	case e.Alias == "":
		return errors.New("field alias is missing")
	case strings.ContainsAny(e.Alias, "/\\") || RunLabel(e.Alias) != e.Alias:
		return fmt.Errorf("field alias %q must use only letters, digits, '.', '_' and '-' (it names a directory)", e.Alias)
	case e.ModelID == "":
		return errors.New("field model_id is missing")
	case !slices.Contains(Providers, e.Provider):
		return fmt.Errorf("field provider %q is not one of %s", e.Provider, strings.Join(Providers, ", "))
	case !slices.Contains(runmodel.Backends, e.Backend):
		return fmt.Errorf("field backend %q is not one of %s", e.Backend, strings.Join(runmodel.Backends, ", "))
	case e.Domain != "" && !slices.Contains(domains, e.Domain):
		return fmt.Errorf("field domain %q is not one of %s", e.Domain, strings.Join(domains, ", "))
	}
	if v := e.VLLMMinVersion; v != "" && !versionPattern.MatchString(v) {
		return fmt.Errorf("field vllm_min_version %q is not a release number like 0.17.0", v)
	}
	for _, q := range e.Quirks {
		if !slices.Contains(quirks, q) {
			return fmt.Errorf("field quirks: unknown quirk %q (want %s)", q, strings.Join(quirks, " or "))
		}
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_model_len", e.MaxModelLen}, {"image_limit", e.ImageLimit}, {"tp_divisor_hint", e.TPDivisorHint}} {
		if f.v != nil && *f.v <= 0 {
			return fmt.Errorf("field %s must be positive, not %d", f.name, *f.v)
		}
	}
	return e.Sampling.Validate()
}

// versionPattern is a vLLM release number: 0.17.0, 0.10.1.
var versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?$`)

// Entries returns all entries in order.
func (r *Registry) Entries() []Entry { return slices.Clone(r.entries) }

// Lookup returns the entry with this alias.
func (r *Registry) Lookup(alias string) (Entry, bool) {
	i, ok := r.byAlias[alias]
	if !ok {
		return Entry{}, false
	}
	return r.entries[i], true
}

// ByModelID returns the entries whose model id is id, of provider prov
// ("" for any provider).
func (r *Registry) ByModelID(prov, id string) []Entry {
	var out []Entry
	for _, e := range r.entries {
		if (prov == "" || e.Provider == prov) && e.ModelID == id {
			out = append(out, e)
		}
	}
	return out
}

// rawBackend is the backend a raw model id runs on, per provider.
var rawBackend = map[string]string{
	"opensource": runmodel.BackendVLLM,
	"openai":     runmodel.BackendOpenAI,
	"azure":      runmodel.BackendAzure,
	"gemini":     runmodel.BackendGemini,
	"baseline":   runmodel.BackendBaseline,
}

// Resolve turns --provider and --model into an entry; prov may be an
// alias of a provider (CanonicalProvider). An alias of that provider
// gives its entry, and so does the model id of exactly one of its
// entries (Qwen/Qwen3.6-27B is qwen3.6-27b). Anything else is a raw model id for the
// provider, with its backend's defaults and no quirks; notice then says
// so (for the user, not an error). For provider baseline the model is a
// policy name.
func (r *Registry) Resolve(prov, model string) (e Entry, notice string, err error) {
	prov = CanonicalProvider(prov)
	backend, ok := rawBackend[prov]
	if !ok {
		return Entry{}, "", fmt.Errorf("unknown provider %q (want one of %s; vllm is accepted for opensource)", prov, strings.Join(Providers, ", "))
	}
	model = strings.TrimSpace(model)
	if model == "" {
		return Entry{}, "", errors.New("no model given")
	}
	if prov == "baseline" {
		if !slices.Contains(runmodel.Policies, model) {
			return Entry{}, "", fmt.Errorf("baseline model %q is not a policy (want random, first or oracle)", model)
		}
		return Entry{Alias: model, DisplayName: "baseline-" + model, Provider: prov, Backend: backend, ModelID: model}, "", nil
	}
	if ent, ok := r.Lookup(model); ok {
		if ent.Provider == prov {
			return ent, "", nil
		}
		notice = fmt.Sprintf("%q is a registry alias for provider %s; with --provider %s it is used as a raw model id, with %s defaults and no quirks",
			model, ent.Provider, prov, backend)
	} else if ents := r.ByModelID(prov, model); len(ents) == 1 {
		return ents[0], "", nil
	} else if len(ents) > 1 {
		aliases := make([]string, len(ents))
		for i, e := range ents {
			aliases[i] = e.Alias
		}
		notice = fmt.Sprintf("%q is the model id of the registry aliases %s; give one of them to use its settings. Using it as a raw %s model id with the %s backend's defaults and no quirks",
			model, strings.Join(aliases, ", "), prov, backend)
	} else {
		notice = fmt.Sprintf("%q is not a registry alias; using it as a raw %s model id with the %s backend's defaults and no quirks", model, prov, backend)
	}
	return Entry{DisplayName: model, Provider: prov, Backend: backend, ModelID: model, Raw: true}, notice, nil
}

var unsafeRun = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// RunLabel makes a model id directory-safe (§9.1): every "/" becomes "--"
// and every other character outside [A-Za-z0-9._-] becomes "_".
func RunLabel(id string) string {
	return unsafeRun.ReplaceAllString(strings.ReplaceAll(id, "/", "--"), "_")
}
