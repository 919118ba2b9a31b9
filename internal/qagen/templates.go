package qagen

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
)

//go:embed templates.yaml
var templatesYAML []byte

// templates is the parsed templates.yaml.
type templates struct {
	Version   string `yaml:"version"`
	HeartNote string `yaml:"heart_note"`
	Detection struct {
		Direct     string `yaml:"direct"`
		Suggestive string `yaml:"suggestive"`
	} `yaml:"detection"`
	ContourEval    string `yaml:"contour_eval"`
	InitialContext string `yaml:"initial_context"`
	Expansion      string `yaml:"expansion"`
	Contraction    string `yaml:"contraction"`
	RevisionResult string `yaml:"revision_result"`
	Distribution   string `yaml:"distribution"`
	Location       string `yaml:"location"`
	Severity       struct {
		Question string   `yaml:"question"`
		Options  []string `yaml:"options"`
	} `yaml:"severity"`
	Comparison struct {
		Question string   `yaml:"question"`
		Options  []string `yaml:"options"`
	} `yaml:"comparison"`
}

var placeholderRE = regexp.MustCompile(`\{[^{}]*\}`)

// knownPlaceholders are the names a template may use.
var knownPlaceholders = []string{"{lesion}", "{heart_note}", "{region_min}", "{lung_min}", "{lung}"}

// tmpl is loaded once at start-up. The file is embedded in the binary, so
// a broken file is a build defect caught by the package tests, not input.
var tmpl = mustParseTemplates(templatesYAML)

func parseTemplates(data []byte) (*templates, error) {
	var t templates
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("templates.yaml: %w", err)
	}
	fields := map[string]string{
		"version": t.Version, "heart_note": t.HeartNote,
		"detection.direct": t.Detection.Direct, "detection.suggestive": t.Detection.Suggestive,
		"contour_eval": t.ContourEval, "initial_context": t.InitialContext,
		"expansion": t.Expansion, "contraction": t.Contraction, "revision_result": t.RevisionResult,
		"distribution": t.Distribution, "location": t.Location,
		"severity.question": t.Severity.Question, "comparison.question": t.Comparison.Question,
	}
	for i, o := range t.Severity.Options {
		fields[fmt.Sprintf("severity.options[%d]", i)] = o
	}
	for i, o := range t.Comparison.Options {
		fields[fmt.Sprintf("comparison.options[%d]", i)] = o
	}
	for name, s := range fields {
		if strings.TrimSpace(s) == "" {
			return nil, fmt.Errorf("templates.yaml: %s is empty", name)
		}
		for _, p := range placeholderRE.FindAllString(s, -1) {
			if !slices.Contains(knownPlaceholders, p) {
				return nil, fmt.Errorf("templates.yaml: %s uses unknown placeholder %s", name, p)
			}
		}
	}
	if len(t.Severity.Options) != 3 {
		return nil, fmt.Errorf("templates.yaml: severity.options has %d entries, want 3", len(t.Severity.Options))
	}
	if len(t.Comparison.Options) != 4 {
		return nil, fmt.Errorf("templates.yaml: comparison.options has %d entries, want 4", len(t.Comparison.Options))
	}
	return &t, nil
}

func mustParseTemplates(data []byte) *templates {
	t, err := parseTemplates(data)
	if err != nil {
		panic(err)
	}
	return t
}

// TemplatesVersion identifies the question wording: the file's version
// field plus the first 8 hex digits of its SHA-256, so any edit of the
// embedded file changes it (recorded in build_info.json and fingerprints).
func TemplatesVersion() string {
	sum := sha256.Sum256(templatesYAML)
	return tmpl.Version + "+" + hex.EncodeToString(sum[:4])
}

// Wording fills the templates for one lesion under one configuration.
type Wording struct {
	lesion    string
	heartType bool
	direct    bool
	repl      *strings.Replacer
}

// NewWording prepares the wording of one lesion from its definition in
// the configuration's lesion set: the heart note where the definition
// asks for it, the direct or suggestive detection phrasing; thresholds
// come from cfg.
func NewWording(lesion string, cfg buildcfg.Config) *Wording {
	def, _ := cfg.LesionSet().Def(lesion)
	w := &Wording{
		lesion:    lesion,
		heartType: def.Heart(),
		direct:    def.Detection == benchmark.DirectWording,
	}
	note := ""
	if def.HeartNote {
		note = " " + strings.ReplaceAll(tmpl.HeartNote, "{lesion}", lesion)
	}
	w.repl = strings.NewReplacer(
		"{lesion}", lesion,
		"{heart_note}", note,
		"{region_min}", percent(cfg.RegionOverlapMin),
		"{lung_min}", percent(cfg.LungOverlapMin),
	)
	return w
}

// percent writes a fraction as a percentage without float noise: 0.2 →
// "20%", 0.01 → "1%", 0.125 → "12.5%".
func percent(f float64) string {
	v := math.Round(f*100*1e6) / 1e6
	return strconv.FormatFloat(v, 'f', -1, 64) + "%"
}

func (w *Wording) fill(s string) string { return w.repl.Replace(s) }

func (w *Wording) fillLung(s, lung string) string {
	return strings.ReplaceAll(w.fill(s), "{lung}", lung)
}

// Question formats a question (format.md §3.6): the instruction, a blank
// line, "Options:", then "(k) <option>" per option, no trailing newline.
func Question(instruction string, options []string) string {
	var b strings.Builder
	b.WriteString(instruction)
	b.WriteString("\n\nOptions:")
	for k, o := range options {
		fmt.Fprintf(&b, "\n(%d) %s", k+1, o)
	}
	return b.String()
}

// Detection is the detection instruction (§9.1).
func (w *Wording) Detection() string {
	if w.direct {
		return w.fill(tmpl.Detection.Direct)
	}
	return w.fill(tmpl.Detection.Suggestive)
}

// ContourEval is the contour-evaluation instruction (§9.2).
func (w *Wording) ContourEval() string { return w.fill(tmpl.ContourEval) }

// InitialContext is the preamble of the point questions (§9.3).
func (w *Wording) InitialContext() string { return w.fill(tmpl.InitialContext) }

// Expansion is the expansion-point instruction (§9.4).
func (w *Wording) Expansion() string { return w.fill(tmpl.Expansion) }

// Contraction is the contraction-point instruction (§9.4).
func (w *Wording) Contraction() string { return w.fill(tmpl.Contraction) }

// RevisionResult is the revision-result instruction (§9.5).
func (w *Wording) RevisionResult() string { return w.fill(tmpl.RevisionResult) }

// Distribution is the distribution instruction (§10).
func (w *Wording) Distribution() string { return w.fill(tmpl.Distribution) }

// Location is the location instruction (§10).
func (w *Wording) Location() string { return w.fill(tmpl.Location) }

// Severity is the severity instruction and its three options for the
// selected lung ("right lung" or "left lung").
func (w *Wording) Severity(lung string) (string, []string) {
	opts := make([]string, len(tmpl.Severity.Options))
	for i, o := range tmpl.Severity.Options {
		opts[i] = w.fillLung(o, lung)
	}
	return w.fillLung(tmpl.Severity.Question, lung), opts
}

// Comparison is the comparison instruction and its four options.
func (w *Wording) Comparison() (string, []string) {
	opts := make([]string, len(tmpl.Comparison.Options))
	for i, o := range tmpl.Comparison.Options {
		opts[i] = w.fill(o)
	}
	return w.fill(tmpl.Comparison.Question), opts
}
