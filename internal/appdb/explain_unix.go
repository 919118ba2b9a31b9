//go:build unix

package appdb

import "golang.org/x/sys/unix"

// statFree is freeBytes on Unix: the blocks free to unprivileged users.
func statFree(dir string) (uint64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}

// readOnlyFS reports whether dir is on a file system mounted read-only
// (access(2) for writing fails with EROFS, for root too).
func readOnlyFS(dir string) bool {
	return unix.Access(dir, unix.W_OK) == unix.EROFS
}
