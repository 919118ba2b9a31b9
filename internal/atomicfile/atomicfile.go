// Package atomicfile writes files so that a reader, or a process that is
// killed half-way, never sees a partial file: data goes to a temporary file
// in the same directory ("<name>.tmp-<random>"), which is synced and then
// renamed over the target. Builds and validators treat leftover "*.tmp-*"
// entries as debris of an interrupted write.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/chexpercept/chexpercept/internal/safefile"
)

// WriteFile writes data to name atomically with mode 0644 and syncs the
// file and its directory, so that the new content survives a crash.
func WriteFile(name string, data []byte) error { return write(name, data, true) }

// WriteFileNoSync is WriteFile without the fsync calls: still atomic
// against readers and interrupted processes, but not durable across a
// power failure. For bulk outputs that are cheap to regenerate.
func WriteFileNoSync(name string, data []byte) error { return write(name, data, false) }

func write(name string, data []byte, durable bool) error {
	if err := replaceable(name); err != nil {
		return err
	}
	dir := filepath.Dir(name)
	f, err := createTemp(name)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := f.Name()
	defer forget(tmp)
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
	if RenameHook != nil {
		RenameHook(name)
	}
	if err := os.Rename(tmp, name); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	if durable {
		// Sync the directory so the rename itself is durable.
		if err := syncDir(dir); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// RenameHook is nil except in tests: a write calls it with the target's
// name just before its temporary file is renamed over it; a test stops
// or signals the process there.
var RenameHook func(name string)

// StopHook is nil except in tests: Stop calls it once it has decided
// (and removed the temporary files, unless the command had passed its
// commit point), so a test can hold a write until then.
var StopHook func()

// syncDir is SyncDir; tests replace it to inject a failure.
var syncDir = SyncDir

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
	name string
}

// Create starts writing name.
func Create(name string) (*File, error) {
	if err := replaceable(name); err != nil {
		return nil, err
	}
	f, err := createTemp(name)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	return &File{File: f, name: name}, nil
}

// Commit closes the file with mode 0644 and renames it over the target;
// on failure the temporary file is removed.
func (f *File) Commit() error {
	tmp := f.File.Name()
	defer forget(tmp)
	err := f.Chmod(0o644)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && RenameHook != nil {
		RenameHook(f.name)
	}
	if err == nil {
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
		forget(f.File.Name())
	}
}

// The temporary files being written, so that an interrupted command can
// remove them (RemoveTemps, Stop) before it exits; and whether the
// command has stopped, or passed its commit point (Finish).
var temps struct {
	sync.Mutex
	names    map[string]bool
	stopped  bool
	finished bool
}

// ErrStopped is the error of a write started after RemoveTemps.
var ErrStopped = errors.New("the command is stopping (interrupted)")

func createTemp(name string) (*os.File, error) {
	temps.Lock()
	defer temps.Unlock()
	if temps.stopped {
		return nil, ErrStopped
	}
	f, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp-*")
	if err != nil {
		return nil, err
	}
	if temps.names == nil {
		temps.names = map[string]bool{}
	}
	temps.names[f.Name()] = true
	return f, nil
}

func forget(tmp string) {
	temps.Lock()
	delete(temps.names, tmp)
	temps.Unlock()
}

// RemoveTemps removes every temporary file of a write still in progress
// in this process and makes later writes fail with ErrStopped. A command
// that catches SIGINT or SIGTERM calls it before it exits, so no
// "*.tmp-*" file of its outputs is left behind; a write being renamed
// into place at that moment either lands whole or not at all.
func RemoveTemps() {
	temps.Lock()
	defer temps.Unlock()
	removeTemps()
}

// removeTemps is RemoveTemps; the caller holds temps' lock.
func removeTemps() {
	temps.stopped = true
	for n := range temps.names {
		_ = os.Remove(n) // best effort on the way out; a leftover is debris the next run removes or ignores
		delete(temps.names, n)
	}
}

// Finish marks the commit point of a command whose finished output its
// rerun would refuse to replace (a run directory that no longer says
// unfinished, a finished review pack, a published database): called just
// before the write that makes the output finished. From then on Stop
// changes nothing, so a signal no longer stops the command: the output is
// finished and the command ends as it would have without the signal. It
// returns ErrStopped when Stop came first; the output then stays
// unfinished, and the same command run again redoes it.
func Finish() error {
	temps.Lock()
	defer temps.Unlock()
	if temps.stopped {
		return ErrStopped
	}
	temps.finished = true
	return nil
}

// Stop is RemoveTemps for a command ending on a signal, unless the
// command has passed its commit point (Finish): then it changes nothing
// and returns false, and the caller lets the command finish.
func Stop() bool {
	if StopHook != nil {
		defer StopHook()
	}
	temps.Lock()
	defer temps.Unlock()
	if temps.finished {
		return false
	}
	removeTemps()
	return true
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
