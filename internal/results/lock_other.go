//go:build !unix

package results

import "errors"

// LockFile is the lock file kept inside a run directory while a process
// writes it.
const LockFile = ".lock"

// ErrBusy is matched by lock errors when another process holds a
// conflicting lock; never returned where flock is unavailable.
var ErrBusy = errors.New("run directory locked by another process")

// LockRun is a no-op where flock is unavailable: concurrent writers of one
// run directory are not detected there.
func LockRun(dir string) (unlock func(), err error) { return func() {}, nil }

// ReadLockRun is a no-op where flock is unavailable.
func ReadLockRun(dir string) (unlock func(), err error) { return func() {}, nil }
