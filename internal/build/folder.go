package build

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// renameFunc renames a folder. A build's is os.Rename; a test sets its
// own (Options.testRename, InspectOptions.testRename) to inject a failed
// rename into that build only.
type renameFunc func(from, to string) error

// renamer is f, or os.Rename when f is nil.
func renamer(f renameFunc) renameFunc {
	if f == nil {
		return os.Rename
	}
	return f
}

// replaceDir puts stage in final's place. An existing final is renamed
// aside (".staging-old-<name>-<random>") first and removed only once stage
// is in its place; when that second rename fails, the old folder is
// renamed back, so final is never lost. Should even that fail, the aside
// folder is kept and the next build's cleanLeftovers restores it.
func replaceDir(renameDir renameFunc, stage, final string) error {
	_, err := os.Lstat(final)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return renameDir(stage, final)
	case err != nil:
		return err
	}
	aside := filepath.Join(filepath.Dir(final), stagingOldPrefix+filepath.Base(final)+"-"+randSuffix())
	if err := renameDir(final, aside); err != nil {
		return err
	}
	if err := renameDir(stage, final); err != nil {
		if berr := renameDir(aside, final); berr != nil {
			return fmt.Errorf("%w; the old folder is kept as %s (moving it back: %v)", err, aside, berr)
		}
		return err
	}
	// The new folder is in place; the old one is debris that the next
	// build's cleanLeftovers also removes, so a failure here loses nothing.
	_ = os.RemoveAll(aside)
	return nil
}

// stagingOldPrefix names an old folder renamed aside by replaceDir.
const stagingOldPrefix = ".staging-old-"

// restoreAside is cleanLeftovers' step for an old folder renamed aside by
// replaceDir: when its folder is missing (the process died between the
// two renames, or both the swap and its roll-back failed), it is renamed
// back. It reports whether it restored the folder.
func restoreAside(renameDir renameFunc, dir, name string) (bool, error) {
	rest, ok := strings.CutPrefix(name, stagingOldPrefix)
	if !ok {
		return false, nil
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 || len(rest)-i-1 != 2*suffixBytes {
		return false, nil
	}
	final := filepath.Join(dir, rest[:i])
	if _, err := os.Lstat(final); !errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err := renameDir(filepath.Join(dir, name), final); err != nil {
		return false, err
	}
	return true, nil
}

// folderWriter writes the files of one output folder (a case's bundle
// folder or its masks) through a staging folder. While every file equals
// the one already in the final folder nothing is written, and a folder
// whose files are all unchanged is left as it is: a rebuild never swaps a
// folder it does not change.
type folderWriter struct {
	final, stage string
	renameDir    renameFunc
	same         bool     // every file so far equals final's
	matched      []string // slash-separated names taken as unchanged
}

func newFolderWriter(final string, renameDir renameFunc) *folderWriter {
	_, err := os.Lstat(final)
	return &folderWriter{
		final:     final,
		renameDir: renameDir,
		stage:     filepath.Join(filepath.Dir(final), ".staging-"+filepath.Base(final)+"-"+randSuffix()),
		same:      err == nil,
	}
}

// add writes one file of the folder (rel is slash-separated).
func (w *folderWriter) add(rel string, data []byte) error {
	if w.same {
		old, err := safefile.ReadFile(filepath.Join(w.final, filepath.FromSlash(rel)), imagefile.MaxFileBytes, safefile.NoFollow)
		if err == nil && bytes.Equal(old, data) {
			w.matched = append(w.matched, rel)
			return nil
		}
		if err := w.diverge(); err != nil {
			return err
		}
	}
	return w.put(rel, data)
}

// diverge switches to writing the staging folder, copying the files taken
// as unchanged so far.
func (w *folderWriter) diverge() error {
	w.same = false
	if err := os.MkdirAll(w.stage, 0o755); err != nil {
		return err
	}
	for _, rel := range w.matched {
		data, err := safefile.ReadFile(filepath.Join(w.final, filepath.FromSlash(rel)), imagefile.MaxFileBytes, safefile.NoFollow)
		if err != nil {
			return err
		}
		if err := w.put(rel, data); err != nil {
			return err
		}
	}
	return nil
}

func (w *folderWriter) put(rel string, data []byte) error {
	p := filepath.Join(w.stage, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// commit puts the folder in place: nothing happens when every file was
// unchanged and the final folder holds no other file; otherwise the
// staging folder replaces it (replaceDir).
func (w *folderWriter) commit() error {
	if w.same {
		n, err := countFiles(w.final)
		if err == nil && n == len(w.matched) {
			return nil
		}
		if err := w.diverge(); err != nil {
			return err
		}
	}
	return replaceDir(w.renameDir, w.stage, w.final)
}

// abort removes the staging folder.
func (w *folderWriter) abort() { _ = os.RemoveAll(w.stage) }

// countFiles counts the non-directory entries below dir; any entry that
// is neither a folder nor a regular file makes it fail.
func countFiles(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
		case d.Type().IsRegular():
			n++
		default:
			return fmt.Errorf("%s: not a regular file", p)
		}
		return nil
	})
	return n, err
}
