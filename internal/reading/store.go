// Package reading is the reading study: human readers (radiologists) take
// the benchmark in the browser under the same protocol as the models, and
// their answers become run directories that the scorer, the report and
// every other tool read like a model's.
//
// The model of the study: `read init` selects records of a benchmark
// (every record, or a stratified sample as `eval --sample` draws it) and
// gives every reader the same records, each in an order shuffled per
// reader. A reader's conversation with one record is the protocol's
// (package protocol), replayed from the reader's stored answers: the
// answers so far are fed to protocol.Run as the "model's" replies, and the
// first turn without an answer is the one the page shows, with exactly the
// text and images a model would get there (oracle prefixes included).
// Scoring therefore happens where it happens for models, on the server,
// and the browser never receives a ground truth or a verdict: only the
// protocol's own oracle texts, which the oracle mode shows to models too.
//
// Every answer is committed to the SQLite database (WAL, synchronous FULL)
// before the server acknowledges it; an answered turn can never be
// changed, because the protocol is sequential. `read export` replays each
// reader's finished records into a run directory (provider "human", model
// = the reader's name) through the same writer as merge and rescore.
package reading

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/accountdb"
	"github.com/chexpercept/chexpercept/internal/appdb"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/results"
)

// schemaID marks a reading database; Open refuses other SQLite files.
const schemaID = "chexpercept-reading/1"

// schema: the meta table, the accounts ("readers") and sessions of the
// web layer, and the study's own tables.
var schema = appdb.MetaSchema + (&Store{}).accounts().Schema() + `
CREATE TABLE records (
	reader_id   INTEGER NOT NULL REFERENCES readers(id),
	pos         INTEGER NOT NULL,
	bench_index INTEGER NOT NULL,
	key_id      TEXT NOT NULL,
	PRIMARY KEY (reader_id, pos)
);
CREATE TABLE turns (
	reader_id   INTEGER NOT NULL REFERENCES readers(id),
	pos         INTEGER NOT NULL,
	seq         INTEGER NOT NULL,
	shown_ms    INTEGER NOT NULL,
	answer      TEXT,
	answered_ms INTEGER,
	PRIMARY KEY (reader_id, pos, seq)
);
`

// AdminName is the reserved name of the admin account (progress view).
const AdminName = "admin"

// Store is an open reading database.
type Store struct {
	db   *appdb.DB
	Path string
	now  func() time.Time
}

// dbSpec is the reading database: recognised by its schema id, version 1
// with the aided design's columns, synchronous(FULL) so that an
// acknowledged answer survives even a power loss, not only a killed
// server.
func dbSpec() appdb.Spec {
	return appdb.Spec{Kind: "reading db", Name: "chexpercept reading database", SchemaID: schemaID,
		Schema:      schema,
		Migrations:  []appdb.Migration{{Name: "adding the aided-study columns", Up: addAidSchema}},
		Synchronous: "FULL"}
}

// create starts a new reading database on the job j, made under a
// temporary name until Init publishes it (appdb.Create); an existing file
// is never overwritten.
func create(j *job.Job, path string) (*Store, *appdb.Creation, error) {
	c, err := appdb.Create(j, path, dbSpec())
	if err != nil {
		return nil, nil, err
	}
	return &Store{db: c.DB(), Path: path, now: time.Now}, c, nil
}

// Open opens a reading database made by `read init`: another SQLite file
// (a review or cache database named by mistake) is recognised before
// anything writes to it and left as it was, and a study made by an
// earlier release gets the columns of this one (appdb.Open).
func Open(path string) (*Store, error) {
	db, err := appdb.Open(path, dbSpec(), appdb.ReadWrite)
	if err != nil {
		return nil, err
	}
	return &Store{db: db, Path: path, now: time.Now}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) meta(ctx context.Context, key string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("reading db %s: meta %q missing", s.Path, key)
	}
	return v, err
}

// Study is what init recorded: the benchmark and the protocol settings.
type Study struct {
	BenchDir    string // absolute
	BenchSHA256 string
	// Identity is the benchmark's identity at init (zero in studies
	// made before it was recorded).
	Identity  benchmark.Identity
	Oracle    string
	Parse     string
	Sample    *int
	Seed      uint64
	Records   int // records per reader
	CreatedAt string
	Name      string // the study's name in the runs' manifests
	Aid       *Aid   // the model run shown (nil: an unaided study)
	// Blocks is the number of blocks of a split-plot study (0: fully
	// crossed); ReaderBlock each reader's block, "1" to Blocks.
	Blocks      int
	ReaderBlock map[string]string
	// Plan is the analysis plan fixed at init (nil: none).
	Plan *results.StudyPlan
	// Training is the number of training records each reader reads
	// first (positions 0 to Training − 1): never exported.
	Training int
}

// identity reads the benchmark identity recorded at init: the zero
// Identity for a study made before it was recorded.
func (s *Store) identity(ctx context.Context) (benchmark.Identity, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM meta WHERE key = 'benchmark_identity_sha256'`).Scan(&n); err != nil || n == 0 {
		return benchmark.Identity{}, err
	}
	var id benchmark.Identity
	var err error
	if id.File, err = s.meta(ctx, "benchmark_identity_file"); err != nil {
		return id, err
	}
	id.SHA256, err = s.meta(ctx, "benchmark_identity_sha256")
	return id, err
}

// Study reads the study's settings.
func (s *Store) Study(ctx context.Context) (*Study, error) {
	st := &Study{}
	var err error
	get := func(k string) string {
		if err != nil {
			return ""
		}
		var v string
		v, err = s.meta(ctx, k)
		return v
	}
	st.BenchDir, st.BenchSHA256, st.Oracle, st.Parse, st.CreatedAt = get("benchmark"), get("benchmark_sha256"), get("oracle"), get("parse"), get("created_at")
	seed, sample, n := get("seed"), get("sample"), get("records")
	if err != nil {
		return nil, err
	}
	// Studies made before studies had names are named by their file.
	var named int
	if err = s.db.QueryRowContext(ctx, `SELECT count(*) FROM meta WHERE key = 'study'`).Scan(&named); err != nil {
		return nil, err
	}
	st.Name = strings.TrimSuffix(filepath.Base(s.Path), filepath.Ext(s.Path))
	if named == 1 {
		if st.Name, err = s.meta(ctx, "study"); err != nil {
			return nil, err
		}
	}
	if st.Identity, err = s.identity(ctx); err != nil {
		return nil, err
	}
	if st.Aid, err = s.aidOf(ctx); err != nil {
		return nil, err
	}
	if err := s.design(ctx, st); err != nil {
		return nil, err
	}
	var trained int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM meta WHERE key = 'training'`).Scan(&trained); err != nil {
		return nil, err
	}
	if trained == 1 {
		v, err := s.meta(ctx, "training")
		if err != nil {
			return nil, err
		}
		if st.Training, err = strconv.Atoi(v); err != nil || st.Training < 0 {
			return nil, fmt.Errorf("reading db %s: meta training %q: want a number of records", s.Path, v)
		}
	}
	var planned int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM meta WHERE key = 'plan'`).Scan(&planned); err != nil {
		return nil, err
	}
	if planned == 1 {
		v, err := s.meta(ctx, "plan")
		if err != nil {
			return nil, err
		}
		st.Plan = &results.StudyPlan{}
		if err := json.Unmarshal([]byte(v), st.Plan); err != nil {
			return nil, fmt.Errorf("reading db %s: meta plan: %w", s.Path, err)
		}
	}
	if st.Seed, err = strconv.ParseUint(seed, 10, 64); err != nil {
		return nil, fmt.Errorf("reading db %s: meta seed: %w", s.Path, err)
	}
	if st.Records, err = strconv.Atoi(n); err != nil {
		return nil, fmt.Errorf("reading db %s: meta records: %w", s.Path, err)
	}
	if sample != "" {
		k, err := strconv.Atoi(sample)
		if err != nil {
			return nil, fmt.Errorf("reading db %s: meta sample: %w", s.Path, err)
		}
		st.Sample = &k
	}
	return st, nil
}

// design reads a split-plot study's blocks (a study made before designs
// were recorded, or without one, is fully crossed).
func (s *Store) design(ctx context.Context, st *Study) error {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM meta WHERE key = 'design'`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	d, err := s.meta(ctx, "design")
	if err != nil {
		return err
	}
	if d != DesignSplitPlot {
		return fmt.Errorf("reading db %s: meta design %q: want %q", s.Path, d, DesignSplitPlot)
	}
	b, err := s.meta(ctx, "blocks")
	if err != nil {
		return err
	}
	if st.Blocks, err = strconv.Atoi(b); err != nil || st.Blocks < 1 {
		return fmt.Errorf("reading db %s: meta blocks %q: want a number of blocks", s.Path, b)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT key, value FROM meta WHERE key LIKE 'block/%'`)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	st.ReaderBlock = map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		st.ReaderBlock[strings.TrimPrefix(k, "block/")] = v
	}
	return rows.Err()
}

// Reader is an account: a reader or the admin.
type Reader struct {
	ID    int64
	Name  string
	Admin bool
}

// Readers lists the readers (not the admin) by id.
func (s *Store) Readers(ctx context.Context) ([]Reader, error) {
	return appdb.Rows(ctx, s.db, func(r *Reader) []any { return []any{&r.ID, &r.Name} },
		`SELECT id, name FROM readers WHERE is_admin = 0 ORDER BY id`)
}

// Item is one record of a reader's list.
type Item struct {
	Pos        int // 0-based position in the reader's order
	BenchIndex int
	KeyID      string
}

// Items lists a reader's records in the reader's order.
func (s *Store) Items(ctx context.Context, readerID int64) ([]Item, error) {
	return appdb.Rows(ctx, s.db, func(it *Item) []any { return []any{&it.Pos, &it.BenchIndex, &it.KeyID} },
		`SELECT pos, bench_index, key_id FROM records WHERE reader_id = ? ORDER BY pos`, readerID)
}

// Answer is one stored turn of a reader: when it was first shown and, once
// answered, the answer text ("Answer: 1" or "Answer: 1,3") and its time.
type Answer struct {
	Seq        int
	ShownMS    int64
	Text       string // "" while unanswered
	AnsweredMS int64
	// In an aided study: the answer given before the model's answer was
	// shown, its time, and when the model's answer was first shown (0:
	// not yet). Text is then the final answer.
	Unaided    string
	UnaidedMS  int64
	AidShownMS int64
}

// maxAnswerBytes bounds a stored answer. The server only writes
// parse.FormatAnswer's "Answer: 1,3"; anything longer was written by something
// else, and is refused rather than read and scored.
const maxAnswerBytes = 4096

// Answers lists the stored turns of one record of a reader, by seq.
func (s *Store) Answers(ctx context.Context, readerID int64, pos int) ([]Answer, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, shown_ms, substr(answer, 1, ?), max(COALESCE(length(CAST(answer AS BLOB)), 0), COALESCE(length(CAST(unaided AS BLOB)), 0)), answered_ms,
		substr(unaided, 1, ?), unaided_ms, aid_shown_ms
		FROM turns WHERE reader_id = ? AND pos = ? ORDER BY seq`, maxAnswerBytes+1, maxAnswerBytes+1, readerID, pos)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Answer
	for rows.Next() {
		var a Answer
		var text, unaided sql.NullString
		var size, at, unaidedAt, aidAt sql.NullInt64
		if err := rows.Scan(&a.Seq, &a.ShownMS, &text, &size, &at, &unaided, &unaidedAt, &aidAt); err != nil {
			return nil, err
		}
		a.Unaided, a.UnaidedMS, a.AidShownMS = unaided.String, unaidedAt.Int64, aidAt.Int64
		if size.Int64 > maxAnswerBytes {
			return nil, fmt.Errorf("reading db %s: reader %d, record %d, turn %d: the stored answer is %d bytes (at most %d); the database was changed outside chexpercept",
				s.Path, readerID, pos, a.Seq, size.Int64, maxAnswerBytes)
		}
		a.Text, a.AnsweredMS = text.String, at.Int64
		out = append(out, a)
	}
	return out, rows.Err()
}

// lastStarted is the position of the last record the reader has a turn
// of (0 when none): records are read in order, so every record before it
// is finished.
func (s *Store) lastStarted(ctx context.Context, readerID int64) (int, error) {
	var last int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(pos), 0) FROM turns WHERE reader_id = ?`, readerID).Scan(&last)
	return last, err
}

// markShown records when a turn was first shown (later views keep the
// first time, so a reload does not reset the clock). Only an aided
// study writes it on display; an unaided one keeps the time with the
// reader's place and stores it with the answer (saveAnswer).
func (s *Store) markShown(ctx context.Context, readerID int64, pos, seq int) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO turns(reader_id, pos, seq, shown_ms) VALUES(?,?,?,?) ON CONFLICT DO NOTHING`,
		readerID, pos, seq, s.now().UnixMilli())
	return err
}

// ErrAnswered is returned for a second answer to a turn.
var ErrAnswered = errors.New("this question was already answered; answers cannot be changed")

// saveAnswer stores the answer of an unanswered turn, given at atMS and
// first shown at shownMS, and commits it: one statement, whatever was
// stored of the turn before. A display time already stored (by a server
// that wrote it on display) is kept.
func (s *Store) saveAnswer(ctx context.Context, readerID int64, pos, seq int, text string, shownMS, atMS int64) error {
	res, err := s.db.ExecContext(ctx, `INSERT INTO turns(reader_id, pos, seq, shown_ms, answer, answered_ms) VALUES(?,?,?,?,?,?)
		ON CONFLICT(reader_id, pos, seq) DO UPDATE SET answer = excluded.answer, answered_ms = excluded.answered_ms WHERE turns.answer IS NULL`,
		readerID, pos, seq, shownMS, text, atMS)
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

// accounts is the store's accounts and sessions for the web layer.
func (s *Store) accounts() *accountdb.Backend {
	return &accountdb.Backend{DB: s.db, Accounts: "readers", AccountColumn: "reader_id", Now: func() time.Time { return s.now() }}
}
