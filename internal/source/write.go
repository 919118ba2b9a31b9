package source

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/ojson"
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
// directory are written relative to it.
func WriteCandidates(path string, cases []*Case) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(abs, MarshalCandidates(cases, filepath.Dir(abs)))
}
