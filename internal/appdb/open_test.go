package appdb

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	_ "modernc.org/sqlite"
)

const testSchema = `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema', 'test/1');`

// testSpec is an app database of schema id test/1.
func testSpec(schema, synchronous string, migrations ...Migration) Spec {
	return Spec{Kind: "test db", Name: "test database", SchemaID: "test/1", Schema: schema, Synchronous: synchronous, Migrations: migrations}
}

func TestCreate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "app.sqlite")
	db, err := Create(nil, p, testSpec(testSchema, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := checkSchema(ctx, db.DB().r, "test/1"); err != nil {
		t.Errorf("own schema: %v", err)
	}
	if err := checkSchema(ctx, db.DB().r, "other/1"); err == nil || !strings.Contains(err.Error(), `schema "test/1"`) {
		t.Errorf("other schema: %v", err)
	}
	if _, err := os.Lstat(p); err == nil {
		t.Errorf("the database is at its name before it is published")
	}
	if err := db.Publish(); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "app.sqlite" {
		t.Errorf("after Publish the folder holds %q, want app.sqlite only", names)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	if _, err := Create(nil, p, testSpec(testSchema, "FULL")); err == nil || !strings.Contains(err.Error(), "already exists (refusing to overwrite it)") {
		t.Errorf("second create: %v", err)
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		q := filepath.Join(dir, "new"+suffix[1:]+".sqlite")
		foreign := []byte("not ours")
		if err := os.WriteFile(q+suffix, foreign, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Create(nil, q, testSpec(testSchema, "NORMAL")); err == nil || !strings.Contains(err.Error(), "already exists beside it") {
			t.Errorf("%s beside: %v", suffix, err)
		}
		if got, _ := os.ReadFile(q + suffix); string(got) != string(foreign) {
			t.Errorf("%s changed", suffix)
		}
		if _, err := os.Lstat(q); err == nil {
			t.Errorf("%s: the database was created", suffix)
		}
	}
}

// TestCreateFailureLeavesNothing: a database whose creation fails part
// way (here its schema) is removed with its side files, so the rerun of
// the command that made it is not refused as "already exists".
func TestCreateFailureLeavesNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "app.sqlite")
	if _, err := Create(nil, p, testSpec(testSchema+"\nCREATE TABLE (", "FULL")); err == nil || !strings.Contains(err.Error(), "create schema") {
		t.Fatalf("create with a broken schema: %v", err)
	}
	if names := dirNames(t, filepath.Dir(p)); len(names) != 0 {
		t.Errorf("a failed create left %q", names)
	}
	db, err := Create(nil, p, testSpec(testSchema, "FULL"))
	if err != nil {
		t.Fatalf("create after a failed one: %v", err)
	}
	if err := db.Publish(); err != nil {
		t.Fatal(err)
	}
}

func TestDSN(t *testing.T) {
	d, err := dsn("a b/x?.sqlite", "rw", "FULL")
	if err != nil || !strings.Contains(d, "a%20b/x%3F.sqlite?mode=rw&") || !strings.Contains(d, "synchronous(FULL)") {
		t.Errorf("DSN: %q, %v", d, err)
	}
	ro, _ := readOnlyDSN("x.sqlite", true)
	if !strings.Contains(ro, "mode=ro&") || !strings.HasSuffix(ro, "&immutable=1") || strings.Contains(ro, "journal_mode") {
		t.Errorf("read-only DSN: %q", ro)
	}
}

// TestIsForeign: a schema check says "another file" for a file that is
// not this app's database, and never for a failure to read it, which
// says nothing about the file.
func TestIsForeign(t *testing.T) {
	dir := t.TempDir()
	open := func(name string, setup func(p string)) error {
		p := filepath.Join(dir, name)
		setup(p)
		d, err := readOnlyDSN(p, false)
		if err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", d)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return checkSchema(context.Background(), db, "test/1")
	}
	write := func(content string) func(string) {
		return func(p string) {
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sqliteWith := func(schema string) func(string) {
		return func(p string) {
			db, err := Create(nil, p, testSpec(schema, "FULL"))
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Publish(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name    string
		err     error
		foreign bool
	}{
		{"ours", open("ours.sqlite", sqliteWith(testSchema)), false},
		{"not SQLite", open("text.sqlite", write(strings.Repeat("not a database\n", 100))), true},
		{"no meta table", open("other.sqlite", sqliteWith(`CREATE TABLE t (x);`)), true},
		{"no schema row", open("norow.sqlite", sqliteWith(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);`)), true},
		{"another schema", open("review.sqlite", sqliteWith(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('schema', 'other/1');`)), true},
		{"disk I/O error", fmt.Errorf("read: %w", syscall.EIO), false},
		{"too many open files", &os.PathError{Op: "open", Path: "x", Err: syscall.EMFILE}, false},
	} {
		if tc.name == "ours" {
			if tc.err != nil {
				t.Fatalf("own database: %v", tc.err)
			}
			continue
		}
		if tc.err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		if got := IsForeign(tc.err); got != tc.foreign {
			t.Errorf("%s: IsForeign(%v) = %v, want %v", tc.name, tc.err, got, tc.foreign)
		}
	}
}

// TestRemoveNewSideFiles: after a failed open, the -wal and -shm the open
// made are removed when the log is empty; side files that were there
// before, or a log with content, are left alone.
func TestRemoveNewSideFiles(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before      bool // the side files existed before the open
		walContent  string
		wantRemoved bool
	}{
		{"made by the open, empty", false, "", true},
		{"made by the open, with frames", false, "frames", false},
		{"there before", true, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "app.sqlite")
			if tc.before {
				os.WriteFile(p+"-wal", nil, 0o600)
				os.WriteFile(p+"-shm", nil, 0o600)
			}
			absent := sideFilesAbsent(p)
			os.WriteFile(p+"-wal", []byte(tc.walContent), 0o600)
			os.WriteFile(p+"-shm", []byte("index"), 0o600)
			removeNewSideFiles(p, absent)
			_, werr := os.Lstat(p + "-wal")
			_, serr := os.Lstat(p + "-shm")
			if removed := werr != nil && serr != nil; removed != tc.wantRemoved {
				t.Errorf("removed %v (wal %v, shm %v), want %v", removed, werr, serr, tc.wantRemoved)
			}
		})
	}
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
