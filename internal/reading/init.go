package reading

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
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
	// Blocks > 0 makes a split-plot study: the readers and the records
	// are split into Blocks blocks (by the seed), and the readers of a
	// block read that block's records only, in every arm. 0: fully
	// crossed. One block is a split-plot study of one block: every
	// reader reads every record, as in a fully crossed study.
	Blocks int
	// Plan is the study's analysis plan (nil: none stated): its design,
	// readers and records, when given, must be the study's, and are
	// filled in from it when not.
	Plan *results.StudyPlan
	// Training > 0 gives each reader that many training records first:
	// records of the benchmark outside the study's selection (drawn by
	// the seed, the same for every reader), each turn followed by the
	// right answer, never exported. Unaided studies only.
	Training int
	Now      func() time.Time // nil: time.Now
	Log      io.Writer        // warnings (nil: discarded)
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

// DesignSplitPlot is the design of a split-plot study in the database's
// meta table; a study without a design is fully crossed.
const DesignSplitPlot = results.DesignSplitPlot

// blockKey is the meta key of a reader's block (1-based) in a split-plot
// study.
func blockKey(reader string) string { return "block/" + reader }

// dealt splits n items into blocks by the seed: a shuffle of 0..n−1
// (seeded by the seed and what), dealt round-robin, so every block gets
// ⌊n/B⌋ or ⌈n/B⌉ items. It returns each item's block (0-based).
func dealt(seed uint64, what string, n, blocks int) []int {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	rng.Shuffle(rng.New(fmt.Sprintf("chexpercept/read-blocks/%d/%s", seed, what)), perm)
	block := make([]int, n)
	for pos, i := range perm {
		block[i] = pos % blocks
	}
	return block
}

// readerBlocks is each reader's block (0-based, by reader index).
func readerBlocks(seed uint64, readers, blocks int) []int {
	return dealt(seed, "readers", readers, blocks)
}

// recordBlocks are the selected records (benchmark indexes, in selection
// order) of each block.
func recordBlocks(seed uint64, idx []int, blocks int) [][]int {
	out := make([][]int, blocks)
	for n, b := range dealt(seed, "records", len(idx), blocks) {
		out[b] = append(out[b], idx[n])
	}
	return out
}

// trainingRecords draws the study's training records: o.Training records
// of the benchmark outside the selection idx, by the seed, in benchmark
// order.
func trainingRecords(o InitOptions, idx []int) ([]int, error) {
	if o.Training == 0 {
		return nil, nil
	}
	if o.Training < 0 {
		return nil, fmt.Errorf("training %d: want 0 or more records", o.Training)
	}
	if o.Aid != "" {
		return nil, errors.New("training records in a sequential aided study: not supported (training shows the right answer after each turn, an aided study the model's)")
	}
	selected := make(map[int]bool, len(idx))
	for _, i := range idx {
		selected[i] = true
	}
	var rest []int
	for i := range o.Bench.Records {
		if !selected[i] {
			rest = append(rest, i)
		}
	}
	if len(rest) < o.Training {
		return nil, fmt.Errorf("training %d: the benchmark has %d records outside the study's %d (training records are never study records; sample fewer)", o.Training, len(rest), len(idx))
	}
	rng.Shuffle(rng.New(fmt.Sprintf("chexpercept/read-training/%d", o.Seed)), rest)
	out := slices.Clone(rest[:o.Training])
	slices.Sort(out)
	return out, nil
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
	if o.Blocks < 0 || (o.Blocks > 0 && o.Readers < 2*o.Blocks) {
		return nil, 0, fmt.Errorf("blocks %d with %d readers: a split-plot study needs at least 2 readers a block", o.Blocks, o.Readers)
	}
	sel := results.Selection{Sample: o.Sample, Seed: o.Seed}
	idx, err := results.Select(o.Bench.Records, sel)
	if err != nil {
		return nil, 0, err
	}
	if len(idx) == 0 {
		return nil, 0, errors.New("no record selected")
	}
	if o.Blocks > 0 && len(idx) < 2*o.Blocks {
		return nil, 0, fmt.Errorf("blocks %d with %d records: a split-plot study needs at least 2 records a block", o.Blocks, len(idx))
	}
	training, err := trainingRecords(o, idx)
	if err != nil {
		return nil, 0, err
	}
	var plan *results.StudyPlan
	if o.Plan != nil {
		p := *o.Plan
		if err := checkPlan(&p); err != nil {
			return nil, 0, fmt.Errorf("plan: %w", err)
		}
		if err := fitPlan(&p, o, len(idx)); err != nil {
			return nil, 0, err
		}
		plan = &p
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
	if o.Blocks > 0 {
		meta["design"], meta["blocks"] = DesignSplitPlot, strconv.Itoa(o.Blocks)
		for i, b := range readerBlocks(o.Seed, o.Readers, o.Blocks) {
			meta[blockKey(ReaderName(i+1))] = strconv.Itoa(b + 1)
		}
	}
	if plan != nil {
		meta["plan"] = planJSON(plan)
	}
	if o.Training > 0 {
		meta["training"] = strconv.Itoa(o.Training)
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
		creds, err = addAccounts(tx, o, idx, training)
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
func addAccounts(tx *sql.Tx, o InitOptions, idx, training []int) ([]Credential, error) {
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
		if o.Blocks > 0 {
			order = recordBlocks(o.Seed, idx, o.Blocks)[readerBlocks(o.Seed, o.Readers, o.Blocks)[i-1]]
		}
		rng.Shuffle(rng.New(fmt.Sprintf("chexpercept/read-order/%d/%s", o.Seed, name)), order)
		// The training records come first, in the same order for
		// every reader.
		order = append(slices.Clone(training), order...)
		for pos, bi := range order {
			if _, err := tx.Exec(`INSERT INTO records(reader_id, pos, bench_index, key_id) VALUES(?,?,?,?)`,
				id, pos, bi, o.Bench.Records[bi].KeyID); err != nil {
				return nil, err
			}
		}
	}
	return creds, nil
}
