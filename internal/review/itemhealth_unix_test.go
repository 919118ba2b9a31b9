//go:build unix

package review

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A FIFO given as flagged_items.csv is refused at once, not read forever.
func TestReadFlaggedFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "flagged_items.csv")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip(err)
	}
	if _, err := ReadFlagged(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FIFO: %v", err)
	}
}
