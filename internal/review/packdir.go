package review

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// PackMarker marks a directory Pack writes. It is written first, in place
// (outdir.WriteMarker), saying the pack is unfinished, and rewritten with
// packFinished once every sheet is written: a pack stopped at any point
// (a failed write, a signal, a kill) is recognised by its rerun, which
// replaces it, while a finished pack, whose sheets may have been filled
// in since, is never written over.
const PackMarker = ".chexpercept-review-pack"

const (
	packUnfinished = "chexpercept review pack: unfinished; `chexpercept review pack` run again replaces this directory\n"
	packFinished   = "chexpercept review pack: finished; its sheets may be filled in, so no pack is written here again\n"
)

// annotatorDir matches the folder names AnnotatorName gives.
var annotatorDir = regexp.MustCompile(`^annotator_[A-Z]+$`)

// claimPackDir accepts out when it is new or empty, writing the unfinished
// marker first, or when it holds an unfinished pack, which it removes
// after checking that everything in it is what a pack writes. Anything
// else is refused before anything is written: a finished pack, a folder
// without the marker, or a marked one holding a file a pack does not
// write (a link, a FIFO, a note).
func claimPackDir(out string) error {
	st, names, err := outdir.Look(out, PackMarker)
	if err != nil {
		return err
	}
	switch st {
	case outdir.Other:
		return outdir.Refuse(out, names[0], "output directory %s is not empty and was not made by chexpercept review pack (it holds %q and no %s marker): review packs go into a new or empty directory, never mixed with other files", out, names[0], PackMarker)
	case outdir.Marked:
		b, err := safefile.ReadFile(filepath.Join(out, PackMarker), 4096, safefile.NoFollow)
		if err != nil {
			return fmt.Errorf("output directory %s: %s: %w", out, PackMarker, safefile.Reason(err))
		}
		if string(b) == packFinished {
			return outdir.Refuse(out, PackMarker, "output directory %s holds a finished review pack, whose sheets may be filled in; write the packs into a new or empty directory (or delete this one first)", out)
		}
		if err := checkPackTree(out); err != nil {
			return err
		}
		// The unfinished pack is replaced whole: its rerun may deal the
		// cases to other folders (another --reviewers, another source).
		for _, n := range names {
			if n == PackMarker {
				continue
			}
			if err := os.RemoveAll(filepath.Join(out, n)); err != nil {
				return fmt.Errorf("output directory %s: remove the unfinished pack: %w", out, err)
			}
		}
		return nil
	}
	if _, err := outdir.MkdirAll(out, ""); err != nil {
		return err
	}
	return outdir.WriteMarker(filepath.Join(out, PackMarker), []byte(packUnfinished))
}

// checkPackTree refuses an unfinished pack holding anything a pack does
// not write: annotator_<X>/<lesion>/<label>/ folders holding review images
// (*.png), review_sheet.csv and the temporary files of their writes.
// Links are not followed.
func checkPackTree(out string) error {
	if err := outdir.CheckTree(out); err != nil {
		return err
	}
	root := out
	if real, err := filepath.EvalSymlinks(out); err == nil {
		root = real
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("output directory %s: %w", out, err)
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		depth := strings.Count(rel, "/") + 1
		ok := false
		switch {
		case depth == 1:
			ok = (rel == PackMarker && d.Type().IsRegular()) || (annotatorDir.MatchString(rel) && d.IsDir())
		case depth <= 3:
			ok = d.IsDir()
		case depth == 4 && d.Type().IsRegular():
			ok = isPackFile(path.Base(rel))
			if target, tmp := atomicfile.TempTarget(path.Base(rel)); tmp {
				ok = isPackFile(target)
			}
		}
		if !ok {
			return outdir.Refuse(out, rel, "output directory %s holds an unfinished review pack and %s, which review pack does not write; move it away or choose a new or empty directory", out, rel)
		}
		return nil
	})
}

// isPackFile reports whether name is a file Pack writes in a sheet's folder.
func isPackFile(name string) bool {
	return name == "review_sheet.csv" || (strings.HasSuffix(name, ".png") && !strings.HasPrefix(name, "."))
}

// finishPack rewrites the marker of out as finished: the last write of a
// pack, and its commit point (j.Commit): a signal that comes later lets
// the command end as it would have; one that came first leaves the pack
// unfinished.
func finishPack(j *job.Job, out string) error {
	if err := j.Commit(); err != nil {
		return err
	}
	return outdir.WriteMarker(filepath.Join(out, PackMarker), []byte(packFinished))
}
