package review

// The review database (build.md §4 "Store"): one SQLite file in WAL mode
// holding the cases under review with their digests, the reviewers (token
// hashes only), the assignments, every decision ever made (append-only: the
// latest per reviewer counts, nothing is overwritten, so concurrent
// reviewers never lose an update), the admin resolutions, the sessions of
// the web app and the lock flag.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/appdb"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/webapp"
)

// schemaID marks a review database; Open refuses other SQLite files.
const schemaID = "chexpercept-review/1"

// schema: the meta table, the accounts ("reviewers") and sessions of the
// web layer, and the review's own tables.
var schema = appdb.MetaSchema + (&Store{}).accounts().Schema() + `
CREATE TABLE cases (
	id            INTEGER PRIMARY KEY,
	key_id        TEXT NOT NULL UNIQUE,
	case_id       TEXT NOT NULL,
	lesion        TEXT NOT NULL,
	label         TEXT NOT NULL CHECK (label IN ('positive','negative')),
	image_path    TEXT NOT NULL,
	image_id      TEXT,
	image_sha256  TEXT NOT NULL,
	mask_sha256   TEXT,
	mask_png      BLOB,
	report        TEXT NOT NULL DEFAULT '',
	location_hints TEXT NOT NULL DEFAULT '',
	source_type   TEXT NOT NULL DEFAULT ''
);
CREATE TABLE assignments (
	case_id     INTEGER NOT NULL REFERENCES cases(id),
	reviewer_id INTEGER NOT NULL REFERENCES reviewers(id),
	pos         INTEGER NOT NULL,
	PRIMARY KEY (case_id, reviewer_id)
);
CREATE INDEX assignments_reviewer ON assignments(reviewer_id, case_id);
CREATE TABLE decisions (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	case_id      INTEGER NOT NULL REFERENCES cases(id),
	reviewer_id  INTEGER NOT NULL REFERENCES reviewers(id),
	decision     TEXT NOT NULL CHECK (decision IN ('accept','reject','unsure')),
	note         TEXT NOT NULL DEFAULT '',
	time         TEXT NOT NULL,
	image_sha256 TEXT,
	mask_sha256  TEXT
);
CREATE INDEX decisions_case ON decisions(case_id, reviewer_id, id);
CREATE TABLE resolutions (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	case_id      INTEGER NOT NULL REFERENCES cases(id),
	decision     TEXT NOT NULL CHECK (decision IN ('accept','reject','')),
	note         TEXT NOT NULL DEFAULT '',
	time         TEXT NOT NULL,
	image_sha256 TEXT,
	mask_sha256  TEXT
);
CREATE INDEX resolutions_case ON resolutions(case_id, id);
`

// AdminName is the reserved name of the admin account; resolved log lines
// list it when an admin resolution decided (§4).
const AdminName = "admin"

// Store is an open review database.
type Store struct {
	db   *appdb.DB
	Path string
	now  func() time.Time // replaced in tests

	// readOnly: opened by OpenReadOnly; sessions then live in mem.
	readOnly bool
	mem      *webapp.MemSessions
}

// ErrLocked is returned for reviewer decisions after the admin locked the
// review.
var ErrLocked = errors.New("the review is locked by the admin")

// ErrReadOnly is returned by every change to a store opened read-only.
var ErrReadOnly = errors.New("the review database is open read-only")

// dbSpec is the review database: recognised by its schema id,
// synchronous(NORMAL).
func dbSpec() appdb.Spec {
	return appdb.Spec{Kind: "review db", Name: "chexpercept review database", SchemaID: schemaID,
		Schema: schema, Synchronous: "NORMAL"}
}

// create starts a new, empty review database on the job j, made under a
// temporary name until Init publishes it (appdb.Create); an existing file
// is never overwritten.
func create(j *job.Job, path string) (*Store, *appdb.Creation, error) {
	c, err := appdb.Create(j, path, dbSpec())
	if err != nil {
		return nil, nil, err
	}
	return &Store{db: c.DB(), Path: path, now: time.Now}, c, nil
}

// Open opens an existing review database (created by `review init`) for
// reading and writing. Another SQLite file named by mistake is recognised
// before anything writes to it and left as it was (appdb.Open). A
// database file, directory or -wal/-shm file that cannot be written is an
// error matching ErrNotWritable that says which.
func Open(path string) (*Store, error) {
	if err := statDB(path); err != nil {
		return nil, err
	}
	// SQLite would open a read-only file read-only without a word and fail
	// at the first write (a sign-in or a decision), so probe it first.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if isPermission(err) {
			return nil, &writeError{fmt.Sprintf("review db %s: the file is not writable (%v)", path, safefile.Reason(err)), err}
		}
		return nil, fmt.Errorf("review db %s: %w", path, safefile.Reason(err))
	}
	_ = f.Close() // opened only to probe
	return open(path, appdb.ReadWrite)
}

// open opens the database in mode; an error that SQLite gave because a
// file or the directory cannot be written says which (notWritable).
func open(path string, mode appdb.Mode) (*Store, error) {
	db, err := appdb.Open(path, dbSpec(), mode)
	if err != nil {
		if werr := notWritable(path, err); werr != nil {
			return nil, werr
		}
		return nil, err
	}
	s := &Store{db: db, Path: path, now: time.Now, readOnly: mode == appdb.ReadOnly}
	if s.readOnly {
		s.mem = &webapp.MemSessions{}
	}
	return s, nil
}

// ReadOnly reports whether the store was opened by OpenReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) stamp() string { return s.now().UTC().Format(time.RFC3339) }

// Meta returns a meta value ("" when absent).
func (s *Store) meta(ctx context.Context, key string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// Locked reports whether the admin has locked the review.
func (s *Store) Locked(ctx context.Context) (bool, error) {
	v, err := s.meta(ctx, "locked")
	return v == "1", err
}

// SetLocked sets or clears the lock flag.
func (s *Store) SetLocked(ctx context.Context, locked bool) error {
	if s.readOnly {
		return ErrReadOnly
	}
	v := "0"
	if locked {
		v = "1"
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES('locked', ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value`, v)
	return err
}

// Overlap is the K of `review init --overlap` (reviewers per case).
func (s *Store) Overlap(ctx context.Context) int {
	v, _ := s.meta(ctx, "overlap")
	k, _ := strconv.Atoi(v)
	return k
}

// Reviewer is an account of the web app.
type Reviewer struct {
	ID      int64
	Name    string
	IsAdmin bool
}

func tokenHash(token string) []byte { return webapp.TokenHash(token) }

// Reviewers lists the accounts that are not the admin, by id.
func (s *Store) Reviewers(ctx context.Context) ([]Reviewer, error) {
	return appdb.Rows(ctx, s.db, func(r *Reviewer) []any { return []any{&r.ID, &r.Name, &r.IsAdmin} },
		`SELECT id, name, is_admin FROM reviewers WHERE is_admin = 0 ORDER BY id`)
}

// CaseInfo is one case under review.
type CaseInfo struct {
	ID            int64 // order of the source
	KeyID         string
	CaseID        string
	Lesion, Label string
	ImagePath     string
	ImageID       *string
	ImageSHA256   string
	MaskSHA256    *string // nil for negatives
	Report        string
	LocationHints []string
	SourceType    string
}

// Positive reports whether the case is a positive candidate.
func (c *CaseInfo) Positive() bool { return c.Label == "positive" }

const caseCols = `c.id, c.key_id, c.case_id, c.lesion, c.label, c.image_path, c.image_id, c.image_sha256, c.mask_sha256, c.report, c.location_hints, c.source_type`

type scanner interface{ Scan(dest ...any) error }

func scanCase(sc scanner) (*CaseInfo, error) {
	var c CaseInfo
	var imageID, maskSHA sql.NullString
	var hints string
	if err := sc.Scan(&c.ID, &c.KeyID, &c.CaseID, &c.Lesion, &c.Label, &c.ImagePath, &imageID, &c.ImageSHA256, &maskSHA, &c.Report, &hints, &c.SourceType); err != nil {
		return nil, err
	}
	if imageID.Valid {
		c.ImageID = &imageID.String
	}
	if maskSHA.Valid {
		c.MaskSHA256 = &maskSHA.String
	}
	c.LocationHints = splitHints(hints)
	return &c, nil
}

// Location hints are stored joined by a newline (hints never hold one:
// they come from single JSON strings and are checked at init).
func joinHints(h []string) string { return strings.Join(h, "\n") }
func splitHints(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// CaseByKey returns the case with key_id key, or nil.
func (s *Store) CaseByKey(ctx context.Context, key string) (*CaseInfo, error) {
	c, err := scanCase(s.db.QueryRowContext(ctx, `SELECT `+caseCols+` FROM cases c WHERE c.key_id = ?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return c, err
}

// MaskPNG returns the stored canonical candidate mask of a case as a grey
// PNG (nil for negatives).
func (s *Store) MaskPNG(ctx context.Context, caseID int64) ([]byte, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, `SELECT mask_png FROM cases WHERE id = ?`, caseID).Scan(&b)
	return b, err
}

// IsAssigned reports whether the case is assigned to the reviewer.
func (s *Store) IsAssigned(ctx context.Context, caseID, reviewerID int64) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM assignments WHERE case_id = ? AND reviewer_id = ?`, caseID, reviewerID).Scan(&n)
	return n > 0, err
}

// Neighbours places a case in a list of cases in source order — the
// reviewer's queue, or every case when reviewerID is 0 (the admin) —
// with bounded queries, so that a case page costs the same in a queue of
// ten cases as in one of a million: its 1-based position, the list's
// length and the keys before and after it ("" at the ends).
func (s *Store) Neighbours(ctx context.Context, caseID, reviewerID int64) (pos, total int, prev, next string, err error) {
	list := `SELECT c.id, c.key_id FROM cases c WHERE (? = 0 OR c.id IN (SELECT case_id FROM assignments WHERE reviewer_id = ?))`
	if err = s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(id <= ?), 0) FROM (`+list+`)`, caseID, reviewerID, reviewerID).Scan(&total, &pos); err != nil {
		return
	}
	one := func(q string) (string, error) {
		var id int64
		var k string
		err := s.db.QueryRowContext(ctx, q, reviewerID, reviewerID, caseID).Scan(&id, &k)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil
		}
		return k, err
	}
	if prev, err = one(list + ` AND c.id < ? ORDER BY c.id DESC LIMIT 1`); err != nil {
		return
	}
	next, err = one(list + ` AND c.id > ? ORDER BY c.id LIMIT 1`)
	return
}

// QueueItem is one case of a reviewer's queue with the reviewer's own
// latest decision.
type QueueItem struct {
	Case     *CaseInfo
	Decision string // "" when undecided
	Note     string
	Time     string
}

// Queue returns the reviewer's cases in source order with their own latest
// decisions (never another reviewer's).
func (s *Store) Queue(ctx context.Context, reviewerID int64) ([]QueueItem, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+caseCols+`,
		COALESCE(d.decision, ''), COALESCE(d.note, ''), COALESCE(d.time, '')
		FROM assignments a JOIN cases c ON c.id = a.case_id
		LEFT JOIN decisions d ON d.id = (SELECT max(id) FROM decisions WHERE case_id = a.case_id AND reviewer_id = a.reviewer_id)
		WHERE a.reviewer_id = ? ORDER BY c.id`, reviewerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []QueueItem
	for rows.Next() {
		var q QueueItem
		var c CaseInfo
		var imageID, maskSHA sql.NullString
		var hints string
		if err := rows.Scan(&c.ID, &c.KeyID, &c.CaseID, &c.Lesion, &c.Label, &c.ImagePath, &imageID, &c.ImageSHA256, &maskSHA, &c.Report, &hints, &c.SourceType,
			&q.Decision, &q.Note, &q.Time); err != nil {
			return nil, err
		}
		if imageID.Valid {
			c.ImageID = &imageID.String
		}
		if maskSHA.Valid {
			c.MaskSHA256 = &maskSHA.String
		}
		c.LocationHints = splitHints(hints)
		q.Case = &c
		out = append(out, q)
	}
	return out, rows.Err()
}

// Decide records a reviewer's decision on an assigned case with the case's
// digests and the current time. Earlier decisions are kept; the latest
// counts. It fails with ErrLocked once the review is locked and when the
// case is not assigned to the reviewer.
func (s *Store) Decide(ctx context.Context, reviewerID int64, c *CaseInfo, decision, note string) (string, error) {
	switch decision {
	case reviewlog.DecisionAccept, reviewlog.DecisionReject, reviewlog.DecisionUnsure:
	default:
		return "", fmt.Errorf("decision %q is not accept, reject or unsure", decision)
	}
	if s.readOnly {
		return "", ErrReadOnly
	}
	now := s.stamp()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var locked string
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE((SELECT value FROM meta WHERE key = 'locked'), '0')`).Scan(&locked); err != nil {
			return err
		}
		if locked == "1" {
			return ErrLocked
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM assignments WHERE case_id = ? AND reviewer_id = ?`, c.ID, reviewerID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("case %s is not assigned to this reviewer", c.KeyID)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO decisions(case_id, reviewer_id, decision, note, time, image_sha256, mask_sha256) VALUES(?,?,?,?,?,?,?)`,
			c.ID, reviewerID, decision, note, now, c.ImageSHA256, nullable(c.MaskSHA256))
		return err
	})
	return now, err
}

// Resolve records an admin resolution: accept or reject decides the case
// alone (§4 rule 1); "" withdraws the resolution.
func (s *Store) Resolve(ctx context.Context, c *CaseInfo, decision, note string) (string, error) {
	switch decision {
	case reviewlog.DecisionAccept, reviewlog.DecisionReject, "":
	default:
		return "", fmt.Errorf("resolution %q is not accept, reject or empty", decision)
	}
	if s.readOnly {
		return "", ErrReadOnly
	}
	now := s.stamp()
	_, err := s.db.ExecContext(ctx, `INSERT INTO resolutions(case_id, decision, note, time, image_sha256, mask_sha256) VALUES(?,?,?,?,?,?)`,
		c.ID, decision, note, now, c.ImageSHA256, nullable(c.MaskSHA256))
	return now, err
}

func nullable(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// tx runs f in an immediate transaction on the writer, committing when f
// returns nil.
func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	return s.db.Tx(ctx, f)
}
