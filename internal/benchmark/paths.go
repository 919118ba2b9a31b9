package benchmark

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// File names and folders of the image bundle (format.md §1). Paths
// returned by the Record methods are slash-separated and relative to
// chexpercept/<key_id>/; use (*Benchmark).Abs for a file-system path.
const (
	JSONName         = "chexpercept.json"
	ImagesDir        = "chexpercept"
	ContourDir       = "contour_qa"
	RevisionDir      = "contour_qa/contour_revision_qa"
	XrayRel          = "detection_qa/xray.png"
	PointsRel        = "contour_qa/contour_revision_qa/xray_with_mask_and_points.png"
	contourEvalFixed = "contour_qa/contour_eval_qa/xray_with_mask.png"
)

// XrayPath is the detection image, relative to chexpercept/<key_id>/.
func (r *Record) XrayPath() string { return XrayRel }

// ContourEvalPath is the contour-eval overlay: contour_qa/ joined with
// contour_eval_qa.relative_path. It fails when the record has no
// contour_qa or the relative path is unsafe.
func (r *Record) ContourEvalPath() (string, error) {
	if r.Contour == nil {
		return "", fmt.Errorf("record %s has no contour_qa", r.KeyID)
	}
	p, err := SafeRelPath(ContourDir, r.Contour.ContourEval.RelativePath)
	if err != nil {
		return "", fmt.Errorf("record %s: contour_eval_qa.relative_path: %w", r.KeyID, err)
	}
	return p, nil
}

// PointsPath is the RR points image, relative to chexpercept/<key_id>/.
func (r *Record) PointsPath() string { return PointsRel }

// OptionPath returns the image of revision option k (1-based), relative
// to chexpercept/<key_id>/.
func (r *Record) OptionPath(k int) (string, error) {
	if r.Contour == nil {
		return "", fmt.Errorf("record %s has no contour_qa", r.KeyID)
	}
	opts := r.Contour.RevisionResult.AnswerOptions
	if k < 1 || k > len(opts) {
		return "", fmt.Errorf("record %s: revision option %d out of range 1..%d", r.KeyID, k, len(opts))
	}
	p, err := SafeRelPath(RevisionDir, opts[k-1].RelativePath)
	if err != nil {
		return "", fmt.Errorf("record %s: revision option %d relative_path: %w", r.KeyID, k, err)
	}
	return p, nil
}

// RecordDir is the record's folder relative to the benchmark directory.
func RecordDir(keyID string) string { return ImagesDir + "/" + keyID }

// SafeRelPath joins the slash-separated rel onto base (both relative,
// slash-separated) and returns the result, or an error when rel breaks a
// rule of format.md §8.4 (unsafe_path): empty; absolute (leading / or \,
// a drive letter, a UNC prefix); containing \, NUL or control characters;
// an empty, "." or ".." segment; or a result outside base.
func SafeRelPath(base, rel string) (string, error) {
	if err := checkRel(rel); err != nil {
		return "", err
	}
	b := path.Clean(base)
	j := path.Join(b, rel)
	if b != "." && !strings.HasPrefix(j, b+"/") {
		return "", fmt.Errorf("path %q leaves %s/", rel, b)
	}
	return j, nil
}

func checkRel(rel string) error {
	if rel == "" {
		return errors.New("empty path")
	}
	if rel[0] == '/' || rel[0] == '\\' {
		return fmt.Errorf("path %q is absolute", rel)
	}
	if len(rel) >= 2 && rel[1] == ':' && isASCIILetter(rel[0]) {
		return fmt.Errorf("path %q starts with a drive letter", rel)
	}
	for _, c := range rel {
		switch {
		case c == '\\':
			return fmt.Errorf("path %q contains a backslash", rel)
		case c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0):
			return fmt.Errorf("path %q contains a control character", rel)
		}
	}
	for _, seg := range strings.Split(rel, "/") {
		switch seg {
		case "":
			return fmt.Errorf("path %q has an empty segment", rel)
		case ".", "..":
			return fmt.Errorf("path %q has a %q segment", rel, seg)
		}
	}
	return nil
}

func isASCIILetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// Abs returns the file-system path of a record-relative path produced by
// the Record path methods.
func (b *Benchmark) Abs(keyID, rel string) string {
	return filepath.Join(b.Dir, ImagesDir, keyID, filepath.FromSlash(rel))
}
