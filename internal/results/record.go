// Package results is the model of what an evaluation run stores: the
// record of one benchmark case as one line of results.jsonl (spec
// protocol.md §9.2), the run manifest, the record selection, the run's
// name, its export to the reference evaluator's all_results.json schema
// (§9.3), the reference metrics and the summary. It is types and pure
// functions over bytes; package rundir reads and writes them in a run
// directory.
//
// A Record keeps everything needed to re-derive every table and export:
// per turn the text sent, the raw reply, the fed-back text (which differs
// from the raw reply only after an implicit-oracle patch), the parse and
// its rule, the ground truth and correctness. Field order is the spec's
// and is the JSON key order.
package results

import (
	"errors"
	"fmt"
	"slices"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// Record status values.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// ProviderHuman is the provider of a human reader's run (`read export`):
// the report compares such runs with the models instead of ranking them
// as models.
const ProviderHuman = "human"

// Turn status values.
const (
	TurnAsked   = "asked"
	TurnSkipped = "skipped"
	TurnError   = "error"
)

// RecordSchemaVersion is the schema_version of the results.jsonl lines
// this version writes. Lines without the member were written before it
// existed and are version 1, which differs only by lacking it; a line of
// a later version is refused (a newer chexpercept wrote it).
const RecordSchemaVersion = 2

// Record is one results.jsonl line.
type Record struct {
	// SchemaVersion is the line's format: RecordSchemaVersion when
	// written (MarshalLine sets it), 1 when read from a line without it.
	SchemaVersion int            `json:"schema_version"`
	KeyID         string         `json:"key_id"`
	Lesion        string         `json:"lesion"`
	QAPath        benchmark.Path `json:"qa_path"`
	Index         int            `json:"index"`
	Status        string         `json:"status"`
	Error         *string        `json:"error"`
	OracleMode    string         `json:"oracle_mode"`
	ParseMode     string         `json:"parse_mode"`
	StartedAt     string         `json:"started_at"`
	FinishedAt    string         `json:"finished_at"`
	Turns         []Turn         `json:"turns"`
	OracleEvents  []Event        `json:"oracle_events"`
	Stages        Stages         `json:"stages"`
	Usage         Usage          `json:"usage"`
}

// Turn is one question of the conversation (asked, skipped or failed).
type Turn struct {
	Turn         string    `json:"turn"` // "T1"…"T9"
	Step         string    `json:"step"` // step key, e.g. "detection_qa"
	Status       string    `json:"status"`
	SkipReason   *string   `json:"skip_reason"`
	UserText     *string   `json:"user_text"`
	Images       []string  `json:"images"` // relative to the benchmark dir
	Raw          *string   `json:"raw"`
	Reasoning    *string   `json:"reasoning"`
	FedBack      *string   `json:"fed_back"`
	PatchedAt    *string   `json:"patched_at"` // "D2"…, the patching decision point
	OriginalRaw  *string   `json:"original_raw"`
	ParsedText   *string   `json:"parsed_text"`
	Parsed       *[]int    `json:"parsed"`
	ParseRule    *string   `json:"parse_rule"`
	ParseOK      *bool     `json:"parse_ok"`
	InRange      *bool     `json:"in_range"`
	GT           *[]int    `json:"gt"`
	Correct      *bool     `json:"correct"`
	Jaccard      *float64  `json:"jaccard"`
	FinishReason *string   `json:"finish_reason"`
	LatencyMS    int64     `json:"latency_ms"`
	TotalMS      int64     `json:"total_ms"`
	Attempts     int       `json:"attempts"`
	Cached       bool      `json:"cached"`
	Usage        *TokenUse `json:"usage"`
	CostUSD      *float64  `json:"cost_usd"`
	Error        *string   `json:"error"`
}

// TokenUse is the token usage of one call.
type TokenUse struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	ThinkingTokens    int64 `json:"thinking_tokens"`
	TotalTokens       int64 `json:"total_tokens"`
}

// Event is one oracle decision point reached.
type Event struct {
	Point        string   `json:"point"` // D2, D3, D5, D6
	Triggered    bool     `json:"triggered"`
	Action       string   `json:"action"` // none, inject, patch
	PatchedTurns []string `json:"patched_turns"`
	NoopReason   *string  `json:"noop_reason"`
}

// Oracle event actions.
const (
	ActionNone   = "none"
	ActionInject = "inject"
	ActionPatch  = "patch"
)

// Stages holds per-stage correctness with our semantics (§10.3): a stage
// is correct only if all its sub-questions were asked, parsed/recorded and
// correct. Correct is null when the stage is not applicable.
type Stages struct {
	Detection           Stage          `json:"detection"`
	ContourEvaluation   Stage          `json:"contour_evaluation"`
	ContourRevision     RevisionStage  `json:"contour_revision"`
	AttributeExtraction AttributeStage `json:"attribute_extraction"`
}

// Stage is one stage's flags. Asked is true when every turn of the stage
// was asked.
type Stage struct {
	Applicable bool  `json:"applicable"`
	Asked      bool  `json:"asked"`
	Correct    *bool `json:"correct"`
}

// RevisionStage is stage 3 with its sub-questions.
type RevisionStage struct {
	Applicable     bool  `json:"applicable"`
	Asked          bool  `json:"asked"`
	Correct        *bool `json:"correct"`
	Expansion      *bool `json:"expansion"`
	Contraction    *bool `json:"contraction"`
	RevisionResult *bool `json:"revision_result"`
}

// AttributeStage is stage 4 with its sub-questions.
type AttributeStage struct {
	Applicable   bool  `json:"applicable"`
	Asked        bool  `json:"asked"`
	Correct      *bool `json:"correct"`
	Distribution *bool `json:"distribution"`
	Location     *bool `json:"location"`
	Severity     *bool `json:"severity/measurement"`
	Comparison   *bool `json:"comparison"`
}

// Usage sums the turns' usage. CostUSD is null when any asked call was
// unpriced.
type Usage struct {
	InputTokens       int64    `json:"input_tokens"`
	CachedInputTokens int64    `json:"cached_input_tokens"`
	OutputTokens      int64    `json:"output_tokens"`
	ThinkingTokens    int64    `json:"thinking_tokens"`
	CostUSD           *float64 `json:"cost_usd"`
}

// MarshalLine writes r as one compact §6 JSON line ending in "\n", with
// the struct codec (ojson.EncodeCompact).
func (r *Record) MarshalLine() ([]byte, error) {
	// The line is in the current format whatever version r was read
	// from, so it says so.
	c := *r
	c.SchemaVersion = RecordSchemaVersion
	b, err := ojson.EncodeCompact(&c)
	if err != nil {
		return nil, fmt.Errorf("results: encoding record %s: %w", r.KeyID, err)
	}
	return append(b, '\n'), nil
}

// UnmarshalLine reads one results.jsonl line with the struct codec
// (ojson.Decode). Unknown or duplicate members are an error, and names
// match exactly, so that a line from a different schema is not silently
// half-read; key_id is required.
func UnmarshalLine(line []byte) (*Record, error) {
	var r Record
	if err := ojson.Decode(line, &r); err != nil {
		return nil, fmt.Errorf("decoding record: %w", err)
	}
	if r.KeyID == "" {
		return nil, errors.New("decoding record: missing key_id")
	}
	switch {
	case r.SchemaVersion == 0:
		r.SchemaVersion = 1 // written before the member existed
	case r.SchemaVersion < 0 || r.SchemaVersion > RecordSchemaVersion:
		return nil, fmt.Errorf("decoding record %s: schema_version %d is not one this chexpercept reads (1 to %d); a newer version wrote it", r.KeyID, r.SchemaVersion, RecordSchemaVersion)
	}
	return &r, nil
}

// Turn returns the turn of question q, or nil.
func (r *Record) Turn(q benchmark.Question) *Turn { return r.TurnByStep(q.Step()) }

// TurnByStep returns the turn with the given step key, or nil.
func (r *Record) TurnByStep(step string) *Turn {
	for i := range r.Turns {
		if r.Turns[i].Step == step {
			return &r.Turns[i]
		}
	}
	return nil
}

// SkipStagePrefix starts the skip_reason of turns skipped because their
// whole stage was skipped (stage 3 without contour_qa or its folder,
// stage 4 with a null attribute object). Such a stage stays {} in the
// reference export, as in the reference evaluator.
const SkipStagePrefix = "stage skipped: "

// Latest keeps the last line per key_id (readers use the last line, §9.2)
// and returns those records sorted by index.
func Latest(recs []*Record) []*Record {
	last := make(map[string]int, len(recs))
	for i, r := range recs {
		last[r.KeyID] = i
	}
	out := make([]*Record, 0, len(last))
	for i, r := range recs {
		if last[r.KeyID] == i {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *Record) int { return a.Index - b.Index })
	return out
}
