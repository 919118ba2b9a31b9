package runmodel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Identity is who a server says it is, as learned by the preflight: the
// stable facts of the model entry it lists for the model id of a run.
// Two servers with equal identities are taken to give the same answers to
// the same deterministic calls; the response cache keys every entry by
// SHA256, so a reply is never replayed to a run of another identity.
// Unknown facts are null. An unverified identity (no preflight) is only
// the sorted list of endpoints the run was pointed at.
type Identity struct {
	// Verified is true when the server itself was asked.
	Verified bool `json:"verified"`
	// Source is how the identity was learned: IdentityModelsList,
	// IdentityModelLookup, IdentityInProcess or IdentityUnverified.
	Source string `json:"source"`
	// ID is the model id (Gemini: resource name) the server reported.
	ID *string `json:"id"`
	// Root is the weights a vLLM entry serves (its root member).
	Root *string `json:"root"`
	// MaxModelLen is a vLLM entry's context length (max_model_len).
	MaxModelLen *int64 `json:"max_model_len"`
	// OwnedBy is the entry's owned_by ("vllm", "openai", "system",
	// "chexpercept-baseline" for a baseline server, …).
	OwnedBy *string `json:"owned_by"`
	// Version, InputTokenLimit and OutputTokenLimit come from Gemini's
	// model lookup.
	Version          *string `json:"version"`
	InputTokenLimit  *int64  `json:"input_token_limit"`
	OutputTokenLimit *int64  `json:"output_token_limit"`
	// Policy and PolicySeed describe a baseline (in process, or
	// serve-baseline, whose model entry carries them).
	Policy     *string `json:"policy"`
	PolicySeed *int64  `json:"policy_seed"`
	// Endpoints is the sorted endpoint list of an unverified identity
	// (without credentials); null when verified.
	Endpoints []string `json:"endpoints"`
	// SHA256 is the hex SHA-256 of the members above in compact JSON: the
	// identity as it enters the response-cache key.
	SHA256 string `json:"sha256"`
}

// Identity sources.
const (
	IdentityModelsList  = "models_list"  // GET {endpoint}/models (OpenAI-compatible servers, OpenAI)
	IdentityModelLookup = "model_lookup" // the SDK's model lookup (Azure OpenAI, Gemini)
	IdentityInProcess   = "in_process"   // the in-process baseline
	IdentityUnverified  = "unverified"   // --no-preflight: the endpoint list only
)

// Seal computes SHA256 over the other members and returns the identity.
func (id Identity) Seal() Identity {
	id.SHA256 = ""
	b, err := json.Marshal(id)
	if err != nil {
		panic(err) // a struct of plain members always encodes
	}
	sum := sha256.Sum256(b)
	id.SHA256 = hex.EncodeToString(sum[:])
	return id
}

// Unverified is the identity of a run without preflight: the endpoints
// (already without credentials), sorted and deduplicated.
func Unverified(endpoints []string) Identity {
	eps := slices.Clone(endpoints)
	slices.Sort(eps)
	eps = slices.Compact(eps)
	if eps == nil {
		eps = []string{}
	}
	return Identity{Source: IdentityUnverified, Endpoints: eps}.Seal()
}

// Same reports whether two identities are the same server.
func (id Identity) Same(o Identity) bool { return id.SHA256 == o.SHA256 }

// String is a short description for messages.
func (id Identity) String() string {
	var parts []string
	s := func(name string, v *string) {
		if v != nil {
			parts = append(parts, name+"="+strconv.Quote(*v))
		}
	}
	n := func(name string, v *int64) {
		if v != nil {
			parts = append(parts, name+"="+strconv.FormatInt(*v, 10))
		}
	}
	s("id", id.ID)
	s("root", id.Root)
	n("max_model_len", id.MaxModelLen)
	s("owned_by", id.OwnedBy)
	s("version", id.Version)
	n("input_token_limit", id.InputTokenLimit)
	n("output_token_limit", id.OutputTokenLimit)
	s("policy", id.Policy)
	n("policy_seed", id.PolicySeed)
	if !id.Verified {
		parts = append(parts, "unverified endpoints="+strings.Join(id.Endpoints, ","))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// BaselineOwner is the owned_by of the model entry of chexpercept's own
// baseline server (serve-baseline).
const BaselineOwner = "chexpercept-baseline"

// StandIn reports whether the server is chexpercept's own stand-in
// (serve-baseline, with any policy, the simulated models included, or
// the in-process baseline): its answers rehearse a run, they are never a
// model's result.
func (id Identity) StandIn() bool {
	return id.Source == IdentityInProcess || (id.OwnedBy != nil && *id.OwnedBy == BaselineOwner)
}

// Identifier is a client that can run the preflight: ask its server who
// serves model, within ctx. Every client of this package is one.
type Identifier interface {
	Identify(ctx context.Context, model string) (Identity, error)
}
