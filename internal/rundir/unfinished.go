package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// UnfinishedFile marks a run directory that a command writing a whole
// run at once (merge, rescore, import-reference, read export) has begun
// and not finished: it is created before the first file of the run and
// removed after the last, so a run directory holding it was left by an
// interrupted or failed write. The same command run again replaces such
// a run without being told to (it is its own unfinished output), and
// readers (report, merge, rescore) never take it for a finished run.
// Runs that eval writes, record by record, never carry it.
const UnfinishedFile = ".unfinished"

const unfinishedText = "chexpercept: this run was being written and did not finish; run the same command again\n"

// MarkUnfinished creates dir/UnfinishedFile, durably. It is written in
// place rather than through a temporary file: a process killed while
// writing it leaves the name, which is what counts, never a temporary
// file that would make the directory look foreign.
func MarkUnfinished(dir string) error {
	name := filepath.Join(dir, UnfinishedFile)
	f, err := safefile.OpenWritable(name, os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, err = f.WriteString(unfinishedText)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = atomicfile.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// MarkFinished removes dir/UnfinishedFile, durably: the run in dir is
// complete.
func MarkFinished(dir string) error {
	name := filepath.Join(dir, UnfinishedFile)
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}

// IsUnfinished reports whether dir carries UnfinishedFile.
func IsUnfinished(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, UnfinishedFile))
	return err == nil
}

// ErrUnfinished is matched by the error of a reader given a run directory
// that carries UnfinishedFile.
var ErrUnfinished = errors.New("holds an unfinished run (a merge, rescore, import or export that did not end); run that command again")
