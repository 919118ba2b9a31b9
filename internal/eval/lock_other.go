//go:build !unix

package eval

// LockFile is the lock file a run keeps inside the directory it writes.
const LockFile = ".lock"

// lockDir is a no-op where flock is unavailable: concurrent runs of one
// directory are not detected there.
func lockDir(dir string) (func(), error) { return func() {}, nil }
