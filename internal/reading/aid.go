package reading

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runs"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// The sequential aided design. On every turn the reader answers first on
// their own (the unaided answer); the page then shows the answer a model
// gave to the same question of the same record (from a finished run,
// copied into the database at init), and the reader confirms or changes
// theirs (the final answer, which the conversation goes on with). Both
// answers are final once given: the database refuses to change either
// (the triggers below), and the model's answer is shown only after the
// unaided answer is stored.
//
// aidSchema is version 1 of the reading database (migrations; studies
// made before the aided design get it on their first read-write open):
// the unaided answer's columns, the model's answers, and the triggers
// that keep given answers unchanged.
var aidSchema = []string{
	`ALTER TABLE turns ADD COLUMN unaided TEXT`,
	`ALTER TABLE turns ADD COLUMN unaided_ms INTEGER`,
	`ALTER TABLE turns ADD COLUMN aid_shown_ms INTEGER`,
	`CREATE TABLE IF NOT EXISTS aid (
		key_id TEXT NOT NULL,
		turn   TEXT NOT NULL,
		answer TEXT,          -- "Answer: 1,3", or NULL when the model gave none
		note   TEXT NOT NULL, -- why there is no answer ("" when there is one)
		PRIMARY KEY (key_id, turn)
	)`,
	// A given answer (unaided or final) and the time the model's answer
	// was shown never change, and the model's answer is never shown
	// before the unaided answer is stored.
	`CREATE TRIGGER IF NOT EXISTS turns_final BEFORE UPDATE ON turns
	WHEN (OLD.answer IS NOT NULL AND (NEW.answer IS NOT OLD.answer OR NEW.answered_ms IS NOT OLD.answered_ms))
	  OR (OLD.unaided IS NOT NULL AND (NEW.unaided IS NOT OLD.unaided OR NEW.unaided_ms IS NOT OLD.unaided_ms))
	  OR (OLD.aid_shown_ms IS NOT NULL AND NEW.aid_shown_ms IS NOT OLD.aid_shown_ms)
	  OR (NEW.aid_shown_ms IS NOT NULL AND NEW.unaided IS NULL)
	BEGIN SELECT RAISE(ABORT, 'a given answer cannot be changed'); END`,
	`CREATE TRIGGER IF NOT EXISTS turns_kept BEFORE DELETE ON turns
	WHEN OLD.answer IS NOT NULL OR OLD.unaided IS NOT NULL
	BEGIN SELECT RAISE(ABORT, 'a given answer cannot be deleted'); END`,
}

// addAidSchema adds aidSchema unless the database has it already: the
// releases before versions were recorded added it on every open, so a
// file of version 0 may hold it whole.
func addAidSchema(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('turns') WHERE name = 'aid_shown_ms'`).Scan(&n); err != nil || n == 1 {
		return err
	}
	for _, q := range aidSchema {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// Aid is the model run an aided study shows.
type Aid struct {
	Run   string // the run's name (its directory under the results)
	Model string // the model's label, as the page names it
	Dir   string // the run directory given to init (absolute)
}

// aidAnswer is a model's answer to one turn, or why it has none.
type aidAnswer struct {
	Text string // "Answer: 1,3"; "" when the model gave none
	Note string
}

// loadAid reads the run at dir and returns its answers to every asked
// turn of the selected records, keyed by record and turn. The run must be
// a finished model run (not marked unfinished; not a baseline policy's
// or the stand-in's unless allowBaseline; not a control, a human's), of
// the study's benchmark (its identity, or for a run made before
// identities were recorded its chexpercept.json hash, with a warning) and
// oracle mode, and hold every selected record; every answer is parsed
// again from the stored raw reply under the run's own parse rules and
// must be the one the run stores. A run that cannot be used is an
// *AidError.
func loadAid(dir string, bench *benchmark.Benchmark, oracle string, idx []int, allowBaseline bool) (*Aid, map[[2]string]aidAnswer, string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, "", err
	}
	if err := notModelFolder(dir, abs); err != nil {
		return nil, nil, "", err
	}
	run, err := runs.ReadRun(abs)
	if err != nil {
		return nil, nil, "", &AidError{Dir: dir, Err: err}
	}
	m := run.Manifest
	warning := ""
	switch id := m.BenchIdentity(); {
	case id.Known() && id != bench.Identity:
		return nil, nil, "", aidErrorf(dir, "the run is of benchmark %s, the study's is %s; give a run of this benchmark", id.Short(), bench.Identity.Short())
	case m.Dataset.SHA256 != bench.SHA256:
		return nil, nil, "", aidErrorf(dir, "the run is of benchmark %s, the study's is %s", results.ShortHash(m.Dataset.SHA256), results.ShortHash(bench.SHA256))
	case !id.Known():
		warning = fmt.Sprintf("aid run %s records no benchmark identity (made before identities were recorded): only its chexpercept.json is known to be the study's", dir)
	}
	if m.OracleMode != oracle {
		return nil, nil, "", aidErrorf(dir, "the run's oracle mode is %s, the study's %s (the model must have been asked the same questions)", m.OracleMode, oracle)
	}
	switch m.Kind {
	case results.KindHuman:
		return nil, nil, "", aidErrorf(dir, "a run of human answers, not of a model")
	case results.KindControl:
		return nil, nil, "", aidErrorf(dir, "an image control run (%s): the model was not shown the radiograph; give the model's own run", m.Control)
	case results.KindBaseline, results.KindRehearsal:
		if !allowBaseline {
			what := "a baseline policy's run"
			if m.Model.Policy != nil {
				what = fmt.Sprintf("the %s baseline policy's run", textsafe.OneLine(*m.Model.Policy))
			}
			if m.Kind == results.KindRehearsal {
				what = "a rehearsal run (chexpercept's stand-in server answered, not a model)"
			}
			return nil, nil, "", aidErrorf(dir, "%s, not a model's: readers would be aided by it; give a model run, or pass --aid-allow-baseline to study that deliberately", what)
		}
	}
	mode, err := parse.ParseMode(m.ParseMode)
	if err != nil {
		return nil, nil, "", &AidError{Dir: dir, Err: fmt.Errorf("%s: parse_mode: %w", rundir.ManifestFile, err)}
	}
	m.ParseMode = string(mode)
	byKey := make(map[string]*results.Record, len(run.Records))
	for _, r := range results.Latest(run.Records) {
		byKey[r.KeyID] = r
	}
	var missing []string
	out := map[[2]string]aidAnswer{}
	for _, i := range idx {
		rec := bench.Records[i]
		r, ok := byKey[rec.KeyID]
		if !ok {
			missing = append(missing, rec.KeyID)
			continue
		}
		again, err := runs.Reparse(m, r, rec)
		if err != nil {
			return nil, nil, "", &AidError{Dir: dir, Err: err}
		}
		if err := sameParse(r, again, m.ParseMode); err != nil {
			return nil, nil, "", &AidError{Dir: dir, Err: err}
		}
		for _, t := range again.Turns {
			out[[2]string{rec.KeyID, t.Turn}] = modelAnswer(&t)
		}
	}
	if len(missing) > 0 {
		return nil, nil, "", aidErrorf(dir, "the run lacks %d of the study's %d records (first: %s); finish or resume it first",
			len(missing), len(idx), textsafe.OneLine(missing[0]))
	}
	return &Aid{Run: m.RunName, Model: m.Model.Name, Dir: abs}, out, warning, nil
}

// notModelFolder refuses a model's folder (<results>/<run name>/, which
// report accepts) given where a run directory is wanted, naming the run
// directories inside it.
func notModelFolder(dir, abs string) error {
	if _, err := os.Lstat(filepath.Join(abs, rundir.ManifestFile)); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	found, _ := filepath.Glob(filepath.Join(abs, "oracle_*"))
	var runDirs []string
	for _, f := range found {
		if fi, err := os.Stat(filepath.Join(f, rundir.ManifestFile)); err == nil && fi.Mode().IsRegular() {
			runDirs = append(runDirs, textsafe.OneLine(filepath.Join(dir, filepath.Base(f))))
		}
	}
	if len(runDirs) == 0 {
		return nil
	}
	return aidErrorf(dir, "is a model folder, not a run directory; pass one of: %s", strings.Join(runDirs, ", "))
}

// sameParse checks that every turn of stored parses as again (the same
// record parsed again from its raw replies) does: the answer a reader is
// shown is the model's reply, not a number written over it.
func sameParse(stored, again *results.Record, mode string) error {
	for i := range stored.Turns {
		st := &stored.Turns[i]
		if st.Status != results.TurnAsked {
			continue
		}
		at := again.TurnByStep(st.Step)
		if at == nil {
			continue
		}
		if !sameInts(st.Parsed, at.Parsed) || !sameBool(st.ParseOK, at.ParseOK) || !sameBool(st.InRange, at.InRange) {
			return fmt.Errorf("%s: record %s turn %s stores parsed %s, but its raw reply parses as %s under the run's parse rules (%s): the run was changed after it was written; give the run as eval wrote it",
				rundir.ResultsFile, textsafe.OneLine(stored.KeyID), textsafe.OneLine(st.Turn), showInts(st.Parsed), showInts(at.Parsed), mode)
		}
	}
	return nil
}

func sameInts(a, b *[]int) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return slices.Equal(*a, *b)
}

func sameBool(a, b *bool) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func showInts(p *[]int) string {
	if p == nil {
		return "null"
	}
	return strings.ReplaceAll(fmt.Sprint(*p), " ", ",")
}

// AidError is a run given as a study's aid that the study cannot use.
type AidError struct {
	Dir string // as given
	Err error
}

func (e *AidError) Error() string { return "aid run " + e.Dir + ": " + e.Err.Error() }
func (e *AidError) Unwrap() error { return e.Err }

func aidErrorf(dir, format string, args ...any) error {
	return &AidError{Dir: dir, Err: fmt.Errorf(format, args...)}
}

// modelAnswer is what the page shows of a model's turn: its parsed
// options, or a plain reason when it gave none.
func modelAnswer(t *results.Turn) aidAnswer {
	switch {
	case t.Status == results.TurnSkipped:
		return aidAnswer{Note: "the model was not asked this question"}
	case t.Status != results.TurnAsked:
		return aidAnswer{Note: "the model's call failed; it gave no answer"}
	case t.Parsed == nil || t.ParseOK == nil || !*t.ParseOK || len(*t.Parsed) == 0:
		return aidAnswer{Note: "the model's reply named no option"}
	case t.InRange != nil && !*t.InRange:
		return aidAnswer{Note: "the model's reply named an option the question does not have"}
	}
	return aidAnswer{Text: parse.FormatAnswer(*t.Parsed)}
}

// storeAid writes the aid run's answers at init.
func storeAid(ctx context.Context, tx *sql.Tx, aid *Aid, answers map[[2]string]aidAnswer) error {
	for _, kv := range [][2]string{{"aid_run", aid.Run}, {"aid_model", aid.Model}, {"aid_dir", aid.Dir}} {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?)`, kv[0], kv[1]); err != nil {
			return err
		}
	}
	for k, a := range answers {
		var text any
		if a.Text != "" {
			text = a.Text
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO aid(key_id, turn, answer, note) VALUES(?,?,?,?)`, k[0], k[1], text, a.Note); err != nil {
			return err
		}
	}
	return nil
}

// aidOf reads the study's aid run from the meta table (nil: unaided).
func (s *Store) aidOf(ctx context.Context) (*Aid, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM meta WHERE key = 'aid_run'`).Scan(&n); err != nil || n == 0 {
		return nil, err
	}
	a := &Aid{}
	var err error
	for _, f := range []struct {
		key string
		dst *string
	}{{"aid_run", &a.Run}, {"aid_model", &a.Model}, {"aid_dir", &a.Dir}} {
		if *f.dst, err = s.meta(ctx, f.key); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// modelAnswerFor returns the aid run's answer to a turn of a record; a
// turn the run has no row for is reported as not asked.
func (s *Store) modelAnswerFor(ctx context.Context, key, turn string) (aidAnswer, error) {
	var text sql.NullString
	var note string
	err := s.db.QueryRowContext(ctx, `SELECT substr(answer, 1, ?), substr(note, 1, 200) FROM aid WHERE key_id = ? AND turn = ?`, maxAnswerBytes, key, turn).Scan(&text, &note)
	if errors.Is(err, sql.ErrNoRows) {
		return aidAnswer{Note: "the model was not asked this question"}, nil
	}
	if err != nil {
		return aidAnswer{}, err
	}
	return aidAnswer{Text: text.String, Note: note}, nil
}

// saveUnaided stores the unaided answer of a turn of an aided study.
func (s *Store) saveUnaided(ctx context.Context, readerID int64, pos, seq int, text string) error {
	now := s.now().UnixMilli()
	res, err := s.db.ExecContext(ctx, `INSERT INTO turns(reader_id, pos, seq, shown_ms, unaided, unaided_ms) VALUES(?,?,?,?,?,?)
		ON CONFLICT(reader_id, pos, seq) DO UPDATE SET unaided = excluded.unaided, unaided_ms = excluded.unaided_ms WHERE turns.unaided IS NULL`,
		readerID, pos, seq, now, text, now)
	return oneRow(res, err)
}

// markAidShown records when the model's answer was first shown; the
// unaided answer is then fixed for good (it already was).
func (s *Store) markAidShown(ctx context.Context, readerID int64, pos, seq int) error {
	_, err := s.db.ExecContext(ctx, `UPDATE turns SET aid_shown_ms = ? WHERE reader_id = ? AND pos = ? AND seq = ? AND unaided IS NOT NULL AND aid_shown_ms IS NULL`,
		s.now().UnixMilli(), readerID, pos, seq)
	return err
}

// ErrAidNotShown is returned for a final answer to a turn whose model
// answer has not been shown.
var ErrAidNotShown = errors.New("the model's answer to this question has not been shown yet")

// saveFinal stores the final answer of a turn whose model answer was shown.
func (s *Store) saveFinal(ctx context.Context, readerID int64, pos, seq int, text string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE turns SET answer = ?, answered_ms = ? WHERE reader_id = ? AND pos = ? AND seq = ?
		AND answer IS NULL AND unaided IS NOT NULL AND aid_shown_ms IS NOT NULL`, text, s.now().UnixMilli(), readerID, pos, seq)
	if err := oneRow(res, err); err != nil {
		return err
	}
	return nil
}

func oneRow(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return ErrAnswered
	}
	return nil
}

// optionText is an answer as the page shows it: each option with its
// label, "(2) Yes".
func optionText(answer string, opts []optionView) string {
	var parts []string
	for _, f := range strings.Split(strings.TrimPrefix(answer, "Answer: "), ",") {
		for _, o := range opts {
			if f == fmt.Sprint(o.N) {
				parts = append(parts, fmt.Sprintf("(%d) %s", o.N, o.Label))
			}
		}
	}
	if len(parts) == 0 {
		return answer
	}
	return strings.Join(parts, "; ")
}
