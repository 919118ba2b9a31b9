//go:build unix

package source

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCheckInputsFIFO: a FIFO in place of an image or mask is reported
// without ever being opened (an open would block: nobody writes to it).
func TestCheckInputsFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "image.jpg")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("cannot make a FIFO:", err)
	}
	err := CheckInputs(context.Background(), []*Case{{CaseID: "a_negative_0", Lesion: "edema", Label: "negative", Image: fifo}})
	if err == nil || !strings.Contains(err.Error(), "not a regular file (named pipe)") {
		t.Fatalf("FIFO: %v", err)
	}
	if _, _, _, err := checkImageHeader(fifo); err == nil {
		t.Fatal("checkImageHeader accepted a FIFO")
	}
}
