//go:build !unix

package results

// LockFile is the lock file kept inside a run directory while a process
// writes it.
const LockFile = ".lock"

// LockRun is a no-op where flock is unavailable: concurrent writers of one
// run directory are not detected there.
func LockRun(dir string) (unlock func(), err error) { return func() {}, nil }

// ReadLockRun is a no-op where flock is unavailable.
func ReadLockRun(dir string) (unlock func(), err error) { return func() {}, nil }
