package appdb

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestConcurrentWriters: many goroutines writing and reading at once
// (as the reading app's answerers do) never see "database is locked",
// and every write lands once.
func TestConcurrentWriters(t *testing.T) {
	const workers, each = 60, 20
	for _, tc := range []struct {
		name string
		tx   bool
	}{{"statements", false}, {"transactions", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Create(nil, filepath.Join(t.TempDir(), "w.sqlite"), testSpec(testSchema+`CREATE TABLE t (w INTEGER, i INTEGER, PRIMARY KEY (w, i));`, "FULL"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Abandon()
			db := c.DB()
			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make(chan error, workers*each)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						var n int
						var err error
						if err := db.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE w = ?`, w).Scan(&n); err != nil {
							errs <- fmt.Errorf("read: %w", err)
						} else if n != i {
							errs <- fmt.Errorf("worker %d sees %d rows before write %d", w, n, i)
						}
						if tc.tx {
							err = db.Tx(ctx, func(tx *sql.Tx) error {
								if _, err := tx.Exec(`INSERT INTO t VALUES(?, ?)`, w, i); err != nil {
									return err
								}
								_, err := tx.Exec(`UPDATE meta SET value = value WHERE key = 'schema'`)
								return err
							})
						} else {
							_, err = db.ExecContext(ctx, `INSERT INTO t VALUES(?, ?)`, w, i)
						}
						if err != nil {
							errs <- fmt.Errorf("write: %w", err)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != workers*each {
				t.Errorf("%d rows (%v), want %d", n, err, workers*each)
			}
		})
	}
}

// TestBusyIsRetried: a write that finds the file locked by another
// connection (another process) waits for it instead of failing.
func TestBusyIsRetried(t *testing.T) {
	p := filepath.Join(t.TempDir(), "b.sqlite")
	c, err := Create(nil, p, testSpec(testSchema, "NORMAL"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abandon()
	db := c.DB()
	d, err := dsn(c.temp, "rw", "NORMAL")
	if err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", d+"&_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otx, err := other.Begin() // immediate: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(context.Background(), `INSERT INTO meta VALUES('k', 'v')`)
		done <- err
	}()
	if _, err := otx.Exec(`INSERT INTO meta VALUES('o', 'v')`); err != nil {
		t.Fatal(err)
	}
	if err := otx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("write while another connection held the lock: %v", err)
	}
}

// TestFailedWriteRollsBackAlone: writers committed together where some
// fail: what a failed one wrote is gone, the others' writes stay.
func TestFailedWriteRollsBackAlone(t *testing.T) {
	c, err := Create(nil, filepath.Join(t.TempDir(), "g.sqlite"), testSpec(testSchema+`CREATE TABLE t (i INTEGER PRIMARY KEY);`, "NORMAL"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abandon()
	db := c.DB()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Tx(ctx, func(tx *sql.Tx) error {
				if _, err := tx.Exec(`INSERT INTO t VALUES(?)`, i); err != nil {
					return err
				}
				if i%2 == 1 {
					return fmt.Errorf("member %d fails", i)
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i%2 == 1) {
			t.Errorf("member %d: %v", i, err)
		}
	}
	var n, odd int
	if err := db.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE i % 2 = 1) FROM t`).Scan(&n, &odd); err != nil || n != 20 || odd != 0 {
		t.Errorf("%d rows, %d of failed members (%v); want 20 and 0", n, odd, err)
	}
	// A write after Close is refused, not left waiting.
	db.Close()
	if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES(100)`); err == nil {
		t.Error("write after Close succeeded")
	}
}
