package appdb

import (
	"errors"
	"fmt"
	"path/filepath"
)

// SQLite result codes (sqlite3.h) that a full disk gives: SQLITE_FULL
// ("database or disk is full"), and the I/O errors of a write that found
// no room, of which the -shm file that could not grow (SQLITE_IOERR_SHMSIZE,
// "disk I/O error (4874)") is the one a database opened on a full disk
// meets first. SQLite keeps the errno behind an I/O error to itself, so a
// disk with no room left beside the file is the sign for the others.
const (
	sqliteIOErr        = 10
	sqliteFull         = 13
	sqliteIOErrShmSize = sqliteIOErr | 19<<8
)

// lowSpace is the free space under which an I/O error is put down to a
// disk that is nearly full: less than SQLite's -shm grows by at once
// (32 KiB) plus a few pages of log.
const lowSpace = 1 << 20

// explained is an SQLite error said in words; it unwraps to the error.
type explained struct {
	msg string
	err error
	// readOnly marks a database on a read-only file system: the error
	// says the cause whole, not "cannot read it".
	readOnly bool
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

// Explain says an SQLite error on the database at path in words where
// SQLite's own text hides the cause: a full disk reads "no space left on
// device" (SQLITE_FULL, or an I/O error while the disk has no room left),
// and a -shm file that could not grow says so. Other errors, and errors
// that are not SQLite's, are returned as they are; the result unwraps to
// err (Busy and IsForeign see through it). A nil err stays nil.
func Explain(path string, err error) error {
	if ro := explainReadOnly(path, err, readOnlyFS); ro != err {
		return ro
	}
	return explain(path, err, statFree)
}

// onReadOnlyFS reports whether err is Explain's word for a database on a
// read-only file system.
func onReadOnlyFS(err error) bool {
	var ee *explained
	return errors.As(err, &ee) && ee.readOnly
}

// explainReadOnly says an SQLite error that a read-only file system
// causes (a database SQLite cannot open for writing, whose -shm it cannot
// make, or a write refused) as such: "unable to open database file (14)"
// names no cause. roFS reports whether a folder is on a file system
// mounted read-only.
func explainReadOnly(path string, err error, roFS func(dir string) bool) error {
	var se interface{ Code() int } // *sqlite.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	var ee *explained
	if errors.As(err, &ee) {
		return err
	}
	switch se.Code() & 0xff {
	case sqliteCantOpen, sqliteReadOnly, sqliteIOErr:
	default:
		return err
	}
	if dir := filepath.Dir(path); roFS(dir) {
		return &explained{msg: fmt.Sprintf("%s is on a read-only file system: SQLite can neither write it nor make its -wal and -shm files beside it; copy it to a writable folder or remount the file system read-write (%v)", filepath.Base(path), err), err: err, readOnly: true}
	}
	return err
}

// explain is Explain with the look-up of free space given: statFree
// reports the bytes an unprivileged writer may still use on the file
// system holding a folder (ok false when that cannot be told).
func explain(path string, err error, freeBytes func(dir string) (free uint64, ok bool)) error {
	var se interface{ Code() int } // *sqlite.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	var ee *explained
	if errors.As(err, &ee) {
		return err
	}
	code := se.Code()
	dir := filepath.Dir(path)
	free, known := freeBytes(dir)
	left := ""
	if known {
		left = fmt.Sprintf("; %d bytes free there", free)
	}
	switch {
	case code&0xff == sqliteFull, code&0xff == sqliteIOErr && known && free == 0:
		return &explained{msg: fmt.Sprintf("no space left on device: the disk holding %s is full (%v)", dir, err), err: err}
	case code == sqliteIOErrShmSize:
		return &explained{msg: fmt.Sprintf("the disk could not grow the shared-memory file %s-shm, likely because it is full%s (%v)", filepath.Base(path), left, err), err: err}
	case code&0xff == sqliteIOErr && known && free < lowSpace:
		return &explained{msg: fmt.Sprintf("%v: the disk holding %s is nearly full (%d bytes free), the likely cause", err, dir, free), err: err}
	}
	return err
}
