package rundir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"

	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/go-json-experiment/json/jsontext"
)

// File names of a run directory (spec protocol.md §9.1).
const (
	ManifestFile   = "manifest.json"
	ResultsFile    = "results.jsonl"
	AllResultsFile = "all_results.json"
	SummaryFile    = "summary.json"
)

// MaxRunFileBytes bounds a file of a run directory (results.jsonl of a
// full benchmark with reasoning is a few hundred MB). results.jsonl is
// read one line at a time (MaxLineBytes each), so this bounds the time a
// read takes, not the memory it holds.
const MaxRunFileBytes = 4 << 30

// MaxAllResultsBytes bounds an all_results.json (one JSON document; a
// released-size export is tens of megabytes). It is read as a stream,
// one entry at a time (ScanAllResults), so this bounds the time a read
// takes, not the memory it holds.
const MaxAllResultsBytes = 1 << 30

// MaxAllResultsEntryBytes bounds one entry (one record's object) of an
// all_results.json: the cap of one record line of results.jsonl, which
// holds the same record with more fields.
const MaxAllResultsEntryBytes = MaxLineBytes

// ScanAllResults reads the all_results.json at path as a stream: fn gets
// each top-level member (key_id and its value) in file order, and only
// the member being read is held. A file larger than MaxAllResultsBytes is
// refused before it is read, an entry longer than MaxAllResultsEntryBytes
// (ojson.ErrMemberTooLarge) once that much of it is read, and input that
// is not JSON at the first byte that is not (*ojson.SyntaxError); a
// top-level value that is not an object is an *ojson.NotObjectError.
// Errors opening the file are safefile's (naming path); fn's are
// returned as they are.
func ScanAllResults(path string, fn func(key string, v *ojson.Value) error) error {
	f, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if fi.Size() > MaxAllResultsBytes {
		return &fs.PathError{Op: "read", Path: path, Err: safefile.TooLarge(fi.Size(), MaxAllResultsBytes)}
	}
	// A file that grows while it is read is read up to the cap.
	return ojson.ParseObjectStream(io.NewSectionReader(f, 0, MaxAllResultsBytes+1), MaxAllResultsEntryBytes, fn)
}

// ReadResults reads every complete line of a results.jsonl file, in file
// order, one line at a time. A last line without its "\n" (a write cut
// short by a kill) is ignored, as resume would truncate it; any complete
// line that does not decode is an error naming the file and the line
// number, and so is a line longer than MaxLineBytes (ErrLineTooLong). A
// missing file reads as no records.
func ReadResults(path string) ([]*results.Record, error) {
	var out []*results.Record
	_, _, err := ScanLines(path, func(line int, b []byte) error {
		r, err := parseLine(path, line, b)
		if r != nil {
			out = append(out, r)
		}
		return err
	})
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	return out, nil
}

// parseLine decodes one complete line; a blank line is no record (nil).
func parseLine(path string, line int, b []byte) (*results.Record, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	r, err := results.UnmarshalLine(b)
	if err != nil {
		return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
	}
	return r, nil
}

// Store appends records to a results.jsonl file, one complete line per
// record, synced before Append returns, so a kill at any moment loses at
// most the line being written (which the next OpenStore cuts away). A
// Store is not safe for concurrent use: the runner gives it to one writer
// goroutine.
type Store struct {
	f    *os.File
	path string
	// Repair says what OpenStore did to an unfinished last line ("" when
	// the file ended with a complete line); the runner logs it.
	Repair string
}

// recordStarts are how the lines MarshalLine writes begin: today with the
// schema version, before it existed with the key. A cut-short write of
// ours is a prefix of such a line.
var recordStarts = [][]byte{
	[]byte(`{"schema_version":` + strconv.Itoa(results.RecordSchemaVersion) + `,"key_id":"`),
	[]byte(`{"key_id":"`),
}

// startsLikeRecord reports whether tail begins the way a record line of
// ours begins (or is a beginning of that beginning, when short is set).
func startsLikeRecord(tail []byte, short bool) bool {
	for _, s := range recordStarts {
		if bytes.HasPrefix(tail, s) || (short && bytes.HasPrefix(s, tail)) {
			return true
		}
	}
	return false
}

// OpenStore opens (creating if needed) the results.jsonl at path for
// appending, and returns the complete lines already present, in file
// order. The caller must own the file: the run directory holds the
// manifest of the run that wrote it (a results.jsonl without one is
// refused by the runner before this is called).
//
// The file must be a regular file, not a link (opened without following
// one, and without blocking on a FIFO), of at most MaxRunFileBytes. Every
// complete line must decode before anything changes. A last line without
// its newline is repaired only as far as a write of ours explains it: a
// whole record that lacks only its newline gets it (no record is lost);
// the beginning of a record line cut short by a kill is truncated away
// (Store.Repair says so); anything else is refused, leaving the file as
// it was.
func OpenStore(path string) (*Store, []*results.Record, error) {
	f, err := safefile.OpenWritable(path, os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*Store, []*results.Record, error) {
		_ = f.Close() // nothing was written; err is the one reported
		return nil, nil, err
	}
	if err := checkRunFileSize(f, path); err != nil {
		return fail(err)
	}
	// One line at a time: a damaged file (a tail of NULs from a sparse
	// or corrupted disk) is refused at its first line longer than any
	// record, not read whole.
	var recs []*results.Record
	var keep int64 // bytes up to the end of the last complete line
	var tail []byte
	lr := newLineReader(f, path)
	for {
		b, complete, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, ErrLineTooLong) {
			return fail(fmt.Errorf("%w; refusing to change the file (move it away or repair it)", err))
		}
		if err != nil {
			return fail(err)
		}
		if !complete {
			tail = b
			break
		}
		r, err := parseLine(path, lr.line, b)
		if err != nil {
			return fail(err)
		}
		if r != nil {
			recs = append(recs, r)
		}
		keep = lr.off
	}
	size := lr.off // every byte read: the complete lines and the tail
	st := &Store{f: f, path: path}
	if len(tail) > 0 {
		line := lr.line
		switch {
		case startsLikeRecord(tail, false) && validRecord(tail):
			// Only the newline is missing: complete the line.
			r, _ := results.UnmarshalLine(tail)
			if _, err := f.WriteAt([]byte("\n"), size); err != nil {
				return fail(fmt.Errorf("complete the last line of %s: %w", path, err))
			}
			recs = append(recs, r)
			keep = size + 1
			st.Repair = fmt.Sprintf("%s: line %d: a complete record without its final newline; the newline was added", path, line)
		case cutShort(tail):
			if err := f.Truncate(keep); err != nil {
				return fail(fmt.Errorf("truncate the partial last line of %s: %w", path, err))
			}
			st.Repair = fmt.Sprintf("%s: line %d: the first %d bytes of a record whose write was cut short were removed (that record is asked again)", path, line, len(tail))
		default:
			return fail(fmt.Errorf("%s: line %d: an unfinished last line that is not the beginning of a record this tool writes; refusing to change the file (move it away or repair it)", path, line))
		}
		if err := f.Sync(); err != nil {
			return fail(fmt.Errorf("sync %s: %w", path, err))
		}
	}
	if _, err := f.Seek(keep, io.SeekStart); err != nil {
		return fail(fmt.Errorf("seek %s: %w", path, err))
	}
	return st, recs, nil
}

// validRecord reports whether line decodes as a whole record.
func validRecord(line []byte) bool {
	_, err := results.UnmarshalLine(line)
	return err == nil
}

// cutShort reports whether tail is the beginning of a line MarshalLine
// writes, cut off: it starts as a record line does (or is a prefix of
// that start), and what follows is valid JSON up to where it stops.
func cutShort(tail []byte) bool {
	if !startsLikeRecord(tail, false) {
		return startsLikeRecord(tail, true)
	}
	dec := jsontext.NewDecoder(bytes.NewReader(tail))
	for {
		if _, err := dec.ReadToken(); err != nil {
			return errors.Is(err, io.ErrUnexpectedEOF)
		}
	}
}

// Append writes r as one line and syncs the file.
func (s *Store) Append(r *results.Record) error {
	line, err := s.marshal(r)
	if err != nil {
		return err
	}
	if _, err := s.f.Write(line); err != nil {
		return fmt.Errorf("append to %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", s.path, err)
	}
	return nil
}

// AppendBatch writes the records' lines with one write and syncs once
// (group commit): each line is complete and synced when it returns.
func (s *Store) AppendBatch(recs []*results.Record) error {
	var buf []byte
	for _, r := range recs {
		line, err := s.marshal(r)
		if err != nil {
			return err
		}
		buf = append(buf, line...)
	}
	if _, err := s.f.Write(buf); err != nil {
		return fmt.Errorf("append to %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", s.path, err)
	}
	return nil
}

// marshal is r's line, refused when it is longer than MaxLineBytes: no
// reader would take it back.
func (s *Store) marshal(r *results.Record) ([]byte, error) {
	line, err := r.MarshalLine()
	if err != nil {
		return nil, err
	}
	if len(line)-1 > MaxLineBytes {
		return nil, fmt.Errorf("append to %s: record %s is a %d-byte line, more than the %d-byte limit of a record line", s.path, r.KeyID, len(line)-1, MaxLineBytes)
	}
	return line, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.f.Close() }

// NoRecordsError explains why the results file at path holds no complete
// record: missing, empty, or only an unfinished last line (which readers
// drop as the remains of a killed writer). Commands that derive a new run
// from records refuse such a file rather than write an empty run.
func NoRecordsError(path string) error {
	blank, lines := true, 0
	tail, tailLine, err := ScanLines(path, func(line int, b []byte) error {
		blank = blank && len(bytes.TrimSpace(b)) == 0
		lines = line
		return nil
	})
	switch {
	case os.IsNotExist(err):
		return fmt.Errorf("%s: no such file; no record to read", path)
	case err != nil:
		return err
	case blank && len(bytes.TrimSpace(tail)) == 0:
		return fmt.Errorf("%s: empty; no record to read", path)
	}
	line := lines
	if len(tail) > 0 {
		line = tailLine
	}
	return fmt.Errorf("%s: line %d: not a complete record (no final newline) and no other record; nothing to read", path, line)
}
