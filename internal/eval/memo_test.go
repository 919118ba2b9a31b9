package eval

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/appdb/appdbtest"
)

// TestMemoRefusesForeignDatabase: another application's SQLite file at
// the memo's name is not used (a warning naming it; every image is
// decoded) and keeps every byte, with no side file left beside it.
func TestMemoRefusesForeignDatabase(t *testing.T) {
	appdbtest.ForeignRefused(t, func(path string) error {
		dir := filepath.Dir(path)
		memoPath := filepath.Join(dir, MemoFile)
		if err := os.Rename(path, memoPath); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(memoPath, path)
		var log bytes.Buffer
		if m := openMemo(dir, &log); m != nil {
			m.close()
			return nil
		}
		if strings.Count(log.String(), "\n") != 1 || !strings.Contains(log.String(), memoPath) {
			t.Errorf("warning %q: want one line naming %s", log.String(), memoPath)
		}
		return errors.New(log.String())
	}, "not a chexpercept cache database: it holds table t")
}
