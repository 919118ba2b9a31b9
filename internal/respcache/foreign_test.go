package respcache

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/appdb"
	"github.com/chexpercept/chexpercept/internal/appdb/appdbtest"
)

// TestOpenRefusesForeignDatabase: a SQLite file at the cache's name that
// is not a response cache (another application's, in rollback-journal or
// WAL mode, or one holding a table of the cache's name with other columns)
// is refused with an error naming the file, and keeps every byte, with no
// side file left beside it.
func TestOpenRefusesForeignDatabase(t *testing.T) {
	t.Run("rollback journal", func(t *testing.T) {
		appdbtest.ForeignRefused(t, func(path string) error {
			dir := filepath.Dir(path)
			if err := os.Rename(path, filepath.Join(dir, FileName)); err != nil {
				t.Fatal(err)
			}
			defer os.Rename(filepath.Join(dir, FileName), path)
			c, err := Open(dir)
			if err == nil {
				c.Close()
				return nil
			}
			if !appdb.IsForeign(err) {
				t.Errorf("error %v is not a refusal of a foreign file", err)
			}
			return err
		}, FileName+": not a chexpercept cache database: it holds table t")
	})
	for _, tc := range []struct{ name, schema, want string }{
		{"WAL, several tables", `CREATE TABLE sessions (id TEXT); CREATE TABLE turns (n INT); INSERT INTO turns VALUES (1)`,
			"it holds table sessions, table turns"},
		{"WAL, the cache's table among others", `CREATE TABLE responses (key TEXT PRIMARY KEY, entry TEXT NOT NULL, created_at TEXT NOT NULL); CREATE TABLE aid (x)`,
			"it holds table aid, table responses"},
		{"a table of the cache's name with other columns", `CREATE TABLE responses (key TEXT PRIMARY KEY, body BLOB)`,
			"table responses has columns (key, body), not (key, entry, created_at)"},
		{"a view", `CREATE VIEW responses AS SELECT 1 AS key, 2 AS entry, 3 AS created_at`,
			"it holds view responses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=journal_mode(WAL)")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(tc.schema); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Open(dir)
			if err == nil {
				c.Close()
				t.Fatalf("Open accepted a foreign database")
			}
			if !appdb.IsForeign(err) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Open = %v, want one line naming %s and %q", err, path, tc.want)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("the foreign database changed")
			}
			for _, sfx := range []string{"-wal", "-shm", "-journal"} {
				if _, err := os.Lstat(path + sfx); err == nil {
					t.Errorf("%s left beside the foreign database", FileName+sfx)
				}
			}
		})
	}
}

// TestOpenKeepsOwnCaches: a cache made with the table as every release
// created it (WAL or not, with entries), an empty file and an empty
// database are opened and used; the entries stay.
func TestOpenKeepsOwnCaches(t *testing.T) {
	for _, tc := range []struct {
		name, pragma, schema string
		entries              int
	}{
		{"a cache as written so far", "journal_mode(WAL)", dbSpec().Schema + `; INSERT INTO responses (key, entry) VALUES ('k', '{"text":"yes"}')`, 1},
		{"rollback journal", "journal_mode(DELETE)", dbSpec().Schema, 0},
		{"an empty database", "user_version(0)", ``, 0},
		{"an empty file", "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if tc.pragma == "" {
				if err := os.WriteFile(path, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma="+tc.pragma)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(tc.schema + `;`); err != nil && tc.schema != "" {
					t.Fatal(err)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Open(dir)
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			defer c.Close()
			ctx := context.Background()
			if n, err := c.Len(ctx); err != nil || n != tc.entries {
				t.Errorf("Len = %d, %v; want %d", n, err, tc.entries)
			}
			if err := c.Put(ctx, "k2", Entry{Text: "no"}); err != nil {
				t.Fatal(err)
			}
			if e, ok, err := c.Get(ctx, "k2"); err != nil || !ok || e.Text != "no" {
				t.Errorf("Get = %+v, %v, %v", e, ok, err)
			}
		})
	}
}
