// Package appdb opens chexpercept's SQLite databases: the reading
// study's and the review app's (app databases), and the evaluator's
// response cache and image memo (caches). Open is the one way to open
// one; Create is the one way to make an app database.
//
// A Spec describes one kind of database: its name in errors, how a file
// of that kind is recognised, the SQL that creates it and the migrations
// that bring a file made by an earlier release to this release's version.
//
// Recognised before anything writes. SQLite's read-write connection
// switches the file to WAL mode as it opens, and SQLite treats a -wal,
// -shm or -journal file beside a database as its own (it replays or
// deletes it). So Open first recognises the file through a connection
// that writes nothing — an app database by the schema id in its meta
// table, a cache by its one table — and refuses another application's
// file (IsForeign), leaving every byte of it; Create refuses to start a
// database beside such a side file. An open that fails removes the empty
// -wal and -shm files its connections made.
//
// Versioned. A database records its schema's version in PRAGMA
// user_version: 0 for what the first releases made, and one more for
// each Migration of its Spec. A read-write Open brings an older file up
// to date in one transaction, once; a file of a newer version than this
// release knows is refused before anything writes to it, and so is an
// older one opened read-only (which cannot be upgraded).
//
// Made whole. An app database is made under a temporary name and linked
// into place whole (Create, Publish), never over another file, readable
// by its owner only; its temporary file is registered on the command's
// job, so an interrupted command removes it, and the leftovers of a
// killed one are removed by the next Create. A cache is created in place
// by the first process that opens it, since several processes (the
// shards of a run) share it.
//
// One writer. Every write goes through one connection, in transactions
// committed in groups (DB); reads go through a pool that WAL never
// blocks. The package keeps no state of its own.
package appdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/chexpercept/chexpercept/internal/safefile"
)

// MetaSchema creates the meta table (key, value) of an app database,
// which holds the schema id Open reads and the app's settings.
const MetaSchema = `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`

// Spec is one kind of database.
type Spec struct {
	// Kind names the database in errors, before its path: "reading db".
	Kind string
	// Name is what a refused file is said not to be: "chexpercept
	// reading database".
	Name string
	// SchemaID marks an app database: the value of its meta table's
	// "schema" row (MetaSchema). Set it or Cache, not both.
	SchemaID string
	// Cache marks a cache: a database that holds this one table and
	// nothing else (no meta table). Open creates it in place when it is
	// missing or empty, never opens it or its side files through a link,
	// and leaves the side files of a file it could not read to the other
	// processes that may be using them.
	Cache *Table
	// Schema is the SQL that creates version 0 of the database: Create
	// runs it, then every migration. A cache's Schema must create only
	// what is missing (CREATE … IF NOT EXISTS): Open runs it every time.
	Schema string
	// Migrations[i] takes the database from version i to i+1; this
	// release's version is len(Migrations).
	Migrations []Migration
	// Synchronous is SQLite's synchronous level of the read-write
	// connection: "FULL" (an acknowledged write survives a power loss)
	// or "NORMAL" (a killed process).
	Synchronous string
}

// Table is the one table of a cache: its name and its columns in order.
type Table struct {
	Name    string
	Columns []string
}

// Migration is one step of a database's schema, run inside the
// transaction that records the new version.
type Migration struct {
	// Name says what the step does, for errors ("adding the aided-study
	// columns").
	Name string
	// Up makes the change. A file of the version before may already
	// hold it in part or whole (versions were first recorded after some
	// changes had shipped), so Up looks before it changes.
	Up func(ctx context.Context, tx *sql.Tx) error
}

// version is this release's version of the database.
func (s *Spec) version() int { return len(s.Migrations) }

// Mode is how Open opens a database.
type Mode int

const (
	// ReadWrite opens the database for writing and upgrades a file of
	// an earlier version.
	ReadWrite Mode = iota
	// ReadOnly opens the database without ever writing to it, also
	// from a read-only file or directory: every write fails. A file of
	// an earlier version is refused (it cannot be upgraded).
	ReadOnly
)

// SideFiles are the files SQLite keeps beside the database at path: its
// -wal, -shm and -journal files. Writing over one of them is writing over
// the database.
func SideFiles(path string) []string {
	return []string{path + "-wal", path + "-shm", path + "-journal"}
}

// sideSuffix is the suffix of the side file f of path.
func sideSuffix(path, f string) string { return f[len(path):] }

// errorf is an error about the database at path: its kind and path, then
// what went wrong.
func (s *Spec) errorf(path, format string, args ...any) error {
	return fmt.Errorf("%s %s: "+format, append([]any{s.Kind, path}, args...)...)
}

// Open opens the database of kind s at path. An app database must exist
// (made by Create); a cache is created when missing. The file is
// recognised through a connection that writes nothing before any other
// connection opens it; a file that is not s's is refused (IsForeign) and
// left as it was. A read-write open brings an older version up to date.
func Open(path string, s Spec, mode Mode) (*DB, error) {
	if s.Cache != nil {
		if mode != ReadWrite {
			return nil, s.errorf(path, "a cache is opened read-write")
		}
		return openCache(path, &s)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, s.errorf(path, "%w", safefile.Reason(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, s.errorf(path, "not a regular file")
	}
	// Either connection, on a database in WAL mode, makes the -wal and
	// -shm files if they are missing; an open that fails removes them
	// again (empty: they hold nothing), so a full disk keeps no debris.
	absent := sideFilesAbsent(path)
	if mode == ReadOnly {
		db, err := openReadOnly(path, &s)
		if err != nil {
			removeNewSideFiles(path, absent)
		}
		return db, err
	}
	db, err := openReadWrite(path, &s)
	if err != nil {
		removeNewSideFiles(path, absent)
	}
	return db, err
}

// openReadWrite recognises the file through a read-only connection, then
// opens the writer and the readers, recognises it again through them (it
// may have been replaced meanwhile) and upgrades it.
func openReadWrite(path string, s *Spec) (*DB, error) {
	ro, err := openRecognised(path, s, ReadWrite, false)
	if err != nil {
		return nil, err
	}
	if err := ro.Close(); err != nil {
		return nil, s.errorf(path, "%w", err)
	}
	d, err := dsn(path, "rw", s.Synchronous)
	if err != nil {
		return nil, s.errorf(path, "%w", err)
	}
	db, err := openDSN(d, false)
	if err != nil {
		return nil, s.errorf(path, "%w", err)
	}
	ctx := context.Background() // an open is not cancelled half-way: it is short, and its upgrade is one transaction
	v, err := s.recognise(ctx, db.r)
	if err != nil {
		err = s.openError(path, err)
	} else if err = s.upgrade(ctx, db, v); err != nil {
		err = s.errorf(path, "%w", Explain(path, err))
	}
	if err != nil {
		_ = db.Close() // the open failed; its error is the one to report
		return nil, err
	}
	return db, nil
}

// openReadOnly opens a database that is only read. In WAL mode SQLite
// needs a -shm file beside the database even to read; when the directory
// is read-only and there is none, the database is read as immutable,
// which is exact only while no -wal file holds changes, so a -wal file
// there is an error.
func openReadOnly(path string, s *Spec) (*DB, error) {
	db, err := openRecognised(path, s, ReadOnly, false)
	if code := sqliteCode(err); err == nil || code&0xff != sqliteReadOnly && code&0xff != sqliteCantOpen {
		return db, err
	}
	if _, werr := os.Lstat(path + "-wal"); !errors.Is(werr, fs.ErrNotExist) {
		return nil, s.errorf(path, "cannot be read without writing: its directory is not writable and %s-wal holds changes not yet in the database; copy the database with its -wal file to a writable directory",
			filepath.Base(path))
	}
	return openRecognised(path, s, ReadOnly, true)
}

// openRecognised opens the database read-only (a pool that sets no pragma
// that writes), recognises it and checks its version: newer than this
// release's is refused; so is older for a database opened to be read
// (mode ReadOnly), which cannot be upgraded, while a read-write open
// upgrades it once this pool is closed.
func openRecognised(path string, s *Spec, mode Mode, immutable bool) (*DB, error) {
	d, err := readOnlyDSN(path, immutable)
	if err != nil {
		return nil, s.errorf(path, "%w", err)
	}
	db, err := openDSN(d, true)
	if err != nil {
		return nil, s.errorf(path, "%w", err)
	}
	v, err := s.recognise(context.Background(), db.r)
	if err == nil && (v > s.version() || mode == ReadOnly && v < s.version()) {
		err = &versionError{v, s.version()}
	}
	if err != nil {
		_ = db.Close() // read-only: nothing to lose; the open's error is the one to report
		return nil, s.openError(path, err)
	}
	return db, nil
}

// openError is the error of an open that failed: "not a …" when the file
// is another one (IsForeign), the version's refusal as it is, else the
// failure (a disk I/O error says nothing of what the file is).
func (s *Spec) openError(path string, err error) error {
	var ve *versionError
	var fe *foreignError
	switch {
	case errors.As(err, &ve), errors.As(err, &fe):
		return s.errorf(path, "%w", err)
	case IsForeign(err):
		return s.errorf(path, "not a %s (%w)", s.Name, err)
	}
	ex := Explain(path, err)
	if onReadOnlyFS(ex) {
		return s.errorf(path, "%w", ex)
	}
	return s.errorf(path, "cannot read it: %w", ex)
}

// versionError refuses a database whose version this release does not
// open: newer than it knows, or older through a read-only open.
type versionError struct {
	version, want int
}

func (e *versionError) Error() string {
	if e.version > e.want {
		return fmt.Sprintf("made by a newer release of chexpercept (its schema is version %d; this release knows versions up to %d); open it with that release or a later one", e.version, e.want)
	}
	return fmt.Sprintf("made by an earlier release (its schema is version %d; this release's is %d), and a read-only open cannot upgrade it; open it once for writing to upgrade it", e.version, e.want)
}

// upgrade brings a database of version v (as the readers saw it) to this
// release's version in one write transaction, which reads the version
// again: another process may have upgraded the file meanwhile. A newer
// version is refused.
func (s *Spec) upgrade(ctx context.Context, db *DB, v int) error {
	want := s.version()
	if v > want {
		return &versionError{v, want}
	}
	if v == want {
		return nil
	}
	return db.Tx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
			return err
		}
		return s.migrate(ctx, tx, v)
	})
}

// migrate runs the migrations from version v inside tx and records this
// release's version.
func (s *Spec) migrate(ctx context.Context, tx *sql.Tx, v int) error {
	want := s.version()
	if v > want {
		return &versionError{v, want}
	}
	for i := v; i < want; i++ {
		if err := s.Migrations[i].Up(ctx, tx); err != nil {
			return fmt.Errorf("%s: %w", s.Migrations[i].Name, err)
		}
	}
	if v == want {
		return nil
	}
	// PRAGMA takes no parameter; want is a count of this release's
	// migrations.
	_, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, want))
	return err
}

// uri is path as an SQLite file: URI (absolute, escaped: '?' or '#' in a
// folder's name cannot turn into parameters).
func uri(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath(), nil
}

// dsn is the data-source name of a read-write connection: mode "rwc"
// (create) or "rw", WAL, foreign keys, the given synchronous level, and
// transactions that take the write lock at once.
func dsn(path, mode, synchronous string) (string, error) {
	u, err := uri(path)
	if err != nil {
		return "", err
	}
	return u + "?mode=" + mode +
		"&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)" +
		"&_pragma=synchronous(" + synchronous + ")&_txlock=immediate", nil
}

// readOnlyDSN is the data-source name of a connection that sets no pragma
// that writes and changes nothing; immutable also tells SQLite that no
// other process changes the file (for a file in a directory it may not
// write, where it cannot take its locks).
func readOnlyDSN(path string, immutable bool) (string, error) {
	u, err := uri(path)
	if err != nil {
		return "", err
	}
	d := u + "?mode=ro&_pragma=busy_timeout(10000)&_pragma=query_only(1)"
	if immutable {
		d += "&immutable=1"
	}
	return d, nil
}

// sideFilesAbsent reports which of path's side files do not exist now;
// removeNewSideFiles takes the answer after a failed open.
func sideFilesAbsent(path string) map[string]bool {
	absent := map[string]bool{}
	for _, f := range SideFiles(path) {
		if _, err := os.Lstat(f); errors.Is(err, fs.ErrNotExist) {
			absent[sideSuffix(path, f)] = true
		}
	}
	return absent
}

// removeNewSideFiles removes, after an open of path that failed and whose
// connections are closed, the -wal and -shm files that the open created
// (absent before it, per sideFilesAbsent) when the -wal holds nothing: an
// empty log and its index carry no data, and left on a full disk they
// would outlive the failure. A -wal with content is never removed.
func removeNewSideFiles(path string, absentBefore map[string]bool) {
	if !absentBefore["-wal"] || !absentBefore["-shm"] {
		return
	}
	fi, err := os.Lstat(path + "-wal")
	if err == nil && (!fi.Mode().IsRegular() || fi.Size() != 0) {
		return
	}
	_ = os.Remove(path + "-wal") // best effort: what is left is an empty log SQLite ignores
	_ = os.Remove(path + "-shm")
}
