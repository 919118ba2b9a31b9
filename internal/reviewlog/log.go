// Package reviewlog is the decision log of the expert review (spec
// build.md §4): the decisions that let a candidate case into a benchmark,
// and the one rule that resolves them. The builder reads it without the
// review app; the review app (package review) writes and resolves by it.
//
// A case is accepted only by an explicit, current decision. Decisions come
// from one of two stores with identical semantics: the portable
// reviews.jsonl log (this package: the latest line per key_id wins) or the
// review app's SQLite database. The build sees both through the Decisions
// interface; a Resolution tells it whether a candidate is accepted and, if
// not, why (missing, rejected, disputed, stale).
package reviewlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// Resolution statuses. Every status but Accepted excludes the case and is
// counted as not_accepted:<status>.
const (
	Accepted = "accepted"
	Missing  = "missing"
	Rejected = "rejected"
	Disputed = "disputed"
	Stale    = "stale"
)

// Decision values of a log line (resolved lines may also say "disputed"
// or "pending").
const (
	DecisionAccept   = "accept"
	DecisionReject   = "reject"
	DecisionUnsure   = "unsure"
	DecisionDisputed = "disputed"
	// DecisionPending is a resolved line of a case that fewer reviewers
	// decided than were assigned to it, so that it cannot be mistaken
	// for an explicit unsure.
	DecisionPending = "pending"
)

// Resolution is what a store says about one candidate.
type Resolution struct {
	Status string // Accepted, Missing, Rejected, Disputed or Stale
	// Decision is the resolved decision the status came from ("accept",
	// "reject", "disputed", "unsure"); "" when the store has none.
	Decision string
	// ImageSHA256 / MaskSHA256 are the digests stored with the decision
	// (nil when absent); they enter reviews_sha256.
	ImageSHA256, MaskSHA256 *string
}

// Decisions resolves candidates. imageSHA and maskSHA are the digests of
// the current inputs (maskSHA "" for negatives); an accepted decision whose
// digests differ is Stale.
type Decisions interface {
	Resolve(keyID, imageSHA, maskSHA string) Resolution
}

// Line is one line of reviews.jsonl (§4 field table).
type Line struct {
	KeyID       string
	Decision    string
	Reviewer    string
	Reviewers   []string
	Time        string
	ImageSHA256 *string
	MaskSHA256  *string
	Note        string
	LineNo      int // 1-based line in the file
}

// Log is a parsed reviews.jsonl: the latest line per key_id.
type Log struct {
	Path   string
	latest map[string]*Line
	order  []string // key_ids in order of first appearance
}

var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// IsDigest reports whether s is a digest as the log records it: 64
// lowercase hex digits (SHA-256).
func IsDigest(s string) bool { return hexDigest.MatchString(s) }

// ReadLog reads a reviews.jsonl file. A line that is not a JSON object, or
// lacks key_id or a known decision, or carries a malformed digest, is an
// error naming the file and the line.
func ReadLog(path string) (*Log, error) {
	f, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return nil, fmt.Errorf("reviews %s: %w", path, safefile.Reason(err))
	}
	defer func() { _ = f.Close() }() // read-only
	return parseLog(path, f)
}

// FromResolved is the Log of a review database's resolved lines (one per
// key_id), named path: it resolves exactly as the reviews.jsonl exported
// from the database would. Its KeyIDs is empty: a database decides only
// the cases it was made from.
func FromResolved(path string, lines []*Line) *Log {
	l := &Log{Path: path, latest: make(map[string]*Line, len(lines))}
	for _, ln := range lines {
		l.latest[ln.KeyID] = ln
	}
	return l
}

// maxLogLine bounds one line of reviews.jsonl (a line is a few hundred
// bytes; comments are capped when written).
const maxLogLine = 1 << 20

func parseLog(path string, r io.Reader) (*Log, error) {
	l := &Log{Path: path, latest: map[string]*Line{}}
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		raw, rerr := safefile.ReadLine(br, maxLogLine)
		if rerr != nil && rerr != io.EOF {
			return nil, fmt.Errorf("reviews %s:%d: read error: %w", path, n, rerr)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 {
			ln, err := parseLine(raw)
			if err != nil {
				return nil, fmt.Errorf("reviews %s:%d: %w", path, n, err)
			}
			ln.LineNo = n
			if l.latest[ln.KeyID] == nil {
				l.order = append(l.order, ln.KeyID)
			}
			l.latest[ln.KeyID] = ln
		}
		if rerr == io.EOF {
			break
		}
	}
	return l, nil
}

func parseLine(raw []byte) (*Line, error) {
	v, err := ojson.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if v.Kind != ojson.KindObject {
		return nil, errors.New("not a JSON object")
	}
	ln := &Line{}
	str := func(key string, required bool) (string, error) {
		x := v.Get(key)
		if x == nil || x.Kind == ojson.KindNull {
			if required {
				return "", fmt.Errorf("field %s is missing", key)
			}
			return "", nil
		}
		if x.Kind != ojson.KindString {
			return "", fmt.Errorf("field %s is not a string", key)
		}
		return x.S, nil
	}
	digest := func(key string) (*string, error) {
		s, err := str(key, false)
		if err != nil || s == "" {
			return nil, err
		}
		if !hexDigest.MatchString(s) {
			return nil, fmt.Errorf("field %s is not 64 lowercase hex digits", key)
		}
		return &s, nil
	}
	if ln.KeyID, err = str("key_id", true); err != nil {
		return nil, err
	}
	if ln.KeyID == "" {
		return nil, errors.New("field key_id is empty")
	}
	if ln.Decision, err = str("decision", true); err != nil {
		return nil, err
	}
	switch ln.Decision {
	case DecisionAccept, DecisionReject, DecisionUnsure, DecisionDisputed, DecisionPending:
	default:
		return nil, fmt.Errorf("key_id %s: decision %q is not accept, reject, unsure, disputed or pending", ln.KeyID, ln.Decision)
	}
	if ln.Reviewer, err = str("reviewer", false); err != nil {
		return nil, err
	}
	if ln.Time, err = str("time", false); err != nil {
		return nil, err
	}
	if ln.Note, err = str("note", false); err != nil {
		return nil, err
	}
	if x := v.Get("reviewers"); x != nil && x.Kind != ojson.KindNull {
		if x.Kind != ojson.KindArray {
			return nil, errors.New("field reviewers is not an array")
		}
		for _, e := range x.A {
			if e.Kind != ojson.KindString {
				return nil, errors.New("field reviewers holds a non-string")
			}
			ln.Reviewers = append(ln.Reviewers, e.S)
		}
	}
	if ln.ImageSHA256, err = digest("image_sha256"); err != nil {
		return nil, err
	}
	if ln.MaskSHA256, err = digest("mask_sha256"); err != nil {
		return nil, err
	}
	return ln, nil
}

// Len is the number of key_ids with a line.
func (l *Log) Len() int { return len(l.latest) }

// KeyIDs returns the key_ids that have a line, in order of first
// appearance in the file (the build warns about those that are not
// candidates).
func (l *Log) KeyIDs() []string { return append([]string(nil), l.order...) }

// Latest returns the line that decides keyID, or nil.
func (l *Log) Latest(keyID string) *Line { return l.latest[keyID] }

// Resolve applies the log rule of §4: accept → accepted (stale when a
// digest differs from the current inputs), reject → rejected, disputed →
// disputed, unsure, pending or no line → missing.
func (l *Log) Resolve(keyID, imageSHA, maskSHA string) Resolution {
	ln := l.latest[keyID]
	if ln == nil {
		return Resolution{Status: Missing}
	}
	res := Resolution{Decision: ln.Decision, ImageSHA256: ln.ImageSHA256, MaskSHA256: ln.MaskSHA256}
	switch ln.Decision {
	case DecisionAccept:
		res.Status = Accepted
		if !sameDigest(ln.ImageSHA256, imageSHA) || !sameDigest(ln.MaskSHA256, maskSHA) {
			res.Status = Stale
		}
	case DecisionReject:
		res.Status = Rejected
	case DecisionDisputed:
		res.Status = Disputed
	default:
		res.Status = Missing
	}
	return res
}

// sameDigest compares a stored digest with the current one; "" (and nil)
// mean "no digest" (a negative's mask).
func sameDigest(stored *string, current string) bool {
	if stored == nil {
		return current == ""
	}
	return *stored == current
}

// ReviewerDecision is one reviewer's latest decision on a case.
type ReviewerDecision struct {
	Reviewer string
	Decision string // accept | reject | unsure | "" (none yet)
}

// ResolveDecisions is the resolution rule of §4 for a case assigned to
// reviewers, in assignment order, with an optional admin resolution
// (admin "" = none). It returns the resolved decision: accept, reject,
// disputed, pending (an assigned reviewer has not decided yet, and those
// who did agree) or unsure (every assigned reviewer said unsure).
func ResolveDecisions(assigned []ReviewerDecision, admin string) string {
	switch admin {
	case DecisionAccept, DecisionReject:
		return admin
	}
	if len(assigned) == 0 {
		return DecisionPending
	}
	all := func(d string) bool {
		for _, a := range assigned {
			if a.Decision != d {
				return false
			}
		}
		return true
	}
	if all(DecisionAccept) {
		return DecisionAccept
	}
	if all(DecisionReject) {
		return DecisionReject
	}
	given := map[string]bool{}
	missing := false
	for _, a := range assigned {
		if a.Decision != "" {
			given[a.Decision] = true
		} else {
			missing = true
		}
	}
	if len(given) > 1 {
		return DecisionDisputed
	}
	if missing {
		return DecisionPending
	}
	return DecisionUnsure
}

// AcceptAll is the Decisions of --accept-all: every candidate is accepted
// and no decision enters reviews_sha256.
type AcceptAll struct{}

// Resolve accepts every case.
func (AcceptAll) Resolve(string, string, string) Resolution {
	return Resolution{Status: Accepted}
}

// CheckLogEnds reports whether the file r of size bytes can be taken for a
// reviews.jsonl that a writer may append to: it is empty (or blank), or its
// first and last non-blank lines are decision lines. It reads at most
// about two lines (each bounded), not the whole log, so a long log costs
// nothing; a foreign file is recognised because its text does not parse.
// The error says which line is not a decision and why.
func CheckLogEnds(r io.ReaderAt, size int64) error {
	first, last, blank, err := safefile.EndLines(r, size, maxLogLine)
	if err != nil {
		return fmt.Errorf("its first or last line: %w", err)
	}
	if blank {
		return nil
	}
	if _, err := parseLine(first); err != nil {
		return fmt.Errorf("its first line is not a decision: %w", err)
	}
	if _, err := parseLine(last); err != nil {
		return fmt.Errorf("its last line is not a decision: %w", err)
	}
	return nil
}
