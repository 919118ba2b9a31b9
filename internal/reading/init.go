package reading

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/webapp"
)

// MaxReaders bounds --readers.
const MaxReaders = 1000

// InitOptions are `read init`'s settings.
type InitOptions struct {
	Bench   *benchmark.Benchmark
	DB      string
	Readers int
	Sample  *int   // nil: every record
	Seed    uint64 // sample and order seed
	Oracle  protocol.OracleMode
	// Study names the study in the runs' manifests ("" : the database
	// file's name without its extension).
	Study string
	// Aid is a model run directory: a sequential aided study shows that
	// model's answer after each unaided answer ("": an unaided study).
	Aid string
	// AidAllowBaseline accepts as the aid a run of a baseline policy (or
	// of chexpercept's stand-in server), which is refused otherwise:
	// the oracle policy's answers are the ground truth.
	AidAllowBaseline bool
	Now              func() time.Time // nil: time.Now
	Log              io.Writer        // warnings (nil: discarded)
	// Deliver is given the credentials once the database is whole under
	// its temporary name, before it is published: the tokens are out
	// before the database can be used, and when Deliver fails (the tokens
	// could not be printed) the database is abandoned, not published.
	// nil: the credentials are only returned.
	Deliver func([]Credential) error
	// Job is the command's job: the database being made is registered
	// on it, and publishing it is the job's commit point (nil: no job).
	Job *job.Job
}

// Credential is one account's sign-in token, shown once.
type Credential struct {
	Name, Token string
}

// ReaderName is the name of the i-th reader (1-based).
func ReaderName(i int) string { return "reader" + strconv.Itoa(i) }

// openSums reads the benchmark's SHA256SUMS, checks its JSON files and
// sets b.Identity (benchdir.OpenSums). A benchmark without one gives a
// nil Sums and a warning line.
func openSums(b *benchmark.Benchmark) (*benchdir.Sums, string, error) {
	sums, err := benchdir.OpenSums(b)
	if errors.Is(err, benchdir.ErrNoSums) {
		return nil, "benchmark " + err.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	return sums, "", nil
}

// Init creates the reading database: the selected records (eval's
// selection, so `eval --sample K --sample-seed S` asks the same ones), each
// reader's order (a shuffle seeded by the seed and the reader's name) and
// the accounts. It returns the readers' credentials, then the admin's,
// which it gives to o.Deliver before it publishes the database. Once ctx
// ends (checked at every record and between the steps) it stops with
// ctx's error and leaves nothing; publishing the database is o.Job's
// commit point.
func Init(ctx context.Context, o InitOptions) (creds []Credential, records int, err error) {
	if o.Readers < 1 || o.Readers > MaxReaders {
		return nil, 0, fmt.Errorf("readers %d: want 1 to %d", o.Readers, MaxReaders)
	}
	if _, err := protocol.ParseOracleMode(string(o.Oracle)); err != nil {
		return nil, 0, err
	}
	sel := results.Selection{Sample: o.Sample, Seed: o.Seed}
	idx, err := results.Select(o.Bench.Records, sel)
	if err != nil {
		return nil, 0, err
	}
	if len(idx) == 0 {
		return nil, 0, errors.New("no record selected")
	}
	sums, warning, err := openSums(o.Bench)
	if err != nil {
		return nil, 0, err
	}
	if warning != "" && o.Log != nil {
		// Said once the study exists: a refused init says only why.
		defer func() {
			if err == nil {
				fmt.Fprintf(o.Log, "warning: %s\n", warning)
			}
		}()
	}
	// Every selected record must be plannable: a record the protocol
	// cannot lay out would stop every reader at it. Its images must be
	// the build's: a study never starts on a changed benchmark.
	checked := map[string]bool{}
	for _, i := range idx {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		plan, err := protocol.Plan(o.Bench.Records[i], o.Bench.Dir)
		if err != nil {
			return nil, 0, err
		}
		for _, rel := range protocol.ImagesToSend(plan) {
			if sums == nil || checked[rel] {
				continue
			}
			checked[rel] = true
			if err := sums.CheckFile(rel); err != nil {
				return nil, 0, err
			}
		}
	}
	var aid *Aid
	var aidAnswers map[[2]string]aidAnswer
	if o.Aid != "" {
		var aidWarning string
		if aid, aidAnswers, aidWarning, err = loadAid(o.Aid, o.Bench, string(o.Oracle), idx, o.AidAllowBaseline); err != nil {
			return nil, 0, err
		}
		if aidWarning != "" && o.Log != nil {
			defer func() {
				if err == nil {
					fmt.Fprintf(o.Log, "warning: %s\n", aidWarning)
				}
			}()
		}
	}
	study := o.Study
	if study == "" {
		study = strings.TrimSuffix(filepath.Base(o.DB), filepath.Ext(o.DB))
	}
	benchAbs, err := filepath.Abs(o.Bench.Dir)
	if err != nil {
		return nil, 0, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	s, c, err := create(o.Job, o.DB)
	if err != nil {
		return nil, 0, err
	}
	published := false
	defer func() {
		if !published { // a refused init leaves nothing behind
			c.Abandon()
		}
	}()
	meta := map[string]string{
		"schema": schemaID, "benchmark": benchAbs, "benchmark_sha256": o.Bench.SHA256,
		"benchmark_identity_file": o.Bench.Identity.File, "benchmark_identity_sha256": o.Bench.Identity.SHA256,
		"oracle": string(o.Oracle), "parse": string(parse.ModeReference), "seed": strconv.FormatUint(o.Seed, 10),
		"records": strconv.Itoa(len(idx)), "created_at": now().UTC().Format(time.RFC3339), "study": study,
	}
	meta["sample"] = "" // every record
	if o.Sample != nil {
		meta["sample"] = strconv.Itoa(*o.Sample)
	}
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		for k, v := range meta {
			if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?)`, k, v); err != nil {
				return err
			}
		}
		if aid != nil {
			if err := storeAid(ctx, tx, aid, aidAnswers); err != nil {
				return err
			}
		}
		creds, err = addAccounts(tx, o, idx)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("reading db %s: %w", o.DB, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if o.Deliver != nil {
		if err := o.Deliver(creds); err != nil {
			return nil, 0, err
		}
	}
	// Publishing makes the study the command's output.
	if err := o.Job.Commit(); err != nil {
		return nil, 0, fmt.Errorf("reading db %s: %w", o.DB, err)
	}
	published = true // Publish removes what it could not publish
	if err := c.Publish(); err != nil {
		return nil, 0, err
	}
	return creds, len(idx), nil
}

// addAccounts adds the readers, each with the selected records in an
// order of their own (a shuffle seeded by the seed and the reader's
// name), then the admin, and returns their credentials in that order.
func addAccounts(tx *sql.Tx, o InitOptions, idx []int) ([]Credential, error) {
	var creds []Credential
	for i := 1; i <= o.Readers+1; i++ {
		name, admin := ReaderName(i), false
		if i > o.Readers {
			name, admin = AdminName, true
		}
		tok, err := webapp.NewToken()
		if err != nil {
			return nil, err
		}
		res, err := tx.Exec(`INSERT INTO readers(name, token_sha256, is_admin) VALUES(?, ?, ?)`, name, webapp.TokenHash(tok), admin)
		if err != nil {
			return nil, err
		}
		creds = append(creds, Credential{Name: name, Token: tok})
		if admin {
			break
		}
		id, _ := res.LastInsertId()
		order := append([]int(nil), idx...)
		rng.Shuffle(rng.New(fmt.Sprintf("chexpercept/read-order/%d/%s", o.Seed, name)), order)
		for pos, bi := range order {
			if _, err := tx.Exec(`INSERT INTO records(reader_id, pos, bench_index, key_id) VALUES(?,?,?,?)`,
				id, pos, bi, o.Bench.Records[bi].KeyID); err != nil {
				return nil, err
			}
		}
	}
	return creds, nil
}
