package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// Merging sharded runs (spec protocol.md §9.5). A run made with
// --shard i/n writes <run dir>/shard-<i>-of-<n>/; merge checks that the
// shards are one complete split of one run (same settings, every i once,
// no key twice) and writes the normal run directory from them.

// MergeOptions configure Merge.
type MergeOptions struct {
	Out      string           // results folder; the run goes to Out/<run name>/oracle_<mode>/
	BenchDir string           // "" means the dataset path of the first shard's manifest
	Force    bool             // replace an existing merged run
	Now      func() time.Time // nil means time.Now
	Job      *job.Job         // the command's job: its temporary files and commit point (nil: none)
}

// MergeReport says what a merge did.
type MergeReport struct {
	Dir      string // the merged run directory
	RunName  string
	Shards   int
	Records  int // records in the merged results.jsonl
	Errors   int // of which status error
	Selected int // records of the whole selection
	Missing  []string
}

// RefusalError is a merge refused because its inputs are not one
// complete, consistent split of a run.
type RefusalError struct{ Reason string }

func (e *RefusalError) Error() string { return "refusing to merge: " + e.Reason }

func refuse(format string, args ...any) error {
	return &RefusalError{Reason: fmt.Sprintf(format, args...)}
}

type shardRun struct {
	*Run
	i, n int
}

// sumRedactions adds the shards' key-redaction counts: each shard counted
// its own, and the merged run holds them all.
func sumRedactions(shards []*shardRun) int64 {
	var n int64
	for _, s := range shards {
		n += s.Manifest.Redactions
	}
	return n
}

func (s *shardRun) name() string { return fmt.Sprintf("shard %d/%d (%s)", s.i, s.n, s.Dir) }

// Merge combines the shards found in inputs into one run directory. It
// stops with ctx's error once ctx ends, before it writes (checked at every
// shard read) or between the files it writes.
func Merge(ctx context.Context, inputs []string, opts MergeOptions) (*MergeReport, error) {
	shards, err := readShards(ctx, inputs)
	if err != nil {
		return nil, err
	}
	n, err := checkSplit(shards)
	if err != nil {
		return nil, err
	}
	first := shards[0]
	if err := checkSettings(shards); err != nil {
		return nil, err
	}
	bench, benchAbs, err := mergeBenchmark(first, opts.BenchDir)
	if err != nil {
		return nil, err
	}
	whole, err := wholeSelection(bench, first)
	if err != nil {
		return nil, err
	}
	merged, owner, err := collectRecords(shards, n, bench, whole)
	if err != nil {
		return nil, err
	}
	rep := &MergeReport{Shards: n, Records: len(merged), Selected: len(whole.keys)}
	for _, r := range merged {
		if r.Status != results.StatusOK {
			rep.Errors++
		}
	}
	for _, k := range whole.keys {
		if owner[k] == nil {
			rep.Missing = append(rep.Missing, k)
		}
	}

	// The merged manifest: the shards' settings for the whole selection.
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	m := *first.Manifest
	m.CreatedAt = now().UTC().Format(time.RFC3339)
	m.Dataset.Path = benchAbs
	m.Selection.Shard = nil
	m.SelectionSHA256, m.SelectedRecords, m.KeysSHA256 = whole.selectionSHA256, len(whole.keys), whole.keysSHA256
	m.Redactions = sumRedactions(shards)
	m.Model.Endpoints = unionEndpoints(shards)

	runName, oracle := m.RunName, m.OracleMode
	if runName == "" || strings.ContainsAny(runName, `/\`) || runName == "." || runName == ".." ||
		(oracle != "none" && oracle != "implicit" && oracle != "explicit") {
		return nil, fmt.Errorf("%s: run_name %q / oracle_mode %q cannot name a run directory", filepath.Join(first.Dir, rundir.ManifestFile), runName, oracle)
	}
	dst := filepath.Join(opts.Out, runName, "oracle_"+oracle)
	if err := CheckTarget(dst, opts.Force); err != nil {
		return nil, err
	}
	wall := 0.0
	for _, s := range shards {
		wall += rundir.WallTime(s.Dir)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := WriteRun(opts.Job, dst, &m, merged, len(whole.keys), wall); err != nil {
		return nil, err
	}
	rep.Dir, rep.RunName = dst, runName
	return rep, nil
}

// findShards expands the inputs: a shard folder stands for itself, any
// other folder for the shard-<i>-of-<n> folders directly inside it.
func findShards(inputs []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(d string) error {
		abs, err := filepath.Abs(d)
		if err != nil {
			return err
		}
		if !seen[abs] {
			seen[abs] = true
			out = append(out, d)
		}
		return nil
	}
	for _, in := range inputs {
		fi, err := os.Stat(in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in, errors.Unwrap(err))
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s: not a directory", in)
		}
		if rundir.IsShardDir(filepath.Base(filepath.Clean(in))) {
			if err := add(in); err != nil {
				return nil, err
			}
			continue
		}
		ents, err := os.ReadDir(in)
		if err != nil {
			return nil, err
		}
		found := false
		for _, e := range ents {
			if e.IsDir() && rundir.IsShardDir(e.Name()) {
				found = true
				if err := add(filepath.Join(in, e.Name())); err != nil {
					return nil, err
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: neither a shard folder (shard-<i>-of-<n>) nor a run directory holding shard folders", in)
		}
	}
	return out, nil
}

// readShards reads the shards found in inputs, sorted by shard index. A
// folder whose name and manifest name other shards is refused.
func readShards(ctx context.Context, inputs []string) ([]*shardRun, error) {
	dirs, err := findShards(inputs)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no shard folders given")
	}
	var shards []*shardRun
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		run, err := ReadRun(d)
		if err != nil {
			return nil, err
		}
		sh := run.Manifest.Selection.Shard
		if sh == nil {
			return nil, refuse("%s: the manifest has no shard (selection.shard is not {i, n}); only shard folders can be merged", filepath.Join(d, rundir.ManifestFile))
		}
		if fi, fn, ok := rundir.ParseShardDir(filepath.Base(filepath.Clean(d))); ok {
			if fi != sh.I || fn != sh.N {
				return nil, refuse("%s: the folder name says shard %d/%d but its manifest says %d/%d", d, fi, fn, sh.I, sh.N)
			}
		}
		shards = append(shards, &shardRun{Run: run, i: sh.I, n: sh.N})
	}
	slices.SortStableFunc(shards, func(a, b *shardRun) int { return a.i - b.i })
	return shards, nil
}

// checkSplit checks that the shards are one split: the same n
// everywhere, every i once. It returns n.
func checkSplit(shards []*shardRun) (int, error) {
	n := shards[0].n
	byI := map[int]*shardRun{}
	for _, s := range shards {
		if s.n != n {
			return 0, refuse("%s and %s come from different splits (%d vs %d shards)", shards[0].name(), s.name(), n, s.n)
		}
		if s.i < 1 || s.i > s.n {
			return 0, refuse("%s: shard index %d is outside 1..%d", s.Dir, s.i, s.n)
		}
		if o := byI[s.i]; o != nil {
			return 0, refuse("shard %d/%d is given twice: %s and %s", s.i, n, o.Dir, s.Dir)
		}
		byI[s.i] = s
	}
	var missing []string
	for i := 1; i <= n; i++ {
		if byI[i] == nil {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	if len(missing) > 0 {
		return 0, refuse("shard(s) %s of %d missing (every shard 1..%d is needed)", strings.Join(missing, ", "), n, n)
	}
	return n, nil
}

// unionEndpoints is every endpoint of the shards, in shard order and
// without repeats.
func unionEndpoints(shards []*shardRun) []string {
	eps := []string{}
	for _, s := range shards {
		eps = results.UnionEndpoints(eps, s.Manifest.Model.Endpoints)
	}
	return eps
}

// checkSettings checks that every shard has the first one's settings.
func checkSettings(shards []*shardRun) error {
	first := shards[0]
	for _, s := range shards[1:] {
		diffs, err := settingsDiff(first.Manifest, s.Manifest)
		if err != nil {
			return err
		}
		if len(diffs) > 0 {
			return refuse("%s has other settings than %s: %s", s.name(), first.name(), strings.Join(diffs, "; "))
		}
	}
	return nil
}

// settingsDiff lists, as "member: a vs b", where two shard manifests
// differ in anything but what may differ between the shards of one run:
// the shard and what derives from it, the creation time, the dataset
// path, the key-redaction count (summed), the endpoints (joined: a shard
// resumed against another endpoint of the same server names both, as a
// run does) and the platform of the binary (the tool version, with its
// revision, must agree).
func settingsDiff(a, b *results.Manifest) ([]string, error) {
	var trees [2]*ojson.Value
	for i, m := range []results.Manifest{*a, *b} {
		m.CreatedAt, m.Dataset.Path, m.Redactions, m.Provenance = "", "", 0, nil
		m.Model.Endpoints = nil
		m.Selection.Shard = nil
		m.SelectionSHA256, m.SelectedRecords, m.KeysSHA256 = "", 0, ""
		data, err := m.Marshal()
		if err != nil {
			return nil, err
		}
		if trees[i], err = ojson.Parse(data); err != nil {
			return nil, err
		}
	}
	var diffs []string
	diffJSON("", trees[0], trees[1], &diffs)
	return diffs, nil
}

// mergeBenchmark loads the benchmark of the merging machine (dir, or the
// first shard's dataset path) and checks it is the shards' one.
func mergeBenchmark(first *shardRun, dir string) (bench *benchmark.Benchmark, abs string, err error) {
	mfile := filepath.Join(first.Dir, rundir.ManifestFile)
	if dir == "" {
		if dir = first.Manifest.Dataset.Path; dir == "" {
			return nil, "", fmt.Errorf("%s: %w", mfile, ErrNoDatasetPath)
		}
	}
	if bench, err = benchdir.Load(dir); err != nil {
		return nil, "", fmt.Errorf("loading the benchmark: %w", err)
	}
	if err := checkBenchmark(first.Manifest, mfile, bench); err != nil {
		return nil, "", err
	}
	if abs, err = filepath.Abs(dir); err != nil {
		return nil, "", err
	}
	return bench, abs, nil
}

// selection is a sharded run's selection without its shard: the selected
// key_ids in file order and the manifest hashes of that selection.
type selection struct {
	keys            []string
	inSel           map[string]bool
	selectionSHA256 string
	keysSHA256      string
}

func wholeSelection(bench *benchmark.Benchmark, first *shardRun) (*selection, error) {
	sel := first.Manifest.Selection
	sel.Shard = nil
	idx, err := results.Select(bench.Records, sel)
	if err != nil {
		return nil, fmt.Errorf("%s: selection: %w", filepath.Join(first.Dir, rundir.ManifestFile), err)
	}
	w := &selection{inSel: make(map[string]bool, len(idx)), selectionSHA256: sel.Hash()}
	for _, i := range idx {
		k := bench.Records[i].KeyID
		w.keys = append(w.keys, k)
		w.inSel[k] = true
	}
	w.keysSHA256 = results.KeysHash(w.keys)
	return w, nil
}

// collectRecords takes each shard's last line per key, in index order; a
// key in two shards, in the wrong shard or outside the selection is
// refused. owner maps each key to its shard.
func collectRecords(shards []*shardRun, n int, bench *benchmark.Benchmark, whole *selection) (merged []*results.Record, owner map[string]*shardRun, err error) {
	position := make(map[string]int, len(bench.Records))
	for i, br := range bench.Records {
		position[br.KeyID] = i
	}
	owner = map[string]*shardRun{}
	for _, s := range shards {
		file := filepath.Join(s.Dir, rundir.ResultsFile)
		for _, r := range results.Latest(s.Records) {
			if o := owner[r.KeyID]; o != nil {
				return nil, nil, refuse("key_id %s is in both %s and %s", r.KeyID, o.name(), s.name())
			}
			owner[r.KeyID] = s
			idx, ok := position[r.KeyID]
			if !ok {
				return nil, nil, refuse("%s: key_id %s is not in the benchmark %s", file, r.KeyID, bench.Dir)
			}
			if idx != r.Index {
				return nil, nil, refuse("%s: key_id %s has index %d but is record %d of the benchmark", file, r.KeyID, r.Index, idx)
			}
			if r.Index%n != s.i-1 {
				return nil, nil, refuse("%s: key_id %s (index %d) belongs to shard %d/%d, not %d/%d", file, r.KeyID, r.Index, r.Index%n+1, n, s.i, n)
			}
			if !whole.inSel[r.KeyID] {
				return nil, nil, refuse("%s: key_id %s is not in the run's selection", file, r.KeyID)
			}
			merged = append(merged, r)
		}
	}
	if len(merged) == 0 {
		return nil, nil, rundir.NoRecordsError(filepath.Join(shards[0].Dir, rundir.ResultsFile))
	}
	slices.SortStableFunc(merged, func(a, b *results.Record) int { return a.Index - b.Index })
	return merged, owner, nil
}

// diffJSON appends "path: a vs b" for every difference between two JSON
// trees ("a.b" for member b of a).
func diffJSON(path string, a, b *ojson.Value, out *[]string) {
	name := path
	if name == "" {
		name = "(top level)"
	}
	switch {
	case a == nil && b == nil:
		return
	case a == nil:
		*out = append(*out, fmt.Sprintf("%s: absent vs %s", name, showJSON(b)))
		return
	case b == nil:
		*out = append(*out, fmt.Sprintf("%s: %s vs absent", name, showJSON(a)))
		return
	}
	if a.Kind == ojson.KindObject && b.Kind == ojson.KindObject {
		keys := []string{}
		for _, mb := range a.O {
			if !slices.Contains(keys, mb.Key) {
				keys = append(keys, mb.Key)
			}
		}
		for _, mb := range b.O {
			if !slices.Contains(keys, mb.Key) {
				keys = append(keys, mb.Key)
			}
		}
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffJSON(p, a.Get(k), b.Get(k), out)
		}
		return
	}
	if string(ojson.MarshalCompact(a)) != string(ojson.MarshalCompact(b)) {
		*out = append(*out, fmt.Sprintf("%s: %s vs %s", name, showJSON(a), showJSON(b)))
	}
}

func showJSON(v *ojson.Value) string {
	return textsafe.Clip(string(ojson.MarshalCompact(v)), 80)
}
