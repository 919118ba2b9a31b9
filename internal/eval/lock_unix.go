//go:build unix

package eval

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockFile is the lock file a run keeps inside the directory it writes.
const LockFile = ".lock"

// lockDir takes an exclusive flock on dir/.lock, so that two processes
// never append to one results.jsonl. The lock belongs to the open file
// description: it ends with the process, so a killed run leaves nothing
// held. The returned function releases it.
func lockDir(dir string) (func(), error) {
	name := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %v", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("run directory %s is in use by another chexpercept process (lock %s held); wait for it or use another --out", dir, LockFile)
		}
		return nil, fmt.Errorf("lock %s: %v", name, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
