package build

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/source"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// Review modes recorded in build_info.json.
const (
	ModeAcceptAll = "accept_all"
	ModeReviews   = "reviews_jsonl"
	ModeReviewDB  = "review_db"
)

// Options configure a build.
type Options struct {
	Source string // manifest or candidates file (§2.4)
	Out    string // benchmark directory
	Config buildcfg.Config
	// Workers is the number of case goroutines (≤ 0: number of CPUs).
	Workers int

	Decisions  reviewlog.Decisions
	ReviewMode string // ModeAcceptAll, ModeReviews or ModeReviewDB

	// Inspect is "", "all", "failed" or a comma-separated key_id list.
	Inspect string
	// MeasureFloor re-encodes every PNG of the final tree after assembly
	// to measure the PNG-encoding floor (build_timing.json).
	MeasureFloor bool

	Stdout, Stderr io.Writer
	// Progress shows a progress bar (terminals) instead of log lines.
	Progress bool
	// LogEvery is the interval of progress log lines (0: 10 s).
	LogEvery time.Duration
	// Job is the command's job: it tracks the temporary files of the
	// atomic writes (atomicfile). Nil tracks nothing.
	Job *job.Job

	testHook  func(c *source.Case) // tests: runs inside each case's recover boundary
	testAhead func(key string)     // tests: runs once the renderer ahead has written a case's folders
	// testRename, when set (tests), renames the build's folders instead
	// of os.Rename.
	testRename renameFunc
}

// GlobalError is a problem that aborts the build with exit code 2.
type GlobalError struct{ Err error }

func (e *GlobalError) Error() string { return e.Err.Error() }
func (e *GlobalError) Unwrap() error { return e.Err }

// ErrNoWorkState is matched by Inspect's error when the build's work/
// does not have the case and no source was named (the command names its
// flag).
var ErrNoWorkState = errors.New("has no work state")

func global(format string, args ...any) error {
	return &GlobalError{Err: fmt.Errorf(format, args...)}
}

// Summary is what a finished build reports to its command.
type Summary struct {
	Shortfalls []string // one line per target shortfall
	Included   int
	Questions  int
	Failed     int
}

// Run builds the benchmark. A non-nil error is a global problem (exit 2);
// case failures are recorded and never returned.
func Run(ctx context.Context, opt Options) (*Summary, error) {
	start := time.Now()
	opt.setDefaults()
	if opt.Decisions == nil {
		return nil, global("no review decisions: accept every candidate or give the reviews (a reviews log or the review database)")
	}
	cfg := opt.Config
	if err := cfg.Validate(); err != nil {
		return nil, global("config: %w", err)
	}
	own, cases, isCand, err := openOut(opt, cfg)
	if err != nil {
		return nil, err
	}
	workDir := filepath.Join(opt.Out, workDirName)
	cases, sampleSeed, err := sampleCases(ctx, cases, isCand, cfg)
	if err != nil {
		return nil, err
	}
	if kl, ok := opt.Decisions.(keyLister); ok {
		warnUnknownReviews(opt.Stderr, kl.KeyIDs(), cases)
	}
	loader, err := source.NewLoader(opt.Job, cases, cfg, workDir, opt.Stderr)
	if err != nil {
		return nil, &GlobalError{Err: err}
	}
	for _, n := range loader.Notes() {
		fmt.Fprintln(opt.Stderr, "note:", n)
	}
	fpcfg, err := fpConfig(cfg)
	if err != nil {
		return nil, global("config: %w", err)
	}
	e := &env{cfg: cfg, seed: cfg.Seed, loader: loader, stderr: opt.Stderr, hook: opt.testHook, rename: renamer(opt.testRename)}
	lists := makeLists(cases, cfg)
	a := &assembly{opt: opt, cfg: cfg, lists: lists, workDir: workDir, loader: loader, e: e,
		sampleSeed: sampleSeed, sourcePath: opt.Source, cases: cases, own: own, hashes: map[string]string{}}
	a.ahead = newRenderAhead(ctx, a, opt.Workers, len(cases))
	if err := processLists(ctx, opt, e, lists, fpcfg, workDir, a.ahead.listDecided); err != nil {
		a.ahead.abandon()
		return nil, err
	}
	processed := time.Now()
	return a.finish(ctx, start, processed)
}

// setDefaults fills the options a caller may leave zero.
func (opt *Options) setDefaults() {
	if opt.Stdout == nil {
		opt.Stdout = io.Discard
	}
	if opt.Stderr == nil {
		opt.Stderr = io.Discard
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.NumCPU()
	}
}

// openOut reads the output directory's ownership and the source, then
// claims the directory and removes what an interrupted build left. Nothing
// is written before the output directory, the source and its place
// relative to the output directory have been checked.
func openOut(opt Options, cfg buildcfg.Config) (own *ownership, cases []*source.Case, isCand bool, err error) {
	if own, err = readOwnership(opt.Out); err != nil {
		return nil, nil, false, &GlobalError{Err: err}
	}
	if cases, isCand, err = source.ReadSource(opt.Source, cfg); err != nil {
		return nil, nil, false, &GlobalError{Err: err}
	}
	if err := claimOut(opt, own, cases); err != nil {
		return nil, nil, false, err
	}
	if err := cleanLeftovers(opt.Out, renamer(opt.testRename)); err != nil {
		return nil, nil, false, global("cleaning leftovers in %s: %w", opt.Out, err)
	}
	return own, cases, isCand, nil
}

// sampleCases returns the cases in sampled order with their sampling seed:
// candidates were sampled by `sample` and carry its seed (nil when none
// does); a manifest is sampled here with the build seed.
func sampleCases(ctx context.Context, cases []*source.Case, isCand bool, cfg buildcfg.Config) ([]*source.Case, *uint64, error) {
	if !isCand {
		cases, _, err := source.Sample(ctx, cases, cfg, cfg.Seed)
		s := cfg.Seed
		return cases, &s, err
	}
	for _, c := range cases {
		if c.SampleSeed != nil {
			s := *c.SampleSeed
			return cases, &s, nil
		}
	}
	return cases, nil, nil
}

// processLists walks the candidate lists over opt.Workers workers. For
// each scheduled candidate the review decides; an accepted one reuses the
// work state of an earlier run with the same fingerprint, or is processed
// and its work state written. decided sees each list once it is decided
// (and again after later items of it finish; it acts once).
func processLists(ctx context.Context, opt Options, e *env, lists []*list, fpcfg *ojson.Value, workDir string, decided func(*list)) error {
	prog := newProgress(opt, lists)
	work := func(it *item) error {
		c := it.c
		in := e.digests(c)
		if frame.IsTransient(in.err) {
			return global("%s: %w", c.KeyID(), in.err)
		}
		mSHA := ""
		if c.Positive() {
			mSHA = in.maskSHA
		}
		it.res = opt.Decisions.Resolve(c.KeyID(), in.imageSHA, mSHA)
		if it.res.Status != reviewlog.Accepted {
			return nil
		}
		fp := fingerprint(fpcfg, e.seed, c, in)
		if o := readWork(workDir, c.KeyID(), fp, e.cfg.LesionSet()); o != nil {
			o.Deformation = nil // reloaded from work/ at assembly (memory)
			it.outcome = o
			return nil
		}
		o, _ := e.processCase(ctx, c, in)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if o.transient != nil {
			return global("%s: %w", c.KeyID(), o.transient)
		}
		if err := writeWork(workDir, fp, o, e.cfg.BundlePNGCompression, e.rename); err != nil {
			return global("writing work state of %s: %w", c.KeyID(), err)
		}
		o.masks, o.Deformation, o.caseLine = nil, nil, nil
		it.outcome = o
		return nil
	}
	window := opt.Workers
	err := schedule(ctx, lists, opt.Workers, window, work, func(l *list, it *item) {
		prog.done(l, it)
		if l.decided {
			decided(l)
		}
	})
	prog.finish(err != nil)
	if err != nil {
		var ge *GlobalError
		if errors.As(err, &ge) {
			return err
		}
		return fmt.Errorf("build interrupted: %w", err)
	}
	return nil
}

// finish assembles the benchmark from the processed lists, writes the
// inspect views asked for, measures the PNG floor when asked, writes
// build_timing.json and prints the summary.
func (a *assembly) finish(ctx context.Context, start, processed time.Time) (*Summary, error) {
	opt := a.opt
	sum, err := a.run(ctx)
	if err != nil {
		return nil, err
	}
	assembled := time.Now()
	if opt.Inspect != "" {
		if err := a.inspect(ctx, opt.Inspect); err != nil {
			return nil, err
		}
	}
	var floor *floorResult
	if opt.MeasureFloor {
		if floor, err = measureFloor(opt); err != nil {
			return nil, global("measuring the PNG floor: %w", err)
		}
	}
	if err := writeTiming(opt.Job, opt.Out, start, processed, assembled, time.Now(), opt.Workers, floor); err != nil {
		return nil, global("%w", err)
	}
	a.printSummary(opt.Stdout)
	return sum, nil
}

// keyLister is a decision store that can list the key_ids it decides
// (reviewlog.Log does).
type keyLister interface{ KeyIDs() []string }

// unknownShown is how many unknown key_ids the warning names.
const unknownShown = 5

// warnUnknownReviews warns about decisions whose key_id is not a
// candidate of this source: usually reviews of another sample or source,
// which would otherwise exclude every case silently as missing.
func warnUnknownReviews(w io.Writer, keys []string, cases []*source.Case) {
	cand := make(map[string]bool, len(cases))
	for _, c := range cases {
		cand[c.KeyID()] = true
	}
	var unknown []string
	for _, k := range keys {
		if !cand[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return
	}
	shown := unknown[:min(len(unknown), unknownShown)]
	more := ""
	if len(unknown) > len(shown) {
		more = fmt.Sprintf(", … (%d more)", len(unknown)-len(shown))
	}
	fmt.Fprintf(w, "warning: %d of %d reviewed key_id(s) are not candidates of this source: %s%s\n",
		len(unknown), len(keys), textsafe.OneLine(strings.Join(shown, ", ")), more)
}

// makeLists groups candidates per lesion (spec lesion order) into their
// negative and positive lists, keeping candidate (file) order.
func makeLists(cases []*source.Case, cfg buildcfg.Config) []*list {
	wanted := map[string]bool{}
	for _, l := range cfg.Lesions {
		wanted[l] = true
	}
	var lists []*list
	byKey := map[string]*list{}
	for _, les := range cfg.LesionSet().Names() {
		if !wanted[les] {
			continue
		}
		pos := &list{lesion: les, positive: true, target: cfg.RF + cfg.RR}
		neg := &list{lesion: les, positive: false, target: cfg.LF}
		byKey[les+"/positive"], byKey[les+"/negative"] = pos, neg
		lists = append(lists, pos, neg)
	}
	for _, c := range cases {
		if l := byKey[c.Lesion+"/"+c.Label]; l != nil {
			l.items = append(l.items, &item{c: c})
		}
	}
	return lists
}

// rfCount is the RF share of n positives (§3, half to even).
func rfCount(n int, ratio float64) int {
	return int(math.RoundToEven(float64(n) * ratio))
}

// claimOut checks the source against the output directory and then
// claims it: creates it, checks that it is writable and writes the build
// marker with this source.
func claimOut(opt Options, own *ownership, cases []*source.Case) error {
	real, err := outdir.RealPath(opt.Source)
	if err != nil {
		return global("source %s: %w", opt.Source, err)
	}
	sha, err := benchdir.SHA256File(opt.Source)
	if err != nil {
		return global("source %s: %w", opt.Source, safefile.Reason(err))
	}
	if err := own.checkSource(opt.Out, opt.Source, real, sha); err != nil {
		return &GlobalError{Err: err}
	}
	if err := checkSourceTree(opt.Out, opt.Source, cases, own.fresh); err != nil {
		return &GlobalError{Err: err}
	}
	if err := os.MkdirAll(opt.Out, 0o755); err != nil {
		return global("output directory %s: %w", opt.Out, safefile.Reason(err))
	}
	// The marker comes first: a build killed from here on leaves a
	// directory that the next run recognises.
	own.source, own.sourceSHA = real, sha
	if err := own.save(opt.Job, opt.Out); err != nil {
		return global("output directory %s: writing the build marker: %w", opt.Out, err)
	}
	if err := probeWritable(opt.Out); err != nil {
		return global("output directory %s is not writable: %w", opt.Out, err)
	}
	return nil
}

// probeWritable creates and removes a temporary file in dir.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe.tmp-*")
	if err != nil {
		return safefile.Reason(err)
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		return safefile.Reason(err)
	}
	return os.Remove(name)
}

// cleanLeftovers deletes *.tmp-* files and .staging-* entries that an
// interrupted build may have left in the output tree (§14); an old folder
// renamed aside whose replacement never arrived is moved back instead
// (restoreAside). work/ entries
// and the bundle folders are scanned one level deep, which is where the
// build creates them.
func cleanLeftovers(out string, renameDir renameFunc) error {
	for _, d := range []string{out, filepath.Join(out, workDirName), filepath.Join(out, imagesDir), filepath.Join(out, masksDir), filepath.Join(out, inspectDir)} {
		if err := cleanDirLeftovers(d, renameDir); err != nil {
			return err
		}
	}
	return nil
}

// cleanDirLeftovers is cleanLeftovers for the entries of one folder.
func cleanDirLeftovers(d string, renameDir renameFunc) error {
	ents, err := os.ReadDir(d)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, en := range ents {
		n := en.Name()
		if restored, err := restoreAside(renameDir, d, n); err != nil {
			return err
		} else if restored {
			continue
		}
		if isLeftover(n) {
			if err := os.RemoveAll(filepath.Join(d, n)); err != nil {
				return err
			}
		}
	}
	return nil
}
