//go:build unix

package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/chexpercept/chexpercept/internal/safefile"
)

// LockFile is the lock file kept inside a run directory while a process
// writes it (eval, merge, rescore, import-reference) or reads it as a
// source (merge, rescore).
const LockFile = ".lock"

// ErrBusy is matched (errors.Is) by the errors of Lock and ReadLock
// when another process holds a conflicting lock.
var ErrBusy = errors.New("run directory locked by another process")

// busyError says who holds the directory, and is ErrBusy.
type busyError struct{ msg string }

func (e *busyError) Error() string        { return e.msg }
func (e *busyError) Is(target error) bool { return target == ErrBusy }

// Lock takes an exclusive lock on the run directory dir, which must
// exist, so that two processes never write one results.jsonl. The lock is
// an flock on dir/.lock and belongs to the open file description: it ends
// with the process, so a killed run leaves nothing held. The returned
// function releases it.
func Lock(dir string) (unlock func(), err error) {
	name := filepath.Join(dir, LockFile)
	// Never through a link, never blocking on a FIFO planted there.
	f, err := safefile.OpenWritable(name, os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, safefile.Reason(err))
	}
	return flock(f, syscall.LOCK_EX,
		fmt.Sprintf("run directory %s is in use by another chexpercept process (lock %s held); wait for it or write to another directory", dir, LockFile))
}

// ReadLock takes a shared lock on the run directory dir for reading it
// as a source, and fails if a process is writing it (an eval still
// running on a shard, say), because its results.jsonl is not final. A
// directory without a lock file has never been written by a live process
// and needs no lock; the source may be read-only, so the lock file is
// never created here.
func ReadLock(dir string) (unlock func(), err error) {
	name := filepath.Join(dir, LockFile)
	f, err := safefile.Open(name, safefile.NoFollow)
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, safefile.Reason(err))
	}
	return flock(f, syscall.LOCK_SH,
		fmt.Sprintf("run directory %s is being written by another chexpercept process (lock %s held); wait for it to finish", dir, LockFile))
}

// flock locks the open lock file f without waiting (how: LOCK_EX or
// LOCK_SH); busy is the error when another open file holds a conflicting
// lock. It closes f on failure.
func flock(f *os.File, how int, busy string) (unlock func(), err error) {
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		_ = f.Close() // nothing was written; the lock error is the one reported
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &busyError{busy}
		}
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() {
		// The lock file holds no data, and closing its only descriptor
		// releases the lock whether or not LOCK_UN or Close report an
		// error: neither decides anything a later process sees.
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
