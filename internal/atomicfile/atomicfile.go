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
	f, err := os.CreateTemp(dir, filepath.Base(name)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
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
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	if durable {
		// Sync the directory so the rename itself is durable.
		if d, err := os.Open(dir); err == nil {
			d.Sync()
			d.Close()
		}
	}
	return nil
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
	f, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	return &File{File: f, name: name}, nil
}

// Commit closes the file with mode 0644 and renames it over the target;
// on failure the temporary file is removed.
func (f *File) Commit() error {
	tmp := f.File.Name()
	err := f.Chmod(0o644)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.name)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", f.name, err)
	}
	return nil
}

// Abort closes and removes the temporary file, leaving the target as it
// was. It may be called after Commit, which it then does not undo.
func (f *File) Abort() {
	if f.Close() == nil {
		os.Remove(f.File.Name())
	}
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
