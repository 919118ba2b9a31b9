// Package appdb opens the SQLite database of a browser app (the review
// app, the reading app): created once and never over another file, kept
// private to its owner, and recognised by its schema id before anything
// writes to it.
//
// SQLite treats a -wal, -shm or -journal file beside a database as its
// own: it replays or deletes it. So Create refuses to start a database
// beside such a file, and a database named by mistake (another app's, a
// cache) is recognised through a connection that writes nothing (the
// read-write connection switches the file to WAL mode as it opens).
package appdb

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/chexpercept/chexpercept/internal/safefile"
	"modernc.org/sqlite"
)

// MetaSchema creates the meta table (key, value), which holds the schema
// id CheckSchema reads and an app's settings.
const MetaSchema = `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`

// SideFiles are the suffixes of the files SQLite keeps beside a database.
var SideFiles = []string{"-wal", "-shm", "-journal"}

// uri is path as an SQLite file: URI (absolute, escaped).
func uri(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath(), nil
}

// DSN is the data-source name of a read-write connection: mode "rwc"
// (create) or "rw", WAL, foreign keys, the given synchronous level
// ("FULL": an acknowledged write survives a power loss; "NORMAL": a
// killed process), and transactions that take the write lock at once.
func DSN(path, mode, synchronous string) (string, error) {
	u, err := uri(path)
	if err != nil {
		return "", err
	}
	return u + "?mode=" + mode +
		"&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)" +
		"&_pragma=synchronous(" + synchronous + ")&_txlock=immediate", nil
}

// ReadOnlyDSN is the data-source name of a connection that sets no
// pragma that writes and changes nothing; immutable also tells SQLite that
// no other process changes the file (for a file in a directory it may not
// write, where it cannot take its locks).
func ReadOnlyDSN(path string, immutable bool) (string, error) {
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

// Create makes a new database at path with schema, readable by its owner
// only (it holds token and session hashes; SQLite gives its side files
// the same permissions). kind names the database in errors ("review db").
// An existing file, or a side file of that name, is refused: Create never
// writes over what it did not make.
func Create(path, kind, schema, synchronous string) (*DB, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%s %s already exists (refusing to overwrite it)", kind, path)
	}
	for _, suffix := range SideFiles {
		if _, err := os.Lstat(path + suffix); err == nil {
			return nil, fmt.Errorf("%s %s: %s already exists beside it (refusing to create the database over it)", kind, path, filepath.Base(path+suffix))
		}
	}
	d, err := DSN(path, "rwc", synchronous)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, path, err)
	}
	// Neither the file nor a side file existed: whatever a failure below
	// leaves is this call's own, and is removed so that the rerun starts
	// afresh instead of meeting a half-made database.
	db, err := OpenDSN(d, false)
	if err != nil {
		Remove(path)
		return nil, fmt.Errorf("%s %s: %w", kind, path, err)
	}
	if _, err := db.Exec(schema); err != nil {
		_ = db.Close() // the schema's error is the one to report
		Remove(path)
		return nil, fmt.Errorf("%s %s: create schema: %w", kind, path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = db.Close() // the chmod's error is the one to report
		Remove(path)
		return nil, fmt.Errorf("%s %s: %w", kind, path, safefile.Reason(err))
	}
	return db, nil
}

// Remove deletes a database that its own command created and could not
// finish: the file and its side files. Callers use it only for a
// database they made in this process (Create checked nothing was there).
func Remove(path string) {
	for _, suffix := range append([]string{""}, SideFiles...) {
		_ = os.Remove(path + suffix) // best effort: the creating error is reported
	}
}

// CheckSchema reports whether db's meta table names schemaID; the error
// says what was found instead.
func CheckSchema(db *sql.DB, schemaID string) error {
	var id string
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'schema'`).Scan(&id); err != nil {
		return err
	}
	if id != schemaID {
		return wrongSchema(id)
	}
	return nil
}

// SQLite's primary result codes that say the file is not this app's
// database; any other failure (an I/O error, a full disk, no memory, a
// busy lock, a page that reads as corrupt, which a failed read also
// gives) says nothing about what the file is.
const (
	sqliteError  = 1  // SQLITE_ERROR: e.g. no meta table
	sqliteNotADB = 26 // SQLITE_NOTADB
)

// wrongSchema is CheckSchema's error for a meta table naming another
// schema.
type wrongSchema string

func (w wrongSchema) Error() string { return fmt.Sprintf("schema %q", string(w)) }

// IsForeign reports whether err, from CheckSchema, means that the file is
// not a database of this app (another SQLite file, no meta table, another
// schema id, not SQLite at all) rather than that it could not be read: a
// caller says "not a … database" only then, and reports the error as it
// is otherwise (a disk I/O error is no verdict on the file).
func IsForeign(err error) bool {
	var ws wrongSchema
	if errors.Is(err, sql.ErrNoRows) || errors.As(err, &ws) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteError, sqliteNotADB:
			return true
		}
	}
	return false
}

// SideFilesAbsent reports which of path's side files (SideFiles) do not
// exist now; RemoveNewSideFiles takes the answer after a failed open.
func SideFilesAbsent(path string) map[string]bool {
	absent := map[string]bool{}
	for _, s := range SideFiles {
		if _, err := os.Lstat(path + s); errors.Is(err, fs.ErrNotExist) {
			absent[s] = true
		}
	}
	return absent
}

// RemoveNewSideFiles removes, after an open of path that failed and whose
// connection is closed, the -wal and -shm files that the open created
// (absent before it, per SideFilesAbsent) when the -wal holds nothing: an
// empty log and its index carry no data, and left on a full disk they
// would outlive the failure. A -wal with content is never removed.
func RemoveNewSideFiles(path string, absentBefore map[string]bool) {
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
