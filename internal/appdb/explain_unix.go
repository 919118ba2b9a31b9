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
