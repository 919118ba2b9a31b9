package source

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// TestTransientReadFailsTheCommand: a failure to open an input that says
// nothing about the file (out of descriptors, an I/O error …) is not a
// per-case failure, which would skip the case; a missing or foreign file
// is.
func TestTransientReadFailsTheCommand(t *testing.T) {
	img := filepath.Join(t.TempDir(), "cxr.png")
	if err := os.WriteFile(img, []byte("not read"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		errno     syscall.Errno
		transient bool
	}{
		{syscall.EMFILE, true},
		{syscall.ENFILE, true},
		{syscall.EIO, true},
		{syscall.EAGAIN, true},
		{syscall.EINTR, true},
		{syscall.ENOMEM, true},
		{syscall.ENOENT, false},
		{syscall.EACCES, false},
		{syscall.ELOOP, false},
	} {
		t.Run(tc.errno.Error(), func(t *testing.T) {
			openInput = func(path string, _ safefile.Links) (*os.File, error) {
				return nil, &fs.PathError{Op: "open", Path: path, Err: tc.errno}
			}
			t.Cleanup(func() { openInput = safefile.Open })
			_, err := ImageSHA256(&Case{Image: img})
			if err == nil {
				t.Fatal("no error")
			}
			var ce *frame.CaseError
			if got := errors.As(err, &ce); got == tc.transient {
				t.Errorf("%v: a *frame.CaseError (a skipped case) is %v, want %v", err, got, !tc.transient)
			}
			if frame.IsTransient(err) != tc.transient {
				t.Errorf("%v: transient %v, want %v", err, !tc.transient, tc.transient)
			}
			if !strings.Contains(err.Error(), img) {
				t.Errorf("%v does not name the file", err)
			}
		})
	}
}
