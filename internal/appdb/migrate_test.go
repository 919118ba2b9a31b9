package appdb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// upgrades are two migrations of testSchema that count their runs: the
// first adds a column unless it is there, the second a table.
type upgrades struct{ runs [2]int }

func (u *upgrades) migrations() []Migration {
	return []Migration{
		{Name: "adding meta's note column", Up: func(ctx context.Context, tx *sql.Tx) error {
			u.runs[0]++
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('meta') WHERE name = 'note'`).Scan(&n); err != nil || n == 1 {
				return err
			}
			_, err := tx.ExecContext(ctx, `ALTER TABLE meta ADD COLUMN note TEXT`)
			return err
		}},
		{Name: "adding the notes table", Up: func(ctx context.Context, tx *sql.Tx) error {
			u.runs[1]++
			_, err := tx.ExecContext(ctx, `CREATE TABLE notes (n TEXT)`)
			return err
		}},
	}
}

// createdAt makes a published database of testSchema at the version of
// the migrations given, and returns its path.
func createdAt(t *testing.T, migrations ...Migration) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "app.sqlite")
	c, err := Create(nil, p, testSpec(testSchema, "FULL", migrations...))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(); err != nil {
		t.Fatal(err)
	}
	return p
}

// userVersion reads the version a file records.
func userVersion(t *testing.T, db *DB) int {
	t.Helper()
	var v int
	if err := db.QueryRowContext(context.Background(), `PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOpenUpgrades: a file of version 0 (what releases before versions
// made) is brought to this release's version by its first read-write
// open, each migration run once, and the version recorded; later opens
// run none. A file of version 1 runs only the second. Create records the
// version it made.
func TestOpenUpgrades(t *testing.T) {
	ctx := context.Background()
	var u upgrades
	p := createdAt(t)
	for i := range 2 {
		db, err := Open(p, testSpec(testSchema, "FULL", u.migrations()...), ReadWrite)
		if err != nil {
			t.Fatalf("open %d: %v", i+1, err)
		}
		if v := userVersion(t, db); v != 2 {
			t.Errorf("open %d: version %d, want 2", i+1, v)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO notes VALUES ('x')`); err != nil {
			t.Errorf("open %d: the upgraded schema: %v", i+1, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if u.runs != [2]int{1, 1} {
			t.Errorf("after open %d the migrations ran %v times, want once each", i+1, u.runs)
		}
	}

	u = upgrades{}
	p = createdAt(t, u.migrations()[:1]...)
	db, err := Open(p, testSpec(testSchema, "FULL", u.migrations()...), ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v := userVersion(t, db); v != 2 || u.runs != [2]int{1, 1} {
		t.Errorf("from version 1: version %d, runs %v; want 2 and the second migration only (the first ran at Create)", v, u.runs)
	}
}

// TestUpgradeFailureChangesNothing: a migration that fails leaves the
// file at its version with none of the upgrade in it, and the open says
// which step failed.
func TestUpgradeFailureChangesNothing(t *testing.T) {
	var u upgrades
	p := createdAt(t)
	ms := u.migrations()
	ms[1].Up = func(ctx context.Context, tx *sql.Tx) error { return errors.New("no room") }
	if _, err := Open(p, testSpec(testSchema, "FULL", ms...), ReadWrite); err == nil || err.Error() != "test db "+p+": adding the notes table: no room" {
		t.Fatalf("open with a failing migration: %v", err)
	}
	db, err := Open(p, testSpec(testSchema, "FULL"), ReadOnly)
	if err != nil {
		t.Fatalf("the file is no longer version 0: %v", err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(context.Background(), `SELECT count(*) FROM pragma_table_info('meta') WHERE name = 'note'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the first migration's column is in the file (%d, %v)", n, err)
	}
}

// TestNewerVersionRefused: a file made by a later release (a version this
// release does not know) is refused with a sentence saying so, read-write
// or read-only, and is left byte for byte, with no side file.
func TestNewerVersionRefused(t *testing.T) {
	var u upgrades
	p := createdAt(t, u.migrations()...)
	before, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{ReadWrite, ReadOnly} {
		_, err := Open(p, testSpec(testSchema, "FULL", u.migrations()[:1]...), mode)
		want := "test db " + p + ": made by a newer release of chexpercept (its schema is version 2; this release knows versions up to 1); open it with that release or a later one"
		if err == nil || err.Error() != want {
			t.Errorf("mode %d: %v\nwant %s", mode, err, want)
		}
		if IsForeign(err) {
			t.Errorf("mode %d: a newer version is said to be another application's file", mode)
		}
	}
	if after, err := os.ReadFile(p); err != nil || !bytes.Equal(before, after) {
		t.Errorf("the newer file changed (%v)", err)
	}
	if names := dirNames(t, filepath.Dir(p)); len(names) != 1 {
		t.Errorf("the folder holds %q", names)
	}
}

// TestReadOnlyOpenOfAnOlderVersion: a read-only open of a file of an
// earlier version writes nothing and says how to upgrade it; once a
// read-write open has upgraded it, it opens read-only, and every write
// through that open fails.
func TestReadOnlyOpenOfAnOlderVersion(t *testing.T) {
	var u upgrades
	p := createdAt(t)
	before, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(testSchema, "FULL", u.migrations()...)
	_, err = Open(p, spec, ReadOnly)
	if want := "made by an earlier release (its schema is version 0; this release's is 2), and a read-only open cannot upgrade it; open it once for writing to upgrade it"; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("read-only open of version 0: %v", err)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(before, after) || u.runs != [2]int{} {
		t.Fatalf("the read-only open changed the file (migrations run %v)", u.runs)
	}
	db, err := Open(p, spec, ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(p, spec, ReadOnly)
	if err != nil {
		t.Fatalf("read-only open after the upgrade: %v", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), `INSERT INTO notes VALUES ('x')`); !errors.Is(err, ErrReadOnly) {
		t.Errorf("a write through a read-only open: %v", err)
	}
}

// TestOpenRefusesAnotherAppsDatabase: an app database of another schema
// id, read-write or read-only, is "not a …" database.
func TestOpenRefusesAnotherAppsDatabase(t *testing.T) {
	p := createdAt(t)
	other := Spec{Kind: "other db", Name: "other database", SchemaID: "other/1", Synchronous: "FULL"}
	for _, mode := range []Mode{ReadWrite, ReadOnly} {
		if _, err := Open(p, other, mode); err == nil || err.Error() != "other db "+p+`: not a other database (schema "test/1")` || !IsForeign(err) {
			t.Errorf("mode %d: %v", mode, err)
		}
	}
}

// cacheSpec is a cache of one table (k, v).
var cacheSpec = Spec{Kind: "test cache", Name: "test cache database", Cache: &Table{Name: "kv", Columns: []string{"k", "v"}},
	Schema: `CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT)`, Synchronous: "NORMAL"}

// TestCache: a cache is created in place where it is missing, opened
// again with what it holds, refused read-only, and another cache's file
// (or one of a newer version) is refused and left as it was.
func TestCache(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "kv.sqlite")
	if _, err := Open(p, cacheSpec, ReadOnly); err == nil {
		t.Error("a cache opened read-only")
	}
	for i := range 2 {
		db, err := Open(p, cacheSpec, ReadWrite)
		if err != nil {
			t.Fatalf("open %d: %v", i+1, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO kv VALUES (?, 'v')`, i); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	other := cacheSpec
	other.Cache = &Table{Name: "kv", Columns: []string{"k", "value"}}
	before, _ := os.ReadFile(p)
	want := "test cache " + p + ": not a test cache database: table kv has columns (k, v), not (k, value); refusing to write into it (move it away, or choose another cache directory)"
	if _, err := Open(p, other, ReadWrite); err == nil || err.Error() != want || !IsForeign(err) {
		t.Errorf("another cache's file: %v\nwant %s", err, want)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
		t.Error("the refused cache changed")
	}
	newer := cacheSpec
	newer.Migrations = []Migration{{Name: "nothing", Up: func(context.Context, *sql.Tx) error { return nil }}}
	db, err := Open(p, newer, ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ = os.ReadFile(p)
	if _, err := Open(p, cacheSpec, ReadWrite); err == nil || !strings.Contains(err.Error(), "made by a newer release") {
		t.Errorf("a newer cache: %v", err)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
		t.Error("the refused cache changed")
	}
}
