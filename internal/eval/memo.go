package eval

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/chexpercept/chexpercept/internal/appdb"
	"github.com/chexpercept/chexpercept/internal/imagefile"
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
	db      *appdb.DB
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
		fmt.Fprintf(log, "warning: %v; every image is decoded this run\n", err)
		return nil
	}
	m.log = log
	return m
}

// memoSpec is the memo's database: a cache (appdb) holding the one table
// verified_images, with the columns every release wrote. A file that is
// not a memo (another application's, named by mistake) is refused and
// left as it was; the memo, its side files never opened through a link
// or as a FIFO, is shared by concurrent runs.
func memoSpec() appdb.Spec {
	return appdb.Spec{Kind: "image verification memo", Name: "chexpercept cache database",
		Cache: &appdb.Table{Name: "verified_images", Columns: []string{"sha256", "checker", "verified_at"}},
		Schema: `CREATE TABLE IF NOT EXISTS verified_images (
		sha256 TEXT NOT NULL,
		checker TEXT NOT NULL,
		verified_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
		PRIMARY KEY (sha256, checker)
	) WITHOUT ROWID`,
		Synchronous: "NORMAL"}
}

func tryOpenMemo(dir string) (*memo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("image verification memo: %w", err)
	}
	path := filepath.Join(dir, MemoFile)
	db, err := appdb.Open(path, memoSpec(), appdb.ReadWrite)
	if err != nil {
		return nil, err
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
	err := m.db.QueryRowContext(context.Background(), `SELECT 1 FROM verified_images WHERE sha256 = ? AND checker = ?`, sha, m.checker).Scan(&one)
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
	ctx := context.Background()
	err := m.db.Tx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO verified_images (sha256, checker) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		defer func() { _ = st.Close() }() // the transaction's outcome is what counts
		for _, sha := range batch {
			if _, err := st.ExecContext(ctx, sha, m.checker); err != nil {
				return err
			}
		}
		return nil
	})
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
	// Closing checkpoints the log; a failure loses nothing (the log
	// holds what was written, for the next run's open) but is said.
	if err := m.db.Close(); err != nil && !broken {
		fmt.Fprintf(m.log, "warning: image verification memo %s: close: %v\n", m.path, appdb.Explain(m.path, err))
	}
}
