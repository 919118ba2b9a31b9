package rundir

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/chexpercept/chexpercept/internal/safefile"
)

// MaxLineBytes bounds one line of a results.jsonl file: a record, with
// every turn's prompt, raw reply, reasoning and parsed text. Honest lines
// are a few KB (a long reasoning trace makes them a few hundred KB: a
// full benchmark's file with reasoning is a few hundred MB for tens of
// thousands of records); the largest reply eval keeps by default is just
// under 32 MiB (provider.DefaultMaxReplyBytes: a larger one fails the call
// and is not stored), and twice that leaves room for its escaping and the
// other turns. Readers refuse a longer line at once instead of reading
// it into memory (a damaged or sparse tail), and Store refuses to write
// one, so every line eval writes is one it can read back.
const MaxLineBytes = 64 << 20

// ErrLineTooLong matches the error of a line longer than MaxLineBytes.
var ErrLineTooLong = errors.New("line longer than the record line limit")

// lineTooLong is the error of an over-long line: it names the file, the
// line and the limit, and matches ErrLineTooLong.
type lineTooLong struct {
	path string
	line int
}

func (e *lineTooLong) Error() string {
	return fmt.Sprintf("%s: line %d: longer than the %d-byte limit of a record line (not a record this tool writes; the file is damaged)", e.path, e.line, MaxLineBytes)
}

func (e *lineTooLong) Is(target error) bool { return target == ErrLineTooLong }

// lineReader reads a run file's lines one at a time, never holding more
// than one line (of at most MaxLineBytes) in memory.
type lineReader struct {
	r    *bufio.Reader
	path string
	line int   // number of the line last returned (1-based)
	off  int64 // bytes consumed so far
	buf  []byte
}

func newLineReader(r io.Reader, path string) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), path: path}
}

// next returns the next line without its newline, and whether it had one
// (a last line cut short has none). At the end it returns io.EOF. The
// slice is valid until the next call. A line longer than MaxLineBytes is
// an error (ErrLineTooLong) once its first MaxLineBytes+1 bytes are read.
func (l *lineReader) next() (line []byte, complete bool, err error) {
	l.buf = l.buf[:0]
	l.line++
	for {
		frag, err := l.r.ReadSlice('\n')
		l.off += int64(len(frag))
		if len(l.buf)+len(frag) > MaxLineBytes+1 {
			return nil, false, &lineTooLong{l.path, l.line}
		}
		if need := len(l.buf) + len(frag); need > cap(l.buf) {
			// Doubling: a long line costs at most twice its length in
			// allocations, never the file's size.
			grown := make([]byte, len(l.buf), max(2*cap(l.buf), need))
			copy(grown, l.buf)
			l.buf = grown
		}
		l.buf = append(l.buf, frag...)
		switch {
		case err == nil:
			return l.buf[:len(l.buf)-1], true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(l.buf) == 0 {
				return nil, false, io.EOF
			}
			if len(l.buf) > MaxLineBytes {
				return nil, false, &lineTooLong{l.path, l.line}
			}
			return l.buf, false, nil
		default:
			return nil, false, fmt.Errorf("read %s: %w", l.path, err)
		}
	}
}

// openRunFile opens a run file for reading (a regular file or a link to
// one, never blocking on a FIFO) of at most MaxRunFileBytes; errors are
// ReadFile's (a missing file matches fs.ErrNotExist).
func openRunFile(path string) (*os.File, error) {
	f, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return nil, err
	}
	if err := checkRunFileSize(f, path); err != nil {
		_ = f.Close() // read-only
		return nil, err
	}
	return f, nil
}

// checkRunFileSize refuses an open run file larger than MaxRunFileBytes.
func checkRunFileSize(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if fi.Size() > MaxRunFileBytes {
		return &fs.PathError{Op: "read", Path: path, Err: safefile.TooLarge(fi.Size(), MaxRunFileBytes)}
	}
	return nil
}

// ScanLines calls fn with each complete line of the run file at path
// (without its newline; the slice is valid only during the call), in
// file order, with its 1-based number, reading one line at a time. It
// returns an unfinished last line (none when the file ends with a
// newline), of at most MaxLineBytes, and that line's number. A line longer than
// MaxLineBytes stops the scan with an error naming the file and the line
// (ErrLineTooLong), so a damaged file costs at most that much memory. A
// missing file is an error matching fs.ErrNotExist.
func ScanLines(path string, fn func(line int, b []byte) error) (tail []byte, tailLine int, err error) {
	f, err := openRunFile(path)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = f.Close() }() // read-only
	lr := newLineReader(f, path)
	for {
		b, complete, err := lr.next()
		switch {
		case errors.Is(err, io.EOF):
			return nil, 0, nil
		case err != nil:
			return nil, 0, err
		case !complete:
			return b, lr.line, nil
		}
		if err := fn(lr.line, b); err != nil {
			return nil, 0, err
		}
	}
}
