package appdb

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// codeErr is an error with an SQLite result code, as *sqlite.Error has.
type codeErr int

func (c codeErr) Error() string { return fmt.Sprintf("sqlite error (%d)", int(c)) }
func (c codeErr) Code() int     { return int(c) }

// TestExplain: a full disk under an SQLite file is said in words (no space
// left on device; the -shm file that could not grow), and the result
// still unwraps to SQLite's error; other errors pass as they are.
func TestExplain(t *testing.T) {
	const path = "/data/cache/responses.sqlite"
	for _, tc := range []struct {
		name  string
		err   error
		free  uint64
		known bool
		want  string // "" : err is returned as it is
	}{
		{"SQLITE_FULL", codeErr(13), 4 << 20, true, "no space left on device: the disk holding /data/cache is full (sqlite error (13))"},
		{"SHMSIZE, disk full", codeErr(4874), 0, true, "no space left on device: the disk holding /data/cache is full (sqlite error (4874))"},
		{"SHMSIZE, little room", codeErr(4874), 20 << 10, true, "the disk could not grow the shared-memory file responses.sqlite-shm, likely because it is full; 20480 bytes free there (sqlite error (4874))"},
		{"SHMSIZE, free space unknown", codeErr(4874), 0, false, "the disk could not grow the shared-memory file responses.sqlite-shm, likely because it is full (sqlite error (4874))"},
		{"IOERR_WRITE, disk full", codeErr(10 | 3<<8), 0, true, "no space left on device: the disk holding /data/cache is full (sqlite error (778))"},
		{"IOERR_WRITE, nearly full", codeErr(10 | 3<<8), 8192, true, "sqlite error (778): the disk holding /data/cache is nearly full (8192 bytes free), the likely cause"},
		{"IOERR_WRITE, room left", codeErr(10 | 3<<8), 1 << 30, true, ""},
		{"wrapped", fmt.Errorf("lookup: %w", codeErr(13)), 0, true, "no space left on device: the disk holding /data/cache is full (lookup: sqlite error (13))"},
		{"SQLITE_BUSY", codeErr(5), 0, true, ""},
		{"not SQLite's", errors.New("plain"), 0, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			free := func(dir string) (uint64, bool) {
				if dir != filepath.Dir(path) {
					t.Errorf("free space asked of %s", dir)
				}
				return tc.free, tc.known
			}
			got := explain(path, tc.err, free)
			if tc.want == "" {
				if got != tc.err {
					t.Errorf("Explain = %v, want the error as it is", got)
				}
				return
			}
			if got.Error() != tc.want {
				t.Errorf("Explain =\n  %s\nwant\n  %s", got, tc.want)
			}
			if !errors.Is(got, tc.err) && !errors.Is(got, errors.Unwrap(tc.err)) {
				t.Errorf("Explain's error does not unwrap to %v", tc.err)
			}
			if again := explain(path, got, free); again != got {
				t.Errorf("explained twice: %v", again)
			}
		})
	}
	if Explain(path, nil) != nil {
		t.Error("Explain(nil) is not nil")
	}
}

// TestExplainRealFull: SQLite's own "database or disk is full" (a page
// limit reached) reads as no space left, and Busy and IsForeign still see
// the SQLite error through it.
func TestExplainRealFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.sqlite")
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=max_page_count(3)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE t (x); CREATE TABLE u (x); CREATE TABLE v (x); INSERT INTO v VALUES (zeroblob(100000))`)
	if err == nil {
		t.Fatal("no error from a full database")
	}
	got := Explain(path, err)
	if !strings.HasPrefix(got.Error(), "no space left on device") || IsForeign(got) || Busy(got) {
		t.Errorf("Explain = %v (foreign %v, busy %v)", got, IsForeign(got), Busy(got))
	}
}
