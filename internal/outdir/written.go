package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// An output folder holds one output. The files an earlier run of the
// command wrote that this run does not (the plots of a model no longer
// compared, the images of cases no longer generated) are removed once
// the new output is in place. Which files a run wrote is listed in the
// command's marker, below its first line; a file the list does not name
// (a note of the user's, or any file of an output written before the
// list) is never removed, nor one this run wrote again.

// maxMarkerBytes bounds the marker read back: a list of some ten
// thousand file names.
const maxMarkerBytes = 8 << 20

// Files maps the slash-separated path of each regular file below an
// output folder that its command owns to its file information.
type Files map[string]os.FileInfo

// Owned is what a run finds in its output folder as it begins: the files
// it owns there, and those the marker lists as an earlier run's.
type Owned struct {
	files  Files
	listed map[string]bool
}

// ListOwned takes what dir holds as a run begins: the regular files that
// owns accepts, apart from the marker, never following a link, and the
// marker's list. A marker that cannot be read fails the run here, before
// it writes anything.
func ListOwned(dir, marker string, owns func(rel string) bool) (*Owned, error) {
	files, err := ownedFiles(dir, marker, owns)
	if err != nil {
		return nil, err
	}
	listed, err := listed(dir, marker, owns)
	if err != nil {
		return nil, err
	}
	return &Owned{files: files, listed: listed}, nil
}

// ownedFiles lists the regular files below dir that owns accepts, apart
// from the marker, never following a link.
func ownedFiles(dir, marker string, owns func(rel string) bool) (Files, error) {
	s := Files{}
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
		if rel == marker || !owns(rel) {
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
		return nil, fmt.Errorf("listing %s: %w", dir, unwrapPath(err))
	}
	return s, nil
}

// listed reads the files an earlier run listed in the marker: the lines
// after the first that name a file owns accepts inside dir.
func listed(dir, marker string, owns func(rel string) bool) (map[string]bool, error) {
	data, err := safefile.ReadFile(filepath.Join(dir, marker), maxMarkerBytes, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	files := map[string]bool{}
	for _, rel := range lines[1:] {
		if rel == "" || !fs.ValidPath(rel) || path.Clean(rel) != rel || rel == marker || !owns(rel) {
			continue
		}
		files[rel] = true
	}
	return files, nil
}

// FinishOwned removes the files an earlier run listed in dir's marker
// that this run did not write, and rewrites the marker (text, its first
// line, then the list) to list the files this run wrote: those owns
// accepts that are new or replaced since before, taken by ListOwned when
// the run began (every owned file is written by an atomic rename, so a
// rewritten file is a new file).
func FinishOwned(j *job.Job, dir, marker, text string, owns func(rel string) bool, before *Owned) error {
	after, err := ownedFiles(dir, marker, owns)
	if err != nil {
		return err
	}
	var wrote []string
	for rel, fi := range after {
		if old, ok := before.files[rel]; !ok || !os.SameFile(old, fi) {
			wrote = append(wrote, rel)
		}
	}
	slices.Sort(wrote)
	for rel := range before.listed {
		old, was := before.files[rel]
		now, is := after[rel]
		if !was || !is || !os.SameFile(old, now) {
			continue // gone, or written by this run
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s of an earlier run: %w", p, unwrapPath(err))
		}
		// A folder made for it goes too once empty (os.Remove refuses a
		// folder that holds anything).
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			if os.Remove(filepath.Join(dir, filepath.FromSlash(d))) != nil {
				break
			}
		}
	}
	return WriteFile(j, dir, marker, []byte(strings.TrimSuffix(text, "\n")+"\n"+strings.Join(wrote, "\n")+"\n"))
}
