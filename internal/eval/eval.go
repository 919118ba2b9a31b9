// Package eval runs a model through a benchmark (protocol.md §1–§11): it
// selects records, verifies their images, runs each record's
// conversation through the protocol engine with many records in flight
// and the turns of one record in order, and appends every finished record
// to results.jsonl at once, so that nothing is lost and a killed run
// resumes where it stopped.
//
// The model is reached through provider clients, one per endpoint. Each
// call goes through the response cache (deterministic calls only), the
// run's request and token rate limits, the case's endpoint (chosen when
// the case starts, moved when the endpoint keeps failing) with its
// adaptive concurrency limit, and a retry loop with jittered exponential
// backoff that honours Retry-After. At the end of a run (and after an
// interruption, and when a resumed run finishes) the run directory gets
// all_results.json, summary.json and the per-model reference CSVs,
// derived from results.jsonl and written atomically.
package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/protocol/profile"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/respcache"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/textsafe"
	"github.com/chexpercept/chexpercept/internal/validate"
)

// Options configure a run. Zero values take the documented defaults.
type Options struct {
	BenchDir string
	OutDir   string
	Model    runmodel.Model
	// RunName names the run directory instead of the name derived from
	// the model (RunName(provider, label, …)); checked by CheckRunName.
	RunName string
	// Control asks every record under an image control instead of with
	// the benchmark's images ("" for none): a run of its own, of kind
	// control, named after the model's run with the control appended
	// (results.ControlRunName) and cached apart from it.
	Control results.Control

	Endpoints         []string // base URLs; empty = the backend's default
	APIKeyFile        string
	GeminiImageFormat string // png (default) | jpeg
	// NoPreflight skips asking each endpoint who it is (for servers
	// without a models endpoint): the run's server identity is then the
	// sorted endpoint list, recorded as unverified.
	NoPreflight bool

	Oracle     protocol.OracleMode // default implicit
	Parse      parse.Mode          // default reference
	Profile    *profile.Profile    // default profile.Default()
	NoThinking bool
	PolicySeed int64 // baseline random policy

	Concurrency int           // records in flight; default 16
	MaxRetries  int           // retries after the first attempt; default 5 (use NoRetries for 0)
	NoRetries   bool          // MaxRetries 0
	Timeout     time.Duration // per call; default 10m
	// MaxReplyBytes caps one reply body; default provider.DefaultMaxReplyBytes.
	MaxReplyBytes int64
	RetryBase     time.Duration // first backoff; default 1s
	RetryCap      time.Duration // longest backoff; default 60s
	RPM, TPM      int           // 0 = uncapped

	Selection   results.Selection
	RetryErrors bool

	NoCache         bool
	CacheDir        string // default respcache.DefaultDir()
	ImageCacheBytes int64  // default 256 MiB
	// Images, when set, is the encoded-image cache this run shares with
	// other runs of the same benchmark (NewImageCache); ImageCacheBytes
	// is then not used, and Summary.ImageLoads counts the loads of every
	// run sharing it.
	Images *ImageCache
	// Verified, when set, reports the content hashes (SHA-256 of the
	// file bytes, lower-case hex) whose bytes the caller itself saw
	// imagefile.DecodePNG decode in this process: the demo passes those
	// of its validate --deep (validate.Options.Decoded). DecodePNG
	// decodes exactly the files VerifyPNG accepts, so such an image is
	// read, hashed and checked against SHA256SUMS like any other, but
	// not decoded again (VerifyStats.Given counts it). It is called
	// concurrently.
	Verified func(sha256 string) bool

	AllowInvalid    bool
	DryRun          bool
	PriceFileSHA256 string

	// Log receives progress and log lines (nil: discarded); TTY selects
	// a progress bar instead of periodic log lines.
	Log         io.Writer
	TTY         bool
	LogInterval time.Duration // default 30s

	// Abandon, when closed, abandons in-flight calls (a second Ctrl-C);
	// nil never abandons. Ending the ctx given to Run only stops starting
	// new records.
	Abandon <-chan struct{}

	// Job is the command's job: it tracks the temporary files of the
	// atomic writes (the manifest, the derived files). Nil tracks
	// nothing.
	Job *job.Job

	Now func() time.Time
}

// DefaultImageCacheBytes is --image-cache's default.
const DefaultImageCacheBytes = 256 << 20

func (o *Options) defaults() {
	if o.MaxReplyBytes <= 0 {
		o.MaxReplyBytes = provider.DefaultMaxReplyBytes
	}
	if o.Oracle == "" {
		o.Oracle = protocol.OracleImplicit
	}
	if o.Parse == "" {
		o.Parse = parse.ModeReference
	}
	if o.Profile == nil {
		o.Profile = profile.Default()
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.NoRetries {
		o.MaxRetries = 0
	} else if o.MaxRetries <= 0 {
		o.MaxRetries = 5
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.RetryBase <= 0 {
		o.RetryBase = time.Second
	}
	if o.RetryCap <= 0 {
		o.RetryCap = 60 * time.Second
	}
	if o.ImageCacheBytes <= 0 {
		o.ImageCacheBytes = DefaultImageCacheBytes
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.LogInterval <= 0 {
		o.LogInterval = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.GeminiImageFormat == "" {
		o.GeminiImageFormat = "png"
	}
}

// Summary is what Run reports.
type Summary struct {
	RunDir      string
	RunName     string
	Selected    int // records selected
	AlreadyDone int // records skipped because results.jsonl has them
	Attempted   int // records started by this invocation
	Abandoned   int // in-flight records dropped by an interruption
	Interrupted bool

	Results    *results.Summary // summary.json as written (nil for a dry run)
	CallPhase  time.Duration    // from the first call to the last record written
	DryRun     *DryRunReport
	ImageLoads int64       // images read and encoded during the run (cache misses; with Options.Images, of every run sharing it)
	Images     VerifyStats // image files verified just in time by this invocation
}

// Run evaluates the selected records. Ending ctx stops starting new
// records; in-flight records finish (or are abandoned when o.Abandon
// is closed) and the run's derived files are written before Run returns.
func Run(ctx context.Context, o Options) (*Summary, error) {
	o.defaults()
	start := time.Now()
	if err := o.check(); err != nil {
		return nil, err
	}
	p, err := prepare(ctx, &o)
	if err != nil {
		return nil, err
	}
	sum, runDir := p.sum, p.sum.RunDir
	if o.DryRun {
		prev, err := rundir.ReadResults(filepath.Join(runDir, rundir.ResultsFile))
		if err != nil {
			return nil, err
		}
		todo, done := pending(p.bench, p.selected, prev, o.RetryErrors)
		sum.AlreadyDone = done
		sum.DryRun = dryRun(&o, p.bench, todo)
		return sum, nil
	}

	// Everything that can fail without a network call (credentials, key
	// files, endpoints, the response cache) fails here, before the run
	// directory is created or touched: a failed start leaves no manifest
	// that would block the corrected command.
	r := &runner{o: &o, bench: p.bench, benchAbs: p.benchAbs, sum: sum}
	if err := r.setup(); err != nil {
		return nil, err
	}
	r.verify.sums = p.sums
	if r.cache != nil {
		// Each reply is committed when stored; closing only checkpoints
		// the cache's log, whose entries stay valid either way, and a
		// cache that fails costs calls, never results.
		defer func() { _ = r.cache.Close() }()
	}
	defer r.memo.close()
	// Before anything is written: a server that cannot be reached, refuses
	// the key or does not serve the model fails here, in one line.
	id, err := r.preflight(ctx, p.man.Model.Endpoints)
	if err != nil {
		return nil, err
	}
	r.identity = id
	p.man.SetServer(id)

	// A run directory that holds no run but other files is not ours.
	if _, err := rundir.Check(runDir); err != nil {
		return nil, err
	}
	// A start refused before the manifest is written leaves nothing
	// behind: the folders and the lock file it made are removed again.
	// The folders below --out are ours: none may be a link planted there.
	created := missingDirs(runDir)
	if err := mkRunDir(o.OutDir, runDir); err != nil {
		removeNew(runDir, created, false)
		return nil, err
	}
	_, lerr := os.Lstat(filepath.Join(runDir, rundir.LockFile))
	newLock, started := errors.Is(lerr, os.ErrNotExist), false
	defer func() {
		if !started {
			removeNew(runDir, created, newLock)
		}
	}()
	unlock, err := rundir.Lock(runDir)
	if err != nil {
		newLock = false // held by another process
		return nil, err
	}
	defer unlock()
	man, err := openManifest(o.Job, runDir, p.man)
	if err != nil {
		return nil, err
	}
	started = true
	// A run killed while a file was renamed into place left its
	// temporary file; the run is ours (locked), and so is that debris.
	if err := rundir.RemoveStaleTemps(runDir); err != nil {
		return nil, err
	}
	store, prev, err := rundir.OpenStore(filepath.Join(runDir, rundir.ResultsFile))
	if err != nil {
		return nil, err
	}
	if store.Repair != "" {
		fmt.Fprintf(o.Log, "warning: %s\n", store.Repair)
	}
	todo, done := pending(p.bench, p.selected, prev, o.RetryErrors)
	sum.AlreadyDone = done
	if len(todo) > 0 {
		if err := addEndpoints(o.Job, runDir, man, p.man.Model.Endpoints); err != nil {
			_ = store.Close()
			return nil, err
		}
	}
	r.store = store
	return sum, r.execute(ctx, man, todo, len(p.selected), start)
}

// missingDirs lists the directories from dir upwards that do not exist
// yet, outermost first: those that creating dir will make.
func missingDirs(dir string) []string {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(missing)
	return missing
}

// removeNew undoes a start that wrote nothing: the lock file when this
// process made it, then the directories it created, innermost first
// (os.Remove leaves a directory that is not empty).
func removeNew(runDir string, created []string, newLock bool) {
	if newLock {
		_ = os.Remove(filepath.Join(runDir, rundir.LockFile))
	}
	for i := len(created) - 1; i >= 0; i-- {
		_ = os.Remove(created[i])
	}
}

// mkRunDir creates the run directory runDir below out, refusing a
// symbolic link or file met on the way below out (outdir.MkdirAll).
func mkRunDir(out, runDir string) error {
	rel, err := filepath.Rel(out, runDir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		_, err := outdir.MkdirAll(runDir, "")
		return err
	}
	_, err = outdir.MkdirAll(out, rel)
	return err
}

// check refuses options that no run can use.
func (o *Options) check() error {
	if o.Model.Label == "" || o.Model.Provider == "" || o.Model.Backend == "" {
		return fmt.Errorf("eval: model provider, backend and label are required")
	}
	if _, err := protocol.ParseOracleMode(string(o.Oracle)); err != nil {
		return err
	}
	if _, err := parse.ParseMode(string(o.Parse)); err != nil {
		return err
	}
	if o.GeminiImageFormat != "png" && o.GeminiImageFormat != "jpeg" {
		return fmt.Errorf("gemini image format %q: want png or jpeg", o.GeminiImageFormat)
	}
	if _, err := results.ParseControl(string(o.Control)); err != nil {
		return err
	}
	if c := o.Images; c != nil {
		switch {
		case filepath.Clean(c.c.benchDir) != filepath.Clean(o.BenchDir):
			return fmt.Errorf("eval: the shared image cache holds the images of %s, not of %s", c.c.benchDir, o.BenchDir)
		case o.Model.Backend == runmodel.BackendGemini && !c.c.keepPNG:
			return fmt.Errorf("eval: the shared image cache keeps no PNG bytes, which the gemini backend sends")
		}
	}
	if o.Control != "" && o.Model.Backend == runmodel.BackendBaseline {
		return fmt.Errorf("image control %s: the baseline policies do not look at the image, so there is nothing to control; a control asks a model (serve-baseline included, through the openai provider)", o.Control)
	}
	return nil
}

// prepared is what Run knows before it touches the run directory: the
// benchmark, the selected records (indexes into bench.Records), this
// run's manifest and the summary so far.
type prepared struct {
	bench    *benchmark.Benchmark
	benchAbs string
	selected []int
	man      *results.Manifest
	sum      *Summary
	sums     *benchdir.Sums // the build's SHA256SUMS; nil when the benchmark has none
}

// prepare loads (and unless allowed otherwise, validates) the benchmark,
// selects the records and names the run directory.
func prepare(ctx context.Context, o *Options) (*prepared, error) {
	// Validation reads the file again on its own; the two overlap, and
	// a load error is still the one reported first.
	var verr error
	var wg sync.WaitGroup
	if !o.AllowInvalid {
		wg.Add(1)
		go func() { defer wg.Done(); _, verr = validate.Check(ctx, o.BenchDir) }()
	}
	bench, err := benchdir.Load(o.BenchDir)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if verr != nil {
		return nil, verr
	}
	sums, err := openSums(bench, o.Log)
	if err != nil {
		return nil, err
	}
	benchAbs, err := filepath.Abs(o.BenchDir)
	if err != nil {
		return nil, err
	}
	sel := o.Selection
	for _, x := range []struct {
		field string
		v     *int
	}{{"limit", sel.Limit}, {"per_path_limit", sel.PerPathLimit}, {"sample", sel.Sample}} {
		if x.v != nil && *x.v < 1 {
			return nil, fmt.Errorf("selection %s %d selects no record; it must be at least 1", x.field, *x.v)
		}
	}
	if err := results.CheckLesions(sel, bench.Lesions); err != nil {
		return nil, err
	}
	selected, err := results.Select(bench.Records, sel)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(selected))
	for i, ix := range selected {
		keys[i] = bench.Records[ix].KeyID
	}
	runName := o.runSpec().Name()
	if err := results.CheckRunName(runName); err != nil {
		return nil, err
	}
	man := buildManifest(o, bench, benchAbs, keys)
	if _, err := man.Marshal(); err != nil { // refused before any folder is made
		return nil, fmt.Errorf("run manifest: %w", err)
	}
	return &prepared{
		bench:    bench,
		benchAbs: benchAbs,
		selected: selected,
		man:      man,
		sums:     sums,
		sum:      &Summary{RunDir: rundir.Path(o.OutDir, runName, string(o.Oracle), sel.Shard), RunName: runName, Selected: len(selected)},
	}, nil
}

// openSums reads the benchmark's SHA256SUMS and checks its JSON files
// against it now; the images are checked just in time, as each record's
// are verified. It sets bench.Identity, which the manifest records. A
// benchmark without SHA256SUMS is evaluated with a warning (nil Sums).
func openSums(bench *benchmark.Benchmark, log io.Writer) (*benchdir.Sums, error) {
	sums, err := benchdir.OpenSums(bench)
	if errors.Is(err, benchdir.ErrNoSums) {
		fmt.Fprintf(log, "warning: benchmark %v\n", err)
		return nil, nil
	}
	return sums, err
}

// openManifest is the run directory's manifest: on resume the one
// written by the first invocation (whose settings must equal man's), on
// a fresh start man, written now.
func openManifest(j *job.Job, runDir string, man *results.Manifest) (*results.Manifest, error) {
	old, err := rundir.ReadManifest(runDir)
	if err == nil {
		if old.Schema != results.ManifestSchema {
			return nil, fmt.Errorf("%s: schema %q is not %q", filepath.Join(runDir, rundir.ManifestFile), old.Schema, results.ManifestSchema)
		}
		if err := sameBenchmark(runDir, old, man); err != nil {
			return nil, err
		}
		if diffs := Differences(old, man); len(diffs) > 0 {
			return nil, fmt.Errorf("run directory %s was started with different settings; refusing to mix runs (use another results folder or the same settings):\n  %s", runDir, strings.Join(diffs, "\n  "))
		}
		if err := sameServer(runDir, old, man); err != nil {
			return nil, err
		}
		return old, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	b, err := man.Marshal()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(j, filepath.Join(runDir, rundir.ManifestFile), b); err != nil {
		return nil, err
	}
	return man, nil
}

// sameBenchmark refuses to resume a run on a benchmark of another
// identity than the one it was started on: one run, one benchmark. A run
// started before identities were recorded (none in its manifest) is
// resumed on the chexpercept.json hash alone, which Differences compares,
// and keeps its unknown identity.
func sameBenchmark(runDir string, old, cur *results.Manifest) error {
	was, now := old.BenchIdentity(), cur.BenchIdentity()
	if !was.Known() || was == now {
		return nil
	}
	return fmt.Errorf("run directory %s was started on benchmark %s, but %s is %s now: refusing to mix two benchmarks in one run; restore the benchmark the run was started on, or start a new run (another --out or --run-name)",
		runDir, was.Short(), textsafe.OneLine(cur.Dataset.Path), now.Short())
}

// addEndpoints adds to the manifest of a resumed run the endpoints of
// this session that it does not name yet, after the first session's, and
// rewrites it: endpoints may change between restarts, and the manifest
// names every endpoint a session with records to ask was started
// against. Nothing is written when it names them all already.
func addEndpoints(j *job.Job, runDir string, man *results.Manifest, eps []string) error {
	all := results.UnionEndpoints(man.Model.Endpoints, eps)
	if slices.Equal(all, man.Model.Endpoints) {
		return nil
	}
	man.Model.Endpoints = all
	b, err := man.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(j, filepath.Join(runDir, rundir.ManifestFile), b)
}

// execute asks the records of todo, closes the store, then writes the
// run's derived files (also after an interruption or a failure) and logs
// the counts. The first error wins.
func (r *runner) execute(ctx context.Context, man *results.Manifest, todo []int, nSelected int, start time.Time) error {
	o, sum, runDir := r.o, r.sum, r.sum.RunDir
	abandon, stopWatch := abandonContext(o.Abandon)
	runErr := r.run(ctx, abandon, todo)
	stopWatch()
	if cerr := r.store.Close(); runErr == nil && cerr != nil {
		runErr = cerr
	}
	if err := r.recordRedactions(runDir, man); err != nil && runErr == nil {
		runErr = err
	}
	rs, ferr := rundir.Finalize(o.Job, runDir, man, nSelected, time.Since(start).Seconds())
	if ferr != nil && runErr == nil {
		runErr = ferr
	}
	sum.Results = rs
	if rs != nil {
		c := rs.Counts
		// "done" only for a run that went to its end; an interrupted or
		// failed one stopped, and its counts are so far.
		word := "done"
		if sum.Interrupted || runErr != nil {
			word = "stopped"
		}
		fmt.Fprintf(o.Log, "%s: %d ok, %d error, %d parse failures (%d answered calls, %d from the cache, cost %s) of %d selected records\n",
			word, c.RecordsOK, c.RecordsError, c.ParseFailures, c.Calls, c.CacheHits, costString(rs.Usage.CostUSD), c.RecordsSelected)
		fmt.Fprintf(o.Log, "images: %s\n", sum.Images)
	}
	return runErr
}

// recordRedactions adds this invocation's key redactions (provider.Redactor)
// to the manifest's count and rewrites it; nothing is written when there
// were none, so a clean run's manifest keeps its first bytes.
func (r *runner) recordRedactions(runDir string, man *results.Manifest) error {
	var n int64
	for _, ep := range r.pool.eps {
		if rd, ok := ep.client.(provider.Redactor); ok {
			n += rd.Redactions()
		}
	}
	if n == 0 {
		return nil
	}
	man.Redactions += n
	fmt.Fprintf(r.o.Log, "warning: the API key appeared %d time(s) in replies or errors; each was stored as %s (manifest.json redactions: %d)\n",
		n, provider.RedactedMarker, man.Redactions)
	b, err := man.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(r.o.Job, filepath.Join(runDir, rundir.ManifestFile), b)
}

// abandonContext is the context of the calls in flight: it ends when
// abandon is closed. stop releases its watcher.
func abandonContext(abandon <-chan struct{}) (ctx context.Context, stop context.CancelFunc) {
	ctx, stop = context.WithCancel(context.Background())
	if abandon != nil {
		go func() {
			select {
			case <-abandon:
				stop()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, stop
}

func costString(c *float64) string {
	if c == nil {
		return "unknown (unpriced model)"
	}
	return fmt.Sprintf("$%.4f", *c)
}

// pending returns the selected records still to ask (those with no line,
// and with retryErrors those whose last line is an error) and how many
// are done.
func pending(bench *benchmark.Benchmark, selected []int, prev []*results.Record, retryErrors bool) (todo []int, done int) {
	status := map[string]string{}
	for _, r := range prev {
		status[r.KeyID] = r.Status
	}
	for _, ix := range selected {
		st, ok := status[bench.Records[ix].KeyID]
		if ok && (st == results.StatusOK || !retryErrors) {
			done++
			continue
		}
		todo = append(todo, ix)
	}
	return todo, done
}

// runSpec is what the run is of, as its manifest records it.
func (o *Options) runSpec() results.RunSpec {
	return results.RunSpec{Model: o.Model, Selection: o.Selection, NoThinking: o.NoThinking,
		Oracle: string(o.Oracle), Parse: string(o.Parse), RunName: o.RunName, Control: o.Control, Now: o.Now}
}

// buildManifest is the manifest of this run: NewManifest and what only a
// run of ours knows (prompt profile, image encoding, endpoints, call
// policy, price file, baseline seed).
func buildManifest(o *Options, bench *benchmark.Benchmark, benchAbs string, keys []string) *results.Manifest {
	m := results.NewManifest(o.runSpec(), bench, benchAbs, keys)
	m.PromptProfile = results.ProfileInfo{Name: o.Profile.Name, Texts: o.Profile.Texts(), SHA256: o.Profile.Hash()}
	m.ImageEncoding = results.ImageEncoding{Format: "png", Transport: "data URL, base64", ImageCacheBytes: o.ImageCacheBytes}
	m.Concurrency = o.Concurrency
	m.Retry = results.RetryPolicy{MaxRetries: o.MaxRetries, TimeoutS: o.Timeout.Seconds(), MaxReplyBytes: o.MaxReplyBytes,
		BackoffBaseS: o.RetryBase.Seconds(), BackoffCapS: o.RetryCap.Seconds(), RPM: o.RPM, TPM: o.TPM}
	m.PriceFileSHA256 = o.PriceFileSHA256
	mi := &m.Model
	for _, e := range o.Endpoints {
		mi.Endpoints = append(mi.Endpoints, ScrubEndpoint(e))
	}
	if len(o.Endpoints) == 0 {
		// the endpoint the backend uses by default, still without credentials
		switch o.Model.Backend {
		case runmodel.BackendOpenAI:
			mi.Endpoints = []string{provider.DefaultOpenAIEndpoint}
		case runmodel.BackendAzure:
			if e := os.Getenv("AZURE_OPENAI_ENDPOINT"); e != "" {
				mi.Endpoints = []string{ScrubEndpoint(e)}
			}
		case runmodel.BackendGemini:
			mi.Endpoints = []string{"gemini default (Gemini API, or Vertex AI with application-default credentials)"}
		}
	}
	if o.Model.Backend == runmodel.BackendBaseline {
		s := o.PolicySeed
		mi.PolicySeed = &s
		m.ImageEncoding.Transport = "in process (no network)"
	}
	if o.Model.Backend == runmodel.BackendGemini {
		m.ImageEncoding.Transport = "inline bytes"
		m.ImageEncoding.GeminiImageFormat = o.GeminiImageFormat
	}
	return m
}

// runner is one invocation's state.
type runner struct {
	o        *Options
	bench    *benchmark.Benchmark
	benchAbs string
	store    *rundir.Store
	sum      *Summary

	pool   *pool
	images *imageCache
	verify *verifier
	memo   *memo
	cache  *respcache.Cache
	limits *limiters
	retry  retryPolicy
	prog   *progress
	// stopped is closed when the run context ends (the first
	// interrupt): records in flight finish the calls they are in, but
	// wait for nothing more (see waitCtx).
	stopped <-chan struct{}

	identity runmodel.Identity // the server's, from the preflight

	// halted is closed by halt when the run must stop at once: on the
	// first transient failure to read a benchmark image
	// (safefile.Transient), or a benchmark file that is not the one the
	// build wrote (benchdir.ErrChanged). No record starts after it, and
	// the run fails with haltErr instead of recording the records it met
	// as errors.
	halted   chan struct{}
	haltOnce sync.Once
	haltErr  error
}

// halt stops the run with err (see halted; the first one wins).
func (r *runner) halt(err error) {
	r.haltOnce.Do(func() {
		r.haltErr = err
		close(r.halted)
	})
}
