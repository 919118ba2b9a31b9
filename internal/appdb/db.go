package appdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// readConns bounds the read pool: enough for the server's cores, each
// connection with its own page cache.
const readConns = 8

// busyRetry bounds how long a write waits for another process's lock
// (a `review import` beside the server) before it fails.
const busyRetry = 30 * time.Second

// DB is an open database with one writer path. Every write goes through
// Tx (or ExecContext), which runs it on one connection, so the server's
// writes queue in the process, in order, instead of contending for
// SQLite's write lock (where the losers wait in SQLite's busy handler and
// fail after its timeout); each is a short transaction that takes the
// lock at once (BEGIN IMMEDIATE). Reads go through a small pool that in
// WAL mode never waits for a write. A write that still finds the file
// locked by another process is retried, never answered as an error.
//
// Writes are committed in groups: the transactions waiting when the
// writer is free run together, each in its own savepoint (one that fails
// is rolled back alone), under one commit, so that many writers at once
// cost one disk sync, not one each.
type DB struct {
	w *sql.DB // one connection: every write (the readers' pool when read-only)
	r *sql.DB // reads (query_only)

	readOnly    bool
	start, stop sync.Once
	reqs        chan *writeReq
	quit        chan struct{}
	wg          sync.WaitGroup
}

// maxGroup bounds the transactions committed together.
const maxGroup = 64

// writeReq is one transaction waiting for the writer.
type writeReq struct {
	ctx  context.Context
	f    func(*sql.Tx) error
	done chan error
}

// openDSN opens the writer and the readers on dsn (dsn's form); with
// readOnly one pool on dsn, which must then be readOnlyDSN's, serves the
// reads, and every write fails.
func openDSN(dsn string, readOnly bool) (*DB, error) {
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	if readOnly {
		w.SetMaxOpenConns(readConns)
		return &DB{w: w, r: w, readOnly: true, reqs: make(chan *writeReq), quit: make(chan struct{})}, nil
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// Readers take no lock at BEGIN: an immediate one would contend
	// with the writer.
	r, err := sql.Open("sqlite", strings.Replace(dsn, "&_txlock=immediate", "", 1)+"&_pragma=query_only(1)")
	if err != nil {
		_ = w.Close() // nothing was opened through it yet
		return nil, err
	}
	r.SetMaxOpenConns(readConns)
	r.SetMaxIdleConns(readConns)
	return &DB{w: w, r: r, reqs: make(chan *writeReq), quit: make(chan struct{})}, nil
}

// Close stops the writer and closes both pools. The close of a database
// written to checkpoints its log: its error is the caller's to report.
func (d *DB) Close() error {
	d.stop.Do(func() { close(d.quit) })
	d.wg.Wait()
	err := d.w.Close()
	if d.r != d.w {
		err = errors.Join(err, d.r.Close())
	}
	return err
}

// Busy reports whether err is SQLite's "database is locked" (SQLITE_BUSY
// or SQLITE_LOCKED, extended codes included).
func Busy(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	c := e.Code() & 0xff
	return c == 5 || c == 6
}

// retry runs f until it returns anything but a busy error, backing off
// from 1 ms up to 50 ms, for at most busyRetry or until ctx ends.
func retry(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(busyRetry)
	wait := time.Millisecond
	for {
		err := f()
		if !Busy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (while the database was locked by another process)", ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// ExecContext runs one writing statement on the writer (as Tx).
func (d *DB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := d.Tx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = tx.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// Tx runs f in a transaction on the writer and returns once it is
// committed (with others waiting at the same time: see DB); an error from
// f rolls back only what f did. f must only use tx, and must not call Tx.
func (d *DB) Tx(ctx context.Context, f func(*sql.Tx) error) error {
	if d.readOnly {
		return ErrReadOnly
	}
	d.start.Do(func() {
		d.wg.Add(1)
		go d.writer()
	})
	req := &writeReq{ctx: ctx, f: f, done: make(chan error, 1)}
	select {
	case d.reqs <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-d.quit:
		return errors.New("the database is closed")
	}
	return <-req.done
}

// writer runs the waiting transactions in groups until Close.
func (d *DB) writer() {
	defer d.wg.Done()
	for {
		var group []*writeReq
		select {
		case r := <-d.reqs:
			group = append(group, r)
		case <-d.quit:
			return
		}
	more:
		for len(group) < maxGroup {
			select {
			case r := <-d.reqs:
				group = append(group, r)
			default:
				break more
			}
		}
		d.commit(group)
	}
}

// commit runs a group in one immediate transaction, each member in a
// savepoint, and tells each member its outcome. The transaction belongs
// to no one request: each member's context is checked before it runs
// (runSaved), and the commit itself is not abandoned half-way because
// one of the requests waiting on it ended.
func (d *DB) commit(group []*writeReq) {
	errs := make([]error, len(group))
	groupCtx := context.Background()
	err := retry(groupCtx, func() error {
		tx, err := d.w.BeginTx(groupCtx, nil)
		if err != nil {
			return err
		}
		for i, r := range group {
			errs[i] = runSaved(tx, r)
		}
		return tx.Commit()
	})
	for i, r := range group {
		if errs[i] == nil {
			errs[i] = err
		}
		r.done <- errs[i]
	}
}

// runSaved runs one member of a group inside a savepoint, rolled back
// when it fails.
func runSaved(tx *sql.Tx, r *writeReq) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if _, err := tx.Exec(`SAVEPOINT member`); err != nil {
		return err
	}
	if err := r.f(tx); err != nil {
		if _, rerr := tx.Exec(`ROLLBACK TO member`); rerr != nil {
			return errors.Join(err, rerr)
		}
		// The savepoint is rolled back; releasing it only ends it, and
		// a failure to do so is reported with the member's own.
		if _, rerr := tx.Exec(`RELEASE member`); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	_, err := tx.Exec(`RELEASE member`)
	return err
}

// ErrReadOnly is the error of a write to a database opened read-only.
var ErrReadOnly = errors.New("the database is open read-only")

// ReadTx runs f in a read-only transaction on the readers: every query of
// f sees the same snapshot of the database.
func (d *DB) ReadTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := d.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // read-only: nothing to keep or lose
	return f(tx)
}

// QueryContext runs a query on the readers.
func (d *DB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return d.r.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a one-row query on the readers.
func (d *DB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return d.r.QueryRowContext(ctx, query, args...)
}
