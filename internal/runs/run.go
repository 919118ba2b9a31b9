// Package runs holds the operations on whole run directories (spec
// protocol.md §9.1): rescore (re-parse a finished run into a new one),
// merge (combine the shards of a run, §9.5) and import-reference (rebuild
// a run from a reference all_results.json, §9.3). They sit above the
// protocol engine and the runner: they re-parse and replay records with
// protocol, apply selections with eval, and read and write the run
// directory and its manifest (results.Manifest) with results.
package runs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// The command layer adds the flag that overcomes these errors.
var (
	// ErrRunExists is matched by the error for a target run directory
	// that already holds a run (written only with the Force option).
	ErrRunExists = errors.New("already holds a run")
	// ErrNoDatasetPath is matched by the error of a merge whose shard
	// manifest names no benchmark and whose options name none either.
	ErrNoDatasetPath = errors.New("no dataset.path")
)

// Run is a run directory (or shard folder) as read from disk.
type Run struct {
	Dir      string            // as given
	Manifest *results.Manifest // manifest.json
	Records  []*results.Record // every complete results.jsonl line, file order
}

// ReadRun reads dir/manifest.json and dir/results.jsonl of a finished
// run or shard. It fails if another process is writing dir (see
// rundir.ReadLock): a run still in progress has no final results.
func ReadRun(dir string) (*Run, error) {
	unlock, err := rundir.ReadLock(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if rundir.IsUnfinished(dir) {
		return nil, fmt.Errorf("%s %w", dir, rundir.ErrUnfinished)
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	// What every tool needs to name and check the run.
	for _, f := range []struct{ member, v string }{{"run_name", m.RunName}, {"oracle_mode", m.OracleMode}, {"parse_mode", m.ParseMode}} {
		if f.v == "" {
			return nil, fmt.Errorf("%s: %q is missing or empty", filepath.Join(dir, rundir.ManifestFile), f.member)
		}
	}
	recs, err := rundir.ReadResults(filepath.Join(dir, rundir.ResultsFile))
	if err != nil {
		return nil, err
	}
	return &Run{Dir: dir, Manifest: m, Records: recs}, nil
}

// WriteRun writes a complete run directory (§9.1): manifest.json,
// results.jsonl (recs, one line each, in the given order) and, through
// rundir.Finalize, all_results.json, summary.json and the reference
// CSVs. Every file is written atomically. A summary.json already in dir
// is removed first so that its wall time is not added to the new run's.
// The directory is locked (rundir.Lock) while it is written. j, the
// command's job, tracks the temporary files and holds the commit point
// (Finish).
func WriteRun(j *job.Job, dir string, m *results.Manifest, recs []*results.Record, selected int, wallTime float64) error {
	unlock, err := WriteUnfinished(j, dir, m, recs, selected, wallTime)
	if err != nil {
		return err
	}
	defer unlock()
	return Finish(j, dir)
}

// WriteUnfinished is WriteRun without its last step: the run is written
// whole but still carries rundir.UnfinishedFile, and stays locked until
// unlock is called. A command writing several runs finishes them together
// (Finish), so that one stopped part-way leaves every run for its rerun
// to replace.
func WriteUnfinished(j *job.Job, dir string, m *results.Manifest, recs []*results.Record, selected int, wallTime float64) (unlock func(), err error) {
	root, rel := targetParts(dir)
	if _, err := outdir.MkdirAll(root, rel); err != nil {
		return nil, err
	}
	release, err := rundir.Lock(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	b, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	// Marked unfinished first and finished last: a run cut short is
	// recognised as this command's own (CheckTarget replaces it without
	// force) and never read as a finished run.
	if err := rundir.MarkUnfinished(dir); err != nil {
		return nil, err
	}
	if err := rundir.RemoveStaleTemps(dir); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(j, filepath.Join(dir, rundir.ManifestFile), b); err != nil {
		return nil, err
	}
	var lines []byte
	for _, r := range recs {
		b, err := r.MarshalLine()
		if err != nil {
			return nil, err
		}
		lines = append(lines, b...)
	}
	if err := atomicfile.WriteFile(j, filepath.Join(dir, rundir.ResultsFile), lines); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(dir, rundir.SummaryFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if _, err := rundir.Finalize(j, dir, m, selected, wallTime); err != nil {
		return nil, err
	}
	return release, nil
}

// Finish marks the runs in dirs, each written whole (WriteUnfinished),
// finished. It is the commit point of the command (j.Commit): once it
// begins, an interrupting signal lets it end, and when the signal came
// first it fails with job.ErrStopped and changes nothing.
func Finish(j *job.Job, dirs ...string) error {
	if err := j.Commit(); err != nil {
		return err
	}
	for _, d := range dirs {
		if err := rundir.MarkFinished(d); err != nil {
			return err
		}
	}
	return nil
}

// CheckTarget accepts the run directory a merge, rescore or reference
// import writes when it is new, empty or holds only debris of an
// interrupted write (the lock, *.tmp-* files) and shard folders (which it
// leaves alone), or an unfinished run (rundir.UnfinishedFile) that such
// a command left, and one that holds a finished run (manifest.json or
// results.jsonl) only with force. Anything else is refused: those files are not a run's,
// and writing the run would overwrite or delete them.
func CheckTarget(dir string, force bool) error {
	root, rel := targetParts(dir)
	if _, err := outdir.Path(root, rel); err != nil {
		return err
	}
	hasRun, err := rundir.Check(dir)
	// An unfinished run is the debris of this kind of command: its
	// rerun replaces it.
	if err == nil && hasRun && !force && !rundir.IsUnfinished(dir) {
		err = fmt.Errorf("%s %w (manifest.json or results.jsonl exists)", dir, ErrRunExists)
	}
	return err
}

// targetParts splits a target run directory RESULTS/<run>/oracle_<mode>
// into the results folder the user named and the part below it that the
// command makes (and in which no link may lead elsewhere).
func targetParts(dir string) (root, rel string) {
	parent := filepath.Dir(dir)
	return filepath.Dir(parent), filepath.Join(filepath.Base(parent), filepath.Base(dir))
}

// checkBenchmark checks that bench is the benchmark the manifest names
// (same chexpercept.json SHA-256, and the same identity when the
// manifest records one).
func checkBenchmark(m *results.Manifest, manifestFile string, bench *benchmark.Benchmark) error {
	if want := m.Dataset.SHA256; want != bench.SHA256 {
		return fmt.Errorf("%s: dataset.sha256 is %s but %s/%s has SHA-256 %s; pass the benchmark the run was made with",
			manifestFile, results.ShortHash(want), bench.Dir, benchmark.JSONName, results.ShortHash(bench.SHA256))
	}
	if want := m.BenchIdentity(); want.Known() && want != bench.Identity {
		return fmt.Errorf("%s: the run was made on benchmark %s but %s is %s; pass the benchmark the run was made with",
			manifestFile, want.Short(), bench.Dir, bench.Identity.Short())
	}
	return nil
}
