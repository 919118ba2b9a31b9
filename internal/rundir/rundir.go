// Package rundir reads and writes a run directory (spec protocol.md §9.1):
// <results>/<run name>/oracle_<mode>/[shard-<i>-of-<n>/] with its
// manifest.json, results.jsonl and the files derived from them. It holds
// the directory's layout (file names, the shard folders, Path), the
// appending store of results.jsonl that a kill never leaves unreadable,
// the bounded line readers, the run lock, the unfinished-run marker and
// Finalize, which writes the derived files. What those files hold — the
// record, the manifest, the selection, the export and the summaries — is
// package results', which does no file I/O, so that the protocol engine
// and the analysis link none of this.
package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// IsRunFile reports whether name is one of the files a run directory
// holds that chexpercept writes atomically: the manifest, the results, the
// derived all_results.json and summary.json, and the reference CSVs.
func IsRunFile(name string) bool {
	switch name {
	case ManifestFile, ResultsFile, AllResultsFile, SummaryFile, RefSummaryFile, RefContourFile, RefAttributeFile:
		return true
	}
	return false
}

// RemoveStaleTemps removes from the run directory dir the temporary files
// ("<file>.tmp-<digits>") that atomic writes of its run files left when
// the command writing them was killed; nothing else, and nothing in shard
// folders (each is its own run directory). The caller holds the run's
// lock (Lock), so no other writer owns them.
func RemoveStaleTemps(dir string) error {
	return atomicfile.RemoveStale(dir, func(rel string) bool { return IsRunFile(rel) })
}

// Path is the directory a run writes into, out/<run name>/oracle_<mode>
// (the oracle mode: none, implicit or explicit), or its shard folder.
func Path(out, runName string, oracle string, shard *results.Shard) string {
	d := filepath.Join(out, runName, "oracle_"+oracle)
	if shard != nil {
		d = filepath.Join(d, shard.Dir())
	}
	return d
}

// maxSummaryBytes bounds the summary.json WallTime reads; a real one is a
// few kilobytes.
const maxSummaryBytes = 16 << 20

// WallTime reads wall_time_s from dir/summary.json, 0 when there is none
// (no file, not JSON, no number).
func WallTime(dir string) float64 {
	data, err := safefile.ReadFile(filepath.Join(dir, SummaryFile), maxSummaryBytes, safefile.Follow)
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

// Finalize derives all_results.json, summary.json and the per-model
// reference CSVs from dir/results.jsonl and writes them atomically, all at
// once (writeDerived). The manifest gives the run name, modes, model,
// benchmark path and hash; selected is the number of selected records.
// wallTime is the seconds of the command that ends now; the previous
// summary's wall time is added (a resumed run sums its restarts). The runner, rescore, merge and
// import-reference all end with it, each with its job, which tracks the
// temporary files (atomicfile.WriteFile).
func Finalize(j *job.Job, dir string, man *results.Manifest, selected int, wallTime float64) (*results.Summary, error) {
	recs, err := ReadResults(filepath.Join(dir, ResultsFile))
	if err != nil {
		return nil, err
	}
	wallTime += WallTime(dir)
	latest := results.Latest(recs)
	all := results.MarshalAllResults(latest, man.Dataset.Path, man.Model.Backend, man.Model.ModelID)
	info := results.RunInfo{Name: man.RunName, Model: man.Model.Name, ModelID: man.Model.ModelID,
		Provider: man.Model.Provider, Backend: man.Model.Backend, OracleMode: man.OracleMode,
		ParseMode: man.ParseMode, BenchmarkSHA256: man.Dataset.SHA256, RescoredFrom: man.RescoredFrom}
	s := results.BuildSummary(info, selected, latest, wallTime)
	b, err := s.Marshal()
	if err != nil {
		return nil, err
	}
	files := append([]derivedFile{{AllResultsFile, all}, {SummaryFile, b}},
		refCSVs(results.RefLabel(man.RunName), results.RefMetricsFromRecords(latest))...)
	if err := writeDerived(j, dir, files); err != nil {
		return nil, err
	}
	return s, nil
}

// derivedFile is one file Finalize writes: its name in the run directory
// and its bytes.
type derivedFile struct {
	name string
	data []byte
}

// writeDerived writes the files atomically and at the same time: each is
// synced on its own (atomicfile.WriteFile), and the syncs of independent
// files overlap instead of queueing, which shortens the end of every run.
// Every file is attempted; the error returned is that of the first file
// in list order that failed, whatever order the writes finish in.
func writeDerived(j *job.Job, dir string, files []derivedFile) error {
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = atomicfile.WriteFile(j, filepath.Join(dir, f.name), f.data)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// IsShardDir reports whether name is a shard folder name, shard-<i>-of-<n>.
func IsShardDir(name string) bool { _, _, ok := ParseShardDir(name); return ok }

// ParseShardDir returns i and n of a shard folder name, shard-<i>-of-<n>.
func ParseShardDir(name string) (i, n int, ok bool) {
	m := shardDirRE.FindStringSubmatch(name)
	if m == nil {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(m[1])
	n, err2 := strconv.Atoi(m[2])
	return i, n, err1 == nil && err2 == nil
}

var shardDirRE = regexp.MustCompile(`^shard-([0-9]+)-of-([0-9]+)$`)

// Check looks at the run directory dir before a command writes a run
// into it. It reports whether dir already holds a run (manifest.json or
// results.jsonl). A directory that holds no run is accepted only when it
// is new, empty, or holds nothing but debris of an interrupted write (the
// lock, *.tmp-* files) and shard folders; anything else is refused
// (outdir.Refused), because writing a run there would overwrite files
// chexpercept did not write. A directory with a run must hold its
// manifest (results.jsonl alone was not written by chexpercept, or lost
// what proves it), and nothing in it may be a symbolic link, FIFO or
// device (outdir.CheckTree; shard folders are left to their own check).
func Check(dir string) (hasRun bool, err error) {
	st, names, err := outdir.Look(dir, ManifestFile, ResultsFile)
	if err != nil {
		return false, err
	}
	switch st {
	case outdir.Marked:
		if !outdir.IsRegular(filepath.Join(dir, ManifestFile)) {
			if _, err := os.Lstat(filepath.Join(dir, ManifestFile)); err == nil {
				return false, outdir.Refuse(dir, ManifestFile, "run directory %s: %s is not a regular file; chexpercept does not write through or replace it", dir, ManifestFile)
			}
			return false, outdir.Refuse(dir, ResultsFile, "run directory %s holds %s but no %s, so chexpercept did not write it (or its manifest is lost); refusing to change it: choose another results folder or move it away", dir, ResultsFile, ManifestFile)
		}
		var shards []string
		for _, n := range names {
			if IsShardDir(n) {
				shards = append(shards, n)
			}
		}
		if err := outdir.CheckTree(dir, shards...); err != nil {
			return false, err
		}
		return true, nil
	case outdir.Other:
		for _, n := range names {
			if n != LockFile && n != UnfinishedFile && !strings.Contains(n, ".tmp-") && !IsShardDir(n) {
				return false, outdir.Refuse(dir, n, "run directory %s is not empty and holds no run (no %s or %s): it holds %q; choose another results folder or move that away",
					dir, ManifestFile, ResultsFile, n)
			}
		}
	}
	return false, nil
}

// Per-model reference CSV file names (§9.1).
const (
	RefSummaryFile   = "model_performance_summary.csv"
	RefContourFile   = "model_performance_detail_contour_revision.csv"
	RefAttributeFile = "model_performance_detail_attribute_extraction.csv"
)

// WriteRefCSVs writes the three per-model reference CSVs into dir,
// atomically; j tracks the temporary files (atomicfile.WriteFile).
func WriteRefCSVs(j *job.Job, dir, label string, m *results.RefMetrics) error {
	return writeDerived(j, dir, refCSVs(label, m))
}

// refCSVs are the three per-model reference CSVs with their bytes.
func refCSVs(label string, m *results.RefMetrics) []derivedFile {
	return []derivedFile{
		{RefSummaryFile, results.CSV(results.RefSummaryHeader, m.SummaryRows(label))},
		{RefContourFile, results.CSV(results.RefContourHeader, m.ContourRows(label))},
		{RefAttributeFile, results.CSV(results.RefAttributeHeader, m.AttributeRows(label))},
	}
}
