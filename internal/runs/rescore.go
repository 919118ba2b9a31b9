package runs

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// RescoreOptions configure Rescore.
type RescoreOptions struct {
	Mode  parse.Mode           // reference or strict
	Bench *benchmark.Benchmark // the benchmark of the source run
	Force bool                 // replace an existing target run
	Now   func() time.Time     // nil means time.Now
	Job   *job.Job             // the command's job: its temporary files and commit point (nil: none)
}

// RescoreReport says what a rescore did.
type RescoreReport struct {
	Dir           string // the new run directory
	RunName       string
	Records       int
	TurnsRescored int
	LabelsChanged int  // asked turns whose correctness changed
	Oracle        bool // oracle run: only labels changed, not the conversation
}

// RescoredRunName is the run name of a rescore's output: the source's
// with "_strict" (mode strict) or "_rescored" (otherwise) appended.
func RescoredRunName(src string, mode parse.Mode) string {
	if mode == parse.ModeStrict {
		return src + "_strict"
	}
	return src + "_rescored"
}

// Rescore re-parses the finished run in srcDir
// (<results>/<run name>/oracle_<mode>/) and writes a new run directory
// <results>/<new run name>/oracle_<mode>/ with every file of §9.1. The
// source is only read. The last line per key_id is rescored; the new
// results.jsonl holds those lines in index order. It stops with ctx's
// error once ctx ends (checked at every record) before it writes.
func Rescore(ctx context.Context, srcDir string, opts RescoreOptions) (*RescoreReport, error) {
	if opts.Mode != parse.ModeReference && opts.Mode != parse.ModeStrict {
		return nil, fmt.Errorf("unknown parse mode %q (want reference or strict)", opts.Mode)
	}
	abs, run, err := readRescoreSource(srcDir, opts.Bench)
	if err != nil {
		return nil, err
	}
	oracleDir := filepath.Base(abs)
	newName := RescoredRunName(filepath.Base(filepath.Dir(abs)), opts.Mode)
	// A control run's rescore is the control of the model run's rescore:
	// <run>_<control> becomes <run>_strict_<control>, so the two pair.
	if c := run.Manifest.Control; c != "" {
		if base, ok := strings.CutSuffix(filepath.Base(filepath.Dir(abs)), "_"+string(c)); ok {
			newName = results.ControlRunName(RescoredRunName(base, opts.Mode), c)
		}
	}
	if err := results.CheckRunName(newName); err != nil {
		return nil, fmt.Errorf("%w (rename the source run's folder)", err)
	}
	dst := filepath.Join(filepath.Dir(filepath.Dir(abs)), newName, oracleDir)
	if err := CheckTarget(dst, opts.Force); err != nil {
		return nil, err
	}
	rep := &RescoreReport{Dir: dst, RunName: newName, Oracle: run.Manifest.OracleMode != string(protocol.OracleNone)}
	out, err := rescoreRecords(ctx, run, srcDir, opts, rep)
	if err != nil {
		return nil, err
	}
	rep.Records = len(out)

	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	benchAbs, err := filepath.Abs(opts.Bench.Dir)
	if err != nil {
		return nil, err
	}
	m := *run.Manifest
	m.CreatedAt = now().UTC().Format(time.RFC3339)
	m.RunName = newName
	m.ParseMode = string(opts.Mode)
	m.RescoredFrom = &abs
	m.Dataset.Path = benchAbs // the benchmark the run's files now point to
	selected := len(out)
	if m.SelectedRecords > 0 {
		selected = m.SelectedRecords
	}
	// The answers, their usage and the time they took come from the
	// source run, so its wall time is carried over.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := WriteRun(opts.Job, dst, &m, out, selected, rundir.WallTime(abs)); err != nil {
		return nil, err
	}
	return rep, nil
}

// readRescoreSource checks that srcDir is a finished, unsharded run
// directory of bench and reads it; abs is its absolute path.
func readRescoreSource(srcDir string, bench *benchmark.Benchmark) (abs string, run *Run, err error) {
	abs, err = filepath.Abs(srcDir)
	if err != nil {
		return "", nil, err
	}
	abs = filepath.Clean(abs)
	oracleDir := filepath.Base(abs)
	if strings.HasPrefix(oracleDir, "shard-") {
		return "", nil, fmt.Errorf("%s is a shard folder, not a run directory; merge the shards first (chexpercept merge)", srcDir)
	}
	if !strings.HasPrefix(oracleDir, "oracle_") {
		return "", nil, fmt.Errorf("%s: a run directory is <results>/<run name>/oracle_<mode>/; this folder is named %q", srcDir, oracleDir)
	}
	if run, err = ReadRun(abs); err != nil {
		return "", nil, err
	}
	if len(run.Records) == 0 {
		return "", nil, rundir.NoRecordsError(filepath.Join(srcDir, rundir.ResultsFile))
	}
	mfile := filepath.Join(srcDir, rundir.ManifestFile)
	if run.Manifest.Selection.Shard != nil {
		return "", nil, fmt.Errorf("%s: the run is a shard (selection.shard is set); merge the shards first", mfile)
	}
	if mode := run.Manifest.OracleMode; "oracle_"+mode != oracleDir {
		return "", nil, fmt.Errorf("%s: oracle_mode %q does not match the folder name %q", mfile, mode, oracleDir)
	}
	if err := checkBenchmark(run.Manifest, mfile, bench); err != nil {
		return "", nil, err
	}
	return abs, run, nil
}

// rescoreRecords re-parses the last line per key_id of run and counts
// the turns rescored and the labels changed into rep.
func rescoreRecords(ctx context.Context, run *Run, srcDir string, opts RescoreOptions, rep *RescoreReport) ([]*results.Record, error) {
	file := filepath.Join(srcDir, rundir.ResultsFile)
	var out []*results.Record
	for _, r := range results.Latest(run.Records) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		br := opts.Bench.Lookup(r.KeyID)
		if br == nil {
			return nil, fmt.Errorf("%s: record %s is not in the benchmark %s", file, r.KeyID, opts.Bench.Dir)
		}
		nr, err := reparse(run.Manifest, r, br, opts.Mode)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for i := range nr.Turns {
			if nr.Turns[i].Status != results.TurnAsked {
				continue
			}
			rep.TurnsRescored++
			if old := r.TurnByStep(nr.Turns[i].Step); old != nil && !sameBoolPtr(old.Correct, nr.Turns[i].Correct) {
				rep.LabelsChanged++
			}
		}
		out = append(out, nr)
	}
	return out, nil
}

// Reparse is r (a record of the run whose manifest is m) with every asked
// turn parsed again from its stored raw reply under the run's own parse
// rules: its parse mode and its model's quirks. A run as eval wrote it
// re-parses to the answers it stores.
func Reparse(m *results.Manifest, r *results.Record, br *benchmark.Record) (*results.Record, error) {
	return reparse(m, r, br, parse.Mode(m.ParseMode))
}

// reparse is Reparse under the parse mode given.
func reparse(m *results.Manifest, r *results.Record, br *benchmark.Record, mode parse.Mode) (*results.Record, error) {
	glm := slices.Contains(m.Model.Quirks, registry.QuirkGLMBoxUnwrap)
	return protocol.Rescore(r, br, mode, glm)
}

func sameBoolPtr(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
