//go:build !unix

package rundir

import "errors"

// LockFile is the lock file kept inside a run directory while a process
// writes it.
const LockFile = ".lock"

// ErrBusy is matched by lock errors when another process holds a
// conflicting lock; never returned where flock is unavailable.
var ErrBusy = errors.New("run directory locked by another process")

// Lock is a no-op where flock is unavailable: concurrent writers of one
// run directory are not detected there.
func Lock(dir string) (unlock func(), err error) { return func() {}, nil }

// ReadLock is a no-op where flock is unavailable.
func ReadLock(dir string) (unlock func(), err error) { return func() {}, nil }
