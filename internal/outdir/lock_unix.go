//go:build unix

package outdir

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive lock on the output directory dir for as long as
// the command writes it, so that two chexpercept processes never write one
// folder at once (two builds with different configurations, two phantoms
// with different seeds). dir is created when absent (with its missing
// parents); the lock is an flock on the directory itself, so no file is
// added to the folder, and it belongs to the open descriptor: it ends with
// the process, and a killed command leaves nothing held. A second process
// is refused at once with ErrBusy, naming the holder's pid when the system
// says it.
//
// The returned function releases the lock and removes the directories Lock
// created that are still empty (a command refused after Lock leaves no
// trace). When dir cannot be made into a directory (a file or a dangling
// link in its place, no permission) Lock returns no error and no lock:
// the command's own check of dir reports that, with its usual message.
func Lock(dir string) (unlock func(), err error) {
	// A directory removed between its creation and its opening (the
	// empty folder of a process that just ended) is created again.
	for try := 0; try < 3; try++ {
		created := missingDirs(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return func() {}, nil
		}
		f, err := os.Open(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			removeEmpty(created)
			return func() {}, nil
		}
		if fi, err := f.Stat(); err != nil || !fi.IsDir() {
			_ = f.Close() // only read; nothing to report
			removeEmpty(created)
			return func() {}, nil
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			// The folder is another process's: nothing here is removed,
			// not even a directory this call believes it created.
			holder := ""
			if pid := lockHolder(f); pid > 0 {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
			_ = f.Close() // only read; the lock error is the one reported
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, &busyError{fmt.Sprintf("output directory %s is being written by another chexpercept process%s; wait for it to finish or choose another directory", dir, holder)}
			}
			return nil, fmt.Errorf("output directory %s: lock: %w", dir, err)
		}
		return func() {
			// Removed while still locked, so no other process
			// is writing into the folder at that moment.
			removeEmpty(created)
			// Closing the only descriptor releases the lock;
			// nothing a later process sees depends on the result.
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			_ = f.Close()
		}, nil
	}
	return func() {}, nil
}

// removeEmpty removes the directories of created (deepest first) while
// they are empty: the folders Lock made for a command that wrote nothing.
func removeEmpty(created []string) {
	for _, d := range created {
		if os.Remove(d) != nil {
			return // not empty: keep it and its parents
		}
	}
}

// missingDirs returns dir and those of its parents that do not exist,
// deepest first: the directories MkdirAll(dir) would create.
func missingDirs(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, os.ErrNotExist) {
			return out
		}
		out = append(out, d)
		if p := filepath.Dir(d); p == d {
			return out
		}
	}
}

// maxLocksLines bounds the reading of /proc/locks.
const maxLocksLines = 1 << 16

// lockHolder returns the pid holding an flock on the file f according to
// /proc/locks (Linux), or 0 when it cannot tell.
func lockHolder(f *os.File) int {
	var st syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil {
		return 0
	}
	dev := uint64(st.Dev) //nolint:unconvert // Dev is not uint64 everywhere
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	pl, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer func() { _ = pl.Close() }() // read-only
	sc := bufio.NewScanner(pl)
	for n := 0; n < maxLocksLines && sc.Scan(); n++ {
		// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
		fs := strings.Fields(sc.Text())
		if len(fs) >= 6 && fs[1] == "FLOCK" && fs[3] == "WRITE" && fs[5] == want {
			if pid, err := strconv.Atoi(fs[4]); err == nil {
				return pid
			}
		}
	}
	return 0
}
