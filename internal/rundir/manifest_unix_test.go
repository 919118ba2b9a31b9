//go:build unix

package rundir_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/rundir"
)

// A FIFO in place of manifest.json is refused at once instead of blocking
// the reader until something writes to it.
func TestReadManifestFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, rundir.ManifestFile), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, err := rundir.ReadManifest(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("error %v, want a not-a-regular-file error", err)
	}
}
