package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/results"
)

// ManifestSchema names the manifest format.
const ManifestSchema = "chexpercept/run-manifest/1"

// Manifest is manifest.json (spec protocol.md §9.1). It never holds a
// credential: endpoints are stored without user info, query or fragment.
type Manifest struct {
	Schema          string        `json:"schema"`
	ToolVersion     string        `json:"tool_version"`
	CreatedAt       string        `json:"created_at"`
	Dataset         Dataset       `json:"dataset"`
	Selection       Selection     `json:"selection"`
	SelectionSHA256 string        `json:"selection_sha256"`
	SelectedRecords int           `json:"selected_records"`
	KeysSHA256      string        `json:"keys_sha256"`
	RunName         string        `json:"run_name"`
	Model           ModelInfo     `json:"model"`
	Sampling        SamplingInfo  `json:"sampling"`
	NoThinking      bool          `json:"no_thinking"`
	OracleMode      string        `json:"oracle_mode"`
	ParseMode       string        `json:"parse_mode"`
	PromptProfile   ProfileInfo   `json:"prompt_profile"`
	ImageEncoding   ImageEncoding `json:"image_encoding"`
	Concurrency     int           `json:"concurrency"`
	Retry           RetryPolicy   `json:"retry"`
	PriceFileSHA256 string        `json:"price_file_sha256"`
	RescoredFrom    *string       `json:"rescored_from"`
}

// Dataset identifies the benchmark.
type Dataset struct {
	Path    string `json:"path"` // absolute benchmark directory
	SHA256  string `json:"sha256"`
	Records int    `json:"records"`
}

// ModelInfo identifies the model and where it was reached.
type ModelInfo struct {
	Name       string   `json:"name"`  // alias, raw id, or baseline policy
	Alias      *string  `json:"alias"` // registry alias, null for a raw id
	Provider   string   `json:"provider"`
	Backend    string   `json:"backend"`
	ModelID    string   `json:"model_id"`
	Revision   *string  `json:"revision"`
	Endpoints  []string `json:"endpoints"` // without credentials
	Quirks     []string `json:"quirks"`
	Policy     *string  `json:"policy"`      // baseline only
	PolicySeed *int64   `json:"policy_seed"` // baseline only
}

// SamplingInfo is every sampling parameter sent, by its wire name (unsent
// parameters are absent).
type SamplingInfo = provider.Sampling

// ProfileInfo is the prompt profile: name, the eight effective texts in
// §5 order, and their hash.
type ProfileInfo struct {
	Name   string   `json:"name"`
	Texts  []string `json:"texts"`
	SHA256 string   `json:"sha256"`
}

// ImageEncoding says how images are sent.
type ImageEncoding struct {
	Format            string `json:"format"`    // "png": the file bytes, unchanged
	Transport         string `json:"transport"` // data URL base64, or inline bytes (gemini)
	GeminiImageFormat string `json:"gemini_image_format,omitempty"`
	ImageCacheBytes   int64  `json:"image_cache_bytes"`
}

// RetryPolicy is the per-call retry and rate policy.
type RetryPolicy struct {
	MaxRetries   int     `json:"max_retries"`
	TimeoutS     float64 `json:"timeout_s"`
	BackoffBaseS float64 `json:"backoff_base_s"` // first retry waits in [base/2, base], doubling, jittered
	BackoffCapS  float64 `json:"backoff_cap_s"`  // longest backoff unless Retry-After asks for more
	RPM          int     `json:"rpm"`            // 0 = no cap
	TPM          int     `json:"tpm"`
}

// ScrubEndpoint drops user info, query and fragment from an endpoint URL
// so that no credential reaches the manifest or a log.
func ScrubEndpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "[unparsable endpoint]"
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	return u.String()
}

// Marshal writes the manifest with the §6 writer (indent 2) and a final
// newline.
func (m *Manifest) Marshal() ([]byte, error) {
	b, err := ojson.EncodeIndent(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ReadManifest reads dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	name := filepath.Join(dir, results.ManifestFile)
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if m.Schema != ManifestSchema {
		return nil, fmt.Errorf("%s: schema %q is not %q", name, m.Schema, ManifestSchema)
	}
	return &m, nil
}

// resumeFields are the manifest fields a resumed run must share (§9.1):
// dataset hash, model, policy seed, sampling, thinking, oracle mode,
// parse mode, profile hash and selection. Endpoints, concurrency, retry
// policy and the like may change between restarts.
func resumeView(m *Manifest) map[string]any {
	mi := m.Model
	return map[string]any{
		"dataset.sha256":           m.Dataset.SHA256,
		"model.name":               mi.Name,
		"model.provider":           mi.Provider,
		"model.backend":            mi.Backend,
		"model.model_id":           mi.ModelID,
		"model.quirks":             mi.Quirks,
		"model.policy":             mi.Policy,
		"model.policy_seed":        mi.PolicySeed,
		"sampling":                 m.Sampling,
		"no_thinking":              m.NoThinking,
		"oracle_mode":              m.OracleMode,
		"parse_mode":               m.ParseMode,
		"prompt_profile.sha256":    m.PromptProfile.SHA256,
		"selection.lesions":        m.Selection.Lesions,
		"selection.limit":          m.Selection.Limit,
		"selection.per_path_limit": m.Selection.PerPathLimit,
		"selection.sample":         m.Selection.Sample,
		"selection.seed":           m.Selection.Seed,
		"selection.shard":          m.Selection.Shard,
		"selection_sha256":         m.SelectionSHA256,
		"keys_sha256":              m.KeysSHA256,
		"rescored_from":            m.RescoredFrom,
	}
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if bytes.Equal(b, []byte("null")) {
		return "unset"
	}
	return string(b)
}

// Differences lists, sorted by field, every resume-relevant field whose
// value differs between old and cur, as "field: old → new".
func Differences(old, cur *Manifest) []string {
	a, b := resumeView(old), resumeView(cur)
	var out []string
	for k, va := range a {
		sa, sb := show(va), show(b[k])
		if k == "selection.lesions" {
			// nil and [] both mean all lesions
			sa, sb = strings.ReplaceAll(sa, "unset", "[]"), strings.ReplaceAll(sb, "unset", "[]")
		}
		if sa != sb {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, sa, sb))
		}
	}
	slices.Sort(out)
	return out
}
