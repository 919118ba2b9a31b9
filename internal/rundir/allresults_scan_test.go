package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// ScanAllResults refuses an entry longer than MaxAllResultsEntryBytes
// (after giving the entries before it) and a file over
// MaxAllResultsBytes before reading it.
func TestScanAllResultsCaps(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, "long.json")
	body := `{"k1": {"a": 1}, "k2": {"s": "` + strings.Repeat("x", MaxAllResultsEntryBytes) + `"}}`
	if err := os.WriteFile(long, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var keys []string
	err := ScanAllResults(long, func(k string, _ *ojson.Value) error { keys = append(keys, k); return nil })
	if !errors.Is(err, ojson.ErrMemberTooLarge) || !strings.Contains(err.Error(), `member "k2": value longer than 67108864 bytes`) ||
		strings.Join(keys, ",") != "k1" {
		t.Errorf("long entry: keys %q, err %v", keys, err)
	}

	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxAllResultsBytes+1); err != nil {
		t.Fatal(err)
	}
	err = ScanAllResults(big, func(string, *ojson.Value) error { return nil })
	if !errors.Is(err, safefile.ErrTooLarge) || !strings.Contains(err.Error(), big) {
		t.Errorf("a file over the cap: %v", err)
	}
}
