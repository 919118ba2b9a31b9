// Package profile holds the prompt texts of an evaluation run: the system
// message and the oracle texts of spec protocol.md §5, with our default
// wording built in and YAML overrides (§6) so that users can reproduce the
// paper's exact prompts without the project shipping them.
//
// Texts are templates with at most three placeholders ({op}, {points},
// {ordinal}, each allowed only in its own key) and {{ / }} escapes. The
// profile hash covers the eight effective template texts, so two runs with
// the same hash sent the same words.
package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/yamlerr"
)

// Profile is a named set of the eight texts (templates, not yet expanded).
type Profile struct {
	Name             string
	System           string // SYS
	LesionPresent    string // O2
	RevisionNeeded   string // O3
	OpNotNeeded      string // O5-no, {op}
	OpNeeded         string // O5-yes, {op} {points}
	OpsClosing       string // O5-end
	NoRevisionNeeded string // O6-RF
	SelectedMask     string // O6-RR, {ordinal}
}

// DefaultName is the name of the built-in profile.
const DefaultName = "default"

// Default returns our own wording (§5, "Our default wording").
func Default() *Profile {
	return &Profile{
		Name:             DefaultName,
		System:           "You are an experienced radiologist. Examine the chest X-ray image(s) provided together with the question. End your reply with a final answer line in the form 'Answer: [Option Number]', writing only the number(s) of the chosen option(s) after 'Answer:' and separating several numbers with commas (e.g., 'Answer: 1', 'Answer: 2', 'Answer: 1,3').",
		LesionPresent:    "Verified finding: this image does contain the lesion. Treat this as certain, set your earlier answer aside, and answer the questions that follow on the premise that the lesion is present.",
		RevisionNeeded:   "Verified finding: the lesion mask shown in this image does require revision. Treat this as certain, set your earlier answer aside, and answer the questions that follow on the premise that the mask must be revised.",
		OpNotNeeded:      "Verified finding: no {op} of the lesion mask is required.",
		OpNeeded:         "Verified finding: the lesion mask must be revised by {op} at the {points}.",
		OpsClosing:       "Treat these findings as certain, set your earlier answers aside, and answer the questions that follow on the premise of these findings.",
		NoRevisionNeeded: "Verified finding: the lesion mask shown in this image does not require revision. Treat this as certain, set your earlier answer aside, and answer the questions that follow on the premise that the mask needs no revision.",
		SelectedMask:     "Verified finding: the {ordinal} mask is the one that reflects the required modifications.\nTreat this as certain, set your earlier answer aside, and answer the questions that follow on the premise of this finding.",
	}
}

// field describes one text: its YAML key, its pointer in a Profile and
// the placeholders it may use.
type field struct {
	key     string
	get     func(*Profile) *string
	allowed []string
}

var fields = []field{
	{"system_prompt", func(p *Profile) *string { return &p.System }, nil},
	{"oracle.lesion_present", func(p *Profile) *string { return &p.LesionPresent }, nil},
	{"oracle.revision_needed", func(p *Profile) *string { return &p.RevisionNeeded }, nil},
	{"oracle.operation_not_needed", func(p *Profile) *string { return &p.OpNotNeeded }, []string{"op"}},
	{"oracle.operation_needed", func(p *Profile) *string { return &p.OpNeeded }, []string{"op", "points"}},
	{"oracle.operations_closing", func(p *Profile) *string { return &p.OpsClosing }, nil},
	{"oracle.no_revision_needed", func(p *Profile) *string { return &p.NoRevisionNeeded }, nil},
	{"oracle.selected_mask", func(p *Profile) *string { return &p.SelectedMask }, []string{"ordinal"}},
}

// Texts returns the eight texts in the table order of §5: SYS, O2, O3,
// O5-no, O5-yes, O5-end, O6-RF, O6-RR.
func (p *Profile) Texts() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = *f.get(p)
	}
	return out
}

// Hash is the hex SHA-256 of the compact §6 JSON array of Texts().
func (p *Profile) Hash() string {
	vals := make([]*ojson.Value, 0, len(fields))
	for _, t := range p.Texts() {
		vals = append(vals, ojson.Str(t))
	}
	sum := sha256.Sum256(ojson.MarshalCompact(ojson.Arr(vals...)))
	return hex.EncodeToString(sum[:])
}

// yamlFile is the file shape; pointers tell "left out" from "".
type yamlFile struct {
	Profile      *string `yaml:"profile"`
	SystemPrompt *string `yaml:"system_prompt"`
	Oracle       *struct {
		LesionPresent      *string `yaml:"lesion_present"`
		RevisionNeeded     *string `yaml:"revision_needed"`
		OperationNotNeeded *string `yaml:"operation_not_needed"`
		OperationNeeded    *string `yaml:"operation_needed"`
		OperationsClosing  *string `yaml:"operations_closing"`
		NoRevisionNeeded   *string `yaml:"no_revision_needed"`
		SelectedMask       *string `yaml:"selected_mask"`
	} `yaml:"oracle"`
}

// maxProfileBytes bounds a profile file (eight short texts).
const maxProfileBytes = yamlerr.MaxFileBytes

// Load reads a profile file. Warnings (texts ending in a newline) are
// returned separately; they do not stop a run.
func Load(path string) (*Profile, []string, error) {
	data, err := safefile.ReadFile(path, maxProfileBytes, safefile.Follow)
	if err != nil {
		return nil, nil, fmt.Errorf("prompt profile: %w", err)
	}
	return Parse(data, path)
}

// Parse reads a profile from YAML; source names it in messages.
func Parse(data []byte, source string) (*Profile, []string, error) {
	var f yamlFile
	if err := yamlerr.Decode(data, &f, true); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("prompt profile %s: empty file", source)
		}
		return nil, nil, fmt.Errorf("prompt profile %s: %v", source, err)
	}
	if f.Profile == nil || *f.Profile == "" {
		return nil, nil, fmt.Errorf("prompt profile %s: missing required key \"profile\" (the profile name)", source)
	}
	p := Default()
	p.Name = *f.Profile
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.System, f.SystemPrompt)
	if o := f.Oracle; o != nil {
		set(&p.LesionPresent, o.LesionPresent)
		set(&p.RevisionNeeded, o.RevisionNeeded)
		set(&p.OpNotNeeded, o.OperationNotNeeded)
		set(&p.OpNeeded, o.OperationNeeded)
		set(&p.OpsClosing, o.OperationsClosing)
		set(&p.NoRevisionNeeded, o.NoRevisionNeeded)
		set(&p.SelectedMask, o.SelectedMask)
	}
	var warnings []string
	for _, fd := range fields {
		text := *fd.get(p)
		if _, err := expand(text, fd.allowed, nil); err != nil {
			return nil, nil, fmt.Errorf("prompt profile %s: %s: %w", source, fd.key, err)
		}
		if strings.HasSuffix(text, "\n") {
			warnings = append(warnings, fmt.Sprintf("prompt profile %s: %s ends in a newline (a | block scalar adds one; use |- or quotes if that is not wanted)", source, fd.key))
		}
	}
	return p, warnings, nil
}

// expand substitutes {name} placeholders from vals and turns {{ and }}
// into braces. A placeholder outside allowed, or a lone brace, is an
// error. With vals nil it only validates.
func expand(tmpl string, allowed []string, vals map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		switch {
		case c == '{' && i+1 < len(tmpl) && tmpl[i+1] == '{':
			b.WriteByte('{')
			i++
		case c == '}' && i+1 < len(tmpl) && tmpl[i+1] == '}':
			b.WriteByte('}')
			i++
		case c == '{':
			end := strings.IndexByte(tmpl[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("unmatched '{' at byte %d (write {{ for a literal brace)", i)
			}
			name := tmpl[i+1 : i+end]
			ok := false
			for _, a := range allowed {
				ok = ok || a == name
			}
			if !ok {
				if len(allowed) == 0 {
					return "", fmt.Errorf("placeholder {%s} is not allowed here (this text takes no placeholders; write {{ and }} for literal braces)", name)
				}
				return "", fmt.Errorf("placeholder {%s} is not allowed here (allowed: {%s})", name, strings.Join(allowed, "}, {"))
			}
			b.WriteString(vals[name])
			i += end
		case c == '}':
			return "", fmt.Errorf("single '}' at byte %d (write }} for a literal brace)", i)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// mustExpand expands a template already validated by Parse or Default.
func mustExpand(tmpl string, allowed []string, vals map[string]string) string {
	s, err := expand(tmpl, allowed, vals)
	if err != nil {
		// Profiles are validated on load; an invalid one built by hand
		// falls back to the raw template rather than panicking.
		return tmpl
	}
	return s
}

// SystemText is the system message as sent ({{ and }} unescaped).
func (p *Profile) SystemText() string { return mustExpand(p.System, nil, nil) }

// O2 is the lesion-present text.
func (p *Profile) O2() string { return mustExpand(p.LesionPresent, nil, nil) }

// O3 is the revision-needed text.
func (p *Profile) O3() string { return mustExpand(p.RevisionNeeded, nil, nil) }

// O6RF is the no-revision text for RF records.
func (p *Profile) O6RF() string { return mustExpand(p.NoRevisionNeeded, nil, nil) }

// O6RR is the selected-mask text for the revision GT option n (1-based).
func (p *Profile) O6RR(n int) string {
	return mustExpand(p.SelectedMask, []string{"ordinal"}, map[string]string{"ordinal": benchmark.Ordinal(n)})
}

// Operation is the GT of one revision operation for the O5 text.
type Operation struct {
	Name   string   // "expansion" or "contraction"
	None   bool     // the GT answer is the string "None"
	Colors []string // colours of the GT options in stored answer_index order
}

// O5 composes the revision-operations text: the expansion line, "\n", the
// contraction line, "\n", the closing sentence.
func (p *Profile) O5(expansion, contraction Operation) string {
	line := func(op Operation) string {
		if op.None {
			return mustExpand(p.OpNotNeeded, []string{"op"}, map[string]string{"op": op.Name})
		}
		return mustExpand(p.OpNeeded, []string{"op", "points"}, map[string]string{"op": op.Name, "points": Points(op.Colors)})
	}
	return line(expansion) + "\n" + line(contraction) + "\n" + mustExpand(p.OpsClosing, nil, nil)
}

// Points lists colours as "red point", "red and blue points" or
// "red, blue, and green points".
func Points(colors []string) string {
	switch len(colors) {
	case 0:
		return "points"
	case 1:
		return colors[0] + " point"
	case 2:
		return colors[0] + " and " + colors[1] + " points"
	}
	return strings.Join(colors[:len(colors)-1], ", ") + ", and " + colors[len(colors)-1] + " points"
}
