package source

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// LineError is a global problem with one line of a source file (§2.4 line
// checks); commands report it and exit with code 2.
type LineError struct {
	File string
	Line int // 1-based; 0 when the problem is not tied to a line
	Msg  string
}

func (e *LineError) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// ReadSource reads a generic manifest or a candidates file (§2.4). Every
// line is checked; the first failing line stops the read with a *LineError
// naming the file, the line and the problem. Lines of lesions outside
// cfg.Lesions are checked, then skipped. isCandidates is true when every
// line has a rank field: the file is then taken as is (§3 is not run).
//
// Paths are resolved against the manifest's directory. Relative paths must
// stay inside it (no "..", so a manifest cannot reach outside its folder by
// accident); absolute paths are accepted, because users keep their data
// wherever they like and an absolute path states that intent explicitly.
//
// The file must be a regular file (a FIFO or device is refused at once,
// see safefile.Open) and no line may exceed MaxLineBytes.
func ReadSource(path string, cfg buildcfg.Config) (cases []*Case, isCandidates bool, err error) {
	f, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return nil, false, &LineError{File: path, Msg: fmt.Sprintf("cannot read: %v", safefile.Reason(err))}
	}
	defer func() { _ = f.Close() }() // read-only
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, false, &LineError{File: path, Msg: err.Error()}
	}
	dir := filepath.Dir(abs)
	lesions := cfg.LesionSet()
	wanted := map[string]bool{}
	for _, l := range cfg.Lesions {
		wanted[l] = true
	}
	seen := map[string]int{} // key_id → line
	ranked, lines := 0, 0
	br := bufio.NewReaderSize(f, 1<<16)
	for n := 1; ; n++ {
		raw, rerr := safefile.ReadLine(br, MaxLineBytes)
		if errors.Is(rerr, safefile.ErrLineTooLong) {
			return nil, false, &LineError{File: path, Line: n, Msg: rerr.Error()}
		}
		if rerr != nil && rerr != io.EOF {
			return nil, false, &LineError{File: path, Line: n, Msg: fmt.Sprintf("read error: %v", rerr)}
		}
		raw = bytes.TrimRight(raw, "\r\n")
		if len(bytes.TrimSpace(raw)) > 0 {
			c, hasRank, perr := parseLine(raw, dir, lesions)
			if perr != nil {
				return nil, false, &LineError{File: path, Line: n, Msg: perr.Error()}
			}
			c.Line = n
			if prev, dup := seen[c.KeyID()]; dup {
				return nil, false, &LineError{File: path, Line: n, Msg: fmt.Sprintf("key_id %s repeats line %d", c.KeyID(), prev)}
			}
			seen[c.KeyID()] = n
			lines++
			if hasRank {
				ranked++
			}
			if wanted[c.Lesion] {
				cases = append(cases, c)
			}
		}
		if rerr == io.EOF {
			break
		}
	}
	if lines == 0 {
		return nil, false, &LineError{File: path, Msg: "no lines"}
	}
	return cases, ranked == lines, nil
}

// MaxLineBytes bounds one line of a manifest or candidates file (a line
// with an inline report is a few kilobytes).
const MaxLineBytes = 16 << 20

// manifestFields is the §2.4 table order plus the candidates' fields; it
// is also the order WriteCandidates uses.
var manifestFields = map[string]bool{
	"case_id": true, "lesion": true, "label": true, "image": true, "image_id": true,
	"lesion_masks": true, "lung_masks": true, "chexmask": true, "heart_mask": true,
	"report": true, "report_path": true, "location_hints": true, "source": true,
	"rank": true, "source_type": true, "sample_seed": true,
}

// parseLine checks one non-empty line and returns its case and whether it
// has a rank (a candidates line).
func parseLine(raw []byte, dir string, lesions *benchmark.LesionSet) (*Case, bool, error) {
	fields, err := lineFields(raw)
	if err != nil {
		return nil, false, err
	}
	// The parts keep the checks' historical order, so a line with several
	// problems still reports the same one first.
	c := &Case{}
	if err := parseRequired(c, fields, dir, lesions); err != nil {
		return nil, false, err
	}
	if err := parseMaskFields(c, fields, dir); err != nil {
		return nil, false, err
	}
	if err := parseTextFields(c, fields, dir); err != nil {
		return nil, false, err
	}
	if err := checkPositive(c); err != nil {
		return nil, false, err
	}
	if err := parseSamplingFields(c, fields); err != nil {
		return nil, false, err
	}
	return c, fields["rank"] != nil, nil
}

// lineFields parses one line into its fields, refusing unknown and
// repeated ones.
func lineFields(raw []byte) (map[string]*ojson.Value, error) {
	v, err := ojson.Parse(raw)
	if err != nil {
		var se *ojson.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("not valid JSON at column %d: %s", se.Col, se.Msg)
		}
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if v.Kind != ojson.KindObject {
		return nil, fmt.Errorf("not a JSON object")
	}
	fields := map[string]*ojson.Value{}
	for _, m := range v.O {
		if !manifestFields[m.Key] {
			return nil, fmt.Errorf("unknown field %q", m.Key)
		}
		if _, dup := fields[m.Key]; dup {
			return nil, fmt.Errorf("field %q appears twice", m.Key)
		}
		fields[m.Key] = m.Value
	}
	return fields, nil
}

// given returns the field's value, or nil when it is absent or null.
func given(fields map[string]*ojson.Value, name string) *ojson.Value {
	if f := fields[name]; f != nil && f.Kind != ojson.KindNull {
		return f
	}
	return nil
}

// parseRequired reads case_id, lesion, label and image.
func parseRequired(c *Case, fields map[string]*ojson.Value, dir string, lesions *benchmark.LesionSet) error {
	for _, name := range []string{"case_id", "lesion", "label", "image"} {
		if given(fields, name) == nil {
			return fmt.Errorf("missing required field %q", name)
		}
	}
	var err error
	if c.CaseID, err = strField(fields, "case_id"); err != nil {
		return err
	}
	if c.Lesion, err = strField(fields, "lesion"); err != nil {
		return err
	}
	// A manifest may name a lesion by any of its source names.
	name, ok := lesions.FromSource(c.Lesion)
	if !ok {
		return fmt.Errorf("lesion %q is not a defined lesion (%s)", textsafe.OneLine(c.Lesion), lesions.Describe())
	}
	c.Lesion = name
	if c.Label, err = strField(fields, "label"); err != nil {
		return err
	}
	if c.Label != "positive" && c.Label != "negative" {
		return fmt.Errorf("label %q is not \"positive\" or \"negative\"", c.Label)
	}
	if err := checkCaseID(c.CaseID, c.Label); err != nil {
		return err
	}
	c.Image, err = pathField(fields, "image", dir)
	return err
}

// parseMaskFields reads image_id, lesion_masks, lung_masks, chexmask and
// heart_mask.
func parseMaskFields(c *Case, fields map[string]*ojson.Value, dir string) error {
	if given(fields, "image_id") != nil {
		s, err := strField(fields, "image_id")
		if err != nil {
			return err
		}
		if s == "" {
			return fmt.Errorf("image_id is empty")
		}
		c.ImageID = &s
	}
	if f := given(fields, "lesion_masks"); f != nil {
		if f.Kind != ojson.KindArray {
			return fmt.Errorf("lesion_masks is %s, want an array of paths", f.Kind)
		}
		for i, e := range f.A {
			p, err := resolvePath(e, fmt.Sprintf("lesion_masks[%d]", i), dir)
			if err != nil {
				return err
			}
			c.LesionMasks = append(c.LesionMasks, p)
		}
	}
	var err error
	if f := given(fields, "lung_masks"); f != nil {
		if c.LungMasks, err = parseLungMasks(f, dir); err != nil {
			return err
		}
	}
	if f := given(fields, "chexmask"); f != nil {
		if c.Chexmask, err = parseChexmask(f, dir); err != nil {
			return err
		}
	}
	c.HeartMask, err = optPathField(fields, "heart_mask", dir)
	return err
}

// parseLungMasks reads {"right": path, "left": path}.
func parseLungMasks(f *ojson.Value, dir string) (*LungPaths, error) {
	if f.Kind != ojson.KindObject {
		return nil, fmt.Errorf("lung_masks is %s, want {\"right\": path, \"left\": path}", f.Kind)
	}
	lp := &LungPaths{}
	for _, m := range f.O {
		var err error
		switch m.Key {
		case "right":
			lp.Right, err = resolvePath(m.Value, "lung_masks.right", dir)
		case "left":
			lp.Left, err = resolvePath(m.Value, "lung_masks.left", dir)
		default:
			err = fmt.Errorf("lung_masks has unknown field %q", m.Key)
		}
		if err != nil {
			return nil, err
		}
	}
	if lp.Right == "" || lp.Left == "" {
		return nil, fmt.Errorf("lung_masks needs both \"right\" and \"left\"")
	}
	return lp, nil
}

// parseChexmask reads {"csv": path, "id": string, "size_check": bool}.
func parseChexmask(f *ojson.Value, dir string) (*ChexmaskRef, error) {
	if f.Kind != ojson.KindObject {
		return nil, fmt.Errorf("chexmask is %s, want {\"csv\": path, \"id\": string}", f.Kind)
	}
	ref := &ChexmaskRef{SizeCheck: true}
	var gotID bool
	for _, m := range f.O {
		var err error
		switch m.Key {
		case "csv":
			ref.CSV, err = resolvePath(m.Value, "chexmask.csv", dir)
		case "id":
			if m.Value.Kind != ojson.KindString || m.Value.S == "" {
				err = fmt.Errorf("chexmask.id must be a non-empty string")
			}
			ref.ID, gotID = m.Value.S, true
		case "size_check":
			if m.Value.Kind != ojson.KindBool {
				err = fmt.Errorf("chexmask.size_check is %s, want true or false", m.Value.Kind)
			}
			ref.SizeCheck = m.Value.B
		default:
			err = fmt.Errorf("chexmask has unknown field %q", m.Key)
		}
		if err != nil {
			return nil, err
		}
	}
	if ref.CSV == "" || !gotID {
		return nil, fmt.Errorf("chexmask needs \"csv\" and \"id\"")
	}
	return ref, nil
}

// parseTextFields reads report_path, report, location_hints and source.
func parseTextFields(c *Case, fields map[string]*ojson.Value, dir string) error {
	var err error
	if c.ReportPath, err = optPathField(fields, "report_path", dir); err != nil {
		return err
	}
	if given(fields, "report") != nil {
		if c.Report, err = strField(fields, "report"); err != nil {
			return err
		}
	}
	if f := given(fields, "location_hints"); f != nil {
		if f.Kind != ojson.KindArray {
			return fmt.Errorf("location_hints is %s, want an array of strings", f.Kind)
		}
		for i, e := range f.A {
			if e.Kind != ojson.KindString {
				return fmt.Errorf("location_hints[%d] is %s, want a string", i, e.Kind)
			}
			c.LocationHints = append(c.LocationHints, e.S)
		}
	}
	if f := given(fields, "source"); f != nil {
		if f.Kind != ojson.KindObject {
			return fmt.Errorf("source is %s, want an object", f.Kind)
		}
		c.Source = ojson.MarshalCompact(f)
	}
	return nil
}

// checkPositive: a positive case needs its lesion masks and a lung source.
func checkPositive(c *Case) error {
	if !c.Positive() {
		return nil
	}
	if len(c.LesionMasks) == 0 {
		return fmt.Errorf("positive case needs lesion_masks (one or more mask paths)")
	}
	if c.LungMasks == nil && c.Chexmask == nil {
		return fmt.Errorf("positive case needs a lung source: lung_masks and/or chexmask")
	}
	return nil
}

// parseSamplingFields reads the candidates' rank, source_type and
// sample_seed. A null rank is refused: every candidates line has one.
func parseSamplingFields(c *Case, fields map[string]*ojson.Value) error {
	if f := fields["rank"]; f != nil {
		r, err := strconv.Atoi(f.N)
		if f.Kind != ojson.KindNumber || err != nil || r < 0 {
			return fmt.Errorf("rank must be a non-negative integer")
		}
		c.Rank = r
	}
	if f := given(fields, "source_type"); f != nil {
		if f.Kind != ojson.KindString || (f.S != "global" && f.S != "basic" && f.S != "manifest") {
			return fmt.Errorf("source_type must be \"global\", \"basic\" or \"manifest\"")
		}
		c.SourceType = f.S
	}
	if f := given(fields, "sample_seed"); f != nil {
		s, err := strconv.ParseUint(f.N, 10, 64)
		if f.Kind != ojson.KindNumber || err != nil {
			return fmt.Errorf("sample_seed must be an unsigned 64-bit integer or null")
		}
		c.SampleSeed = &s
	}
	return nil
}

// checkCaseID applies the pair-id pattern and the polarity rule.
func checkCaseID(id, label string) error {
	m := pairIDPattern.FindStringSubmatch(id)
	if m == nil {
		return fmt.Errorf("case_id %q does not match <stem>_<positive|negative>_<n> (stem: 1–64 of [A-Za-z0-9.-], starting with a letter or digit)", id)
	}
	if m[1] != label {
		return fmt.Errorf("case_id %q is a %s id but label is %q", id, m[1], label)
	}
	return nil
}

func strField(fields map[string]*ojson.Value, name string) (string, error) {
	f := fields[name]
	if f.Kind != ojson.KindString {
		return "", fmt.Errorf("%s is %s, want a string", name, f.Kind)
	}
	return f.S, nil
}

func pathField(fields map[string]*ojson.Value, name, dir string) (string, error) {
	return resolvePath(fields[name], name, dir)
}

// optPathField treats absent, null and "" as "no path".
func optPathField(fields map[string]*ojson.Value, name, dir string) (string, error) {
	f := fields[name]
	if f == nil || f.Kind == ojson.KindNull || (f.Kind == ojson.KindString && f.S == "") {
		return "", nil
	}
	return resolvePath(f, name, dir)
}

// resolvePath checks a path value and makes it absolute (see ReadSource).
func resolvePath(v *ojson.Value, name, dir string) (string, error) {
	if v.Kind != ojson.KindString {
		return "", fmt.Errorf("%s is %s, want a path string", name, v.Kind)
	}
	return ResolvePath(v.S, dir, name)
}

// ResolvePath applies the manifest path rules: non-empty, no control
// characters, relative paths stay inside dir, absolute paths are kept.
func ResolvePath(p, dir, name string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%s is an empty path", name)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("%s contains a control character", name)
		}
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	clean := filepath.Clean(filepath.FromSlash(p))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s %q leaves the manifest's directory (use an absolute path for data elsewhere)", name, p)
	}
	return filepath.Join(dir, clean), nil
}
