package eval

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	_ "modernc.org/sqlite" // pure-Go SQLite driver (also used by respcache)

	"github.com/chexpercept/chexpercept/internal/appdb"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/respcache"
)

// MemoFile is the verification memo inside the cache directory.
const MemoFile = "verified.sqlite"

// checkerVersion names what "verified" means: bump it when the image
// check changes (imagefile's decode path, or what verifyContent does), so
// that every remembered image is checked again. 1: imagefile.DecodePNG;
// 2: imagefile.VerifyPNG.
const checkerVersion = 2

// checker is the memo's validity key: the check's version, imagefile's
// limits and the Go release (whose image/png decodes). A row written
// under another checker is ignored, so raising or lowering a limit or
// upgrading the toolchain invalidates the memo.
func checker() string {
	return fmt.Sprintf("v%d png maxfile=%d maxside=%d maxpixels=%d maxdecoded=%d %s", checkerVersion,
		imagefile.MaxFileBytes, imagefile.MaxSide, imagefile.MaxPixels, imagefile.MaxDecodedBytes, runtime.Version())
}

// memo remembers, across runs, the content hashes (SHA-256 of the file
// bytes) of images that decoded: a later run over the same files only
// hashes them (spec protocol.md §1). Only successes are remembered, so a
// bad image is always decoded again and its error is always current.
//
// It is a SQLite database in WAL mode with a busy timeout, shared by
// concurrent runs (the shards of a Slurm array). It never fails a run:
// the first error is logged once and the memo turns itself off, so every
// image is then decoded. A nil *memo is a memo that knows nothing.
type memo struct {
	db      *sql.DB
	path    string
	checker string
	log     io.Writer

	mu      sync.Mutex
	pending []string  // hashes verified but not yet written
	since   time.Time // when the oldest pending hash was added
	broken  bool
	now     func() time.Time
}

// A batch of new hashes is written when it holds memoBatch hashes or its
// oldest is memoFlushAge old, so a run killed with -9 loses at most about
// a second of verification.
const (
	memoBatch    = 128
	memoFlushAge = time.Second
)

// openMemo opens or creates dir/verified.sqlite; on failure it logs a
// warning and returns nil (no memo: every image is decoded).
func openMemo(dir string, log io.Writer) *memo {
	m, err := tryOpenMemo(dir)
	if err != nil {
		fmt.Fprintf(log, "warning: image verification memo: %v; every image is decoded this run\n", err)
		return nil
	}
	m.log = log
	return m
}

// memoTable is the memo's table; its columns are those every release
// wrote.
var memoTable = respcache.Table{
	Name:    "verified_images",
	Columns: []string{"sha256", "checker", "verified_at"},
	Create: `CREATE TABLE IF NOT EXISTS verified_images (
		sha256 TEXT NOT NULL,
		checker TEXT NOT NULL,
		verified_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
		PRIMARY KEY (sha256, checker)
	) WITHOUT ROWID`,
}

func tryOpenMemo(dir string) (*memo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, MemoFile)
	// SQLite would follow a link or block on a FIFO; OpenDB uses only
	// regular files (or none yet), and refuses a database that is not a
	// memo (another application's, named by mistake), leaving it as it was.
	db, err := respcache.OpenDB(path, memoTable)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &memo{db: db, path: path, checker: checker(), now: time.Now}, nil
}

// known reports whether sha was verified by an earlier run (or an
// earlier batch of this one) under the current checker.
func (m *memo) known(sha string) bool {
	if m == nil || m.off() {
		return false
	}
	var one int
	err := m.db.QueryRow(`SELECT 1 FROM verified_images WHERE sha256 = ? AND checker = ?`, sha, m.checker).Scan(&one)
	switch {
	case err == nil:
		return true
	case errors.Is(err, sql.ErrNoRows):
		return false
	}
	m.fail(fmt.Errorf("lookup: %w", err))
	return false
}

// add remembers that sha decoded; hashes are written in batches.
func (m *memo) add(sha string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	if m.broken {
		m.mu.Unlock()
		return
	}
	now := m.now()
	if len(m.pending) == 0 {
		m.since = now
	}
	m.pending = append(m.pending, sha)
	var batch []string
	if len(m.pending) >= memoBatch || now.Sub(m.since) >= memoFlushAge {
		batch, m.pending = m.pending, nil
	}
	m.mu.Unlock()
	if batch != nil {
		m.write(batch)
	}
}

// write stores batch in one transaction.
func (m *memo) write(batch []string) {
	err := func() error {
		tx, err := m.db.Begin()
		if err != nil {
			return err
		}
		defer tx.Rollback()
		st, err := tx.Prepare(`INSERT OR REPLACE INTO verified_images (sha256, checker) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, sha := range batch {
			if _, err := st.Exec(sha, m.checker); err != nil {
				return err
			}
		}
		return tx.Commit()
	}()
	if err != nil {
		m.fail(fmt.Errorf("store: %w", err))
	}
}

func (m *memo) off() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.broken
}

// fail turns the memo off after its first error, saying so once.
func (m *memo) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.broken {
		return
	}
	m.broken = true
	m.pending = nil
	fmt.Fprintf(m.log, "warning: image verification memo %s: %v; images are decoded without it for the rest of this run\n", m.path, appdb.Explain(m.path, err))
}

// close writes what is pending and closes the database.
func (m *memo) close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	batch := m.pending
	m.pending = nil
	broken := m.broken
	m.mu.Unlock()
	if !broken && len(batch) > 0 {
		m.write(batch)
	}
	m.db.Close()
}
