//go:build unix

package appdb

import (
	"io/fs"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f; with tryOnly it fails at once
// when another holds it. flock and SQLite's fcntl locks do not meet.
func lockFile(f *os.File, tryOnly bool) error {
	how := syscall.LOCK_EX
	if tryOnly {
		how |= syscall.LOCK_NB
	}
	return syscall.Flock(int(f.Fd()), how)
}

// ownedByMe reports whether fi's owner is this process's user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
