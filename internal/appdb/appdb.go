// Package appdb opens the SQLite database of a browser app (the review
// app, the reading app): created once, whole under a temporary name and
// then linked into place, never over another file, kept
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
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

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

// Create starts a new database at path with schema, readable by its owner
// only (it holds token and session hashes; SQLite gives its side files
// the same permissions). kind names the database in errors ("review db").
// An existing file, or a side file of that name, is refused: Create never
// writes over what it did not make.
//
// The database is made under a temporary name beside path (TempPattern)
// and appears at path only when Publish has written, closed and synced it
// whole: a command killed at any point leaves no file at path, so its
// rerun is not refused, and that rerun's Create removes the temporary
// files the killed one left (leftovers). Abandon removes the temporary
// file of a creation that fails.
func Create(path, kind, schema, synchronous string) (*Creation, error) {
	if err := absent(path, kind); err != nil {
		return nil, err
	}
	removeLeftovers(path)
	temp, f, err := createTemp(path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, path, safefile.Reason(err))
	}
	c := &Creation{Path: path, Temp: temp, kind: kind, lock: f}
	if !track(c) {
		c.removeTemp()
		return nil, fmt.Errorf("%s %s: %w", kind, path, ErrInterrupted)
	}
	if CreateHook != nil {
		CreateHook("created", temp)
	}
	d, err := DSN(temp, "rw", synchronous)
	if err == nil {
		c.DB, err = OpenDSN(d, false)
	}
	if err != nil {
		c.Abandon()
		return nil, fmt.Errorf("%s %s: %w", kind, path, err)
	}
	if _, err := c.DB.Exec(schema); err != nil {
		c.Abandon()
		return nil, fmt.Errorf("%s %s: create schema: %w", kind, path, Explain(temp, err))
	}
	if CreateHook != nil {
		CreateHook("schema", temp)
	}
	return c, nil
}

// absent refuses path when it, or a side file of its name, exists.
func absent(path, kind string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s %s already exists (refusing to overwrite it)", kind, path)
	}
	for _, suffix := range SideFiles {
		if _, err := os.Lstat(path + suffix); err == nil {
			return fmt.Errorf("%s %s: %s already exists beside it (refusing to create the database over it)", kind, path, filepath.Base(path+suffix))
		}
	}
	return nil
}

// CreateHook is nil except in tests: Create calls it with stage "created"
// once the temporary file exists, empty, and with "schema" once the
// schema is written to it; a test stops or kills the process there.
var CreateHook func(stage, temp string)

// ErrInterrupted is returned by Create and Publish once RemoveTemps has
// run: the process is ending on a signal.
var ErrInterrupted = errors.New("interrupted")

// Creation is a database being made under a temporary name (Temp) beside
// its final one (Path). Fill it through DB, then Publish or Abandon it.
type Creation struct {
	*DB
	Path, Temp string

	kind string
	// lock is the temporary file itself, open and flock-ed for the
	// creation's life: another Create of the same path leaves a locked
	// temporary file alone (it is not a leftover: its maker is alive).
	lock *os.File
}

// Publish closes the database, checks that SQLite left no log beside it,
// syncs it and moves it to Path without replacing anything there (a file
// that appeared at Path meanwhile is refused and kept), then syncs the
// folder. On any failure the temporary file is removed and nothing is at
// Path.
func (c *Creation) Publish() error {
	err := c.DB.Close()
	if err == nil {
		for _, suffix := range []string{"-wal", "-journal"} {
			if _, serr := os.Lstat(c.Temp + suffix); serr == nil {
				err = fmt.Errorf("%s is left after closing the database", filepath.Base(c.Temp+suffix))
				break
			}
		}
	}
	if err == nil {
		err = safefile.Reason(c.lock.Sync())
	}
	if err != nil {
		c.removeTemp()
		return fmt.Errorf("%s %s: %w", c.kind, c.Path, err)
	}
	inflight.Lock()
	defer inflight.Unlock()
	delete(inflight.m, c)
	// The rename is the command's commit point: the caller commits its
	// job (job.Job.Commit) just before Publish, so a signal that comes
	// after it lets the command end as it would have.
	if inflight.stopped {
		c.removeTemp()
		return fmt.Errorf("%s %s: %w", c.kind, c.Path, ErrInterrupted)
	}
	if err := renameNoReplace(c.Temp, c.Path); err != nil {
		c.removeTemp()
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s %s already exists (made while this one was created; refusing to overwrite it)", c.kind, c.Path)
		}
		return fmt.Errorf("%s %s: %w", c.kind, c.Path, safefile.Reason(err))
	}
	_ = os.Remove(c.Temp + "-shm") // an index SQLite may leave; it holds no data
	if err := syncDir(filepath.Dir(c.Path)); err != nil {
		// The database is this call's own: a creation that cannot be
		// made durable did not succeed, and leaves nothing.
		_ = os.Remove(c.Path)
		_ = c.lock.Close()
		return fmt.Errorf("%s %s: sync the folder: %w", c.kind, c.Path, safefile.Reason(err))
	}
	return c.lock.Close()
}

// Abandon closes the database and removes the temporary file and its side
// files: a creation that failed leaves nothing.
func (c *Creation) Abandon() {
	if c.DB != nil {
		_ = c.DB.Close() // the failure that led here is the one reported
	}
	inflight.Lock()
	delete(inflight.m, c)
	inflight.Unlock()
	c.removeTemp()
}

// removeTemp removes the temporary file's side files, then the file, then
// drops its lock.
func (c *Creation) removeTemp() {
	for _, suffix := range SideFiles {
		_ = os.Remove(c.Temp + suffix) // best effort: the creating error is reported
	}
	_ = os.Remove(c.Temp)
	_ = c.lock.Close()
}

// inflight holds the creations of this process not yet published or
// abandoned, for RemoveTemps.
var inflight = struct {
	sync.Mutex
	m       map[*Creation]bool
	stopped bool
}{m: map[*Creation]bool{}}

func track(c *Creation) bool {
	inflight.Lock()
	defer inflight.Unlock()
	if inflight.stopped {
		return false
	}
	inflight.m[c] = true
	return true
}

// RemoveTemps removes the temporary files of every creation in flight and
// makes every later Create and Publish fail: for a process ending on a
// signal (the creating goroutine is left running; nothing of it reaches
// the final name).
func RemoveTemps() {
	inflight.Lock()
	defer inflight.Unlock()
	inflight.stopped = true
	for c := range inflight.m {
		c.removeTemp()
		delete(inflight.m, c)
	}
}

// syncDir syncs a folder's entries (a variable for tests).
var syncDir = func(dir string) error {
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

// tempSuffix is the part of a temporary name after the database's name:
// ".tmp-" and 16 lowercase hex digits.
const tempSuffix = `\.tmp-[0-9a-f]{16}`

// TempPattern is the pattern of the names Create gives temporary files
// beside the database base (a file name), side files included.
func TempPattern(base string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(base) + tempSuffix + `(-wal|-shm|-journal)?$`)
}

// createTemp creates the temporary file beside path (exclusively, owner
// only, never through a link) and locks it.
func createTemp(path string) (string, *os.File, error) {
	for range 8 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", nil, err
		}
		temp := path + ".tmp-" + hex.EncodeToString(b[:])
		f, err := os.OpenFile(temp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		if err := lockFile(f, false); err != nil {
			_ = f.Close()
			_ = os.Remove(temp)
			return "", nil, err
		}
		return temp, f, nil
	}
	return "", nil, errors.New("no free temporary name")
}

// sqliteMagic begins every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// removeLeftovers removes the temporary files that an earlier Create of
// path left when its process was killed, and nothing else. A leftover has
// a name of TempPattern(base of path); is a regular file (not a link)
// owned by this user; is empty or an SQLite database; and is not locked
// (a Create in a live process holds its lock). Its side files go with it,
// and side files of that pattern whose database is gone (a removal cut
// short) are removed too.
func removeLeftovers(path string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // Create's own writes in dir will report the problem
	}
	pat := TempPattern(base)
	for _, e := range entries {
		m := pat.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		name := filepath.Join(dir, e.Name())
		if m[1] != "" {
			main := strings.TrimSuffix(name, m[1])
			if _, err := os.Lstat(main); errors.Is(err, fs.ErrNotExist) && ownRegular(name) {
				_ = os.Remove(name) // best effort: an orphan side file of ours
			}
			continue
		}
		removeLeftover(name)
	}
}

// removeLeftover removes name and its side files when name is a leftover
// of ours (see removeLeftovers).
func removeLeftover(name string) {
	f, err := safefile.Open(name, safefile.NoFollow)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !ownedByMe(fi) {
		return
	}
	if fi.Size() > 0 {
		head := make([]byte, len(sqliteMagic))
		if _, err := io.ReadFull(f, head); err != nil || string(head) != sqliteMagic {
			return
		}
	}
	if lockFile(f, true) != nil {
		return // its maker is alive
	}
	for _, suffix := range SideFiles {
		if ownRegular(name + suffix) {
			_ = os.Remove(name + suffix)
		}
	}
	_ = os.Remove(name)
}

// ownRegular reports whether name is a regular file (not a link) owned by
// this user.
func ownRegular(name string) bool {
	fi, err := os.Lstat(name)
	return err == nil && fi.Mode().IsRegular() && ownedByMe(fi)
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

// linkNoReplace gives from the name to, failing with an error matching
// fs.ErrExist when to exists, then removes the name from.
func linkNoReplace(from, to string) error {
	if err := os.Link(from, to); err != nil {
		return err
	}
	return os.Remove(from)
}
