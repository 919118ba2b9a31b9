package appdb

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// Create starts a new app database of kind s at path: its Schema, every
// migration, and this release's version, readable by its owner only (it
// holds token and session hashes; SQLite gives its side files the same
// permissions). An existing file, or a side file of that name, is
// refused: Create never writes over what it did not make.
//
// The database is made under a temporary name beside path and appears at
// path only when Publish has written, closed and synced it whole. The
// temporary file is registered on j (job.Job.Track), so a command
// stopped before its commit point removes it; a command killed at any
// point leaves no file at path, so its rerun is not refused, and that
// rerun's Create removes the temporary files the killed one left
// (leftovers). Create calls j's hook at "db-created" once the temporary
// file exists, empty, and at "db-schema" once the schema is in it, with
// the temporary file's name. Abandon removes the temporary file of a
// creation that fails.
func Create(j *job.Job, path string, s Spec) (*Creation, error) {
	if s.Cache != nil || s.SchemaID == "" {
		return nil, s.errorf(path, "only an app database is created (it has a schema id)")
	}
	if err := absent(path, s.Kind); err != nil {
		return nil, err
	}
	removeLeftovers(path)
	temp, f, err := createTemp(path)
	if err != nil {
		return nil, s.errorf(path, "%w", safefile.Reason(err))
	}
	c := &Creation{path: path, temp: temp, kind: s.Kind, lock: f, job: j}
	release, err := j.Track(c.removeTemp)
	if err != nil {
		c.removeTemp()
		return nil, s.errorf(path, "%w", err)
	}
	c.release = release
	j.Hook("db-created", temp)
	d, err := dsn(temp, "rw", s.Synchronous)
	if err == nil {
		c.db, err = openDSN(d, false)
	}
	if err != nil {
		c.Abandon()
		return nil, s.errorf(path, "%w", err)
	}
	ctx := j.Context()
	err = c.db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.Schema); err != nil {
			return fmt.Errorf("create schema: %w", Explain(temp, err))
		}
		return s.migrate(ctx, tx, 0)
	})
	if err != nil {
		c.Abandon()
		return nil, s.errorf(path, "%w", err)
	}
	j.Hook("db-schema", temp)
	return c, nil
}

// absent refuses path when it, or a side file of its name, exists.
func absent(path, kind string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s %s already exists (refusing to overwrite it)", kind, path)
	}
	for _, f := range SideFiles(path) {
		if _, err := os.Lstat(f); err == nil {
			return fmt.Errorf("%s %s: %s already exists beside it (refusing to create the database over it)", kind, path, filepath.Base(f))
		}
	}
	return nil
}

// Creation is an app database being made under a temporary name beside
// its final one. Fill it through DB, then Publish or Abandon it.
type Creation struct {
	path, temp, kind string
	db               *DB
	job              *job.Job
	release          func() // forgets the temporary file on the job

	// lock is the temporary file itself, open and flock-ed for the
	// creation's life: another Create of the same path leaves a locked
	// temporary file alone (it is not a leftover: its maker is alive).
	lock *os.File
}

// DB is the database being made. Publish and Abandon close it.
func (c *Creation) DB() *DB { return c.db }

// Publish closes the database, checks that SQLite left no log beside it,
// syncs it and moves it to its final name without replacing anything
// there (a file that appeared there meanwhile is refused and kept), then
// syncs the folder. On any failure the temporary file is removed and
// nothing is at the final name. The rename makes the database the
// command's output: the caller passes its job's commit point
// (job.Job.Commit) before it calls Publish, and Publish refuses to
// publish for a job that was stopped.
func (c *Creation) Publish() error {
	defer c.release()
	err := c.db.Close()
	if c.job.Stopped() {
		// Its temporary file is removed, or about to be (RemoveTemps).
		err = job.ErrStopped
	}
	if err == nil {
		for _, suffix := range []string{"-wal", "-journal"} {
			if _, serr := os.Lstat(c.temp + suffix); serr == nil {
				err = fmt.Errorf("%s is left after closing the database", filepath.Base(c.temp+suffix))
				break
			}
		}
	}
	if err == nil {
		err = safefile.Reason(c.lock.Sync())
	}
	if err != nil {
		c.removeTemp()
		return fmt.Errorf("%s %s: %w", c.kind, c.path, err)
	}
	if err := renameNoReplace(c.temp, c.path); err != nil {
		c.removeTemp()
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s %s already exists (made while this one was created; refusing to overwrite it)", c.kind, c.path)
		}
		return fmt.Errorf("%s %s: %w", c.kind, c.path, safefile.Reason(err))
	}
	_ = os.Remove(c.temp + "-shm") // an index SQLite may leave; it holds no data
	if err := atomicfile.SyncDir(filepath.Dir(c.path)); err != nil {
		// The database is this call's own: a creation that cannot be
		// made durable did not succeed, and leaves nothing.
		_ = os.Remove(c.path)
		_ = c.lock.Close() // the sync's failure is the one reported
		return fmt.Errorf("%s %s: sync the folder: %w", c.kind, c.path, safefile.Reason(err))
	}
	return c.lock.Close()
}

// Abandon closes the database and removes the temporary file and its side
// files: a creation that failed leaves nothing.
func (c *Creation) Abandon() {
	if c.db != nil {
		_ = c.db.Close() // the failure that led here is the one reported
	}
	c.removeTemp()
	if c.release != nil {
		c.release()
	}
}

// removeTemp removes the temporary file's side files, then the file, then
// drops its lock. The job runs it when the command is stopped before its
// commit point.
func (c *Creation) removeTemp() {
	for _, f := range SideFiles(c.temp) {
		_ = os.Remove(f) // best effort: the creating error is reported
	}
	_ = os.Remove(c.temp)
	_ = c.lock.Close()
}

// tempSuffix is the part of a temporary name after the database's name:
// ".tmp-" and 16 lowercase hex digits.
const tempSuffix = `\.tmp-[0-9a-f]{16}`

// tempPattern is the pattern of the names Create gives temporary files
// beside the database base (a file name), side files included.
func tempPattern(base string) *regexp.Regexp {
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
// a name of tempPattern(base of path); is a regular file (not a link)
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
	pat := tempPattern(base)
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
	defer func() { _ = f.Close() }() // read-only
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
	for _, f := range SideFiles(name) {
		if ownRegular(f) {
			_ = os.Remove(f)
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

// linkNoReplace gives from the name to, failing with an error matching
// fs.ErrExist when to exists, then removes the name from.
func linkNoReplace(from, to string) error {
	if err := os.Link(from, to); err != nil {
		return err
	}
	return os.Remove(from)
}
