package runset

import (
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// TestReadFailedTransient: a read error that says nothing about the file
// (too many open files, an I/O error) becomes Load's error instead of a
// warning that leaves the input out; any other stays a warning.
func TestReadFailedTransient(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"too many open files", &fs.PathError{Op: "open", Path: "run/manifest.json", Err: syscall.EMFILE}, true},
		{"I/O error", &fs.PathError{Op: "read", Path: "run/manifest.json", Err: syscall.EIO}, true},
		{"permission", &fs.PathError{Op: "open", Path: "run/manifest.json", Err: syscall.EACCES}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newState()
			s.readFailed(tc.err, "run/manifest.json", "%v; run settings taken from the directory names", tc.err)
			if got := s.transient != nil; got != tc.transient {
				t.Errorf("transient %v (%v), want %v", got, s.transient, tc.transient)
			}
			if tc.transient {
				if len(s.Warnings) != 0 {
					t.Errorf("warnings %q, want none", s.Warnings)
				}
				if msg := s.transient.Error(); !strings.HasPrefix(msg, "run/manifest.json: ") || !strings.Contains(msg, "run again") {
					t.Errorf("error %q", msg)
				}
			} else if len(s.Warnings) != 1 {
				t.Errorf("warnings %q, want one", s.Warnings)
			}
		})
	}
}
