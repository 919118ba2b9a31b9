package phantom

import (
	"bufio"
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// MarkerName is the file that marks a directory as a phantom set. It is
// written before any image, so an interrupted run can be rerun into the
// same directory; any other non-empty directory is refused, because
// Generate overwrites images/, masks/ and manifest.jsonl in place. Below
// its first line the marker lists the files the last run wrote
// (outdir.FinishOwned), so a rerun with fewer cases removes the rest.
const MarkerName = ".chexpercept-phantom"

const markerText = "chexpercept phantom set: `chexpercept phantom` may rewrite this directory\n"

// phantomCaseID is the case_id of the first manifest line of a phantom set
// (sets written before the marker existed are recognised by it).
var phantomCaseID = regexp.MustCompile(`^ph[0-9]{4,5}_(positive|negative)_0$`)

// checkOutDir refuses a non-empty dir that does not hold a phantom set.
func checkOutDir(dir string) error {
	st, names, err := outdir.Look(dir, MarkerName)
	if err != nil {
		return fmt.Errorf("phantom: %w", err)
	}
	if st == outdir.Other && !phantomManifest(filepath.Join(dir, "manifest.jsonl")) {
		return fmt.Errorf("phantom: %w", outdir.Foreign(dir, names, "phantom", MarkerName))
	}
	if st == outdir.Marked || st == outdir.Other {
		if err := outdir.CheckTree(dir); err != nil {
			return fmt.Errorf("phantom: %w", err)
		}
	}
	return nil
}

// phantomManifest reports whether the first line of path is a manifest
// line that the phantom writes.
func phantomManifest(path string) bool {
	f, err := safefile.Open(path, safefile.NoFollow)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // read-only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return false
	}
	v, err := ojson.Parse(sc.Bytes())
	if err != nil || v.Kind != ojson.KindObject {
		return false
	}
	id, img, cid := v.Get("image_id"), v.Get("image"), v.Get("case_id")
	if id == nil || img == nil || cid == nil || id.Kind != ojson.KindString || img.Kind != ojson.KindString || cid.Kind != ojson.KindString {
		return false
	}
	return phantomCaseID.MatchString(cid.S) && img.S == "images/"+id.S+".png"
}
