// Package runset reads the runs a report is made of: it finds the run
// directories under the inputs, reads each one's manifest and records
// (through package rundir), loads the benchmark (package benchdir) and
// checks the runs against it and against each other. What it returns,
// Set, is types only, so that the analysis and the report link
// none of the readers.
package runset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
	"golang.org/x/sync/errgroup"
)

// maxBuildInfo bounds the read of build_info.json.
const maxBuildInfo = 4 << 20

// readBuildInfo reads dir/build_info.json; a benchmark without one (not
// from our builder) or with an unreadable one gives the zero BuildInfo.
func readBuildInfo(dir string) analysis.BuildInfo {
	data, err := safefile.ReadFile(filepath.Join(dir, "build_info.json"), maxBuildInfo, safefile.NoFollow)
	if err != nil {
		return analysis.BuildInfo{}
	}
	v, err := ojson.Parse(data)
	if err != nil || v.Kind != ojson.KindObject {
		return analysis.BuildInfo{}
	}
	b := analysis.BuildInfo{Known: true}
	if m := v.Get("review_mode"); m != nil && m.Kind == ojson.KindString {
		b.ReviewMode = textsafe.OneLine(m.S)
	}
	if p := v.Get("phantom_source"); p != nil && p.Kind == ojson.KindBool {
		b.Phantom = p.B
	}
	return b
}

// state is a set being read, with the first read error that says nothing
// about the file (EMFILE, EIO …; safefile.Transient): leaving the input
// out would change the report on a passing fault, so Load fails with it.
type state struct {
	*analysis.Set
	transient error
}

func newState() *state { return &state{Set: &analysis.Set{}} }

func (s *state) warnf(format string, args ...any) {
	s.Warnings = append(s.Warnings, textsafe.OneLine(fmt.Sprintf(format, args...)))
}

// readFailed records a read error of the input what: a transient one
// becomes Load's error, any other the warning warnf makes of format.
func (s *state) readFailed(err error, what string, format string, args ...any) {
	if safefile.Transient(err) {
		if s.transient == nil {
			s.transient = fmt.Errorf("%s: %w (a passing fault; run again)", what, safefile.Reason(err))
		}
		return
	}
	s.warnf(format, args...)
}

// isRunDir reports whether dir holds any file of a run directory.
func isRunDir(dir string) bool {
	for _, f := range []string{rundir.AllResultsFile, rundir.ResultsFile, rundir.ManifestFile} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// discover expands the inputs into run directories: an input that holds
// run files is a run directory; any other directory is a results folder
// scanned for */oracle_<mode>/ run directories (a folder that has
// all_results.json, results.jsonl or manifest.json). Shard folders are
// never runs. Problems with one input become warnings.
func discover(inputs []string) (dirs []string, warnings []string) {
	seen := map[string]bool{}
	add := func(d string) {
		abs, err := filepath.Abs(d)
		if err != nil {
			abs = d
		}
		if !seen[abs] {
			seen[abs] = true
			dirs = append(dirs, d)
		}
	}
	for _, in := range inputs {
		fi, err := os.Stat(in)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s: cannot read input: %v; left out", in, errors.Unwrap(err)))
			continue
		}
		if !fi.IsDir() {
			// An all_results.json or results.jsonl given directly means its run directory.
			base := filepath.Base(in)
			if base == rundir.AllResultsFile || base == rundir.ResultsFile {
				in = filepath.Dir(in)
			} else {
				warnings = append(warnings, fmt.Sprintf("%s: not a run directory or results folder; left out", in))
				continue
			}
		}
		if strings.HasPrefix(filepath.Base(filepath.Clean(in)), "shard-") {
			warnings = append(warnings, fmt.Sprintf("%s: is a shard folder, not a run; merge the shards (chexpercept merge) and report the merged run; left out", in))
			continue
		}
		if isRunDir(in) {
			add(in)
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(in, "*", "oracle_*"))
		// A run folder given directly (<run name>/) holds oracle_<mode>/ folders.
		direct, _ := filepath.Glob(filepath.Join(in, "oracle_*"))
		matches = append(matches, direct...)
		slices.Sort(matches)
		found := 0
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.IsDir() && isRunDir(m) {
				add(m)
				found++
			}
		}
		if found == 0 {
			warnings = append(warnings, fmt.Sprintf("%s: no run directories found (looked for */oracle_<mode>/all_results.json); left out", in))
		}
	}
	return dirs, warnings
}

// Options configure Load.
type Options struct {
	// Benchmark is the benchmark directory. Empty means the dataset path
	// recorded in the first run's manifest (in run order).
	Benchmark string
	// AllowMixed sets runs of different benchmarks side by side (Load
	// refuses them otherwise), and Set.Mixed then says so.
	AllowMixed bool
}

// Load discovers and reads the runs under inputs, loads the benchmark and
// checks the runs against it. Every problem with one input is a warning
// and the input (or the bad part of it) is left out; Load fails only when
// no usable run remains or an explicitly given benchmark cannot be loaded.
// Once ctx ends it reads no further run and returns ctx's error.
func Load(ctx context.Context, inputs []string, opts Options) (*analysis.Set, error) {
	dirs, warns := discover(inputs)
	s := newState()
	for _, w := range warns {
		s.warnf("%s", w)
	}
	// Runs are read in parallel (decoding results.jsonl dominates the
	// cost of a report); each keeps its own warnings, merged in input order.
	// The benchmark is loaded alongside; its directory is the override or
	// the dataset path of the first run (in run order) whose manifest
	// names one.
	benchDir := opts.Benchmark
	if benchDir == "" {
		var err error
		if benchDir, err = firstDataset(dirs); err != nil {
			return s.Set, err
		}
	}
	var bench *benchmark.Benchmark
	var benchErr error
	subs := make([]*state, len(dirs))
	runs := make([]*analysis.Run, len(dirs))
	jobs := make([]func(), 0, len(dirs)+1)
	if benchDir != "" {
		jobs = append(jobs, func() { bench, benchErr = benchdir.Load(benchDir) })
	}
	for i, d := range dirs {
		subs[i] = newState()
		jobs = append(jobs, func() { runs[i] = subs[i].readRun(d) })
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if ctx.Err() == nil {
				j()
			}
			return nil
		})
	}
	_ = g.Wait() // the jobs keep their own errors and warnings
	if err := ctx.Err(); err != nil {
		return s.Set, err
	}
	for i := range dirs {
		if err := subs[i].transient; err != nil {
			return s.Set, err
		}
		s.Warnings = append(s.Warnings, subs[i].Warnings...)
		if runs[i] != nil {
			s.Runs = append(s.Runs, runs[i])
		}
	}
	slices.SortStableFunc(s.Runs, func(a, b *analysis.Run) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.OracleMode, b.OracleMode)
	})
	// The same run name and oracle mode twice (e.g. given twice through
	// different folders) would make every table ambiguous: keep the first.
	var uniq []*analysis.Run
	for _, r := range s.Runs {
		if n := len(uniq); n > 0 && uniq[n-1].Name == r.Name && uniq[n-1].OracleMode == r.OracleMode {
			s.warnf("%s: run %s with oracle mode %s was already read from %s; left out (give runs that differ in a setting their own eval --run-name)", r.Dir, r.Name, r.OracleMode, uniq[n-1].Dir)
			continue
		}
		uniq = append(uniq, r)
	}
	s.Runs = uniq
	if len(s.Runs) == 0 {
		return s.Set, errors.New("no usable run directory among the inputs")
	}

	if benchDir != "" {
		b, err := bench, benchErr
		switch {
		case err != nil && (opts.Benchmark != "" || safefile.Transient(err)):
			return s.Set, fmt.Errorf("benchmark: %w", err)
		case err != nil:
			s.warnf("benchmark %s (from the first run's manifest) could not be loaded: %v; chance baselines, key checks and images are left out", benchDir, err)
		default:
			s.Bench = b
			s.Build = readBuildInfo(b.Dir)
		}
	} else {
		s.warnf("no benchmark directory known (no manifest names one; pass --benchmark); chance baselines, key checks and images are left out")
	}
	s.checkRuns()
	if err := s.checkBenchmarks(opts.AllowMixed); err != nil {
		return s.Set, err
	}
	return s.Set, nil
}

// ErrMixed is wrapped by Load's refusal of runs made on different
// benchmarks.
var ErrMixed = errors.New("runs of different benchmarks")

// checkBenchmarks refuses runs made on different benchmarks, unless
// allowed: two runs differ when both record an identity and these
// differ, or both record a chexpercept.json hash and these differ (runs
// made before identities were recorded have only the hash). Allowed, the
// set's Mixed line names the benchmarks. A run that records no identity
// is noted, not refused: its benchmark is known by its chexpercept.json
// alone.
func (s *state) checkBenchmarks(allow bool) error {
	ids, hashes := map[benchmark.Identity]bool{}, map[string]bool{}
	groups := map[string][]string{}
	var unknown []string
	for _, r := range s.Runs {
		key := r.Identity.Short()
		switch {
		case r.Identity.Known():
			ids[r.Identity] = true
		case r.BenchmarkSHA256 != "":
			key = "unknown identity, chexpercept.json " + results.ShortHash(r.BenchmarkSHA256)
			unknown = append(unknown, r.ID())
		default: // no manifest: said when it was read
			key = "unknown"
		}
		if r.BenchmarkSHA256 != "" {
			hashes[r.BenchmarkSHA256] = true
		}
		groups[key] = append(groups[key], r.ID())
	}
	if len(unknown) > 0 {
		s.warnf("run(s) %s record no benchmark identity (made before identities were recorded): their benchmark is known by its chexpercept.json hash, not by its images", strings.Join(unknown, ", "))
	}
	if len(ids) <= 1 && len(hashes) <= 1 {
		return nil
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		parts = append(parts, k+": "+strings.Join(groups[k], ", "))
	}
	if !allow {
		return fmt.Errorf("%w: %s; refusing to set them side by side (report each benchmark's runs apart, or pass --allow-mixed-benchmarks to do so deliberately)", ErrMixed, strings.Join(parts, "; "))
	}
	s.Mixed = "Runs of different benchmarks side by side (--allow-mixed-benchmarks): " + strings.Join(parts, "; ") + ". Their numbers are not comparable."
	return nil
}

// Loader is Load of inputs and opts, called when the report asks for its
// runs (report.Config.Load).
func Loader(inputs []string, opts Options) func(context.Context) (*analysis.Set, error) {
	return func(ctx context.Context) (*analysis.Set, error) { return Load(ctx, inputs, opts) }
}

// firstDataset is the dataset path named by the manifest of the first run
// directory, in run order (run name, then oracle folder), that names one.
func firstDataset(dirs []string) (string, error) {
	sorted := slices.Clone(dirs)
	key := func(d string) string {
		abs, err := filepath.Abs(d)
		if err != nil {
			abs = d
		}
		return filepath.Base(filepath.Dir(abs)) + "\x00" + filepath.Base(abs)
	}
	slices.SortStableFunc(sorted, func(a, b string) int { return strings.Compare(key(a), key(b)) })
	for _, d := range sorted {
		m, err := rundir.ReadManifest(d)
		if safefile.Transient(err) {
			return "", fmt.Errorf("%w (a passing fault; run again)", err)
		}
		if err == nil && m.Dataset.Path != "" {
			return m.Dataset.Path, nil
		}
	}
	return "", nil
}

// readRun reads one run directory; nil when nothing of it is usable.
func (s *state) readRun(dir string) *analysis.Run {
	if rundir.IsUnfinished(dir) {
		s.warnf("%s %v; left out", dir, rundir.ErrUnfinished)
		return nil
	}
	r := &analysis.Run{Dir: dir}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	parent := filepath.Base(filepath.Dir(abs))
	base := filepath.Base(abs)
	// Names from folders and manifests reach tables, plots and pages;
	// control and format characters (a newline, a bidi override) are
	// escaped once, here (textsafe.OneLine).
	r.Name = textsafe.OneLine(parent)
	if m, ok := strings.CutPrefix(base, "oracle_"); ok {
		r.OracleMode = m
	}

	s.readManifest(r, dir, parent, base)
	if r.Provider == "" {
		r.Provider, _, _ = strings.Cut(r.Name, "_")
	}
	if r.Kind == "" { // no manifest: the run name says the provider
		r.Kind = results.KindOf(r.Provider, false)
	}

	rpath := filepath.Join(dir, rundir.ResultsFile)
	recs, bad := s.readResults(rpath)
	if recs != nil {
		r.Records = results.Latest(recs)
		r.Finished = len(r.Records)
		if bad > 0 {
			s.warnf("%s: %d unreadable line(s) left out", rpath, bad)
		}
		for _, rec := range r.Records {
			if r.OracleMode == "" {
				r.OracleMode = rec.OracleMode
			}
			if r.ParseMode == "" {
				r.ParseMode = rec.ParseMode
			}
			if rec.OracleMode != r.OracleMode || rec.ParseMode != r.ParseMode {
				s.warnf("%s: record %s has oracle mode %q and parse mode %q, the run %q and %q", rpath, rec.KeyID, rec.OracleMode, rec.ParseMode, r.OracleMode, r.ParseMode)
				break
			}
		}
		r.Ref = results.RefMetricsFromRecords(r.Records)
	} else {
		apath := filepath.Join(dir, rundir.AllResultsFile)
		if entries, err := readAllResults(apath); err == nil {
			r.Ref = results.RefMetricsFromExport(entries)
			s.warnf("%s: no usable results.jsonl; this run appears only in the reference CSVs (computed from %s)", dir, rundir.AllResultsFile)
		} else if !os.IsNotExist(err) {
			s.readFailed(err, apath, "%s: %v", apath, err)
		}
	}
	if r.Records == nil && r.Ref == nil {
		s.warnf("%s: neither results.jsonl nor all_results.json is usable; run left out", dir)
		return nil
	}
	if r.OracleMode == "" {
		s.warnf("%s: oracle mode unknown (no manifest, folder not named oracle_<mode>); run left out", dir)
		return nil
	}
	if r.ParseMode == "" {
		r.ParseMode = "reference"
	}
	return r
}

// readResults reads results.jsonl line by line (rundir.ScanLines: one
// line in memory at a time). A missing or empty file or one cut short is
// reported; lines that do not decode are counted and skipped so that the
// rest of the run is still reported. A line longer than any record
// (rundir.MaxLineBytes: a damaged tail) makes the file unusable: it is
// reported with its line number and not read further. It returns nil
// records when the file is missing, unusable or holds no complete line.
func (s *state) readResults(path string) ([]*results.Record, int) {
	var recs []*results.Record
	var lineWarnings []string // said after the note on the last line, as before
	bad := 0
	tail, _, err := rundir.ScanLines(path, func(line int, b []byte) error {
		if len(bytes.TrimSpace(b)) == 0 {
			return nil
		}
		rec, err := results.UnmarshalLine(b)
		if err != nil {
			if bad < 3 {
				lineWarnings = append(lineWarnings, fmt.Sprintf("%s: line %d: %v", path, line, err))
			}
			bad++
			return nil
		}
		recs = append(recs, rec)
		return nil
	})
	switch {
	case os.IsNotExist(err):
		s.warnf("%s: missing", path)
		return nil, 0
	case errors.Is(err, rundir.ErrLineTooLong):
		for _, w := range lineWarnings {
			s.warnf("%s", w)
		}
		s.warnf("%v; the file is left out", err)
		return nil, bad
	case err != nil:
		s.readFailed(err, path, "%s: %v", path, safefile.Reason(err))
		return nil, 0
	}
	if len(tail) > 0 {
		s.warnf("%s: the last line is incomplete (no final newline; the run was interrupted while writing); that record is left out", path)
	}
	for _, w := range lineWarnings {
		s.warnf("%s", w)
	}
	if len(recs) == 0 {
		s.warnf("%s: no complete record", path)
		return nil, bad
	}
	return recs, bad
}

// readAllResults reads an all_results.json into its entries, in file
// order, one entry at a time (rundir.ScanAllResults): memory holds the
// entries read so far, and a file that is not JSON is refused at its
// first byte that is not.
func readAllResults(path string) ([]*ojson.Value, error) {
	var out []*ojson.Value
	err := rundir.ScanAllResults(path, func(key string, v *ojson.Value) error {
		if v.Kind != ojson.KindObject {
			return fmt.Errorf("entry %q is not an object", key)
		}
		out = append(out, v)
		return nil
	})
	var notObject *ojson.NotObjectError
	var syntax *ojson.SyntaxError
	switch {
	case errors.As(err, &notObject):
		return nil, fmt.Errorf("top level is not an object")
	case errors.As(err, &syntax):
		return nil, fmt.Errorf("not valid JSON: %w", err)
	case err != nil:
		return nil, safefile.Reason(err)
	}
	if out == nil {
		out = []*ojson.Value{}
	}
	return out, nil
}

// checkRuns checks every run against the benchmark and against each
// other: keys not in the benchmark are dropped; a run of another
// benchmark than the report's, and parse modes or prompt profiles that differ among runs of
// the same oracle mode, are warnings; so are reference-label collisions.
func (s *state) checkRuns() {
	for _, r := range s.Runs {
		s.checkComplete(r)
	}
	if s.Bench != nil {
		for _, r := range s.Runs {
			if r.Identity.Known() && r.Identity != s.Bench.Identity {
				s.warnf("%s: made on benchmark %s, but the report uses %s (%s); its keys are matched by key_id", r.Dir, r.Identity.Short(), s.Bench.Dir, s.Bench.Identity.Short())
			} else if r.BenchmarkSHA256 != "" && r.BenchmarkSHA256 != s.Bench.SHA256 {
				s.warnf("%s: made on benchmark sha256 %s, but the report uses %s (sha256 %s); its keys are matched by key_id", r.Dir, results.ShortHash(r.BenchmarkSHA256), s.Bench.Dir, results.ShortHash(s.Bench.SHA256))
			}
			if r.Records == nil {
				continue
			}
			kept := r.Records[:0]
			var unknown []string
			for _, rec := range r.Records {
				b := s.Bench.Lookup(rec.KeyID)
				switch {
				case b == nil:
					unknown = append(unknown, rec.KeyID)
				case b.Path() != rec.QAPath:
					unknown = append(unknown, rec.KeyID+" (qa_path "+string(rec.QAPath)+", benchmark "+string(b.Path())+")")
				default:
					kept = append(kept, rec)
				}
			}
			r.Records = kept
			if len(unknown) > 0 {
				ex := unknown
				if len(ex) > 3 {
					ex = ex[:3]
				}
				s.warnf("%s: %d record(s) whose key is not in the benchmark left out (e.g. %s)", filepath.Join(r.Dir, rundir.ResultsFile), len(unknown), strings.Join(ex, ", "))
			}
		}
	}
	byMode := map[string][]*analysis.Run{}
	for _, r := range s.Runs {
		byMode[r.OracleMode] = append(byMode[r.OracleMode], r)
	}
	for _, mode := range slices.Sorted(maps.Keys(byMode)) {
		runs := byMode[mode]
		differ := func(what string, get func(*analysis.Run) string) {
			vals := map[string][]string{}
			for _, r := range runs {
				vals[get(r)] = append(vals[get(r)], r.Name)
			}
			if len(vals) > 1 {
				var parts []string
				for _, v := range slices.Sorted(maps.Keys(vals)) {
					name := v
					if name == "" {
						name = "unknown"
					}
					parts = append(parts, name+": "+strings.Join(vals[v], ", "))
				}
				s.warnf("oracle mode %s: runs differ in %s (%s)", mode, what, strings.Join(parts, "; "))
			}
		}
		differ("parse mode", func(r *analysis.Run) string { return r.ParseMode })
		differ("prompt profile", func(r *analysis.Run) string {
			if r.ProfileSHA256 == "" {
				return ""
			}
			return r.ProfileName + " " + results.ShortHash(r.ProfileSHA256)
		})
		labels := map[string][]string{}
		for _, r := range runs {
			l := results.RefLabel(r.Name)
			labels[l] = append(labels[l], r.Name)
		}
		for _, l := range slices.Sorted(maps.Keys(labels)) {
			if len(labels[l]) > 1 {
				s.warnf("oracle mode %s: runs %s share the reference label %q in all_models_oracle_%s/*.csv (the reference drops the provider)", mode, strings.Join(labels[l], ", "), l, mode)
			}
		}
	}
}

// checkComplete warns when a run has results for fewer records than it
// selected, so that its figures are never mistaken for a finished run's.
// A run being written is still reported (people watch live runs); the
// lock is only probed, and released at once, to say so.
func (s *state) checkComplete(r *analysis.Run) {
	if !r.Partial() {
		return
	}
	state := "run incomplete or still running"
	if unlock, err := rundir.ReadLock(r.Dir); err != nil {
		if errors.Is(err, rundir.ErrBusy) {
			r.Live = true
			state = "still running: an eval holds its lock"
		}
	} else {
		unlock()
	}
	s.warnf("run %s/oracle_%s: %d of %d selected records have results (%s); its figures cover only those %d",
		r.Name, r.OracleMode, r.Finished, r.Selected, state, r.Finished)
}

// readManifest takes the run settings of r from dir/manifest.json (its
// folder names parent/base) when it has a readable one.
func (s *state) readManifest(r *analysis.Run, dir, parent, base string) {
	mpath := filepath.Join(dir, rundir.ManifestFile)
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.readFailed(err, mpath, "%v; run settings taken from the directory names", err)
		}
		return
	}
	if m.RunName != "" && m.RunName != parent {
		s.warnf("%s: run_name %q differs from the folder name %q; the folder name is used", mpath, m.RunName, parent)
	}
	r.Provider, r.Model = textsafe.OneLine(m.Model.Provider), textsafe.OneLine(m.Model.Name)
	if m.OracleMode != "" {
		if r.OracleMode != "" && r.OracleMode != m.OracleMode {
			s.warnf("%s: oracle_mode %q differs from the folder name %q; the manifest is used", mpath, m.OracleMode, base)
		}
		r.OracleMode = textsafe.OneLine(m.OracleMode)
	}
	r.ParseMode = textsafe.OneLine(m.ParseMode)
	r.BenchmarkSHA256, r.DatasetPath = m.Dataset.SHA256, m.Dataset.Path
	r.Identity = m.BenchIdentity()
	r.ProfileName, r.ProfileSHA256 = textsafe.OneLine(m.PromptProfile.Name), m.PromptProfile.SHA256
	r.Sampling = m.Sampling.Text()
	if m.Reading != nil {
		arm := *m.Reading
		arm.Study, arm.Reader, arm.Arm, arm.AidRun = textsafe.OneLine(arm.Study), textsafe.OneLine(arm.Reader), textsafe.OneLine(arm.Arm), textsafe.OneLine(arm.AidRun)
		r.Reading = &arm
	}
	r.Selected = s.selectedRecords(mpath, m.SelectedRecords)
	r.Kind, r.Control = m.Kind, m.Control
	if id := m.ServerIdentity; id != nil {
		r.Server = textsafe.OneLine(id.String())
	}
}

// selectedRecords is the manifest's selected_records; 0 means unknown:
// absent (older manifests) or negative (warned).
func (s *state) selectedRecords(mpath string, n int) int {
	if n < 0 {
		s.warnf("%s: selected_records %d is negative; the run's completeness is not checked", mpath, n)
		return 0
	}
	return n
}
