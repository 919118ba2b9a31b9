package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// A report folder holds one report. The files an earlier report wrote
// that this one does not (the plots of a model no longer compared, the
// reader tables of a study left out) are removed once the new report is
// in place. Which files a report wrote is listed in its marker, below
// the first line; a file the list does not name (a note of the user's,
// or any file of a report written before the list) is never removed, nor
// one this report wrote again.

// maxMarkerBytes bounds the marker read back: a list of a few thousand
// file names.
const maxMarkerBytes = 8 << 20

// snapshot maps the slash-separated path of each regular file of a
// report's kind below dir to its file information.
type snapshot map[string]os.FileInfo

// takeSnapshot lists the report's kind of files below dir, never
// following a link (checkDir has refused links in an earlier report).
func takeSnapshot(dir string) (snapshot, error) {
	s := snapshot{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == MarkerName || !isReportFile(rel) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		s[rel] = fi
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("report: listing %s: %w", dir, err)
	}
	return s, nil
}

// earlierFiles reads the list of files an earlier report wrote from the
// marker in dir: the lines after the first that name a report's kind of
// file inside dir. A marker without a list gives none.
func earlierFiles(dir string) (map[string]bool, error) {
	data, err := safefile.ReadFile(filepath.Join(dir, MarkerName), maxMarkerBytes, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	lines := strings.Split(string(data), "\n")
	files := map[string]bool{}
	for _, rel := range lines[1:] {
		if rel == "" || !fs.ValidPath(rel) || path.Clean(rel) != rel || rel == MarkerName || !isReportFile(rel) {
			continue
		}
		files[rel] = true
	}
	return files, nil
}

// finishDir removes the files of an earlier report that this one did not
// write and records in the marker the files this one wrote: those that
// are new or replaced since before (every report file is written by an
// atomic rename, so a rewritten file is a new file).
func finishDir(dir string, before snapshot) error {
	earlier, err := earlierFiles(dir)
	if err != nil {
		return err
	}
	after, err := takeSnapshot(dir)
	if err != nil {
		return err
	}
	var wrote []string
	for rel, fi := range after {
		if old, ok := before[rel]; !ok || !os.SameFile(old, fi) {
			wrote = append(wrote, rel)
		}
	}
	slices.Sort(wrote)
	for rel := range earlier {
		old, was := before[rel]
		now, is := after[rel]
		if !was || !is || !os.SameFile(old, now) {
			continue // gone, or written by this report
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("report: removing %s of an earlier report: %w", p, err)
		}
		// A folder the earlier report made for it goes too once empty
		// (os.Remove refuses a folder that holds anything).
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			if os.Remove(filepath.Join(dir, filepath.FromSlash(d))) != nil {
				break
			}
		}
	}
	list := markerText + strings.Join(wrote, "\n") + "\n"
	if err := outdir.WriteFile(dir, MarkerName, []byte(list)); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
