package review

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/csvcap"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/source"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// ImportOptions configures ReadSheets.
type ImportOptions struct {
	// Source maps key_id → case of the manifest or candidates the sheets
	// were made from (nil without --source). Rows without digests are bound
	// to these inputs as they are now.
	Source map[string]*source.Case
	// Reviewer names the reviewer of every row; "" = the nearest enclosing
	// annotator_<X> folder of each sheet, else "import".
	Reviewer string
	// Legacy applies the reference's rule to optimal?/optimal cells: any
	// non-empty cell accepts.
	Legacy bool
	Now    time.Time
}

// maxSheetBytes bounds one sheet file.
const maxSheetBytes = 64 << 20

// maxSheetRecordBytes bounds one record (row, quoted line breaks
// included) of a sheet: a row is a case's key, decision and a reviewer's
// comment, a few hundred bytes.
const maxSheetRecordBytes = 1 << 20

// ReadSheets reads filled review sheets (review_sheet.csv or a reference
// layout, recognised by the header) and returns one log line per decided
// row, in sheet and row order. Every problem is collected; if there is
// any, no line is returned and the error lists them (sheet:line: reason).
func ReadSheets(paths []string, opt ImportOptions) ([]*reviewlog.Line, error) {
	if len(paths) == 0 {
		return nil, errors.New("no sheet given")
	}
	if opt.Reviewer != "" {
		if err := reviewlog.CheckName("reviewer name", opt.Reviewer); err != nil {
			return nil, err
		}
	}
	stamp := opt.Now.UTC().Format(time.RFC3339)
	var problems []string
	var lines []*reviewlog.Line
	var loader *source.Loader
	if opt.Source != nil {
		var err error
		if loader, err = source.NewLoader(nil, nil, buildcfg.Default(), "", nil); err != nil {
			return nil, err
		}
	}
	bound := map[string][2]*string{} // key_id → current digests (cache)
	for _, p := range paths {
		ls, errs := readSheet(p, opt, stamp, loader, bound)
		lines = append(lines, ls...)
		problems = append(problems, errs...)
	}
	if len(problems) > 0 {
		const show = 20
		msg := problems
		if len(msg) > show {
			msg = append(append([]string{}, msg[:show]...), fmt.Sprintf("… and %d more", len(problems)-show))
		}
		return nil, &importError{fmt.Sprintf("import: %d problem(s), nothing imported:\n  %s", len(problems), strings.Join(msg, "\n  ")),
			opt.Source == nil && slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, noDigests) })}
	}
	return lines, nil
}

// ErrNeedsSource is matched by the error of ReadSheets when rows carry no
// digests and no source was given (the command names its flag).
var ErrNeedsSource = errors.New("rows without digests need the source the sheets were made from")

// noDigests is the problem of such a row.
const noDigests = "the row carries no digests"

// importError lists the problems of ReadSheets; it is ErrNeedsSource when
// one of them is a row without digests and no source was given.
type importError struct {
	msg         string
	needsSource bool
}

func (e *importError) Error() string        { return e.msg }
func (e *importError) Is(target error) bool { return e.needsSource && target == ErrNeedsSource }

// sheetReviewer is the nearest enclosing annotator_<X> folder, else
// "import".
func sheetReviewer(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		b := filepath.Base(d)
		if strings.HasPrefix(b, "annotator_") && len(b) > len("annotator_") {
			return b
		}
		if filepath.Dir(d) == d {
			return "import"
		}
	}
}

func readSheet(path string, opt ImportOptions, stamp string, loader *source.Loader, bound map[string][2]*string) ([]*reviewlog.Line, []string) {
	fail := func(line int, format string, args ...any) string {
		if line == 0 {
			return textsafe.OneLine(path) + ": " + fmt.Sprintf(format, args...)
		}
		return fmt.Sprintf("%s:%d: %s", textsafe.OneLine(path), line, fmt.Sprintf(format, args...))
	}
	data, err := readSheetFile(path)
	if err != nil {
		return nil, []string{fail(0, "%v", err)}
	}
	// encoding/csv holds a whole record, however long: each is capped.
	r := csv.NewReader(csvcap.New(bytes.NewReader(data), maxSheetRecordBytes, maxSheetBytes))
	header, err := r.Read()
	if err != nil {
		return nil, []string{fail(1, "cannot read the header: %v", err)}
	}
	cols, ok := sheetColumns(header, opt.Legacy)
	if !ok {
		return nil, []string{fail(1, "header is neither review_sheet.csv (key_id, …, decision) nor a reference sheet (key_id, …, optimal?)")}
	}
	rows := &sheetRows{cols: cols, opt: opt, stamp: stamp, loader: loader, bound: bound, reviewer: opt.Reviewer}
	if rows.reviewer == "" {
		rows.reviewer = sheetReviewer(path)
		if err := reviewlog.CheckName("reviewer name", rows.reviewer); err != nil {
			return nil, []string{fail(0, "%v (taken from its annotator_<X> folder); give the reviewer's name instead", err)}
		}
	}
	var lines []*reviewlog.Line
	var problems []string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// FieldPos panics after a syntax error; the error knows the line.
			line := 0
			if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
				line = pe.StartLine
			}
			if ce, ok := csvcap.As(err); ok {
				line = ce.Line
			}
			problems = append(problems, fail(line, "%v", err))
			break
		}
		line, _ := r.FieldPos(0)
		ln, err := rows.line(rec)
		switch {
		case err != nil:
			problems = append(problems, fail(line, "%v", err))
		case ln != nil:
			lines = append(lines, ln)
		}
	}
	return lines, problems
}

// readSheetFile reads one sheet, bounded, without its BOM (spreadsheet
// programs add one).
func readSheetFile(path string) ([]byte, error) {
	f, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return nil, safefile.Reason(err)
	}
	defer func() { _ = f.Close() }() // read-only
	data, err := io.ReadAll(io.LimitReader(f, maxSheetBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSheetBytes {
		return nil, fmt.Errorf("larger than %d MiB", maxSheetBytes>>20)
	}
	return bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), nil
}

// sheetCols locates a sheet's columns (-1: absent).
type sheetCols struct {
	key, decision, image, mask int
	decisionName               string // the decision column's header cell
	legacyCell                 bool   // any non-empty decision cell accepts
}

// sheetColumns recognises review_sheet.csv (key_id, decision) or a
// reference sheet (key_id, optimal? or optimal); ok is false for neither.
// The first of repeated headers counts.
func sheetColumns(header []string, legacy bool) (c sheetCols, ok bool) {
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if _, dup := col[h]; !dup {
			col[h] = i
		}
	}
	index := func(name string) int {
		if i, ok := col[name]; ok {
			return i
		}
		return -1
	}
	c = sheetCols{key: index("key_id"), decision: index("decision"), image: index("image_sha256"), mask: index("mask_sha256")}
	optCol := index("optimal?")
	if optCol < 0 {
		optCol = index("optimal")
	}
	switch {
	case c.key < 0:
		return sheetCols{}, false
	case c.decision >= 0: // review_sheet.csv
	case optCol >= 0: // a reference sheet
		c.decision, c.legacyCell = optCol, legacy
	default:
		return sheetCols{}, false
	}
	c.decisionName = header[c.decision]
	return c, true
}

// sheetRows turns the rows of one sheet into log lines.
type sheetRows struct {
	cols            sheetCols
	opt             ImportOptions
	reviewer, stamp string
	loader          *source.Loader
	bound           map[string][2]*string
}

// line returns the row's log line, nil for a row without a decision, or
// the row's problem.
func (s *sheetRows) line(rec []string) (*reviewlog.Line, error) {
	cell := func(i int) string {
		if i >= 0 && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	key := cell(s.cols.key)
	raw := cell(s.cols.decision)
	var dec string
	if s.cols.legacyCell {
		if raw != "" {
			dec = reviewlog.DecisionAccept
		}
	} else {
		var err error
		if dec, err = mapDecision(raw); err != nil {
			return nil, fmt.Errorf("%s %q: %w", s.cols.decisionName, raw, err)
		}
	}
	if dec == "" {
		return nil, nil
	}
	if key == "" {
		return nil, errors.New("key_id is empty")
	}
	ln := &reviewlog.Line{KeyID: key, Decision: dec, Reviewer: s.reviewer, Time: s.stamp}
	if img := cell(s.cols.image); img != "" {
		if !reviewlog.IsDigest(img) {
			return nil, fmt.Errorf("image_sha256 %q is not 64 lowercase hex digits", img)
		}
		ln.ImageSHA256 = &img
		if m := cell(s.cols.mask); m != "" {
			if !reviewlog.IsDigest(m) {
				return nil, fmt.Errorf("mask_sha256 %q is not 64 lowercase hex digits", m)
			}
			ln.MaskSHA256 = &m
		}
	} else {
		if s.opt.Source == nil {
			return nil, fmt.Errorf("key_id %s: %s; the source it was made from (manifest or candidates) binds it to the current inputs", key, noDigests)
		}
		d, err := bindDigests(key, s.opt.Source, s.loader, s.bound)
		if err != nil {
			return nil, fmt.Errorf("key_id %s: %w", key, err)
		}
		ln.ImageSHA256, ln.MaskSHA256 = d[0], d[1]
	}
	if c := s.opt.Source[key]; s.opt.Source != nil && c == nil {
		return nil, fmt.Errorf("key_id %s is not in the source", key)
	}
	return ln, nil
}

// bindDigests computes the current review digests of key's inputs.
func bindDigests(key string, src map[string]*source.Case, l *source.Loader, cache map[string][2]*string) ([2]*string, error) {
	if d, ok := cache[key]; ok {
		return d, nil
	}
	c := src[key]
	if c == nil {
		return [2]*string{}, errors.New("not in the source")
	}
	img, err := source.ImageSHA256(c)
	if err != nil {
		return [2]*string{}, err
	}
	d := [2]*string{&img, nil}
	if c.Positive() {
		m, err := l.CandidateMask(c)
		if err != nil {
			return [2]*string{}, err
		}
		ms := source.MaskSHA256(m)
		d[1] = &ms
	}
	cache[key] = d
	return d, nil
}

// mapDecision maps a sheet cell (§4, case-insensitive): y, yes, 1, true,
// accept, x → accept; n, no, 0, false, reject → reject; empty → no
// decision; anything else is an error.
func mapDecision(cell string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(cell)) {
	case "":
		return "", nil
	case "y", "yes", "1", "true", "accept", "x":
		return reviewlog.DecisionAccept, nil
	case "n", "no", "0", "false", "reject":
		return reviewlog.DecisionReject, nil
	}
	return "", errors.New("is not one of y, yes, 1, true, accept, x (accept) or n, no, 0, false, reject (reject)")
}

// AppendLog appends lines to a reviews.jsonl file (created when absent) in
// one write, so a concurrent reader never sees a partial line of ours. The
// log is opened as safefile.OpenWritable opens a command's own files: a
// symbolic link or anything but a regular file is refused (a FIFO would
// wait for a reader for ever, a link would send the decisions elsewhere).
// An existing file is appended to only when it is recognisably a reviews
// log (reviewlog.CheckLogEnds: empty, or its first and last lines are
// decisions); any other file was not written by a review command and is
// refused untouched. With no lines nothing is opened or written.
func AppendLog(path string, lines []*reviewlog.Line) error {
	if len(lines) == 0 {
		return nil
	}
	f, err := safefile.OpenWritable(path, os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("reviews %s: %w", path, safefile.Reason(err))
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close() // nothing was written; the stat error is the one reported
		return fmt.Errorf("reviews %s: %w", path, err)
	}
	if err := reviewlog.CheckLogEnds(f, st.Size()); err != nil {
		_ = f.Close() // nothing was written; the refusal is the one reported
		return fmt.Errorf("reviews %s: not a reviews log (%w); refusing to append to a file no review command wrote (give a new or existing reviews.jsonl)", path, err)
	}
	data := MarshalLines(lines)
	// A file whose last line lacks its newline would glue our first line
	// onto it.
	if st.Size() > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], st.Size()-1); err == nil && last[0] != '\n' {
			data = append([]byte{'\n'}, data...)
		}
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close() // the write failed; its error is the one reported
		return fmt.Errorf("reviews %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close() // as above
		return fmt.Errorf("reviews %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("reviews %s: %w", path, err)
	}
	return nil
}

// ImportLines stores imported decisions in the database, in one
// transaction: each line's case must exist; its reviewer is created
// (without a token, so it cannot sign in) and assigned to the case when
// needed, so the decision takes part in the resolution rule. Refused while
// the review is locked.
func (s *Store) ImportLines(ctx context.Context, lines []*reviewlog.Line) error {
	if s.readOnly {
		return fmt.Errorf("review db %s: %w", s.Path, ErrReadOnly)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		var locked string
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE((SELECT value FROM meta WHERE key = 'locked'), '0')`).Scan(&locked); err != nil {
			return err
		}
		if locked == "1" {
			return fmt.Errorf("review db %s: %w; unlock it in the admin view before importing", s.Path, ErrLocked)
		}
		revs := map[string]int64{}
		for _, ln := range lines {
			var caseID int64
			if err := tx.QueryRowContext(ctx, `SELECT id FROM cases WHERE key_id = ?`, ln.KeyID).Scan(&caseID); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("review db %s: key_id %s is not a case of the database", s.Path, ln.KeyID)
				}
				return err
			}
			rid, ok := revs[ln.Reviewer]
			if !ok {
				if ln.Reviewer == AdminName {
					return fmt.Errorf("reviewer name %q is reserved for the admin", AdminName)
				}
				var isAdmin bool
				err := tx.QueryRowContext(ctx, `SELECT id, is_admin FROM reviewers WHERE name = ?`, ln.Reviewer).Scan(&rid, &isAdmin)
				if errors.Is(err, sql.ErrNoRows) {
					res, err := tx.ExecContext(ctx, `INSERT INTO reviewers(name, token_sha256, is_admin) VALUES(?, NULL, 0)`, ln.Reviewer)
					if err != nil {
						return err
					}
					rid, _ = res.LastInsertId()
				} else if err != nil {
					return err
				}
				revs[ln.Reviewer] = rid
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO assignments(case_id, reviewer_id, pos)
				SELECT ?, ?, COALESCE(max(pos), -1) + 1 FROM assignments WHERE case_id = ?
				ON CONFLICT(case_id, reviewer_id) DO NOTHING`, caseID, rid, caseID); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO decisions(case_id, reviewer_id, decision, note, time, image_sha256, mask_sha256) VALUES(?,?,?,?,?,?,?)`,
				caseID, rid, ln.Decision, ln.Note, ln.Time, nullable(ln.ImageSHA256), nullable(ln.MaskSHA256)); err != nil {
				return err
			}
		}
		return nil
	})
}
