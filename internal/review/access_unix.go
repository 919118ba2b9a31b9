//go:build unix

package review

import "golang.org/x/sys/unix"

// dirNotWritable reports whether this process may not create files in dir
// (access(2), which also knows read-only file systems and root's rights).
func dirNotWritable(dir string) bool {
	return unix.Access(dir, unix.W_OK|unix.X_OK) != nil
}
