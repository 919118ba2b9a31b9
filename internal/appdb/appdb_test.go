package appdb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

const testSchema = `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema', 'test/1');`

func TestCreate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "app.sqlite")
	db, err := Create(p, "test db", testSchema, "FULL")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSchema(db.R, "test/1"); err != nil {
		t.Errorf("own schema: %v", err)
	}
	if err := CheckSchema(db.R, "other/1"); err == nil || !strings.Contains(err.Error(), `schema "test/1"`) {
		t.Errorf("other schema: %v", err)
	}
	db.Close()
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	if _, err := Create(p, "test db", testSchema, "FULL"); err == nil || !strings.Contains(err.Error(), "already exists (refusing to overwrite it)") {
		t.Errorf("second create: %v", err)
	}
	for _, suffix := range SideFiles {
		q := filepath.Join(dir, "new"+suffix[1:]+".sqlite")
		foreign := []byte("not ours")
		if err := os.WriteFile(q+suffix, foreign, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Create(q, "test db", testSchema, "NORMAL"); err == nil || !strings.Contains(err.Error(), "already exists beside it") {
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

func TestDSN(t *testing.T) {
	d, err := DSN("a b/x?.sqlite", "rw", "FULL")
	if err != nil || !strings.Contains(d, "a%20b/x%3F.sqlite?mode=rw&") || !strings.Contains(d, "synchronous(FULL)") {
		t.Errorf("DSN: %q, %v", d, err)
	}
	ro, _ := ReadOnlyDSN("x.sqlite", true)
	if !strings.Contains(ro, "mode=ro&") || !strings.HasSuffix(ro, "&immutable=1") || strings.Contains(ro, "journal_mode") {
		t.Errorf("read-only DSN: %q", ro)
	}
}
