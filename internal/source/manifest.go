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
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/ojson"
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
// see imagefile.Open) and no line may exceed MaxLineBytes.
func ReadSource(path string, cfg buildcfg.Config) (cases []*Case, isCandidates bool, err error) {
	f, err := imagefile.Open(path, imagefile.Follow)
	if err != nil {
		return nil, false, &LineError{File: path, Msg: fmt.Sprintf("cannot read: %v", unwrapPath(err))}
	}
	defer f.Close()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, false, &LineError{File: path, Msg: err.Error()}
	}
	dir := filepath.Dir(abs)
	wanted := map[string]bool{}
	for _, l := range cfg.Lesions {
		wanted[l] = true
	}
	seen := map[string]int{} // key_id → line
	ranked, lines := 0, 0
	br := bufio.NewReaderSize(f, 1<<16)
	for n := 1; ; n++ {
		raw, rerr := imagefile.ReadLine(br, MaxLineBytes)
		if errors.Is(rerr, imagefile.ErrLineTooLong) {
			return nil, false, &LineError{File: path, Line: n, Msg: rerr.Error()}
		}
		if rerr != nil && rerr != io.EOF {
			return nil, false, &LineError{File: path, Line: n, Msg: fmt.Sprintf("read error: %v", rerr)}
		}
		raw = bytes.TrimRight(raw, "\r\n")
		if len(bytes.TrimSpace(raw)) > 0 {
			c, hasRank, perr := parseLine(raw, dir)
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

func parseLine(raw []byte, dir string) (*Case, bool, error) {
	v, err := ojson.Parse(raw)
	if err != nil {
		var se *ojson.SyntaxError
		if errors.As(err, &se) {
			return nil, false, fmt.Errorf("not valid JSON at column %d: %s", se.Col, se.Msg)
		}
		return nil, false, fmt.Errorf("not valid JSON: %v", err)
	}
	if v.Kind != ojson.KindObject {
		return nil, false, fmt.Errorf("not a JSON object")
	}
	fields := map[string]*ojson.Value{}
	for _, m := range v.O {
		if !manifestFields[m.Key] {
			return nil, false, fmt.Errorf("unknown field %q", m.Key)
		}
		if _, dup := fields[m.Key]; dup {
			return nil, false, fmt.Errorf("field %q appears twice", m.Key)
		}
		fields[m.Key] = m.Value
	}
	c := &Case{}
	for _, name := range []string{"case_id", "lesion", "label", "image"} {
		if f := fields[name]; f == nil || f.Kind == ojson.KindNull {
			return nil, false, fmt.Errorf("missing required field %q", name)
		}
	}
	if c.CaseID, err = strField(fields, "case_id"); err != nil {
		return nil, false, err
	}
	if c.Lesion, err = strField(fields, "lesion"); err != nil {
		return nil, false, err
	}
	if !benchmark.IsLesion(c.Lesion) {
		return nil, false, fmt.Errorf("lesion %q is not one of the seven lesions (%s)", c.Lesion, strings.Join(benchmark.Lesions, ", "))
	}
	if c.Label, err = strField(fields, "label"); err != nil {
		return nil, false, err
	}
	if c.Label != "positive" && c.Label != "negative" {
		return nil, false, fmt.Errorf("label %q is not \"positive\" or \"negative\"", c.Label)
	}
	if err := checkCaseID(c.CaseID, c.Label); err != nil {
		return nil, false, err
	}
	if c.Image, err = pathField(fields, "image", dir); err != nil {
		return nil, false, err
	}
	if f := fields["image_id"]; f != nil && f.Kind != ojson.KindNull {
		s, err := strField(fields, "image_id")
		if err != nil {
			return nil, false, err
		}
		if s == "" {
			return nil, false, fmt.Errorf("image_id is empty")
		}
		c.ImageID = &s
	}
	if f := fields["lesion_masks"]; f != nil && f.Kind != ojson.KindNull {
		if f.Kind != ojson.KindArray {
			return nil, false, fmt.Errorf("lesion_masks is %s, want an array of paths", f.Kind)
		}
		for i, e := range f.A {
			p, err := resolvePath(e, fmt.Sprintf("lesion_masks[%d]", i), dir)
			if err != nil {
				return nil, false, err
			}
			c.LesionMasks = append(c.LesionMasks, p)
		}
	}
	if f := fields["lung_masks"]; f != nil && f.Kind != ojson.KindNull {
		if f.Kind != ojson.KindObject {
			return nil, false, fmt.Errorf("lung_masks is %s, want {\"right\": path, \"left\": path}", f.Kind)
		}
		lp := &LungPaths{}
		for _, m := range f.O {
			switch m.Key {
			case "right":
				lp.Right, err = resolvePath(m.Value, "lung_masks.right", dir)
			case "left":
				lp.Left, err = resolvePath(m.Value, "lung_masks.left", dir)
			default:
				err = fmt.Errorf("lung_masks has unknown field %q", m.Key)
			}
			if err != nil {
				return nil, false, err
			}
		}
		if lp.Right == "" || lp.Left == "" {
			return nil, false, fmt.Errorf("lung_masks needs both \"right\" and \"left\"")
		}
		c.LungMasks = lp
	}
	if f := fields["chexmask"]; f != nil && f.Kind != ojson.KindNull {
		if f.Kind != ojson.KindObject {
			return nil, false, fmt.Errorf("chexmask is %s, want {\"csv\": path, \"id\": string}", f.Kind)
		}
		ref := &ChexmaskRef{SizeCheck: true}
		var gotID bool
		for _, m := range f.O {
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
				return nil, false, err
			}
		}
		if ref.CSV == "" || !gotID {
			return nil, false, fmt.Errorf("chexmask needs \"csv\" and \"id\"")
		}
		c.Chexmask = ref
	}
	if c.HeartMask, err = optPathField(fields, "heart_mask", dir); err != nil {
		return nil, false, err
	}
	if c.ReportPath, err = optPathField(fields, "report_path", dir); err != nil {
		return nil, false, err
	}
	if f := fields["report"]; f != nil && f.Kind != ojson.KindNull {
		if c.Report, err = strField(fields, "report"); err != nil {
			return nil, false, err
		}
	}
	if f := fields["location_hints"]; f != nil && f.Kind != ojson.KindNull {
		if f.Kind != ojson.KindArray {
			return nil, false, fmt.Errorf("location_hints is %s, want an array of strings", f.Kind)
		}
		for i, e := range f.A {
			if e.Kind != ojson.KindString {
				return nil, false, fmt.Errorf("location_hints[%d] is %s, want a string", i, e.Kind)
			}
			c.LocationHints = append(c.LocationHints, e.S)
		}
	}
	if f := fields["source"]; f != nil && f.Kind != ojson.KindNull {
		if f.Kind != ojson.KindObject {
			return nil, false, fmt.Errorf("source is %s, want an object", f.Kind)
		}
		c.Source = ojson.MarshalCompact(f)
	}
	if c.Positive() {
		if len(c.LesionMasks) == 0 {
			return nil, false, fmt.Errorf("positive case needs lesion_masks (one or more mask paths)")
		}
		if c.LungMasks == nil && c.Chexmask == nil {
			return nil, false, fmt.Errorf("positive case needs a lung source: lung_masks and/or chexmask")
		}
	}
	hasRank := false
	if f := fields["rank"]; f != nil {
		r, err := strconv.Atoi(f.N)
		if f.Kind != ojson.KindNumber || err != nil || r < 0 {
			return nil, false, fmt.Errorf("rank must be a non-negative integer")
		}
		c.Rank, hasRank = r, true
	}
	if f := fields["source_type"]; f != nil && f.Kind != ojson.KindNull {
		if f.Kind != ojson.KindString || (f.S != "global" && f.S != "basic" && f.S != "manifest") {
			return nil, false, fmt.Errorf("source_type must be \"global\", \"basic\" or \"manifest\"")
		}
		c.SourceType = f.S
	}
	if f := fields["sample_seed"]; f != nil && f.Kind != ojson.KindNull {
		s, err := strconv.ParseUint(f.N, 10, 64)
		if f.Kind != ojson.KindNumber || err != nil {
			return nil, false, fmt.Errorf("sample_seed must be an unsigned 64-bit integer or null")
		}
		c.SampleSeed = &s
	}
	return c, hasRank, nil
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
