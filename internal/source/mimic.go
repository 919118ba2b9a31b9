package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// MIMICStats counts the MIMIC-ILS pairs that were not made candidates
// (§3 items 4 and 5), per lesion.
type MIMICStats struct {
	Studies           int
	NoLesionMask      map[string]int
	DuplicatePositive map[string]int
}

// ilsStudy is one study of the MIMIC-ILS JSON; pairs are decoded into
// slices, so their document order is kept.
type ilsStudy struct {
	SubjectID      string `json:"subject_id"`
	DicomID        string `json:"dicom_id"`
	ImagePath      string `json:"image_path"`
	SectionContent string `json:"section_content"`
	Pairs          struct {
		Positive []ilsPair `json:"positive_pairs"`
		Negative []ilsPair `json:"negative_pairs"`
	} `json:"instruction_answer_pairs"`
}

type ilsPair struct {
	PairID           string          `json:"pair_id"`
	Type             string          `json:"type"`
	Target           string          `json:"target"`
	Location         json.RawMessage `json:"location"`
	ReportedLocation json.RawMessage `json:"reported_location"`
	SentIdx          json.RawMessage `json:"sent_idx"`
	SegMaskPath      *string         `json:"seg_mask_path"`
}

// FromMIMIC converts MIMIC-CXR-JPG + MIMIC-ILS inputs into manifest cases
// in document order (§2.1–2.4, §3 pools): positive pairs become global or
// basic candidates (SourceType "global"/"basic"), global negative pairs
// become negatives (SourceType "global"). Only the split cfg.ILSSplit and
// targets in cfg.Lesions are read. chexmaskCSV and lungPNGPattern are the
// optional lung sources (at least one is needed); the pattern's
// placeholders are {image_id} and {side}. cxrDir is the MIMIC-CXR-JPG root
// or its files/ directory (jpg_tree, detected), or the folder of
// <dicom_id>.png files (flat_png). Errors concern the whole source and name
// the file and, for JSON problems, the line. Once ctx ends it stops,
// between studies, with ctx's error.
func FromMIMIC(ctx context.Context, cxrDir, ilsJSON, ilsMasksDir, chexmaskCSV, lungPNGPattern string, cfg buildcfg.Config) ([]*Case, *MIMICStats, error) {
	in, err := mimicPaths(cxrDir, ilsMasksDir, chexmaskCSV, lungPNGPattern, cfg)
	if err != nil {
		return nil, nil, err
	}
	f, err := safefile.Open(ilsJSON, safefile.Follow)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: cannot read: %w", ilsJSON, safefile.Reason(err))
	}
	defer func() { _ = f.Close() }() // read-only

	r := &ilsReader{
		ctx:       ctx,
		path:      ilsJSON,
		dec:       json.NewDecoder(newILSCapReader(bufio.NewReaderSize(f, 1<<20))),
		in:        in,
		cfg:       cfg,
		wanted:    map[string]bool{},
		st:        &MIMICStats{NoLesionMask: map[string]int{}, DuplicatePositive: map[string]int{}},
		seenKey:   map[string]string{},
		seenImage: map[string]string{},
	}
	for _, l := range cfg.Lesions {
		r.wanted[l] = true
	}
	if err := r.readSplits(); err != nil {
		return nil, nil, err
	}
	return r.cases, r.st, nil
}

// mimicInputs are FromMIMIC's checked, absolute input paths.
type mimicInputs struct {
	imgRoot     string // <dicom>.png (flat_png) or the p<XX>/… tree (jpg_tree)
	masksDir    string
	chexmaskCSV string
	lungPattern string
}

// mimicPaths checks the lung sources and the directories and makes the
// paths absolute.
func mimicPaths(cxrDir, ilsMasksDir, chexmaskCSV, lungPNGPattern string, cfg buildcfg.Config) (mimicInputs, error) {
	if chexmaskCSV == "" && lungPNGPattern == "" {
		return mimicInputs{}, ErrNoLungSource
	}
	if lungPNGPattern != "" && (!strings.Contains(lungPNGPattern, "{image_id}") || !strings.Contains(lungPNGPattern, "{side}")) {
		return mimicInputs{}, fmt.Errorf("lung PNG pattern %q must contain {image_id} and {side}", lungPNGPattern)
	}
	var err error
	abs := func(p string) string {
		if p == "" || err != nil {
			return p
		}
		var a string
		a, err = filepath.Abs(p)
		return a
	}
	cxrDir, ilsMasksDir, chexmaskCSV, lungPNGPattern = abs(cxrDir), abs(ilsMasksDir), abs(chexmaskCSV), abs(lungPNGPattern)
	if err != nil {
		return mimicInputs{}, err
	}
	for _, d := range []string{cxrDir, ilsMasksDir} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return mimicInputs{}, fmt.Errorf("%s: not a readable directory", d)
		}
	}
	in := mimicInputs{imgRoot: cxrDir, masksDir: ilsMasksDir, chexmaskCSV: chexmaskCSV, lungPattern: lungPNGPattern}
	if cfg.MimicLayout != "flat_png" {
		if in.imgRoot, err = mimicFilesDir(cxrDir); err != nil {
			return mimicInputs{}, err
		}
	}
	return in, nil
}

// ilsReader streams the MIMIC-ILS JSON and collects the cases of the
// configured split.
type ilsReader struct {
	ctx       context.Context
	path      string
	dec       *json.Decoder
	in        mimicInputs
	cfg       buildcfg.Config
	wanted    map[string]bool
	st        *MIMICStats
	cases     []*Case
	seenKey   map[string]string // key_id → study
	seenImage map[string]string // lesion + dicom_id → pair id of the kept positive
}

// fail reports a problem at the decoder's current line.
func (r *ilsReader) fail(msg string, args ...any) error {
	line := lineAt(r.path, r.dec.InputOffset())
	return &LineError{File: r.path, Line: line, Msg: fmt.Sprintf(msg, args...)}
}

// jsonFail reports a decoding error at its offset when it has one.
func (r *ilsReader) jsonFail(err error) error {
	var ce *capError
	if errors.As(err, &ce) {
		return &LineError{File: r.path, Line: ce.line, Msg: ce.msg}
	}
	var se *json.SyntaxError
	off := r.dec.InputOffset()
	if errors.As(err, &se) {
		off = se.Offset
	}
	return &LineError{File: r.path, Line: lineAt(r.path, off), Msg: "invalid JSON: " + err.Error()}
}

// readSplits reads the top-level object, skipping the other splits.
func (r *ilsReader) readSplits() error {
	if err := expectDelim(r.dec, '{'); err != nil {
		return r.fail("the top level must be an object of splits (train/val/test)")
	}
	found := false
	for r.dec.More() {
		tok, err := r.dec.Token()
		if err != nil {
			return r.jsonFail(err)
		}
		split, _ := tok.(string)
		if split != r.cfg.ILSSplit {
			if err := skipValue(r.dec); err != nil {
				return r.jsonFail(err)
			}
			continue
		}
		found = true
		if err := r.readSplit(split); err != nil {
			return err
		}
	}
	if !found {
		return &LineError{File: r.path, Msg: fmt.Sprintf("no split %q (ils_split)", r.cfg.ILSSplit)}
	}
	return nil
}

// readSplit reads one split's object of studies.
func (r *ilsReader) readSplit(split string) error {
	if err := expectDelim(r.dec, '{'); err != nil {
		return r.fail("split %q must be an object of studies", split)
	}
	for r.dec.More() {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if err := r.readStudy(); err != nil {
			return err
		}
	}
	if _, err := r.dec.Token(); err != nil { // closing '}'
		return r.jsonFail(err)
	}
	return nil
}

// readStudy reads one study and appends its cases.
func (r *ilsReader) readStudy() error {
	tok, err := r.dec.Token()
	if err != nil {
		return r.jsonFail(err)
	}
	studyID, _ := tok.(string)
	var s ilsStudy
	if err := r.dec.Decode(&s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return r.fail("study %s: field %s has the wrong type (%s, want %s)", studyID, te.Field, te.Value, te.Type)
		}
		return r.jsonFail(err)
	}
	r.st.Studies++
	in := r.in
	cs, err := studyCases(studyID, &s, in.imgRoot, in.masksDir, in.chexmaskCSV, in.lungPattern, r.cfg, r.wanted, r.st, r.seenImage)
	if err != nil {
		return r.fail("%v", err)
	}
	for _, c := range cs {
		if prev, dup := r.seenKey[c.KeyID()]; dup {
			return r.fail("study %s: key_id %s repeats one of study %s", studyID, c.KeyID(), prev)
		}
		r.seenKey[c.KeyID()] = studyID
	}
	r.cases = append(r.cases, cs...)
	return nil
}

// studyCases turns one study into cases: pass 1 global positives, pass 2
// the first basic positive of each target without a global one, then the
// global negatives (§3).
func studyCases(studyID string, s *ilsStudy, imgRoot, masksDir, csvPath, pattern string, cfg buildcfg.Config,
	wanted map[string]bool, st *MIMICStats, seenImage map[string]string) ([]*Case, error) {
	if s.DicomID == "" || strings.ContainsAny(s.DicomID, "/\\") || s.DicomID == "." || s.DicomID == ".." {
		return nil, fmt.Errorf("study %s: dicom_id %q is missing or not a plain file name", studyID, s.DicomID)
	}
	var image string
	switch cfg.MimicLayout {
	case "flat_png":
		image = filepath.Join(imgRoot, s.DicomID+".png")
	default:
		p, err := ResolvePath(s.ImagePath, imgRoot, "image_path")
		if err != nil || filepath.IsAbs(s.ImagePath) {
			return nil, fmt.Errorf("study %s: image_path %q must be a relative path inside files/", studyID, s.ImagePath)
		}
		image = p
	}
	// MIMIC-ILS targets are read under the lesions' source names.
	lesions := cfg.LesionSet()
	for _, pairs := range [][]ilsPair{s.Pairs.Positive, s.Pairs.Negative} {
		for i := range pairs {
			if name, ok := lesions.FromSource(pairs[i].Target); ok {
				pairs[i].Target = name
			}
		}
	}
	hasGlobal := map[string]bool{}
	for _, p := range s.Pairs.Positive {
		if p.Type == "global" {
			hasGlobal[p.Target] = true
		}
	}
	var picked []ilsPair
	var kinds []string
	for _, p := range s.Pairs.Positive {
		if p.Type == "global" && wanted[p.Target] {
			picked, kinds = append(picked, p), append(kinds, "global")
		}
	}
	basicDone := map[string]bool{}
	for _, p := range s.Pairs.Positive {
		if p.Type == "basic" && wanted[p.Target] && !hasGlobal[p.Target] && !basicDone[p.Target] {
			basicDone[p.Target] = true
			picked, kinds = append(picked, p), append(kinds, "basic")
		}
	}
	var out []*Case
	for i, p := range picked {
		c, err := pairCase(studyID, s, p, "positive", kinds[i], image, csvPath, pattern, cfg)
		if err != nil {
			return nil, err
		}
		if p.SegMaskPath == nil || *p.SegMaskPath == "" {
			st.NoLesionMask[p.Target]++
			continue
		}
		mp, err := ResolvePath(*p.SegMaskPath, masksDir, "seg_mask_path")
		if err != nil || filepath.IsAbs(*p.SegMaskPath) {
			return nil, fmt.Errorf("study %s, pair %s: seg_mask_path %q must be a relative path inside the masks directory", studyID, p.PairID, *p.SegMaskPath)
		}
		if fi, err := os.Stat(mp); err != nil || !fi.Mode().IsRegular() {
			st.NoLesionMask[p.Target]++
			continue
		}
		k := p.Target + "\x00" + s.DicomID
		if _, dup := seenImage[k]; dup {
			st.DuplicatePositive[p.Target]++
			continue
		}
		seenImage[k] = p.PairID
		c.LesionMasks = []string{mp}
		out = append(out, c)
	}
	for _, p := range s.Pairs.Negative {
		if p.Type != "global" || !wanted[p.Target] {
			continue
		}
		c, err := pairCase(studyID, s, p, "negative", "global", image, csvPath, pattern, cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func pairCase(studyID string, s *ilsStudy, p ilsPair, label, kind, image, csvPath, pattern string, cfg buildcfg.Config) (*Case, error) {
	if !cfg.LesionSet().Has(p.Target) {
		return nil, fmt.Errorf("study %s, pair %s: target %q is not a defined lesion", studyID, p.PairID, textsafe.OneLine(p.Target))
	}
	if err := checkCaseID(p.PairID, label); err != nil {
		return nil, fmt.Errorf("study %s (%s_pairs): %w", studyID, label, err)
	}
	id := s.DicomID
	c := &Case{
		CaseID: p.PairID, Lesion: p.Target, Label: label,
		Image: image, ImageID: &id,
		Report:     s.SectionContent,
		SourceType: kind,
	}
	if csvPath != "" {
		c.Chexmask = &ChexmaskRef{CSV: csvPath, ID: s.DicomID, SizeCheck: cfg.MimicLayout != "flat_png"}
	}
	if pattern != "" {
		sub := func(side string) string {
			return strings.NewReplacer("{image_id}", s.DicomID, "{side}", side).Replace(pattern)
		}
		c.LungMasks = &LungPaths{Right: sub("right"), Left: sub("left")}
	}
	hints := p.ReportedLocation
	if len(hints) == 0 || string(hints) == "null" {
		hints = p.Location
	}
	c.LocationHints = stringsOf(hints)
	src := ojson.NewObject().
		Set("dataset", ojson.Str("mimic-ils")).
		Set("split", ojson.Str(cfg.ILSSplit)).
		Set("study_id", ojson.Str(studyID)).
		Set("subject_id", ojson.Str(s.SubjectID)).
		Set("pair_type", ojson.Str(p.Type))
	if v := stringsOf(p.SentIdx); len(v) == 1 {
		src.Set("sent_idx", ojson.Str(v[0]))
	}
	c.Source = ojson.MarshalCompact(src)
	return c, nil
}

// stringsOf reads a JSON string or array of strings (other shapes: nil);
// location fields differ between releases.
func stringsOf(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil
		}
		return []string{one}
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	var num json.Number
	if json.Unmarshal(raw, &num) == nil {
		return []string{num.String()}
	}
	return nil
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("want %v", d)
	}
	return nil
}

// skipValue consumes one JSON value token by token (no buffering of the
// splits we do not read).
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// lineAt returns the 1-based line of byte offset off in file path (only
// computed when reporting an error).
func lineAt(path string, off int64) int {
	f, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }() // read-only
	line := 1
	buf := make([]byte, 1<<16)
	for off > 0 {
		n, err := f.Read(buf[:min(int64(len(buf)), off)])
		line += bytes.Count(buf[:n], []byte{'\n'})
		off -= int64(n)
		if err == io.EOF || n == 0 {
			break
		}
	}
	return line
}

// Caps of the MIMIC-ILS JSON stream. A token (a string, number or literal)
// longer than MaxILSTokenBytes, or one study (a value three levels deep:
// splits, studies, study) longer than MaxILSStudyBytes, stops the read:
// encoding/json holds a whole token, or a whole decoded value, in memory,
// even in a split that is skipped. A real report text is a few kilobytes, a
// study a few tens.
const (
	MaxILSTokenBytes = 1 << 20
	MaxILSStudyBytes = 16 << 20
)

// ilsCapReader passes the JSON stream through a small lexer that counts
// the current token's and study's bytes and the lines.
type ilsCapReader struct {
	r                    io.Reader
	maxToken, maxStudy   int64
	tok, study           int64
	depth                int
	inString, escape     bool
	line, tokLine, start int
}

func newILSCapReader(r io.Reader) *ilsCapReader {
	return &ilsCapReader{r: r, maxToken: MaxILSTokenBytes, maxStudy: MaxILSStudyBytes, line: 1}
}

func (c *ilsCapReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			c.line++
		}
		if c.depth >= 3 {
			c.study++
			if c.study > c.maxStudy {
				return 0, &capError{c.start, fmt.Sprintf("study longer than %d bytes", c.maxStudy)}
			}
		}
		switch {
		case c.inString:
			c.tok++
			switch {
			case c.escape:
				c.escape = false
			case b == '\\':
				c.escape = true
			case b == '"':
				c.inString = false
				c.tok = 0
			}
		case b == '"':
			c.inString, c.tok, c.tokLine = true, 1, c.line
		case b == '{' || b == '[':
			c.tok = 0
			c.depth++
			if c.depth == 3 {
				c.study, c.start = 1, c.line
			}
		case b == '}' || b == ']':
			c.tok = 0
			c.depth--
		case b == ',' || b == ':' || b == ' ' || b == '\t' || b == '\n' || b == '\r':
			c.tok = 0
		default: // number or literal
			if c.tok == 0 {
				c.tokLine = c.line
			}
			c.tok++
		}
		if c.tok > c.maxToken {
			return 0, &capError{c.tokLine, fmt.Sprintf("JSON token longer than %d bytes", c.maxToken)}
		}
	}
	return n, err
}

// capError is a JSON stream over one of its caps; line is where the
// offending study or token started.
type capError struct {
	line int
	msg  string
}

func (e *capError) Error() string { return e.msg }
