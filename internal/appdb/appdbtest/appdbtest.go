// Package appdbtest checks how a browser app's store treats a SQLite file
// that is not its own. Imported by tests only.
package appdbtest

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ForeignRefused writes another SQLite database (rollback-journal mode,
// so a WAL switch would show in its header) in a new folder, calls open
// on it and fails the test unless open refuses it with an error
// containing want and the file keeps every byte, with no -wal or -shm
// file left beside it.
func ForeignRefused(t testing.TB, open func(path string) error, want string) {
	t.Helper()
	foreignRefused(t, open, want, "DELETE")
}

// ForeignWALRefused is ForeignRefused with the other database in WAL mode,
// closed (no -wal or -shm file beside it): a connection that only reads
// it makes those files, and open must remove them again when it refuses
// the database.
func ForeignWALRefused(t testing.TB, open func(path string) error, want string) {
	t.Helper()
	foreignRefused(t, open, want, "WAL")
}

func foreignRefused(t testing.TB, open func(path string) error, want, journal string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other.sqlite")
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=journal_mode("+journal+")")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t(x); INSERT INTO t VALUES(1)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := open(path); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("opening a foreign database: %v, want an error containing %q", err, want)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the foreign database changed (header bytes 18-19 %x → %x)", before[18:20], after[18:20])
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Lstat(path + suffix); err == nil {
			t.Errorf("%s%s was left beside the foreign database", filepath.Base(path), suffix)
		}
	}
}
