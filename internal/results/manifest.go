package results

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/textsafe"
	"github.com/chexpercept/chexpercept/internal/version"
)

// ManifestSchema names the manifest format.
const ManifestSchema = "chexpercept/run-manifest/1"

// Manifest is a run's manifest.json (spec protocol.md §9.1), the one type
// for it: eval fills and writes it, resume compares it, rescore, merge and
// import-reference (package runs) rewrite it and analysis reads it. It
// never holds a credential: endpoints are stored without user info, query
// or fragment. Field order is the file's member order.
type Manifest struct {
	Schema      string `json:"schema"`
	ToolVersion string `json:"tool_version"`
	// Provenance is the build of the binary that wrote the manifest
	// (null in manifests written before it was recorded).
	Provenance      *Provenance `json:"provenance"`
	CreatedAt       string      `json:"created_at"`
	Dataset         Dataset     `json:"dataset"`
	Selection       Selection   `json:"selection"`
	SelectionSHA256 string      `json:"selection_sha256"`
	SelectedRecords int         `json:"selected_records"`
	KeysSHA256      string      `json:"keys_sha256"`
	RunName         string      `json:"run_name"`
	// Kind says whose answers the run holds. A manifest written before
	// the member existed has it derived from what it holds (KindOf).
	Kind RunKind `json:"kind"`
	// Control names the image control a run of kind control asked the
	// model under (ControlTextOnly, ControlBlankRadiograph); absent for
	// every other run.
	Control Control   `json:"control,omitempty"`
	Model   ModelInfo `json:"model"`
	// ServerIdentity is who the server said it was at the preflight of
	// the run's first invocation (runmodel.Identity); null in manifests
	// written before it was recorded and in imported runs.
	ServerIdentity  *runmodel.Identity `json:"server_identity"`
	Sampling        runmodel.Sampling  `json:"sampling"`
	NoThinking      bool               `json:"no_thinking"`
	OracleMode      string             `json:"oracle_mode"`
	ParseMode       string             `json:"parse_mode"`
	PromptProfile   ProfileInfo        `json:"prompt_profile"`
	ImageEncoding   ImageEncoding      `json:"image_encoding"`
	Concurrency     int                `json:"concurrency"`
	Retry           RetryPolicy        `json:"retry"`
	PriceFileSHA256 string             `json:"price_file_sha256"`
	RescoredFrom    *string            `json:"rescored_from"`
	// Redactions counts the occurrences of the configured API key that
	// were replaced by "[redacted]" in stored replies, errors and log
	// lines, over every session of the run (merge sums the shards').
	Redactions int64 `json:"redactions"`
	// ImportedFrom is the all_results.json an imported run was made from
	// (absent for runs of ours).
	ImportedFrom string `json:"imported_from,omitempty"`
	// Reading says which arm of a reader study a run of human answers
	// holds (absent for model runs and imported runs).
	Reading *ReadingArm `json:"reading,omitempty"`
}

// RunKind says whose answers a run holds: the report compares, groups and
// counts runs by it (protocol.md §9.1).
type RunKind string

// Run kinds.
const (
	// KindModel is a model's answers.
	KindModel RunKind = "model"
	// KindBaseline is a baseline policy's answers (random, first,
	// oracle; protocol.md §11), given in process.
	KindBaseline RunKind = "baseline"
	// KindHuman is a human reader's answers (read export).
	KindHuman RunKind = "human"
	// KindControl is a model's answers with the images taken out of the
	// questions: what the model answers without seeing the radiograph.
	KindControl RunKind = "control"
	// KindRehearsal is the answers of chexpercept's stand-in server
	// (serve-baseline) to a model's run: it rehearses the command of a
	// real run, and its numbers are the stand-in's.
	KindRehearsal RunKind = "rehearsal"
)

// Control is an image control: what a control run sends in place of the
// benchmark's images, so that its answers, compared with the model's run
// on the same records, tell what the model takes from the image.
type Control string

// The image controls.
const (
	// ControlTextOnly asks the same conversations with every image
	// removed; the texts are unchanged.
	ControlTextOnly Control = "text-only"
	// ControlBlankRadiograph keeps every drawn element of the images
	// (mask overlays, coloured points, candidate contours) and replaces
	// the radiograph under them by a uniform image of its mean grey.
	ControlBlankRadiograph Control = "blank-radiograph"
)

// controls are the image controls, in the order messages list them.
var controls = []Control{ControlTextOnly, ControlBlankRadiograph}

// ParseControl reads an image control's name; "" is no control.
func ParseControl(s string) (Control, error) {
	c := Control(s)
	if c == "" || slices.Contains(controls, c) {
		return c, nil
	}
	return "", fmt.Errorf("image control %q is not one of %s, %s", textsafe.OneLine(s), ControlTextOnly, ControlBlankRadiograph)
}

// runKinds are the kinds a manifest may say, in the order messages list
// them.
var runKinds = []RunKind{KindModel, KindBaseline, KindHuman, KindControl, KindRehearsal}

// Model reports whether the run is reported as a model's: a model run,
// or a rehearsal of one (marked as such wherever the report shows it).
// Baselines, human readers and controls are reported apart.
func (k RunKind) Model() bool { return k == KindModel || k == KindRehearsal }

// providerBaseline is the registry's provider of the baseline policies.
const providerBaseline = "baseline"

// KindOf is the kind of a run that does not say it (a manifest written
// before the kind was recorded, a run directory without a manifest), from
// its provider and whether chexpercept's stand-in answered it
// (runmodel.Identity.StandIn): the providers "baseline" and "human" name
// their kinds, the stand-in's answers to any other provider's run are a
// rehearsal, and the rest a model's. A control run always says its kind.
func KindOf(provider string, standIn bool) RunKind {
	switch {
	case provider == providerBaseline:
		return KindBaseline
	case provider == ProviderHuman:
		return KindHuman
	case standIn:
		return KindRehearsal
	}
	return KindModel
}

// ReadingArm places a run of human answers (written by read export) in
// its reader study. An unaided study has one arm, "unaided", and no
// aid_run. A sequential aided study has two runs per reader: "unaided"
// (the answer given before the model's answer was shown) and "aided"
// (the final answer), both naming the model run that was shown in
// aid_run. The report pairs a reader's two arms by study and reader.
type ReadingArm struct {
	Study  string `json:"study"`
	Reader string `json:"reader"`
	Arm    string `json:"arm"`
	AidRun string `json:"aid_run,omitempty"`
	// Design is "split-plot" for a split-plot study, whose readers read
	// only the records of their block (Block, "1" to Blocks); empty for a
	// fully crossed study.
	Design string `json:"design,omitempty"`
	Blocks int    `json:"blocks,omitempty"`
	Block  string `json:"block,omitempty"`
	// Plan is the study's analysis plan, fixed at read init (nil: none
	// was stated).
	Plan *StudyPlan `json:"plan,omitempty"`
}

// StudyPlan is a reader study's analysis plan, stated before the first
// record is read: the primary endpoint, its figure of merit, analysis
// and level, the design and the planned size, and for a comparison with
// a model its non-inferiority margin. docs/reading.md describes the file.
type StudyPlan struct {
	Primary PlanEndpoint `json:"primary" yaml:"primary"`
	// FOM is the figure of merit: "accuracy" (end-to-end correctness).
	FOM string `json:"figure_of_merit" yaml:"figure_of_merit"`
	// Analysis is "rrrc" (random readers and cases), "frrc" or "rrfc".
	Analysis string  `json:"analysis" yaml:"analysis"`
	Alpha    float64 `json:"alpha" yaml:"alpha"`
	// Design is "crossed" or "split-plot" (with Blocks).
	Design  string `json:"design" yaml:"design"`
	Blocks  int    `json:"blocks,omitempty" yaml:"blocks,omitempty"`
	Readers int    `json:"readers" yaml:"readers"`
	Records int    `json:"records" yaml:"records"`
	// Margin > 0: a model is compared with the readers for
	// non-inferiority by this margin (a fraction).
	Margin float64 `json:"margin,omitempty" yaml:"margin,omitempty"`
}

// PlanEndpoint is a plan's primary endpoint: end-to-end accuracy at one
// path and stage, and for a comparison one model run (Model "": the
// readers' panel, or every model).
type PlanEndpoint struct {
	Path  string `json:"path" yaml:"path"`
	Stage int    `json:"stage" yaml:"stage"`
	Model string `json:"model,omitempty" yaml:"model,omitempty"`
}

// DesignSplitPlot is a ReadingArm's Design in a split-plot study.
const DesignSplitPlot = "split-plot"

// Reading arms.
const (
	ArmUnaided = "unaided"
	ArmAided   = "aided"
)

// Provenance is the build of a chexpercept binary: its source revision
// and whether the tree was modified (null when the binary does not carry
// them: a build outside a git checkout or with -buildvcs=false), the Go
// version and the platform.
type Provenance struct {
	Revision  *string `json:"revision"`
	Modified  *bool   `json:"modified"`
	GoVersion string  `json:"go_version"`
	OS        string  `json:"os"`
	Arch      string  `json:"arch"`
}

// Dataset identifies the benchmark.
type Dataset struct {
	Path    string `json:"path"`   // absolute benchmark directory
	SHA256  string `json:"sha256"` // of chexpercept.json
	Records int    `json:"records"`
	// Identity is the benchmark's identity (the SHA-256 of its
	// SHA256SUMS, or of chexpercept.json for a benchmark without one);
	// null in manifests written before it was recorded.
	Identity *benchmark.Identity `json:"identity"`
}

// BenchIdentity is the identity of the run's benchmark; the zero
// (unknown) Identity for a manifest written before it was recorded.
func (m *Manifest) BenchIdentity() benchmark.Identity {
	if m.Dataset.Identity == nil {
		return benchmark.Identity{}
	}
	return *m.Dataset.Identity
}

// Selection is the record selection of spec protocol.md §2.3 as recorded
// in the manifest (eval applies it). Nil pointers mean "not given".
type Selection struct {
	Lesions      []string `json:"lesions"`        // sorted, deduplicated; empty = all
	Limit        *int     `json:"limit"`          // first N records
	PerPathLimit *int     `json:"per_path_limit"` // first N of each path; overrides Limit
	Sample       *int     `json:"sample"`         // stratified sample size
	Seed         uint64   `json:"seed"`           // sample seed
	Shard        *Shard   `json:"shard"`          // nil = unsharded
}

// Shard is --shard i/n with i resolved (1-based).
type Shard struct {
	I int `json:"i"`
	N int `json:"n"`
}

// Dir is the shard folder name, shard-<i>-of-<n>.
func (s *Shard) Dir() string { return fmt.Sprintf("shard-%d-of-%d", s.I, s.N) }

// Hash is the SHA-256 of the selection's compact §6 JSON (the manifest's
// selection_sha256).
func (s Selection) Hash() string {
	if s.Lesions == nil {
		s.Lesions = []string{}
	}
	b, err := ojson.EncodeCompact(s)
	if err != nil {
		panic(err) // a struct of plain fields always encodes
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ShortHash abbreviates a hex digest of the manifest (dataset, profile)
// for messages: its first 12 digits and "…", or "(none)" when empty.
func ShortHash(h string) string {
	if h == "" {
		return "(none)"
	}
	return textsafe.Clip(h, 12)
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

// UnionEndpoints is a followed by every endpoint of b that a does not
// hold, in order and without repeats: the endpoints of a run resumed (or
// of shards run) against other endpoints of the same server. The entries
// are compared as stored (already without credentials). a is not changed.
func UnionEndpoints(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for _, e := range slices.Concat(a, b) {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

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
	MaxRetries int     `json:"max_retries"`
	TimeoutS   float64 `json:"timeout_s"`
	// MaxReplyBytes caps one reply body (a larger reply is a
	// non-retryable error of that call).
	MaxReplyBytes int64   `json:"max_reply_bytes"`
	BackoffBaseS  float64 `json:"backoff_base_s"` // first retry waits in [base/2, base], doubling, jittered
	BackoffCapS   float64 `json:"backoff_cap_s"`  // longest backoff unless Retry-After asks for more
	RPM           int     `json:"rpm"`            // 0 = no cap
	TPM           int     `json:"tpm"`
}

// RunSpec is what a run is of, as every maker of a run (eval's runner,
// import-reference, a reading study's export) records it.
type RunSpec struct {
	Model runmodel.Model
	// Kind is whose answers the run holds; "" means the kind of its
	// model's provider (KindOf). A run that the stand-in answers is made
	// a rehearsal when the server is known (Manifest.SetServer).
	Kind RunKind
	// Control is the image control the run is asked under ("" for
	// none): its kind is then KindControl and its name the model's run
	// name with "_" and the control appended.
	Control    Control
	Selection  Selection
	NoThinking bool
	Oracle     string // oracle mode: none, implicit or explicit
	Parse      string // parse mode: reference or strict
	// RunName names the run; "" means the name derived from the model
	// and the settings (RunName).
	RunName string
	// Now gives the creation time; nil means time.Now.
	Now func() time.Time
}

// parseStrict is the strict parse mode's name (protocol/parse's
// ModeStrict), whose runs are named apart.
const parseStrict = "strict"

// Name is the run's name: s.RunName, or the name derived from the model
// and the settings; a control run's name is that name with "_" and the
// control appended (ControlRunName).
func (s RunSpec) Name() string {
	name := s.RunName
	if name == "" {
		name = RunName(s.Model.Provider, s.Model.Label, s.NoThinking, s.Parse == parseStrict)
	}
	return ControlRunName(name, s.Control)
}

// ControlRunName is the name of the control run c of the run named run:
// "<run>_<control>"; run itself when c is "".
func ControlRunName(run string, c Control) string {
	if c == "" {
		return run
	}
	return run + "_" + string(c)
}

// NewManifest is the part of a run's manifest that every maker of a run
// records the same way: the benchmark, s.Selection and the selected keys
// (file order), the model of s and its sampling, thinking, oracle and
// parse modes, and s.Now as the creation time. The prompt profile, image
// encoding, endpoints and call policy are left for the maker: eval's
// runner records its own, import-reference (package runs) records them as
// unknown.
func NewManifest(s RunSpec, bench *benchmark.Benchmark, benchAbs string, keys []string) *Manifest {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	sel := s.Selection
	if sel.Lesions == nil {
		sel.Lesions = []string{}
	}
	b := version.Current()
	m := &Manifest{
		Schema: ManifestSchema, ToolVersion: version.String(), CreatedAt: now().UTC().Format(time.RFC3339),
		Provenance: &Provenance{Revision: b.Revision, Modified: b.Modified, GoVersion: b.GoVersion, OS: b.OS, Arch: b.Arch},
		Dataset:    Dataset{Path: benchAbs, SHA256: bench.SHA256, Records: len(bench.Records), Identity: identityOf(bench)},
		Selection:  sel, SelectionSHA256: sel.Hash(), SelectedRecords: len(keys), KeysSHA256: KeysHash(keys),
		RunName: s.Name(), Kind: s.Kind, Control: s.Control,
		Sampling: s.Model.Sampling, NoThinking: s.NoThinking,
		OracleMode: s.Oracle, ParseMode: s.Parse,
	}
	switch {
	case s.Control != "":
		m.Kind = KindControl
	case m.Kind == "":
		m.Kind = KindOf(s.Model.Provider, false)
	}
	mi := &m.Model
	mi.Name, mi.Provider, mi.Backend, mi.ModelID = s.Model.Name, s.Model.Provider, s.Model.Backend, s.Model.ModelID
	mi.Quirks = append([]string{}, s.Model.Quirks...)
	mi.Endpoints = []string{}
	if s.Model.Alias != "" {
		a := s.Model.Alias
		mi.Alias = &a
	}
	if s.Model.Revision != "" {
		r := s.Model.Revision
		mi.Revision = &r
	}
	if s.Model.Backend == runmodel.BackendBaseline {
		p := s.Model.ModelID
		mi.Policy = &p
	}
	return m
}

// identityOf is bench's identity as a manifest records it (nil when
// unknown: a benchmark made in memory without one).
func identityOf(bench *benchmark.Benchmark) *benchmark.Identity {
	if !bench.Identity.Known() {
		return nil
	}
	id := bench.Identity
	return &id
}

// SetServer records who answered the run (the preflight's identity) and
// makes a model's run that chexpercept's stand-in answers a rehearsal.
func (m *Manifest) SetServer(id runmodel.Identity) {
	m.ServerIdentity = &id
	if m.Kind == KindModel && id.StandIn() {
		m.Kind = KindRehearsal
	}
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

// ParseManifest decodes manifest.json bytes. Members it does not know are
// ignored and missing ones stay zero, so that readers keep working across
// manifest revisions; a member of the wrong type is an error naming it.
// A manifest without a kind (written before it was recorded) gets the
// one KindOf derives from its provider and server identity, so that old
// runs read as they did; a kind this version does not know is an error.
// The schema member is not checked: the caller decides (a resumed run
// insists on ManifestSchema).
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := jsonv2.Unmarshal(data, &m); err != nil {
		return nil, describeJSONError(err)
	}
	switch {
	case m.Kind == "":
		m.Kind = KindOf(m.Model.Provider, m.ServerIdentity != nil && m.ServerIdentity.StandIn())
	case !slices.Contains(runKinds, m.Kind):
		names := make([]string, len(runKinds))
		for i, k := range runKinds {
			names[i] = string(k)
		}
		return nil, fmt.Errorf("kind: %q is not one of %s", textsafe.OneLine(string(m.Kind)), strings.Join(names, ", "))
	}
	if _, err := ParseControl(string(m.Control)); err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	return &m, nil
}

// describeJSONError turns a decoder's type mismatch into "member: got,
// want kind" (dotted member path); other errors are returned as they are.
func describeJSONError(err error) error {
	var se *jsonv2.SemanticError
	if !errors.As(err, &se) || se.GoType == nil || se.JSONKind == 0 {
		return err
	}
	member := strings.ReplaceAll(strings.TrimPrefix(string(se.JSONPointer), "/"), "/", ".")
	if member == "" {
		member = "top level"
	}
	got := map[jsontext.Kind]string{'n': "null", 'f': "false", 't': "true", '"': "a string", '0': "a number",
		'{': "an object", '[': "an array"}[se.JSONKind]
	if se.JSONKind == '0' && len(se.JSONValue) > 0 && len(se.JSONValue) <= 32 {
		got = string(se.JSONValue)
	}
	t := se.GoType
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	want := "a value of another type"
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		want = "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "a whole number, not negative"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Slice, reflect.Array:
		want = "an array"
	}
	return fmt.Errorf("%s: %s, want %s", member, got, want)
}
