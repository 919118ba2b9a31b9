package appdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/safefile"
	"modernc.org/sqlite"
)

// SQLite's primary result codes that appdb tells apart. SQLITE_ERROR
// (e.g. no meta table) and SQLITE_NOTADB say that the file is not this
// app's database; any other failure (an I/O error, a full disk, no
// memory, a busy lock, a page that reads as corrupt, which a failed read
// also gives) says nothing about what the file is. SQLITE_READONLY and
// SQLITE_CANTOPEN are what a read-only directory gives a reader that
// needs a -shm file.
const (
	sqliteError    = 1  // SQLITE_ERROR
	sqliteReadOnly = 8  // SQLITE_READONLY
	sqliteCantOpen = 14 // SQLITE_CANTOPEN
	sqliteNotADB   = 26 // SQLITE_NOTADB
)

// sqliteCode is the SQLite result code of err (extended codes included),
// or 0 when err is not SQLite's.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// recognise reads, through q, whether the database is of kind s, and its
// version.
func (s *Spec) recognise(ctx context.Context, q *sql.DB) (version int, err error) {
	if s.Cache != nil {
		err = s.Cache.check(ctx, q, s.Name)
	} else {
		err = checkSchema(ctx, q, s.SchemaID)
	}
	if err != nil {
		return 0, err
	}
	err = q.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version)
	return version, err
}

// checkSchema reports whether q's meta table names schemaID; the error
// says what was found instead.
func checkSchema(ctx context.Context, q *sql.DB, schemaID string) error {
	var id string
	if err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema'`).Scan(&id); err != nil {
		return err
	}
	if id != schemaID {
		return wrongSchema(id)
	}
	return nil
}

// wrongSchema is checkSchema's error for a meta table naming another
// schema.
type wrongSchema string

func (w wrongSchema) Error() string { return fmt.Sprintf("schema %q", string(w)) }

// foreignError is a cache's refusal of a file that holds something else,
// said in full; it unwraps to SQLite's error when there was one.
type foreignError struct {
	msg string
	err error
}

func (e *foreignError) Error() string { return e.msg }
func (e *foreignError) Unwrap() error { return e.err }

// IsForeign reports whether err, from an open, means that the file is
// not a database of the kind asked for (another SQLite file, no meta
// table, another schema id, another cache's table, not SQLite at all)
// rather than that it could not be read: only then is the file said to be
// "not a …" database; a disk I/O error is no verdict on the file.
func IsForeign(err error) bool {
	var ws wrongSchema
	var fe *foreignError
	if errors.Is(err, sql.ErrNoRows) || errors.As(err, &ws) || errors.As(err, &fe) {
		return true
	}
	switch sqliteCode(err) & 0xff {
	case sqliteError, sqliteNotADB:
		return true
	}
	return false
}

// refusal is a cache's foreign verdict: what the file holds instead.
func refusal(name, what string, err error) error {
	return &foreignError{fmt.Sprintf("not a %s%s; refusing to write into it (move it away, or choose another cache directory)", name, what), err}
}

// check reads whether q holds nothing (no schema object: nothing in it to
// lose) or t with t's columns and nothing else (the index SQLite makes
// for its primary key aside).
func (t *Table) check(ctx context.Context, q *sql.DB, name string) error {
	var objects []string
	mismatch := false
	rows, err := q.QueryContext(ctx, `SELECT type, name, tbl_name FROM sqlite_schema ORDER BY name`)
	if err == nil {
		for rows.Next() {
			var typ, obj, tbl string
			if err = rows.Scan(&typ, &obj, &tbl); err != nil {
				break
			}
			own := tbl == t.Name && (typ == "table" && obj == t.Name || typ == "index" && strings.HasPrefix(obj, "sqlite_autoindex_"))
			mismatch = mismatch || !own
			if typ != "index" {
				objects = append(objects, typ+" "+obj)
			}
		}
		if err == nil {
			err = rows.Err()
		}
		_ = rows.Close() // read-only; the scan's error is the one that counts
	}
	if err != nil {
		if IsForeign(err) {
			return refusal(name, fmt.Sprintf(" (%v)", err), err)
		}
		return err
	}
	if mismatch {
		return refusal(name, ": it holds "+strings.Join(objects, ", "), nil)
	}
	if len(objects) == 0 {
		return nil
	}
	cols, err := Rows(ctx, q, func(c *string) []any { return []any{c} }, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, t.Name)
	if err != nil {
		return err
	}
	if !slices.Equal(cols, t.Columns) {
		return refusal(name, fmt.Sprintf(": table %s has columns (%s), not (%s)", t.Name, strings.Join(cols, ", "), strings.Join(t.Columns, ", ")), nil)
	}
	return nil
}

// openCache opens, creating it if needed, the cache of kind s at path. The
// database and its side files must be regular files or absent: SQLite
// would write through a symbolic link (into a review database, say, or
// create a dangling link's target) and block on a FIFO. An existing file
// must be this cache's own (recogniseCache). The schema is then created
// where missing and the version brought up to date, in one transaction:
// the first connection's switch to WAL can fail at once with SQLITE_BUSY
// when two processes make it at the same moment (SQLite does not wait
// there), and the writer retries a busy start.
func openCache(path string, s *Spec) (*DB, error) {
	if err := checkCacheFiles(path); err != nil {
		return nil, s.errorf(path, "%w", err)
	}
	if err := recogniseCache(path, s); err != nil {
		return nil, s.errorf(path, "%w", err)
	}
	d, err := dsn(path, "rwc", s.Synchronous)
	if err != nil {
		return nil, s.errorf(path, "%w", err)
	}
	db, err := openDSN(d, false)
	if err != nil {
		return nil, s.errorf(path, "%w", err)
	}
	ctx := context.Background() // an open is short and one transaction
	err = db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.Schema); err != nil {
			return err
		}
		var v int
		if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
			return err
		}
		return s.migrate(ctx, tx, v)
	})
	if err != nil {
		_ = db.Close() // the open failed; its error is the one to report
		return nil, s.errorf(path, "%w", Explain(path, err))
	}
	return db, nil
}

// recogniseCache checks, through a read-only connection that sets no
// pragma and writes nothing, that the file at path is absent, empty, or
// this cache (Table.check) of a version this release knows. Any other
// file is refused (IsForeign), naming what it holds; a read that fails (a
// full disk, an I/O error) is reported as it is, with no verdict on the
// file. The -wal and -shm files such a connection may create beside a
// database in WAL mode are removed again when the file is refused, and
// only then: after a failed read the file may be this cache, whose side
// files another process may be using.
func recogniseCache(path string, s *Spec) (err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return safefile.Reason(err)
	}
	if wal, werr := os.Lstat(path + "-wal"); fi.Size() == 0 && (werr != nil || wal.Size() == 0) {
		return nil // what SQLite makes first, with no log: it holds nothing
	}
	d, err := readOnlyDSN(path, false)
	if err != nil {
		return err
	}
	absent := sideFilesAbsent(path)
	db, err := sql.Open("sqlite", d)
	if err != nil {
		return err
	}
	defer func() {
		_ = db.Close() // read-only: nothing to lose
		if IsForeign(err) {
			removeNewSideFiles(path, absent)
		}
	}()
	v, err := s.recognise(context.Background(), db)
	switch {
	case IsForeign(err):
		return err
	case err != nil:
		return fmt.Errorf("cannot read it: %w", Explain(path, err))
	case v > s.version():
		return &versionError{v, s.version()}
	}
	return nil
}

// checkCacheFiles refuses a cache's path, or one of its side files, that
// exists and is not a regular file (a link is not followed).
func checkCacheFiles(path string) error {
	for _, f := range append([]string{path}, SideFiles(path)...) {
		fi, err := os.Lstat(f)
		what := "not a regular file"
		if f != path {
			what = "its " + sideSuffix(path, f) + " file is not a regular file"
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s (a symbolic link); refusing to open a database through it (remove the link; the cache is rebuilt)", what)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s (%s); refusing to open it as a database", what, safefile.KindOf(fi.Mode()))
		}
	}
	return nil
}
