// Package safefile is the one way chexpercept opens a file that a user
// named (in a flag, a manifest, a candidates file, a review database or a
// benchmark directory).
//
// Opening never blocks and never reads a file that is not a regular file:
// the path is stat'ed first, then opened with O_NONBLOCK, and the opened
// descriptor is checked again (a file swapped between the two checks is
// caught by the second). A FIFO, device, socket or directory is refused at
// once with "not a regular file (named pipe)" and the like, so a FIFO named
// in a manifest cannot hang a command, and Ctrl-C keeps working.
//
// Symbolic links follow one rule per kind of path:
//   - Follow: files named by the user on the command line or in a
//     manifest, candidates file or review database (data sets are often
//     linked into place); the link's target must be a regular file.
//   - NoFollow: files inside a benchmark or build directory, which must be
//     self-contained (validate reports links there as errors, eval refused
//     them already); the link itself is refused, also at open time
//     (O_NOFOLLOW).
//
// Reads are bounded: ReadFile takes a byte cap and refuses a larger file
// before reading it, and ReadLine a line cap. Images are decoded by
// package imagefile, on top of this one.
package safefile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Links says whether a symbolic link at the named path is followed.
type Links int

const (
	// Follow opens the link's target (user-named inputs).
	Follow Links = iota
	// NoFollow refuses a symbolic link (files inside a benchmark).
	NoFollow
)

// ErrNotRegular is wrapped by the error for a path that is not a regular
// file (FIFO, device, socket, directory).
var ErrNotRegular = errors.New("not a regular file")

// ErrSymlink is wrapped by the error for a symbolic link opened with
// NoFollow.
var ErrSymlink = errors.New("is a symbolic link; refusing to follow it")

// ErrTooLarge is wrapped by the error for a file over a ReadFile cap (and,
// in package imagefile, for an image whose header is over the size limit).
var ErrTooLarge = errors.New("too large")

type notRegular struct{ kind string }

func (e notRegular) Error() string   { return "not a regular file (" + e.kind + ")" }
func (e notRegular) Is(t error) bool { return t == ErrNotRegular }

type fileTooLarge struct{ size, limit int64 }

func (e fileTooLarge) Error() string {
	if e.size < 0 {
		return fmt.Sprintf("file is larger than the %d-byte limit", e.limit)
	}
	return fmt.Sprintf("file is %d bytes, more than the %d-byte limit", e.size, e.limit)
}
func (e fileTooLarge) Is(t error) bool { return t == ErrTooLarge }

// TooLarge is the error of a file of size bytes read under a limit of
// limit bytes (ReadFile's): it matches ErrTooLarge.
func TooLarge(size, limit int64) error { return fileTooLarge{size, limit} }

// KindOf names a file type that is not a regular file, for error
// messages: "named pipe", "symbolic link", "directory" and so on.
func KindOf(m fs.FileMode) string { return kindOf(m) }

// kindOf names a non-regular file type for error messages.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "irregular file"
}

func pathErr(path string, err error) error { return &fs.PathError{Op: "open", Path: path, Err: err} }

// Reason strips the *fs.PathError wrapper from err, whose message repeats
// a path the caller already names, leaving the reason alone.
func Reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// CheckRegular reports, without opening it, whether path is a regular file
// or a symbolic link to one. Its errors are bare reasons, the same Open
// gives: fs.ErrNotExist, ErrNotRegular naming the kind, or the stat error.
func CheckRegular(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return Reason(err)
	case !fi.Mode().IsRegular():
		return notRegular{kindOf(fi.Mode())}
	}
	return nil
}

// Open opens path for reading if it is a regular file, without ever
// blocking on a FIFO or device. Errors are *fs.PathError naming path (Op
// "open"), like os.Open's, so callers may strip the path as they do today.
func Open(path string, links Links) (*os.File, error) {
	stat, flags := os.Stat, os.O_RDONLY|nonBlock
	if links == NoFollow {
		stat, flags = os.Lstat, flags|noFollow
	}
	fi, err := stat(path)
	if err != nil {
		return nil, pathErr(path, Reason(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, pathErr(path, ErrSymlink)
	}
	if !fi.Mode().IsRegular() {
		return nil, pathErr(path, notRegular{kindOf(fi.Mode())})
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if links == NoFollow && isLoopErr(err) {
			return nil, pathErr(path, ErrSymlink)
		}
		return nil, err
	}
	// The path may have been replaced between Stat and open.
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		_ = f.Close() // refused unread: the reason below is the error
		if err != nil {
			return nil, pathErr(path, err)
		}
		return nil, pathErr(path, notRegular{kindOf(fi.Mode())})
	}
	return f, nil
}

// ReadFile reads the whole regular file at path, refusing it (before
// reading) when it is larger than limit bytes.
func ReadFile(path string, limit int64, links Links) ([]byte, error) {
	f, err := Open(path, links)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	return readAll(f, path, limit)
}

// readAll reads an open regular file of at most limit bytes; the size is
// checked before reading and again while reading, in case the file grows.
func readAll(f *os.File, path string, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if fi.Size() > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fileTooLarge{fi.Size(), limit}}
	}
	buf := make([]byte, 0, fi.Size()+512)
	lr := io.LimitReader(f, limit+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
	}
	if int64(len(buf)) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fileTooLarge{-1, limit}}
	}
	return buf, nil
}

// ErrLineTooLong is returned by ReadLine for a line over its cap.
var ErrLineTooLong = errors.New("line too long")

type lineTooLong struct{ max int }

func (e lineTooLong) Error() string   { return fmt.Sprintf("line longer than %d bytes", e.max) }
func (e lineTooLong) Is(t error) bool { return t == ErrLineTooLong }

// ReadLine is br.ReadBytes('\n') that gives up, with an error wrapping
// ErrLineTooLong, once the line passes max bytes: a line-oriented file
// (manifest, review log) cannot make a reader buffer without bound.
func ReadLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > max {
			return nil, lineTooLong{max}
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// OpenWritable opens path for reading and writing with the extra flags
// (os.O_CREATE, os.O_APPEND), for a file a command keeps in its own
// directory (a run's results.jsonl and lock, a log): a regular file only,
// never through a symbolic link (O_NOFOLLOW, also at open time) and never
// blocking on a FIFO. A new file gets mode perm. Errors are *fs.PathError
// naming path, ErrSymlink or ErrNotRegular for a path that is not a
// regular file.
func OpenWritable(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, pathErr(path, ErrSymlink)
		}
		if !fi.Mode().IsRegular() {
			return nil, pathErr(path, notRegular{kindOf(fi.Mode())})
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|flag|nonBlock|noFollow, perm)
	if err != nil {
		if isLoopErr(err) {
			return nil, pathErr(path, ErrSymlink)
		}
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		_ = f.Close() // refused unwritten: the reason below is the error
		if err != nil {
			return nil, pathErr(path, err)
		}
		return nil, pathErr(path, notRegular{kindOf(fi.Mode())})
	}
	return f, nil
}
