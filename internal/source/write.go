package source

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// CaseJSON is the candidates line of c (§2.4) as an ordered JSON object:
// the manifest fields in the order of the §2.4 table, then rank,
// source_type and sample_seed. Paths are written relative to baseDir when
// they lie inside it, otherwise absolute (ReadSource accepts both).
func CaseJSON(c *Case, baseDir string) *ojson.Value {
	rel := func(p string) *ojson.Value { return ojson.Str(relPath(p, baseDir)) }
	o := ojson.NewObject().
		Set("case_id", ojson.Str(c.CaseID)).
		Set("lesion", ojson.Str(c.Lesion)).
		Set("label", ojson.Str(c.Label)).
		Set("image", rel(c.Image))
	if c.ImageID != nil {
		o.Set("image_id", ojson.Str(*c.ImageID))
	}
	if len(c.LesionMasks) > 0 {
		a := ojson.Arr()
		for _, p := range c.LesionMasks {
			a.A = append(a.A, rel(p))
		}
		o.Set("lesion_masks", a)
	}
	if c.LungMasks != nil {
		o.Set("lung_masks", ojson.NewObject().Set("right", rel(c.LungMasks.Right)).Set("left", rel(c.LungMasks.Left)))
	}
	if c.Chexmask != nil {
		cm := ojson.NewObject().Set("csv", rel(c.Chexmask.CSV)).Set("id", ojson.Str(c.Chexmask.ID))
		if !c.Chexmask.SizeCheck {
			cm.Set("size_check", ojson.Bool(false))
		}
		o.Set("chexmask", cm)
	}
	if c.HeartMask != "" {
		o.Set("heart_mask", rel(c.HeartMask))
	}
	if c.Report != "" {
		o.Set("report", ojson.Str(c.Report))
	}
	if c.ReportPath != "" {
		o.Set("report_path", rel(c.ReportPath))
	}
	if len(c.LocationHints) > 0 {
		o.Set("location_hints", ojson.Strs(c.LocationHints))
	}
	if len(c.Source) > 0 {
		if v, err := ojson.Parse(c.Source); err == nil {
			o.Set("source", v)
		}
	}
	o.Set("rank", ojson.Int(int64(c.Rank)))
	st := c.SourceType
	if st == "" {
		st = "manifest"
	}
	o.Set("source_type", ojson.Str(st))
	if c.SampleSeed != nil {
		o.Set("sample_seed", ojson.Num(fmt.Sprint(*c.SampleSeed)))
	} else {
		o.Set("sample_seed", ojson.Null())
	}
	return o
}

func relPath(p, base string) string {
	if base == "" {
		return filepath.ToSlash(p)
	}
	r, err := filepath.Rel(base, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return p
	}
	return filepath.ToSlash(r)
}

// MarshalCandidates returns the candidates.jsonl bytes: one compact §6
// JSON line per case, each ending in "\n".
func MarshalCandidates(cases []*Case, baseDir string) []byte {
	var buf bytes.Buffer
	for _, c := range cases {
		buf.Write(ojson.MarshalCompact(CaseJSON(c, baseDir)))
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// WriteCandidates writes candidates.jsonl atomically (temporary file in the
// same directory, synced, renamed over path). Paths inside the output's
// directory are written relative to it. j tracks the temporary file
// (atomicfile.WriteFile).
func WriteCandidates(j *job.Job, path string, cases []*Case) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(j, abs, MarshalCandidates(cases, filepath.Dir(abs)))
}

// CheckCandidatesEnds reports whether the file r of size bytes is
// recognisably a candidates.jsonl that WriteCandidates wrote, so that it may
// be replaced: empty (a sample with no candidates), or its first and last
// non-blank lines are candidates lines (manifest fields only, with rank,
// source_type and sample_seed). Only those two lines are read (each at most
// MaxLineBytes). The error says which line is not a candidate and why.
func CheckCandidatesEnds(r io.ReaderAt, size int64) error {
	first, last, blank, err := safefile.EndLines(r, size, MaxLineBytes)
	if err != nil {
		return fmt.Errorf("its first or last line: %w", err)
	}
	if blank {
		return nil
	}
	for _, l := range []struct {
		which string
		raw   []byte
	}{{"first", first}, {"last", last}} {
		if err := checkCandidateLine(l.raw); err != nil {
			return fmt.Errorf("its %s line is not a candidate: %w", l.which, err)
		}
	}
	return nil
}

// checkCandidateLine checks the shape of one candidates line as
// CaseJSON writes it; the paths it names are not looked at.
func checkCandidateLine(raw []byte) error {
	fields, err := lineFields(raw)
	if err != nil {
		return err
	}
	for _, name := range []string{"case_id", "lesion", "label", "image", "source_type"} {
		if f := fields[name]; f == nil || f.Kind != ojson.KindString {
			return fmt.Errorf("%s is missing or not a string", name)
		}
	}
	for _, name := range []string{"rank", "sample_seed"} {
		if fields[name] == nil {
			return fmt.Errorf("%s is missing", name)
		}
	}
	return parseSamplingFields(&Case{}, fields)
}
