// Package atomicfile writes files so that a reader, or a process that is
// killed half-way, never sees a partial file: data goes to a temporary file
// in the same directory ("<name>.tmp-<random>"), which is synced and then
// renamed over the target. Builds and validators treat leftover "*.tmp-*"
// entries as debris of an interrupted write.
//
// Every write is given the command's job (internal/job): its temporary
// file is registered there while it exists, so that a command stopped by
// a signal removes it (job.Job.RemoveTemps), and a write started after the
// job was stopped fails with job.ErrStopped. The package keeps no state of
// its own; a nil job tracks nothing.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// WriteFile writes data to name atomically with mode 0644 and syncs the
// file and its directory, so that the new content survives a crash. The
// temporary file is registered with j (job.Job.Track) while it exists, so
// that an interrupted command removes it; a nil j tracks nothing. A write
// started after j was stopped fails with job.ErrStopped and writes
// nothing.
func WriteFile(j *job.Job, name string, data []byte) error {
	return write(j, name, data, SyncDir)
}

// WriteFileNoSync is WriteFile without the fsync calls: still atomic
// against readers and interrupted processes, but not durable across a
// power failure. For bulk outputs that are cheap to regenerate.
func WriteFileNoSync(j *job.Job, name string, data []byte) error {
	return write(j, name, data, nil)
}

// write is WriteFile when syncDir, which syncs the target's directory,
// is given (a test gives one that fails), and WriteFileNoSync when it is
// nil.
func write(j *job.Job, name string, data []byte, syncDir func(dir string) error) error {
	durable := syncDir != nil
	if err := replaceable(name); err != nil {
		return err
	}
	f, release, err := createTemp(j, name)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer release()
	tmp := f.Name()
	fail := func(err error) error {
		_ = f.Close() // the write already failed; that error is the one reported
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	j.Hook("rename", name)
	if err := os.Rename(tmp, name); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	if durable {
		// Sync the directory so the rename itself is durable.
		if err := syncDir(filepath.Dir(name)); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// SyncDir syncs the directory dir, so that the entries created, renamed
// or removed in it survive a crash. Its error is the caller's to report:
// a write that could not be made durable did not succeed.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// File is an output too large to build in memory, written atomically:
// the data goes to a temporary file beside name, which Commit renames
// over name and Abort removes. Like WriteFileNoSync it is not synced:
// for bulk outputs that are cheap to regenerate.
type File struct {
	*os.File
	name    string
	job     *job.Job
	release func() // forgets the temporary file in the job
}

// Create starts writing name; its temporary file is registered with j
// as WriteFile's is.
func Create(j *job.Job, name string) (*File, error) {
	if err := replaceable(name); err != nil {
		return nil, err
	}
	f, release, err := createTemp(j, name)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	return &File{File: f, name: name, job: j, release: release}, nil
}

// Commit closes the file with mode 0644 and renames it over the target;
// on failure the temporary file is removed.
func (f *File) Commit() error {
	tmp := f.File.Name()
	defer f.release()
	err := f.Chmod(0o644)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		f.job.Hook("rename", f.name)
		err = os.Rename(tmp, f.name)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", f.name, err)
	}
	return nil
}

// Abort closes and removes the temporary file, leaving the target as it
// was. It may be called after Commit, which it then does not undo (the
// Close then fails, and nothing is removed). Abort is the path of a
// write that already failed or is given up, so its own errors report
// nothing new.
func (f *File) Abort() {
	if f.Close() == nil {
		_ = os.Remove(f.File.Name())
		f.release()
	}
}

// createTemp makes the temporary file of a write of name and registers
// it with j; release forgets it once it is renamed or removed. A job
// already stopped refuses it (job.ErrStopped), and nothing is left.
func createTemp(j *job.Job, name string) (f *os.File, release func(), err error) {
	if j.Stopped() {
		return nil, nil, job.ErrStopped
	}
	f, err = os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp-*")
	if err != nil {
		return nil, nil, err
	}
	tmp := f.Name()
	release, err = j.Track(func() {
		_ = os.Remove(tmp) // best effort on the way out; a leftover is debris the next run removes or ignores
	})
	if err != nil {
		// Stopped between the check and the registration.
		_ = f.Close()
		_ = os.Remove(tmp)
		return nil, nil, err
	}
	return f, release, nil
}

// replaceable refuses a target that exists and is not a regular file: a
// symbolic link, FIFO or directory in its place was not written by us,
// and renaming over it would replace it (a link's target is left alone,
// but the link is lost).
func replaceable(name string) error {
	fi, err := os.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("write %s: %w", name, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("write %s: is a symbolic link; refusing to replace it", name)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("write %s: not a regular file (%s); refusing to replace it", name, safefile.KindOf(fi.Mode()))
	}
	return nil
}

// tempName matches the name of a temporary file an atomic write makes
// (createTemp): the target's name, ".tmp-" and the decimal digits
// os.CreateTemp puts in place of its "*".
var tempName = regexp.MustCompile(`^(.+)\.tmp-[0-9]+$`)

// TempTarget reports whether name (a file name, not a path) is the
// temporary file of an atomic write, and returns the name of the file
// that write was for.
func TempTarget(name string) (string, bool) {
	m := tempName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// RemoveStale removes the temporary files that atomic writes stopped by
// a kill (kill -9, power loss) left below root: the regular files named
// "<target>.tmp-<digits>" whose target owns accepts, given as a path
// relative to root with forward slashes ("images/ph0001.png"). A command
// calls it when it (re)writes a folder it owns, before it writes there,
// and names through owns only the files it writes, so no one else's file
// is ever removed. Symbolic links are neither followed nor removed; a
// root that does not exist holds nothing to remove; root itself may be a
// link (the user named it). The error names the file or folder that could
// not be read or removed.
func RemoveStale(root string, owns func(rel string) bool) error {
	if fi, err := os.Lstat(root); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// The user named a link to the folder: walk what it leads to.
		if real, err := filepath.EvalSymlinks(root); err == nil {
			root = real
		}
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		target, ok := TempTarget(d.Name())
		if !ok {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Join(filepath.Dir(p), target))
		if err != nil || !owns(filepath.ToSlash(rel)) {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("remove the temporary files of an interrupted write: %w", err)
	}
	return nil
}

// RemoveStaleBeside is RemoveStale for one file a command writes outside
// any folder of its own (a --reviews FILE): it removes the temporary files
// of earlier atomic writes of name, and nothing else, from name's folder.
func RemoveStaleBeside(name string) error {
	base := filepath.Base(name)
	ents, err := os.ReadDir(filepath.Dir(name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove the temporary files of an interrupted write of %s: %w", name, err)
	}
	for _, e := range ents {
		if target, ok := TempTarget(e.Name()); ok && target == base && e.Type().IsRegular() {
			p := filepath.Join(filepath.Dir(name), e.Name())
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove the temporary files of an interrupted write of %s: %w", name, err)
			}
		}
	}
	return nil
}
