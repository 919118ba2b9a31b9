//go:build unix

package safefile

import (
	"errors"
	"syscall"
)

// nonBlock makes open(2) return at once on a FIFO without a writer (and on
// devices that would wait); noFollow makes it fail on a symbolic link.
const (
	nonBlock = syscall.O_NONBLOCK
	noFollow = syscall.O_NOFOLLOW
)

// isLoopErr reports the error open(2) gives for a link under O_NOFOLLOW.
func isLoopErr(err error) bool { return errors.Is(err, syscall.ELOOP) }
