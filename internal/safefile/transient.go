package safefile

import (
	"errors"
	"syscall"
)

// transientErrnos are the failures that say nothing about the file read:
// the process ran out of descriptors or memory, the device failed, or the
// call was interrupted. A rerun may well read the same file.
var transientErrnos = []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.EIO, syscall.EAGAIN, syscall.EINTR, syscall.ENOMEM}

// Transient reports whether err (or an error it wraps) is one of the
// transient failures: EMFILE, ENFILE, EIO, EAGAIN, EINTR or ENOMEM. A
// command that meets one fails rather than taking the file for unreadable
// and skipping it, which would change its output.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range transientErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
