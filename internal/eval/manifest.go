package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/results"
)

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

// resumeFields are the manifest fields a resumed run must share (§9.1):
// dataset hash, model, policy seed, image control, sampling, thinking,
// oracle mode, parse mode, profile hash and selection. Endpoints, concurrency, retry
// policy and the like may change between restarts.
func resumeView(m *results.Manifest) map[string]any {
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
		"control":                  controlView(m.Control),
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

// controlView is a manifest's control as resume compares it: nil (shown
// "unset") for a run of no control.
func controlView(c results.Control) any {
	if c == "" {
		return nil
	}
	return c
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
func Differences(old, cur *results.Manifest) []string {
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
