package review

// Read-only access to a review database (`review serve --read-only`, the
// exports and `build --review-db`), and the errors that say why a database
// cannot be written.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/chexpercept/chexpercept/internal/appdb"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"modernc.org/sqlite"
)

// ErrNotWritable matches the error of Open when the database file, its
// directory or its -wal/-shm files cannot be written.
var ErrNotWritable = errors.New("review database is not writable")

// writeError is a one-line reason matching ErrNotWritable.
type writeError struct {
	msg string
	err error
}

func (e *writeError) Error() string        { return e.msg }
func (e *writeError) Unwrap() error        { return e.err }
func (e *writeError) Is(target error) bool { return target == ErrNotWritable }

// SQLite result codes (sqlite3.h) that mean "cannot write": the primary
// code SQLITE_READONLY with any extended code, the extended code that
// names the directory, and SQLITE_CANTOPEN, which a read-only directory
// gives when the -shm file is missing.
const (
	sqliteReadOnly    = 8
	sqliteReadOnlyDir = 8 | 6<<8 // SQLITE_READONLY_DIRECTORY
	sqliteCantOpen    = 14
)

// sqliteCode is the SQLite result code of err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

func isPermission(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// notWritable turns SQLite's "attempt to write a readonly database" into a
// sentence naming what is not writable; nil for other errors.
func notWritable(path string, err error) error {
	code := sqliteCode(err)
	base := filepath.Base(path)
	dirRO := code == sqliteReadOnlyDir || code == sqliteCantOpen && dirNotWritable(filepath.Dir(path))
	if code&0xff != sqliteReadOnly && !dirRO {
		return nil
	}
	if dirRO {
		return &writeError{fmt.Sprintf("review db %s: its directory %s is not writable (SQLite keeps %s-wal and %s-shm beside the database)",
			path, filepath.Dir(path), base, base), err}
	}
	return &writeError{fmt.Sprintf("review db %s: not writable: the database or its %s-wal or %s-shm file is read-only (%v)", path, base, base, err), err}
}

// statDB checks that path names a regular file.
func statDB(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("review db %s: %w", path, safefile.Reason(err))
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("review db %s: not a regular file", path)
	}
	return nil
}

// OpenReadOnly opens an existing review database without ever writing to
// it, also from a read-only file or directory (appdb.ReadOnly). Changes
// (decisions, resolutions, the lock, imports) fail with ErrReadOnly;
// sign-in sessions live in memory.
func OpenReadOnly(path string) (*Store, error) {
	if err := statDB(path); err != nil {
		return nil, err
	}
	return open(path, appdb.ReadOnly)
}
