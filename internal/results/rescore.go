package results

// The run-directory tools (rescore, merge, import-reference) read and
// write whole run directories (spec protocol.md §9.1). They keep the
// runner's manifest.json as an ordered JSON tree and change only the
// members they must, so every other setting passes through byte for byte.
// Work that belongs to packages importing this one (re-parsing a record
// with the protocol engine, applying a selection) is passed in as a
// function by the caller.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir"
)

// Manifest members the tools read or rewrite (the runner's manifest.json).
const (
	mCreatedAt       = "created_at"
	mDataset         = "dataset"
	mPath            = "path"
	mSHA256          = "sha256"
	mSelection       = "selection"
	mShard           = "shard"
	mSelectionSHA256 = "selection_sha256"
	mSelectedRecords = "selected_records"
	mKeysSHA256      = "keys_sha256"
	mRunName         = "run_name"
	mModel           = "model"
	mOracleMode      = "oracle_mode"
	mParseMode       = "parse_mode"
	mRescoredFrom    = "rescored_from"
)

// GLMBoxUnwrap is the registry quirk that enables parse rule A0.
const GLMBoxUnwrap = "glm_box_unwrap"

const createdLayout = "2006-01-02T15:04:05Z07:00"

// Run is a run directory (or shard folder) as read from disk.
type Run struct {
	Dir      string       // as given
	Manifest *ojson.Value // manifest.json, member order kept
	Records  []*Record    // every complete results.jsonl line, file order
}

// ReadRun reads dir/manifest.json and dir/results.jsonl of a finished
// run or shard. It fails if another process is writing dir (see
// ReadLockRun): a run still in progress has no final results.
func ReadRun(dir string) (*Run, error) {
	unlock, err := ReadLockRun(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	name := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no manifest.json; not a run directory or shard folder", dir)
		}
		return nil, err
	}
	m, err := ojson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if m.Kind != ojson.KindObject {
		return nil, fmt.Errorf("%s: not a JSON object", name)
	}
	for _, k := range []string{mDataset, mSelection, mRunName, mModel, mOracleMode, mParseMode} {
		if !m.Has(k) {
			return nil, fmt.Errorf("%s: missing %q", name, k)
		}
	}
	recs, err := ReadResults(filepath.Join(dir, ResultsFile))
	if err != nil {
		return nil, err
	}
	return &Run{Dir: dir, Manifest: m, Records: recs}, nil
}

// ManifestString returns the string at a member path of a manifest ("",
// if absent or not a string).
func ManifestString(m *ojson.Value, path ...string) string { return mstr(m, path...) }

func mstr(m *ojson.Value, path ...string) string {
	v := m
	for _, k := range path {
		v = v.Get(k)
	}
	if v == nil || v.Kind != ojson.KindString {
		return ""
	}
	return v.S
}

// setMember replaces the first member named key (or appends one).
func setMember(o *ojson.Value, key string, val *ojson.Value) {
	for i := range o.O {
		if o.O[i].Key == key {
			o.O[i].Value = val
			return
		}
	}
	o.Set(key, val)
}

// cloneValue deep-copies a JSON tree.
func cloneValue(v *ojson.Value) *ojson.Value {
	if v == nil {
		return nil
	}
	c := *v
	c.Offset = 0
	if v.A != nil {
		c.A = make([]*ojson.Value, len(v.A))
		for i, e := range v.A {
			c.A[i] = cloneValue(e)
		}
	}
	if v.O != nil {
		c.O = make([]ojson.Member, len(v.O))
		for i, mb := range v.O {
			c.O[i] = ojson.Member{Key: mb.Key, Value: cloneValue(mb.Value)}
		}
	}
	return &c
}

func quirks(m *ojson.Value) []string {
	var out []string
	if q := m.Get(mModel).Get("quirks"); q != nil && q.Kind == ojson.KindArray {
		for _, e := range q.A {
			if e.Kind == ojson.KindString {
				out = append(out, e.S)
			}
		}
	}
	return out
}

func hasQuirk(m *ojson.Value, q string) bool {
	for _, x := range quirks(m) {
		if x == q {
			return true
		}
	}
	return false
}

// WallTime reads wall_time_s from dir/summary.json, 0 when there is none.
func WallTime(dir string) float64 {
	data, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		return 0
	}
	v, err := ojson.Parse(data)
	if err != nil {
		return 0
	}
	var f float64
	if w := v.Get("wall_time_s"); w != nil && w.Kind == ojson.KindNumber {
		if _, err := fmt.Sscan(w.N, &f); err != nil {
			return 0
		}
	}
	return f
}

// Engine is what the run-directory tools need from the packages that
// import this one (protocol and eval); cmd/chexpercept provides it.
type Engine interface {
	// Rescore re-parses one finished record in another parse mode and
	// recomputes correctness and stages (protocol.Rescore).
	Rescore(r *Record, bench *benchmark.Record, mode string, glmUnwrap bool) (*Record, error)
	// Replay runs one benchmark record through the protocol engine
	// (protocol.Run), answering call k (0-based) with answer; an error
	// from answer ends the record with status error.
	Replay(rec *benchmark.Record, index int, s ReplaySettings, answer func(k int, t ReplayTurn) (ReplayReply, error)) *Record
	// Select applies a manifest's selection object (its shard already
	// removed) to bench (eval.Select and the manifest hashes).
	Select(bench *benchmark.Benchmark, selection *ojson.Value) (*WholeSelection, error)
	// Finalize writes the files derived from dir/results.jsonl:
	// all_results.json, summary.json and the reference CSVs
	// (eval.Finalize). wallTime goes to the summary.
	Finalize(dir string, manifest *ojson.Value, selected int, wallTime float64) error
}

// WriteRun writes a complete run directory (§9.1): manifest.json,
// results.jsonl (recs, one line each, in the given order) and, through
// eng.Finalize, all_results.json, summary.json and the reference CSVs.
// Every file is written atomically. A summary.json already in dir is
// removed first so that its wall time is not added to the new run's.
// The directory is locked (LockRun) while it is written.
func WriteRun(eng Engine, dir string, m *ojson.Value, recs []*Record, selected int, wallTime float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	unlock, err := LockRun(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := atomicfile.WriteFile(filepath.Join(dir, ManifestFile), append(ojson.Marshal(m), '\n')); err != nil {
		return err
	}
	var lines []byte
	for _, r := range recs {
		b, err := r.MarshalLine()
		if err != nil {
			return err
		}
		lines = append(lines, b...)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ResultsFile), lines); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, SummaryFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return eng.Finalize(dir, m, selected, wallTime)
}

// CheckRunTarget accepts the run directory a merge, rescore or reference
// import writes when it
// is new, empty or holds only debris of an interrupted write (the lock,
// *.tmp-* files) and shard folders (which it leaves alone), and one that
// holds a run (manifest.json or results.jsonl) only with force. Anything
// else is refused: those files are not a run's, and writing the run would
// overwrite or delete them.
func CheckRunTarget(dir string, force bool) error {
	st, names, err := outdir.Look(dir, ManifestFile, ResultsFile)
	if err != nil {
		return err
	}
	switch st {
	case outdir.Marked:
		if !force {
			return fmt.Errorf("%s already holds a run (manifest.json or results.jsonl exists); pass --force to replace it", dir)
		}
	case outdir.Other:
		for _, n := range names {
			if n != LockFile && !strings.Contains(n, ".tmp-") && !shardDirRE.MatchString(n) {
				return outdir.Refuse(dir, n, "run directory %s is not empty and holds no run (no %s or %s): it holds %q; choose another results folder or move that away", dir, ManifestFile, ResultsFile, n)
			}
		}
	}
	return nil
}

// CheckBenchmark checks that bench is the benchmark the manifest names
// (same chexpercept.json SHA-256).
func CheckBenchmark(m *ojson.Value, manifestFile string, bench *benchmark.Benchmark) error {
	want := mstr(m, mDataset, mSHA256)
	if want != bench.SHA256 {
		return fmt.Errorf("%s: dataset.sha256 is %s but %s/%s has SHA-256 %s; pass the benchmark the run was made with",
			manifestFile, short(want), bench.Dir, benchmark.JSONName, short(bench.SHA256))
	}
	return nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	if h == "" {
		return "(none)"
	}
	return h
}

// RescoreOptions configure RescoreRun.
type RescoreOptions struct {
	Mode   string               // "reference" or "strict"
	Bench  *benchmark.Benchmark // the benchmark of the source run
	Engine Engine
	Force  bool             // replace an existing target run
	Now    func() time.Time // nil means time.Now
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
func RescoredRunName(src, mode string) string {
	if mode == "strict" {
		return src + "_strict"
	}
	return src + "_rescored"
}

// RescoreRun re-parses the finished run in srcDir
// (<results>/<run name>/oracle_<mode>/) and writes a new run directory
// <results>/<new run name>/oracle_<mode>/ with every file of §9.1. The
// source is only read. The last line per key_id is rescored; the new
// results.jsonl holds those lines in index order.
func RescoreRun(srcDir string, opts RescoreOptions) (*RescoreReport, error) {
	if opts.Mode != "reference" && opts.Mode != "strict" {
		return nil, fmt.Errorf("unknown parse mode %q (want reference or strict)", opts.Mode)
	}
	abs, err := filepath.Abs(srcDir)
	if err != nil {
		return nil, err
	}
	abs = filepath.Clean(abs)
	oracleDir := filepath.Base(abs)
	if strings.HasPrefix(oracleDir, "shard-") {
		return nil, fmt.Errorf("%s is a shard folder, not a run directory; merge the shards first (chexpercept merge)", srcDir)
	}
	if !strings.HasPrefix(oracleDir, "oracle_") {
		return nil, fmt.Errorf("%s: a run directory is <results>/<run name>/oracle_<mode>/; this folder is named %q", srcDir, oracleDir)
	}
	run, err := ReadRun(abs)
	if err != nil {
		return nil, err
	}
	if len(run.Records) == 0 {
		return nil, NoRecordsError(filepath.Join(srcDir, ResultsFile))
	}
	mfile := filepath.Join(srcDir, ManifestFile)
	if s := run.Manifest.Get(mSelection).Get(mShard); s != nil && s.Kind != ojson.KindNull {
		return nil, fmt.Errorf("%s: the run is a shard (selection.shard is set); merge the shards first", mfile)
	}
	if got := "oracle_" + mstr(run.Manifest, mOracleMode); got != oracleDir {
		return nil, fmt.Errorf("%s: oracle_mode %q does not match the folder name %q", mfile, mstr(run.Manifest, mOracleMode), oracleDir)
	}
	if err := CheckBenchmark(run.Manifest, mfile, opts.Bench); err != nil {
		return nil, err
	}
	srcName := filepath.Base(filepath.Dir(abs))
	newName := RescoredRunName(srcName, opts.Mode)
	dst := filepath.Join(filepath.Dir(filepath.Dir(abs)), newName, oracleDir)
	if err := CheckRunTarget(dst, opts.Force); err != nil {
		return nil, err
	}
	glm := hasQuirk(run.Manifest, GLMBoxUnwrap)
	rep := &RescoreReport{Dir: dst, RunName: newName, Oracle: mstr(run.Manifest, mOracleMode) != "none"}
	var out []*Record
	for _, r := range Latest(run.Records) {
		br := opts.Bench.Lookup(r.KeyID)
		if br == nil {
			return nil, fmt.Errorf("%s: record %s is not in the benchmark %s", filepath.Join(srcDir, ResultsFile), r.KeyID, opts.Bench.Dir)
		}
		nr, err := opts.Engine.Rescore(r, br, opts.Mode, glm)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", filepath.Join(srcDir, ResultsFile), err)
		}
		for i := range nr.Turns {
			if nr.Turns[i].Status != TurnAsked {
				continue
			}
			rep.TurnsRescored++
			if old := r.TurnByStep(nr.Turns[i].Step); old != nil && !sameBoolPtr(old.Correct, nr.Turns[i].Correct) {
				rep.LabelsChanged++
			}
		}
		out = append(out, nr)
	}
	rep.Records = len(out)

	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	m := cloneValue(run.Manifest)
	setMember(m, mCreatedAt, ojson.Str(now().UTC().Format(createdLayout)))
	setMember(m, mRunName, ojson.Str(newName))
	setMember(m, mParseMode, ojson.Str(opts.Mode))
	setMember(m, mRescoredFrom, ojson.Str(abs))
	selected := len(out)
	if v := m.Get(mSelectedRecords); v != nil {
		if n, ok := benchmark.IntLiteral(v); ok {
			selected = n
		}
	}
	benchAbs, err := filepath.Abs(opts.Bench.Dir)
	if err != nil {
		return nil, err
	}
	setDatasetPath(m, benchAbs)
	// The answers, their usage and the time they took come from the
	// source run, so its wall time is carried over.
	if err := WriteRun(opts.Engine, dst, m, out, selected, WallTime(abs)); err != nil {
		return nil, err
	}
	return rep, nil
}

// setDatasetPath records the benchmark directory the run's files point to.
func setDatasetPath(m *ojson.Value, dir string) {
	d := m.Get(mDataset)
	if d == nil || d.Kind != ojson.KindObject {
		return
	}
	setMember(d, mPath, ojson.Str(dir))
}

func sameBoolPtr(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
