package validate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// Builder side files checked when present (build.md §11). They lie outside
// the evaluated benchmark (format.md §8 scope), so their findings are
// warnings: an evaluation does not read them, but the reference's QA
// generation reads mask_path back as a mask name, so a wrong one silently
// changes what it rebuilds from our output.
const (
	deformJSONName = "deformation_results.json"
	masksDirName   = "masks"
)

// checkDeformation checks every mask_path of a builder's
// deformation_results.json: it must be a mask name (not a path), an
// undeformed component's must be "<sid>_no_contraction", and unless
// images are skipped masks/<key_id>/<name>.png must be a regular file.
// A benchmark without the file is not checked.
func checkDeformation(root string, opt Options) []Finding {
	var s sink
	v, ok := readDeformation(root, &s)
	if !ok {
		return s.f
	}
	for _, m := range v.O {
		key := m.Key
		loc := deformJSONName + "#/" + ojson.EscapePointer(key) + "/qa_deformation_results"
		qa := m.Value.Get("qa_deformation_results")
		if m.Value.Kind != ojson.KindObject || qa == nil || qa.Kind != ojson.KindObject {
			s.add(Warning, "deformation_results_invalid", key, loc, "qa_deformation_results is absent or not an object")
			continue
		}
		var masks map[string]bool // nil: not listed (skip-images or unsafe key)
		if !opt.SkipImages && benchmark.KeyIDPattern.MatchString(key) {
			masks = listMasks(root, key, &s)
		}
		for _, op := range []string{"expansion", "contraction", "no_deformation"} {
			byComp := qa.Get(op)
			if byComp == nil || byComp.Kind != ojson.KindObject {
				s.add(Warning, "deformation_results_invalid", key, loc+"/"+op, "%s is absent or not an object", op)
				continue
			}
			for _, c := range byComp.O {
				cloc := loc + "/" + op + "/" + ojson.EscapePointer(c.Key)
				if c.Value.Kind != ojson.KindArray {
					s.add(Warning, "deformation_results_invalid", key, cloc, "not a list")
					continue
				}
				for i, e := range c.Value.A {
					want := ""
					if op == "no_deformation" {
						want = c.Key + "_no_contraction" // build.md §8.7 step 2.5
					}
					checkMaskPath(&s, key, fmt.Sprintf("%s/%d/mask_path", cloc, i), e, want, masks)
				}
			}
		}
	}
	return s.f
}

// checkMaskPath checks one entry's mask_path against the mask names and,
// when masks is non-nil, against the files of masks/<key_id>/.
func checkMaskPath(s *sink, key, loc string, e *ojson.Value, want string, masks map[string]bool) {
	mp := e.Get("mask_path")
	switch {
	case e.Kind != ojson.KindObject || mp == nil || mp.Kind != ojson.KindString:
		s.add(Warning, "deformation_mask_path", key, loc, "absent or not a string")
	case strings.ContainsAny(mp.S, `/\`) || strings.HasSuffix(mp.S, ".png"):
		s.add(Warning, "deformation_mask_path", key, loc, "%q is a file path, not a mask name (the reference's QA generation reads it as a name)", mp.S)
	case !maskNamePattern.MatchString(mp.S):
		s.add(Warning, "deformation_mask_path", key, loc, "%q is not a mask name", mp.S)
	case want != "" && mp.S != want:
		s.add(Warning, "deformation_mask_path", key, loc, "%q, want %q for an undeformed component", mp.S, want)
	case masks != nil && !masks[mp.S]:
		s.add(Warning, "deformation_mask_path", key, loc, "%q names no file %s/%s/%s.png", mp.S, masksDirName, key, mp.S)
	}
}

// readDeformation reads and parses deformation_results.json (bounded,
// never through a link); ok is false when it is absent or unusable.
func readDeformation(root string, s *sink) (*ojson.Value, bool) {
	name := filepath.Join(root, deformJSONName)
	fi, err := os.Lstat(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, false
	case err != nil:
		s.add(Warning, "deformation_results_invalid", "", deformJSONName, "cannot stat: %v", err)
		return nil, false
	case fi.Mode()&os.ModeSymlink != 0:
		s.add(Warning, "deformation_results_invalid", "", deformJSONName, "is a symbolic link; it is not followed")
		return nil, false
	case !fi.Mode().IsRegular():
		s.add(Warning, "deformation_results_invalid", "", deformJSONName, "is not a regular file")
		return nil, false
	case fi.Size() > benchdir.MaxJSONSize:
		s.add(Warning, "deformation_results_invalid", "", deformJSONName, "%d bytes exceeds the %d-byte limit", fi.Size(), benchdir.MaxJSONSize)
		return nil, false
	}
	f, err := safefile.Open(name, safefile.NoFollow)
	if err != nil {
		s.add(Warning, "deformation_results_invalid", "", deformJSONName, "%v", safefile.Reason(err))
		return nil, false
	}
	defer func() { _ = f.Close() }() // read-only
	data, err := io.ReadAll(io.LimitReader(f, benchdir.MaxJSONSize+1))
	if err == nil && len(data) > benchdir.MaxJSONSize {
		err = fmt.Errorf("exceeds the %d-byte limit", benchdir.MaxJSONSize)
	}
	if err != nil {
		s.add(Warning, "deformation_results_invalid", "", deformJSONName, "%v", err)
		return nil, false
	}
	v, err := ojson.Parse(data)
	if err != nil {
		s.add(Warning, "deformation_results_invalid", "", deformJSONName, "%v", err)
		return nil, false
	}
	if v.Kind != ojson.KindObject {
		s.add(Warning, "deformation_results_invalid", "", deformJSONName, "the top level is %s, not an object of key_ids", ojson.KindName(v))
		return nil, false
	}
	return v, true
}

// listMasks returns the names (without .png) of the regular files in
// masks/<key_id>/, compared by listing (case-sensitive, no links
// followed); an absent or unusable folder gives an empty set and one
// finding.
func listMasks(root, key string, s *sink) map[string]bool {
	rel := masksDirName + "/" + key
	dir := filepath.Join(root, masksDirName, key)
	names := map[string]bool{}
	for _, p := range []string{filepath.Join(root, masksDirName), dir} {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
			s.add(Warning, "deformation_mask_path", key, rel+"/", "%s/ is absent, a link or not a directory: no mask_path of the case names a file", rel)
			return names
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		s.add(Warning, "deformation_mask_path", key, rel+"/", "cannot list: %v", err)
		return names
	}
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".png"); ok && e.Type().IsRegular() {
			names[n] = true
		}
	}
	return names
}
