package safefile

import (
	"bytes"
	"fmt"
	"io"
)

// EndLines returns the first and the last non-blank line (trimmed) of the
// file r of size bytes, reading at most limit+1 bytes at each end: enough to
// recognise a line-oriented file a command wrote before it appends to or
// replaces it, however long the file. blank is true when the file holds
// nothing but white space (first and last are then nil). A line at either
// end longer than limit is an error wrapping ErrLineTooLong. With one line,
// first and last are the same.
func EndLines(r io.ReaderAt, size int64, limit int) (first, last []byte, blank bool, err error) {
	if size <= 0 {
		return nil, nil, true, nil
	}
	window := int64(limit) + 1
	head := make([]byte, min(size, window))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return nil, nil, false, fmt.Errorf("read error: %w", err)
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	whole := int64(len(head)) == size
	if len(trimmed) == 0 && whole {
		return nil, nil, true, nil
	}
	first, _, found := bytes.Cut(trimmed, []byte{'\n'})
	if !found && !whole {
		return nil, nil, false, lineTooLong{limit}
	}
	off := max(size-window, 0)
	tail := make([]byte, size-off)
	if _, err := r.ReadAt(tail, off); err != nil && err != io.EOF {
		return nil, nil, false, fmt.Errorf("read error: %w", err)
	}
	tail = bytes.TrimRight(tail, " \t\r\n")
	i := bytes.LastIndexByte(tail, '\n')
	if i < 0 && off > 0 {
		return nil, nil, false, lineTooLong{limit}
	}
	return bytes.TrimSpace(first), bytes.TrimSpace(tail[i+1:]), false, nil
}
