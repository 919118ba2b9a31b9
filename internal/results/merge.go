package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// Merging sharded runs (spec protocol.md §9.5). A run made with
// --shard i/n writes <run dir>/shard-<i>-of-<n>/; merge checks that the
// shards are one complete split of one run (same settings, every i once,
// no key twice) and writes the normal run directory from them.

// WholeSelection is a sharded run's selection without its shard: the
// selected key_ids in file order and the manifest hashes of that
// selection.
type WholeSelection struct {
	Keys            []string
	SelectionSHA256 string
	KeysSHA256      string
}

// MergeOptions configure Merge.
type MergeOptions struct {
	Out      string // results folder; the run goes to Out/<run name>/oracle_<mode>/
	BenchDir string // "" means the dataset path of the first shard's manifest
	Engine   Engine
	Force    bool             // replace an existing merged run
	Now      func() time.Time // nil means time.Now
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

var shardDirRE = regexp.MustCompile(`^shard-([0-9]+)-of-([0-9]+)$`)

type shardRun struct {
	*Run
	i, n int
}

func (s *shardRun) name() string { return fmt.Sprintf("shard %d/%d (%s)", s.i, s.n, s.Dir) }

// shardOf reads the selection.shard member of a manifest.
func shardOf(m *ojson.Value) (i, n int, ok bool) {
	s := m.Get(mSelection).Get(mShard)
	if s == nil || s.Kind != ojson.KindObject {
		return 0, 0, false
	}
	i, ok1 := benchmark.IntLiteral(s.Get("i"))
	n, ok2 := benchmark.IntLiteral(s.Get("n"))
	return i, n, ok1 && ok2
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
		if shardDirRE.MatchString(filepath.Base(filepath.Clean(in))) {
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
			if e.IsDir() && shardDirRE.MatchString(e.Name()) {
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

// mergeIgnored are the manifest members that may differ between the
// shards of one run: the shard and what derives from it, the creation
// time and the dataset path.
var mergeIgnored = map[string]bool{
	mCreatedAt:                true,
	mDataset + "." + mPath:    true,
	mSelection + "." + mShard: true,
	mSelectionSHA256:          true,
	mSelectedRecords:          true,
	mKeysSHA256:               true,
}

// Merge combines the shards found in inputs into one run directory.
func Merge(inputs []string, opts MergeOptions) (*MergeReport, error) {
	dirs, err := findShards(inputs)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no shard folders given")
	}
	var shards []*shardRun
	for _, d := range dirs {
		run, err := ReadRun(d)
		if err != nil {
			return nil, err
		}
		i, n, ok := shardOf(run.Manifest)
		if !ok {
			return nil, refuse("%s: the manifest has no shard (selection.shard is not {i, n}); only shard folders can be merged", filepath.Join(d, ManifestFile))
		}
		if m := shardDirRE.FindStringSubmatch(filepath.Base(filepath.Clean(d))); m != nil {
			fi, _ := strconv.Atoi(m[1])
			fn, _ := strconv.Atoi(m[2])
			if fi != i || fn != n {
				return nil, refuse("%s: the folder name says shard %d/%d but its manifest says %d/%d", d, fi, fn, i, n)
			}
		}
		shards = append(shards, &shardRun{Run: run, i: i, n: n})
	}
	slices.SortStableFunc(shards, func(a, b *shardRun) int { return a.i - b.i })

	// One split: the same n everywhere, every i once.
	n := shards[0].n
	byI := map[int]*shardRun{}
	for _, s := range shards {
		if s.n != n {
			return nil, refuse("%s and %s come from different splits (%d vs %d shards)", shards[0].name(), s.name(), n, s.n)
		}
		if s.i < 1 || s.i > s.n {
			return nil, refuse("%s: shard index %d is outside 1..%d", s.Dir, s.i, s.n)
		}
		if o := byI[s.i]; o != nil {
			return nil, refuse("shard %d/%d is given twice: %s and %s", s.i, n, o.Dir, s.Dir)
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
		return nil, refuse("shard(s) %s of %d missing (every shard 1..%d is needed)", strings.Join(missing, ", "), n, n)
	}

	// Same settings.
	first := shards[0]
	for _, s := range shards[1:] {
		var diffs []string
		diffJSON("", first.Manifest, s.Manifest, mergeIgnored, &diffs)
		if len(diffs) > 0 {
			return nil, refuse("%s has other settings than %s: %s", s.name(), first.name(), strings.Join(diffs, "; "))
		}
	}

	// The benchmark of the merging machine.
	benchDir := opts.BenchDir
	if benchDir == "" {
		benchDir = mstr(first.Manifest, mDataset, mPath)
		if benchDir == "" {
			return nil, fmt.Errorf("%s: no dataset.path; pass --benchmark", filepath.Join(first.Dir, ManifestFile))
		}
	}
	bench, err := benchmark.Load(benchDir)
	if err != nil {
		return nil, fmt.Errorf("loading the benchmark: %w", err)
	}
	if err := CheckBenchmark(first.Manifest, filepath.Join(first.Dir, ManifestFile), bench); err != nil {
		return nil, err
	}
	benchAbs, err := filepath.Abs(benchDir)
	if err != nil {
		return nil, err
	}
	sel := cloneValue(first.Manifest.Get(mSelection))
	setMember(sel, mShard, ojson.Null())
	whole, err := opts.Engine.Select(bench, sel)
	if err != nil {
		return nil, fmt.Errorf("%s: selection: %v", filepath.Join(first.Dir, ManifestFile), err)
	}
	inSel := make(map[string]bool, len(whole.Keys))
	for _, k := range whole.Keys {
		inSel[k] = true
	}

	// Records: each shard's last line per key; a key in two shards, in
	// the wrong shard or outside the selection is refused.
	position := make(map[string]int, len(bench.Records))
	for i, br := range bench.Records {
		position[br.KeyID] = i
	}
	owner := map[string]*shardRun{}
	var merged []*Record
	for _, s := range shards {
		file := filepath.Join(s.Dir, ResultsFile)
		for _, r := range Latest(s.Records) {
			if o := owner[r.KeyID]; o != nil {
				return nil, refuse("key_id %s is in both %s and %s", r.KeyID, o.name(), s.name())
			}
			owner[r.KeyID] = s
			idx, ok := position[r.KeyID]
			if !ok {
				return nil, refuse("%s: key_id %s is not in the benchmark %s", file, r.KeyID, benchDir)
			}
			if idx != r.Index {
				return nil, refuse("%s: key_id %s has index %d but is record %d of the benchmark", file, r.KeyID, r.Index, idx)
			}
			if r.Index%n != s.i-1 {
				return nil, refuse("%s: key_id %s (index %d) belongs to shard %d/%d, not %d/%d", file, r.KeyID, r.Index, r.Index%n+1, n, s.i, n)
			}
			if !inSel[r.KeyID] {
				return nil, refuse("%s: key_id %s is not in the run's selection", file, r.KeyID)
			}
			merged = append(merged, r)
		}
	}
	if len(merged) == 0 {
		return nil, NoRecordsError(filepath.Join(shards[0].Dir, ResultsFile))
	}
	slices.SortStableFunc(merged, func(a, b *Record) int { return a.Index - b.Index })

	rep := &MergeReport{Shards: n, Records: len(merged), Selected: len(whole.Keys)}
	for _, r := range merged {
		if r.Status != StatusOK {
			rep.Errors++
		}
	}
	for _, k := range whole.Keys {
		if owner[k] == nil {
			rep.Missing = append(rep.Missing, k)
		}
	}

	// The merged manifest: the shards' settings for the whole selection.
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	m := cloneValue(first.Manifest)
	setMember(m, mCreatedAt, ojson.Str(now().UTC().Format(createdLayout)))
	setDatasetPath(m, benchAbs)
	setMember(m.Get(mSelection), mShard, ojson.Null())
	setMember(m, mSelectionSHA256, ojson.Str(whole.SelectionSHA256))
	setMember(m, mSelectedRecords, ojson.Int(int64(len(whole.Keys))))
	setMember(m, mKeysSHA256, ojson.Str(whole.KeysSHA256))

	runName := mstr(m, mRunName)
	oracle := mstr(m, mOracleMode)
	if runName == "" || strings.ContainsAny(runName, `/\`) || runName == "." || runName == ".." ||
		(oracle != "none" && oracle != "implicit" && oracle != "explicit") {
		return nil, fmt.Errorf("%s: run_name %q / oracle_mode %q cannot name a run directory", filepath.Join(first.Dir, ManifestFile), runName, oracle)
	}
	dst := filepath.Join(opts.Out, runName, "oracle_"+oracle)
	if err := CheckRunTarget(dst, opts.Force); err != nil {
		return nil, err
	}
	wall := 0.0
	for _, s := range shards {
		wall += WallTime(s.Dir)
	}
	if err := WriteRun(opts.Engine, dst, m, merged, len(whole.Keys), wall); err != nil {
		return nil, err
	}
	rep.Dir, rep.RunName = dst, runName
	return rep, nil
}

// diffJSON appends "path: a vs b" for every difference between two JSON
// trees, skipping the member paths in ignore ("a.b" for member b of a).
func diffJSON(path string, a, b *ojson.Value, ignore map[string]bool, out *[]string) {
	if ignore[path] {
		return
	}
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
			diffJSON(p, a.Get(k), b.Get(k), ignore, out)
		}
		return
	}
	if string(ojson.MarshalCompact(a)) != string(ojson.MarshalCompact(b)) {
		*out = append(*out, fmt.Sprintf("%s: %s vs %s", name, showJSON(a), showJSON(b)))
	}
}

func showJSON(v *ojson.Value) string {
	s := string(ojson.MarshalCompact(v))
	if len(s) > 80 {
		s = s[:77] + "…"
	}
	return s
}
