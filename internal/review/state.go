package review

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
)

// Action is one decision or admin resolution as stored.
type Action struct {
	Seq         int64 // insertion order (later actions have larger Seq)
	Reviewer    string
	Decision    string
	Note        string
	Time        string
	ImageSHA256 *string
	MaskSHA256  *string
}

// CaseState is everything the store knows about one case: its assigned
// reviewers in assignment order with their latest decisions (nil = none)
// and the latest admin resolution (nil = none or withdrawn).
type CaseState struct {
	Case     *CaseInfo
	Assigned []string
	Latest   []*Action // parallel to Assigned
	Admin    *Action
}

// Snapshot reads the state of every case in source order, in one read
// transaction so that it is consistent while reviewers keep deciding.
func (s *Store) Snapshot(ctx context.Context) ([]*CaseState, error) {
	return s.snapshot(ctx, 0)
}

// CaseStateOf is the state of one case (a case page needs no other).
func (s *Store) CaseStateOf(ctx context.Context, caseID int64) (*CaseState, error) {
	st, err := s.snapshot(ctx, caseID)
	if err != nil || len(st) == 0 {
		return nil, err
	}
	return st[0], nil
}

// snapshot reads the state of every case, or of case only when it is
// not 0.
func (s *Store) snapshot(ctx context.Context, only int64) (out []*CaseState, err error) {
	err = s.db.ReadTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = readSnapshot(ctx, tx, only)
		return err
	})
	return out, err
}

// readSnapshot is snapshot's reading, in one read transaction.
func readSnapshot(ctx context.Context, tx *sql.Tx, only int64) ([]*CaseState, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+caseCols+` FROM cases c WHERE ? = 0 OR c.id = ? ORDER BY c.id`, only, only)
	if err != nil {
		return nil, err
	}
	var out []*CaseState
	byID := map[int64]*CaseState{}
	for rows.Next() {
		c, err := scanCase(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		cs := &CaseState{Case: c}
		out = append(out, cs)
		byID[c.ID] = cs
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.QueryContext(ctx, `SELECT a.case_id, r.name FROM assignments a JOIN reviewers r ON r.id = a.reviewer_id
		WHERE ? = 0 OR a.case_id = ? ORDER BY a.case_id, a.pos, r.id`, only, only)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return nil, err
		}
		if cs := byID[id]; cs != nil {
			cs.Assigned = append(cs.Assigned, name)
			cs.Latest = append(cs.Latest, nil)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.QueryContext(ctx, `SELECT d.id, d.case_id, r.name, d.decision, d.note, d.time, d.image_sha256, d.mask_sha256
		FROM decisions d JOIN reviewers r ON r.id = d.reviewer_id
		WHERE d.id IN (SELECT max(id) FROM decisions WHERE ? = 0 OR case_id = ? GROUP BY case_id, reviewer_id)`, only, only)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var caseID int64
		a, err := scanAction(rows, &caseID, true)
		if err != nil {
			rows.Close()
			return nil, err
		}
		if cs := byID[caseID]; cs != nil {
			for i, n := range cs.Assigned {
				if n == a.Reviewer {
					cs.Latest[i] = a
				}
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.QueryContext(ctx, `SELECT id, case_id, decision, note, time, image_sha256, mask_sha256
		FROM resolutions WHERE id IN (SELECT max(id) FROM resolutions WHERE ? = 0 OR case_id = ? GROUP BY case_id)`, only, only)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var caseID int64
		a, err := scanAction(rows, &caseID, false)
		if err != nil {
			return nil, err
		}
		if cs := byID[caseID]; cs != nil && a.Decision != "" {
			a.Reviewer = AdminName
			cs.Admin = a
		}
	}
	return out, rows.Err()
}

func scanAction(rows *sql.Rows, caseID *int64, withReviewer bool) (*Action, error) {
	a := &Action{}
	var img, msk sql.NullString
	var err error
	if withReviewer {
		err = rows.Scan(&a.Seq, caseID, &a.Reviewer, &a.Decision, &a.Note, &a.Time, &img, &msk)
	} else {
		err = rows.Scan(&a.Seq, caseID, &a.Decision, &a.Note, &a.Time, &img, &msk)
	}
	if err != nil {
		return nil, err
	}
	if img.Valid {
		a.ImageSHA256 = &img.String
	}
	if msk.Valid {
		a.MaskSHA256 = &msk.String
	}
	return a, nil
}

// HasAction reports whether the case has any decision or an admin
// resolution in force.
func (cs *CaseState) HasAction() bool {
	if cs.Admin != nil {
		return true
	}
	for _, a := range cs.Latest {
		if a != nil {
			return true
		}
	}
	return false
}

// Resolved is the resolved line of the case (§4 `review export --jsonl`),
// or nil when the case has no decision and no resolution.
func (cs *CaseState) Resolved() *reviewlog.Line {
	if !cs.HasAction() {
		return nil
	}
	rds := make([]reviewlog.ReviewerDecision, len(cs.Assigned))
	var combined []string
	var notes []string
	var last *Action
	for i, n := range cs.Assigned {
		rds[i].Reviewer = n
		if a := cs.Latest[i]; a != nil {
			rds[i].Decision = a.Decision
			combined = append(combined, n)
			if a.Note != "" {
				notes = append(notes, n+": "+a.Note)
			}
			if last == nil || a.Seq > last.Seq {
				last = a
			}
		}
	}
	admin := ""
	if cs.Admin != nil {
		admin = cs.Admin.Decision
	}
	ln := &reviewlog.Line{KeyID: cs.Case.KeyID, Decision: reviewlog.ResolveDecisions(rds, admin), Reviewers: combined}
	deciding := last
	if cs.Admin != nil {
		deciding = cs.Admin
		ln.Reviewers = append(ln.Reviewers, AdminName)
		ln.Note = cs.Admin.Note
	} else {
		ln.Note = strings.Join(notes, "; ")
	}
	if ln.Reviewers == nil {
		ln.Reviewers = []string{}
	}
	ln.Time = deciding.Time
	ln.ImageSHA256, ln.MaskSHA256 = deciding.ImageSHA256, deciding.MaskSHA256
	return ln
}

// LineJSON is the reviews.jsonl object of a line in the field order of
// the §4 table; reviewer / reviewers / note appear only when set.
func LineJSON(ln *reviewlog.Line) *ojson.Value {
	o := ojson.NewObject().Set("key_id", ojson.Str(ln.KeyID)).Set("decision", ojson.Str(ln.Decision))
	if ln.Reviewer != "" {
		o.Set("reviewer", ojson.Str(ln.Reviewer))
	}
	if ln.Reviewers != nil {
		o.Set("reviewers", ojson.Strs(ln.Reviewers))
	}
	o.Set("time", ojson.Str(ln.Time))
	o.Set("image_sha256", optStr(ln.ImageSHA256))
	o.Set("mask_sha256", optStr(ln.MaskSHA256))
	if ln.Note != "" {
		o.Set("note", ojson.Str(ln.Note))
	}
	return o
}

func optStr(p *string) *ojson.Value {
	if p == nil {
		return ojson.Null()
	}
	return ojson.Str(*p)
}

// MarshalLines writes lines as JSON Lines (compact §6, "\n" after each).
func MarshalLines(lines []*reviewlog.Line) []byte {
	var b []byte
	for _, ln := range lines {
		b = append(b, ojson.MarshalCompact(LineJSON(ln))...)
		b = append(b, '\n')
	}
	return b
}

// ResolvedLines returns the resolved line of every case with a decision or
// resolution, in source order: the content of `review export --jsonl`.
func (s *Store) ResolvedLines(ctx context.Context) ([]*reviewlog.Line, error) {
	st, err := s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	var out []*reviewlog.Line
	for _, cs := range st {
		if ln := cs.Resolved(); ln != nil {
			out = append(out, ln)
		}
	}
	return out, nil
}

// OpenDecisions resolves candidates from a review database for a build
// that reads its decisions there. It reads the resolved lines once and
// answers exactly as the exported reviews.jsonl would (the same Log,
// built in memory); ctx ends the read.
func OpenDecisions(ctx context.Context, path string) (*reviewlog.Log, error) {
	s, err := OpenReadOnly(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close() }() // read-only
	lines, err := s.ResolvedLines(ctx)
	if err != nil {
		return nil, fmt.Errorf("review db %s: %w", path, err)
	}
	return reviewlog.FromResolved(path, lines), nil
}
