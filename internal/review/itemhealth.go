package review

// Item-health re-review rounds (docs/item-health.md). A report's
// flagged_items.csv names benchmark items whose models' answers point at a
// wrong ground truth. `review init --only flagged_items.csv` opens a round
// for exactly those cases, storing each case's flags (question, reason,
// ground truth, the models' modal answer) in the item_flags table, which
// the case page shows. In such a round a reviewer decides keep (stored as
// accept), drop (reject) or fix (reject, note prefixed FixPrefix), so the
// round's reviews.jsonl export keeps its build meaning unchanged: keep
// leaves the case in, drop and fix take it out. ExportOutcomes writes the
// keep / fix / drop list for the people who correct the source.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/appdb"
	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/csvcap"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/source"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// ItemFlag is one flagged question of a case, from flagged_items.csv.
type ItemFlag struct {
	KeyID, Mode, Question, Turn, Reason string
	Runs                                string
	AgreeShare                          string
	GT, Modal                           string
	GTText, ModalText                   string
}

// Item-health outcomes of a re-review round.
const (
	OutcomeKeep    = "keep"
	OutcomeFix     = "fix"
	OutcomeDrop    = "drop"
	OutcomePending = "pending"
	// FixPrefix starts the note of a "fix" decision (stored as reject).
	FixPrefix = "[fix] "
)

// maxFlaggedBytes bounds a flagged_items.csv (a few hundred bytes a row).
const maxFlaggedBytes = 64 << 20

// maxFlaggedRecordBytes bounds one record (row, quoted line breaks
// included) of a flagged_items.csv: a report's rows are a few hundred
// bytes (key, question, reason codes, counts, a clipped question text).
const maxFlaggedRecordBytes = 1 << 20

// MaxFlagsPerCase bounds the flagged rows of one case: a report flags
// each question of a case at most once per oracle mode (9 questions × 3
// modes), so a file with more rows for one key is not a report's, and a
// case page never lists more.
const MaxFlagsPerCase = benchmark.NumQuestions * 3

// ReadFlagged reads a report's flagged_items.csv: one row per flagged
// question, columns found by name (key_id, question and reason required).
func ReadFlagged(path string) ([]ItemFlag, error) {
	data, err := safefile.ReadFile(path, maxFlaggedBytes, safefile.Follow)
	if err != nil {
		return nil, fmt.Errorf("flagged items %s: %w", path, safefile.Reason(err))
	}
	// encoding/csv holds a whole record, however long: each is capped.
	r := csv.NewReader(csvcap.New(bytes.NewReader(data), maxFlaggedRecordBytes, maxFlaggedBytes))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if ce, ok := csvcap.As(err); ok {
		return nil, fmt.Errorf("flagged items %s line %d: %s (not a report's flagged_items.csv)", path, ce.Line, ce.Msg)
	}
	if err != nil {
		return nil, fmt.Errorf("flagged items %s: no header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	if i, ok := col["runs"]; ok && !hasCol(col, "n_runs") {
		col["n_runs"] = i // a report written before the column was renamed
	}
	for _, need := range []string{"key_id", "question", "reason"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("flagged items %s: no %s column (is it a report's flagged_items.csv?)", path, need)
		}
	}
	var out []ItemFlag
	type flagID struct{ key, mode, question string }
	seen := map[flagID]ItemFlag{}
	perCase := map[string]int{}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if ce, ok := csvcap.As(err); ok {
			return nil, fmt.Errorf("flagged items %s line %d: %s (not a report's flagged_items.csv)", path, ce.Line, ce.Msg)
		}
		if err != nil {
			return nil, fmt.Errorf("flagged items %s: %w", path, err)
		}
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		// The texts are shown to reviewers: control and format characters
		// (a bidi override reorders the page) show as escapes, and bytes
		// that are not UTF-8 as U+FFFD. key_id is matched, not shown.
		text := func(name string) string { return textsafe.OneLine(strings.ToValidUTF8(get(name), "\uFFFD")) }
		f := ItemFlag{KeyID: get("key_id"), Mode: text("oracle_mode"), Question: text("question"), Turn: text("turn"), Reason: text("reason"),
			Runs: text("n_runs"), AgreeShare: text("agree_share"), GT: text("gt"), Modal: text("modal_answer"), GTText: text("gt_text"), ModalText: text("modal_text")}
		if f.KeyID == "" || f.Reason == "" {
			return nil, fmt.Errorf("flagged items %s:%d: empty key_id or reason", path, line)
		}
		if err := f.check(); err != nil {
			return nil, fmt.Errorf("flagged items %s:%d: %w", path, line, err)
		}
		id := flagID{f.KeyID, f.Mode, f.Question}
		if first, ok := seen[id]; ok {
			if first == f { // a row given twice would be shown twice
				continue
			}
			return nil, fmt.Errorf("flagged items %s:%d: a second, different row for question %s of %s in oracle mode %q (a report writes one)",
				path, line, f.Question, textsafe.OneLine(f.KeyID), f.Mode)
		}
		if perCase[f.KeyID]++; perCase[f.KeyID] > MaxFlagsPerCase {
			return nil, fmt.Errorf("flagged items %s:%d: more than %d flagged rows for %s (a report flags each of the %d questions at most once per oracle mode)",
				path, line, MaxFlagsPerCase, textsafe.OneLine(f.KeyID), benchmark.NumQuestions)
		}
		seen[id] = f
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("flagged items %s: no flagged item", path)
	}
	return out, nil
}

func hasCol(col map[string]int, name string) bool {
	_, ok := col[name]
	return ok
}

// answerSet is a flagged_items.csv answer: option numbers joined by ";",
// or NA (no modal answer).
var answerSet = regexp.MustCompile(`^(NA|[0-9]{1,3}(;[0-9]{1,3})*)?$`)

// check refuses a flag whose exported columns (oracle_mode, question,
// reason, gt, modal_answer) are not values a report writes: they are
// copied into the outcomes file, so a formula or any other text there
// would be passed on. The reason is one or more codes of the closed set
// analysis.FlagReasons.
func (f ItemFlag) check() error {
	for _, r := range strings.Split(f.Reason, ";") {
		if !slices.Contains(analysis.FlagReasons, r) {
			return fmt.Errorf("reason %q is not one of %s (joined with ';')", f.Reason, strings.Join(analysis.FlagReasons, ", "))
		}
	}
	switch f.Mode {
	case "", "none", "implicit", "explicit":
	default:
		return fmt.Errorf("oracle_mode %q is not none, implicit or explicit", f.Mode)
	}
	if !slices.ContainsFunc(benchmark.Questions, func(q benchmark.Question) bool { return q.Name() == f.Question }) {
		return fmt.Errorf("question %q is not a question name of the benchmark", f.Question)
	}
	for _, a := range []struct{ name, v string }{{"gt", f.GT}, {"modal_answer", f.Modal}} {
		if !answerSet.MatchString(a.v) {
			return fmt.Errorf("%s %q is not an answer (option numbers joined with ';', or NA)", a.name, a.v)
		}
	}
	return nil
}

// OnlyFlagged keeps the cases of the source that are flagged, in source
// order. A flagged key that is not in the source is an error: the round
// must cover exactly the flagged cases.
func OnlyFlagged(cases []*source.Case, flags []ItemFlag) ([]*source.Case, error) {
	want := map[string]bool{}
	for _, f := range flags {
		want[f.KeyID] = true
	}
	var kept []*source.Case
	for _, c := range cases {
		if want[c.KeyID()] {
			kept = append(kept, c)
			delete(want, c.KeyID())
		}
	}
	if len(want) > 0 {
		var missing []string
		for k := range want {
			missing = append(missing, k)
		}
		slices.Sort(missing)
		ex := missing[:min(3, len(missing))]
		return nil, fmt.Errorf("%d flagged key(s) are not in the source (e.g. %s); give the candidates or manifest the benchmark was built from",
			len(missing), textsafe.OneLine(strings.Join(ex, ", ")))
	}
	return kept, nil
}

const itemFlagsSchema = `CREATE TABLE item_flags (
	key_id      TEXT NOT NULL,
	oracle_mode TEXT NOT NULL,
	question    TEXT NOT NULL,
	turn        TEXT NOT NULL,
	reason      TEXT NOT NULL,
	runs        TEXT NOT NULL,
	agree_share TEXT NOT NULL,
	gt          TEXT NOT NULL,
	modal       TEXT NOT NULL,
	gt_text     TEXT NOT NULL,
	modal_text  TEXT NOT NULL
)`

// insertFlags creates item_flags and marks the database as an
// item-health round.
func insertFlags(tx *sql.Tx, flags []ItemFlag) error {
	if _, err := tx.Exec(itemFlagsSchema); err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO meta(key, value) VALUES('round', 'item-health')`); err != nil {
		return err
	}
	for _, f := range flags {
		if _, err := tx.Exec(`INSERT INTO item_flags VALUES(?,?,?,?,?,?,?,?,?,?,?)`, f.KeyID, f.Mode, f.Question, f.Turn, f.Reason,
			f.Runs, f.AgreeShare, f.GT, f.Modal, f.GTText, f.ModalText); err != nil {
			return err
		}
	}
	return nil
}

// ItemHealthRound reports whether the database is an item-health round.
func (s *Store) ItemHealthRound(ctx context.Context) bool {
	v, err := s.meta(ctx, "round")
	return err == nil && v == "item-health"
}

// ItemFlags returns the flags of a case (none outside item-health rounds).
func (s *Store) ItemFlags(ctx context.Context, key string) ([]ItemFlag, error) {
	if !s.ItemHealthRound(ctx) {
		return nil, nil
	}
	return appdb.Rows(ctx, s.db, func(f *ItemFlag) []any {
		return []any{&f.KeyID, &f.Mode, &f.Question, &f.Turn, &f.Reason, &f.Runs, &f.AgreeShare, &f.GT, &f.Modal, &f.GTText, &f.ModalText}
	}, `SELECT key_id, oracle_mode, question, turn, reason, runs, agree_share, gt, modal, gt_text, modal_text
		FROM item_flags WHERE key_id = ? ORDER BY rowid LIMIT ?`, key, MaxFlagsPerCase)
}

// OutcomeDecision maps a reviewer's item-health outcome to the stored
// decision and note: keep → accept, drop → reject, fix → reject with the
// note prefixed FixPrefix. Any other value is returned unchanged.
func OutcomeDecision(outcome, note string) (string, string) {
	switch outcome {
	case OutcomeKeep:
		return reviewlog.DecisionAccept, note
	case OutcomeDrop:
		return reviewlog.DecisionReject, note
	case OutcomeFix:
		return reviewlog.DecisionReject, FixPrefix + strings.TrimPrefix(note, FixPrefix)
	}
	return outcome, note
}

// OutcomeOf is the outcome a stored decision shows: fix for a reject whose
// note starts with FixPrefix, keep for accept, drop for reject, else the
// decision itself (unsure, or "").
func OutcomeOf(decision, note string) string {
	switch {
	case decision == reviewlog.DecisionReject && strings.HasPrefix(note, strings.TrimSpace(FixPrefix)):
		return OutcomeFix
	case decision == reviewlog.DecisionReject:
		return OutcomeDrop
	case decision == reviewlog.DecisionAccept:
		return OutcomeKeep
	}
	return decision
}

// caseOutcome resolves a case's outcome: the resolved decision (§4) says
// keep (accept) or out (reject); a rejected case is fix when the deciding
// admin, or any rejecting reviewer, asked for a fix, else drop. Anything
// else (no decision, unsure, disputed) is pending.
func caseOutcome(cs *CaseState) string {
	ln := cs.Resolved()
	if ln == nil {
		return OutcomePending
	}
	switch ln.Decision {
	case reviewlog.DecisionAccept:
		return OutcomeKeep
	case reviewlog.DecisionReject:
		if cs.Admin != nil {
			return OutcomeOf(cs.Admin.Decision, cs.Admin.Note)
		}
		for _, a := range cs.Latest {
			if a != nil && OutcomeOf(a.Decision, a.Note) == OutcomeFix {
				return OutcomeFix
			}
		}
		return OutcomeDrop
	}
	return OutcomePending
}

// OutcomesHeader is the header of the file ExportOutcomes writes.
var OutcomesHeader = []string{"key_id", "oracle_mode", "question", "reason", "gt", "modal_answer", "outcome", "decision", "reviewers", "note"}

// ExportOutcomes writes one row per flagged question of an item-health
// round with its case's outcome (keep, fix, drop or pending) to path.
func (s *Store) ExportOutcomes(ctx context.Context, j *job.Job, path string) (int, error) {
	if !s.ItemHealthRound(ctx) {
		return 0, errors.New("not an item-health round (made without a flagged-items file)")
	}
	st, err := s.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	rows := [][]string{OutcomesHeader}
	for _, cs := range st {
		flags, err := s.ItemFlags(ctx, cs.Case.KeyID)
		if err != nil {
			return 0, err
		}
		out, dec, who, note := caseOutcome(cs), "", "", ""
		if ln := cs.Resolved(); ln != nil {
			dec, who, note = ln.Decision, strings.Join(ln.Reviewers, ";"), ln.Note
		}
		for _, f := range flags {
			if err := f.check(); err != nil { // a database made before the check
				return 0, fmt.Errorf("case %s: flagged item: %w", textsafe.OneLine(f.KeyID), err)
			}
			rows = append(rows, []string{f.KeyID, f.Mode, f.Question, f.Reason, f.GT, f.Modal, out, dec, who, note})
		}
	}
	return len(rows) - 1, atomicfile.WriteFile(j, path, csvRows(rows))
}

// Evidence is the flag's reason and agreement for the case page.
func (f ItemFlag) Evidence() string {
	s := f.Reason
	if n, err := strconv.Atoi(f.Runs); err == nil {
		share := f.AgreeShare
		if x, err := strconv.ParseFloat(share, 64); err == nil {
			share = strconv.Itoa(int(x*100+0.5)) + "%"
		}
		s += fmt.Sprintf(" (%s of %d runs agree)", share, n)
	}
	if f.Mode != "" {
		s += ", oracle " + f.Mode
	}
	return s
}
