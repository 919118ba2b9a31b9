// Package demo runs the whole chexpercept pipeline on synthetic data in one
// call, for `chexpercept demo`: a small phantom source set, an accept-all
// build of all seven lesions and all three paths, a deep validation, seven
// evaluations (the oracle and random baselines and five simulated models of
// distinct skill in two domain groups, one of which guesses from the
// question's text whatever it is shown), two image controls (the text-only
// control of a model that looks and of the one that guesses), the report
// with its findings and its answer to "does the model use the image?", and
// the item-health flags with the command that sends them back to review.
//
// The model: a demo directory holds one subdirectory per step (phantom/,
// benchmark/, results/, report/, plus cache/ for the response cache), a
// README.txt saying the data is synthetic and unreviewed, a demo.log with
// the steps' detailed output, and the marker file .chexpercept-demo. The
// marker makes the directory ours: Run refuses a non-empty directory
// without it, so a mistyped --out never clobbers anything. The marker also
// stamps the completed steps (phantom, build, eval) with a fingerprint of
// their parameters and the program version; a rerun reuses a step whose
// stamp matches and regenerates it (and everything downstream) otherwise.
// An interrupted build resumes from its own work/ folder, the evaluations
// resume from results.jsonl, and the report is always rewritten.
//
// The simulated models go through the real network path: each is a
// serve-baseline (simulated policy, package fakemodel) in process on a
// loopback port, asked by the openai provider over HTTP. The deep
// validation decodes every image first; the seven evaluations and the two
// controls then run at once, each reading and hashing the images but
// decoding none the validation decoded (eval.Options.Verified), and
// sharing one cache of base64-encoded images (eval.ImageCache). Nothing
// reaches the network beyond loopback, and nothing is written outside the
// demo directory.
package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/build"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/eval"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/phantom"
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/report"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runset"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
	"github.com/chexpercept/chexpercept/internal/validate"
	"github.com/chexpercept/chexpercept/internal/version"
)

// DefaultDir is the demo directory used when none is given: visible and
// next to the user, so that the report is easy to find and a rerun reuses
// the work already done.
const DefaultDir = "chexpercept-demo"

// Names inside the demo directory.
const (
	markerFile   = ".chexpercept-demo"
	readmeFile   = "README.txt"
	logFile      = "demo.log"
	phantomDir   = "phantom"
	benchDir     = "benchmark"
	resultsDir   = "results"
	reportDir    = "report"
	cacheDir     = "cache"
	keyFile      = ".placeholder-api-key"
	domainsFile  = "domains.yaml"
	markerHeader = "chexpercept demo directory (synthetic, unreviewed data; safe to delete)"
)

// The demo's fixed parameters. Two positive phantom cases per lesion
// fill its revision-free and revision-required places, one negative its
// lesion-free place: the phantom draws no case the build does not use.
// With this seed the builder rejects none of them (with the three
// positives per lesion of earlier versions it rejected one, for want of
// revision options, and left five unused); a set that left a place empty
// would show as a shortfall warning under the build step, and the demo's
// test would fail on the composition.
const (
	casesPerLesion = 2 // positives per lesion
	negPerLesion   = 1
	phantomSeed    = 1
	buildSeed      = 0
	perPath        = 1 // LF, RF and RR cases per lesion
)

// Options configure Run.
type Options struct {
	Out     string    // demo directory (DefaultDir when empty)
	Stdout  io.Writer // step lines, the headline table, then the index.html path
	Workers int       // ≤ 0: number of CPUs
	// Job is the command's job, shared by every step, the concurrent
	// evaluations included: the demo is one command, which a signal
	// stops as a whole, and it has no commit point (every step resumes).
	// It tracks the temporary files of all the steps' writes. Nil tracks
	// nothing.
	Job *job.Job
}

// Result says where Run put things.
type Result struct {
	Dir       string // absolute demo directory
	Benchmark string
	Results   string
	Report    string
	IndexHTML string
	Log       string
	Domains   string // the domains file given to the report
	// RunDirs are the evaluation run directories: the oracle baseline,
	// the simulated models (over HTTP) in simModels order, the random
	// baseline.
	RunDirs []string
	// ControlDirs are the image-control run directories, in
	// controlModels order.
	ControlDirs []string
	// Reused lists the steps taken over from an earlier invocation.
	Reused []string
	// Analysis is the report's analysis (headline numbers).
	Analysis *analysis.Result
}

// Run executes the demo. The last line written to opt.Stdout is the
// absolute path of index.html. The log's lines are for a person and are
// not checked one by one; its close is, like any file written.
func Run(ctx context.Context, opt Options) (_ *Result, err error) {
	out := opt.Out
	if out == "" {
		out = DefaultDir
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("demo: output directory %s: %w", out, err)
	}
	w := opt.Stdout
	if w == nil {
		w = io.Discard
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.NumCPU()
	}
	st, err := claimDir(opt.Job, abs)
	if err != nil {
		return nil, err
	}
	logf, err := safefile.OpenWritable(filepath.Join(abs, logFile), os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("demo: opening the log: %w", err)
	}
	defer func() {
		if cerr := logf.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("demo: closing the log: %w", cerr)
		}
	}()
	_, _ = fmt.Fprintf(logf, "\n==== chexpercept demo %s, %s ====\n", version.String(), time.Now().UTC().Format(time.RFC3339))

	d := &runner{ctx: ctx, opt: opt, w: w, log: logf, st: st, res: &Result{
		Dir:       abs,
		Benchmark: filepath.Join(abs, benchDir),
		Results:   filepath.Join(abs, resultsDir),
		Report:    filepath.Join(abs, reportDir),
		IndexHTML: filepath.Join(abs, reportDir, "index.html"),
		Log:       filepath.Join(abs, logFile),
		Domains:   filepath.Join(abs, domainsFile),
	}}
	if err := d.run(); err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Stopped by a signal mid-step: every step resumes.
			err = fmt.Errorf("%w (interrupted; run the demo again to continue)", err)
		}
		_, _ = fmt.Fprintf(logf, "demo failed: %v\n", err)
		return d.res, err
	}
	return d.res, nil
}

type runner struct {
	ctx  context.Context
	opt  Options
	w    io.Writer
	log  io.Writer
	st   *state
	res  *Result
	step int

	images *eval.ImageCache // shared by the evaluations

	// decoded holds the content hashes of the images the deep
	// validation decoded; the evaluations decode none of them again.
	decodedMu sync.Mutex
	decoded   map[string]bool
}

// sawDecoded notes an image content the deep validation decoded.
func (d *runner) sawDecoded(sha string) {
	d.decodedMu.Lock()
	defer d.decodedMu.Unlock()
	if d.decoded == nil {
		d.decoded = map[string]bool{}
	}
	d.decoded[sha] = true
}

// wasDecoded reports whether the deep validation decoded the content sha
// (eval.Options.Verified).
func (d *runner) wasDecoded(sha string) bool {
	d.decodedMu.Lock()
	defer d.decodedMu.Unlock()
	return d.decoded[sha]
}

const steps = 8

// say prints one numbered step line.
func (d *runner) say(format string, args ...any) {
	d.step++
	d.print(fmt.Sprintf("[%d/%d] ", d.step, steps), detail, fmt.Sprintf(format, args...))
}

// MaxLine is the longest line the demo prints (a path longer than a line
// stays whole on a line of its own).
const MaxLine = 100

// detail is the indent of the lines under a step.
const detail = "      "

// note prints a line under a step.
func (d *runner) note(format string, args ...any) {
	d.print(detail, detail+"  ", fmt.Sprintf(format, args...))
}

// print writes text after first, wrapped at spaces within MaxLine;
// continuation lines start with indent.
func (d *runner) print(first, indent, text string) { wrap(d.w, first, indent, text) }

// wrap writes text to w after first, wrapped at spaces within MaxLine;
// continuation lines start with indent.
func wrap(w io.Writer, first, indent, text string) {
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len([]rune(line))+1+len([]rune(word)) > MaxLine {
			fmt.Fprintln(w, line)
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	fmt.Fprintln(w, line)
}

func (d *runner) run() error {
	r := d.res
	d.print("", "  ", fmt.Sprintf("chexpercept demo in %s (synthetic phantom data, never reviewed by a radiologist; step details in %s)", r.Dir, logFile))
	if err := writeReadme(d.opt.Job, r.Dir); err != nil {
		return err
	}
	manifest, err := d.phantom()
	if err != nil {
		return err
	}
	if err := d.build(manifest); err != nil {
		return err
	}
	if err := d.evaluate(); err != nil {
		return err
	}
	if err := d.report(); err != nil {
		return err
	}
	if err := d.itemHealth(); err != nil {
		return err
	}
	writeHeadline(d.w, r.Analysis)
	fmt.Fprintln(d.w, r.IndexHTML)
	return nil
}

func (d *runner) phantom() (string, error) {
	dir := filepath.Join(d.res.Dir, phantomDir)
	manifest := filepath.Join(dir, "manifest.jsonl")
	fp := fmt.Sprintf("version=%s cases_per_lesion=%d negatives=%d seed=%d png=pngenc-fastest", version.String(), casesPerLesion, negPerLesion, phantomSeed)
	if d.st.get("phantom") == fp && exists(manifest) {
		d.res.Reused = append(d.res.Reused, "phantom")
		d.say("phantom: reusing %d synthetic cases in %s/", (casesPerLesion+negPerLesion)*7, phantomDir)
		return manifest, nil
	}
	// Regenerating the source invalidates everything built from it.
	if err := d.st.reset("phantom", "build", "eval"); err != nil {
		return "", err
	}
	for _, sub := range []string{phantomDir, benchDir, resultsDir, reportDir} {
		if err := os.RemoveAll(filepath.Join(d.res.Dir, sub)); err != nil {
			return "", fmt.Errorf("demo: removing the old %s: %w", sub, err)
		}
	}
	t := time.Now()
	sum, err := phantom.Generate(d.ctx, phantom.Options{OutDir: dir, CasesPerLesion: casesPerLesion, Negatives: negPerLesion,
		Seed: phantomSeed, Workers: d.opt.Workers, Progress: d.log, FastPNG: true, Job: d.opt.Job})
	if err != nil {
		return "", fmt.Errorf("demo: phantom: %w", err)
	}
	if err := d.st.set("phantom", fp); err != nil {
		return "", err
	}
	d.say("phantom: %d synthetic radiographs with lung, heart and lesion masks (%d positive and %d negative per lesion, seed %d) in %s/ … %s",
		sum.Cases, casesPerLesion, negPerLesion, phantomSeed, phantomDir, time.Since(t).Round(time.Millisecond))
	return sum.Manifest, nil
}

func (d *runner) build(manifest string) error {
	dir := d.res.Benchmark
	fp := fmt.Sprintf("version=%s per_path=%d seed=%d review=%s png=fast phantom={%s}", version.String(), perPath, buildSeed,
		build.ModeAcceptAll, d.st.get("phantom"))
	composition := fmt.Sprintf("%d LF, %d RF, %d RR per lesion", perPath, perPath, perPath)
	if d.st.get("build") == fp && exists(filepath.Join(dir, "chexpercept.json")) && exists(filepath.Join(dir, "SHA256SUMS")) {
		d.res.Reused = append(d.res.Reused, "build")
		d.say("build: reusing the benchmark in %s/ (%s, accept-all: UNREVIEWED)", benchDir, composition)
		return nil
	}
	if d.st.get("build") != "" {
		// Built with other parameters: start over rather than mix.
		if err := d.st.reset("build"); err != nil {
			return err
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("demo: removing the old benchmark: %w", err)
		}
	}
	// Runs of an earlier benchmark would be refused by eval (other hash).
	if err := d.st.reset("eval"); err != nil {
		return err
	}
	for _, sub := range []string{resultsDir, reportDir} {
		if err := os.RemoveAll(filepath.Join(d.res.Dir, sub)); err != nil {
			return fmt.Errorf("demo: removing the old %s: %w", sub, err)
		}
	}
	cfg := buildcfg.Default()
	cfg.Seed = buildSeed
	cfg.LF, cfg.RF, cfg.RR = perPath, perPath, perPath
	cfg.Workers = d.opt.Workers
	// The fastest PNG writer: the same pixels in larger files, and the
	// default level's encoding would be a third of the demo's CPU time.
	cfg.BundlePNGCompression = buildcfg.FastPNG
	t := time.Now()
	sum, err := build.Run(d.ctx, build.Options{Source: manifest, Out: dir, Config: cfg, Workers: d.opt.Workers,
		Decisions: reviewlog.AcceptAll{}, ReviewMode: build.ModeAcceptAll, Stdout: d.log, Stderr: d.log, Job: d.opt.Job})
	if err != nil {
		return fmt.Errorf("demo: build: %w", err)
	}
	if err := d.st.set("build", fp); err != nil {
		return err
	}
	d.say("build: %d cases (%s), %d questions, in %s/ … %s",
		sum.Included, composition, sum.Questions, benchDir, time.Since(t).Round(time.Millisecond))
	if sum.Failed > 0 {
		d.note("%d candidate(s) skipped, by the build's reason (%s): %s",
			sum.Failed, filepath.Join(benchDir, "skipped.csv"), skipReasons(filepath.Join(dir, "skipped.csv")))
	}
	d.note("accept-all: no radiologist reviewed these cases (build_info.json review_mode accept_all)")
	for _, s := range sum.Shortfalls {
		d.note("warning: shortfall: %s", s)
	}
	return nil
}

// skipReasons counts skipped.csv's reasons: "deformation_failed 1".
func skipReasons(name string) string {
	data, err := safefile.ReadFile(name, 16<<20, safefile.NoFollow)
	if err != nil {
		return "see the file"
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(rows) < 2 {
		return "see the file"
	}
	col := slices.Index(rows[0], "reason")
	if col < 0 {
		return "see the file"
	}
	n := map[string]int{}
	for _, r := range rows[1:] {
		if col < len(r) {
			n[r[col]]++
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

// validate checks the benchmark with --deep and returns its step line.
func (d *runner) validate() (string, error) {
	t := time.Now()
	rep, err := validate.Run(d.ctx, d.res.Benchmark, validate.Options{Deep: true, Workers: d.opt.Workers, Decoded: d.sawDecoded})
	if err != nil {
		return "", fmt.Errorf("demo: validate: %w", err)
	}
	if werr := rep.WriteText(d.log); werr != nil {
		return "", fmt.Errorf("demo: writing the validation report to the log: %w", werr)
	}
	if !rep.OK() {
		msg := ""
		for _, f := range rep.Findings {
			if f.Severity == validate.Error {
				msg = fmt.Sprintf("%s %s %s", f.Code, f.KeyID, f.Message)
				break
			}
		}
		return "", fmt.Errorf("demo: the benchmark in %s fails validation (%d errors; first: %s; all in %s)", d.res.Benchmark, rep.Errors, msg, logFile)
	}
	return fmt.Sprintf("validate --deep: PASS, %d records, %d questions, %d images, %d errors, %d warnings … %s",
		rep.Records, rep.Questions, rep.Images, rep.Errors, rep.Warnings, time.Since(t).Round(time.Millisecond)), nil
}

// simModel is one simulated model of the demo: its name (the model of
// its run, openai_<name>), domain group, stage accuracies and seed, and
// whether it guesses: answers from the question's text alone (its text
// prior), whatever image it is shown.
type simModel struct {
	name     string
	domain   string
	accuracy [4]float64
	seed     int64
	guesses  bool
}

// simModels are the demo's simulated models: five in two domain groups,
// so that the report's findings compare medical with general models. Four
// look at the image, at set skills; sim-medical-small guesses, as the
// medical models that answer the same without the radiograph do. They
// share mislabelSeed, so on mislabelRate of the questions they all give
// the same wrong answer, which item health flags. Without an image every
// one answers from the same text prior (textPrior).
var simModels = []simModel{
	{"sim-general-large", "general", [4]float64{0.98, 0.9, 0.8, 0.7}, 1, false},
	{"sim-general-base", "general", [4]float64{0.85, 0.6, 0.4, 0.3}, 2, false},
	{"sim-general-small", "general", [4]float64{0.7, 0.4, 0.2, 0.15}, 3, false},
	{"sim-medical-tuned", "medical", [4]float64{0.9, 0.75, 0.55, 0.45}, 4, false},
	{"sim-medical-small", "medical", [4]float64{}, 5, true},
}

// textPrior is how the simulated models answer without the image: the
// most frequent answer of the question type in the benchmark.
const textPrior = fakemodel.TextPriorFrequent

// controlModels are the models whose text-only control the demo runs:
// one that looks and the one that guesses. A text-only run sends no
// image, so the two cost a few hundred small calls.
var controlModels = []string{"sim-general-large", "sim-medical-small"}

// demoConcurrency is the records in flight per evaluation, and
// demoImageCache the bytes of encoded images the evaluations keep, in one
// cache they share: the demo's bundle (about 90 MB as base64) whole.
const (
	demoConcurrency = 4
	demoImageCache  = 128 << 20
)

const (
	mislabelRate = 0.1
	mislabelSeed = 12
)

// evalFingerprint names the evaluations' parameters: a change reruns them.
func evalFingerprint(build string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version=%s policies=oracle,random mislabel=%g/%d prior=%s", version.String(), mislabelRate, mislabelSeed, textPrior)
	for _, m := range simModels {
		fmt.Fprintf(&b, " %s=%s/%v/%d/guesses=%t", m.name, m.domain, m.accuracy, m.seed, m.guesses)
	}
	fmt.Fprintf(&b, " controls=%s:%s", results.ControlTextOnly, strings.Join(controlModels, ","))
	fmt.Fprintf(&b, " build={%s}", build)
	return b.String()
}

// evaluate runs the evaluations: the oracle baseline first (it verifies
// the images once; the others find them in the verification memo), then
// the simulated models, each behind its own serve-baseline on a loopback
// port and asked over HTTP, and the random baseline, all at once.
func (d *runner) evaluate() error {
	reg, err := registry.Default()
	if err != nil {
		return fmt.Errorf("demo: model registry: %w", err)
	}
	prices, err := registry.LoadPrices("")
	if err != nil {
		return fmt.Errorf("demo: price table: %w", err)
	}
	// Runs of another program version may differ in settings that eval
	// refuses to mix (prompts, sampling): start them over.
	fp := evalFingerprint(d.st.get("build"))
	if old := d.st.get("eval"); old != "" && old != fp {
		if err := d.st.reset("eval"); err != nil {
			return err
		}
		if err := os.RemoveAll(d.res.Results); err != nil {
			return fmt.Errorf("demo: removing the old results: %w", err)
		}
	}
	// A placeholder key file keeps a user's OPENAI_API_KEY from being sent,
	// even to our own loopback servers.
	kf := filepath.Join(d.res.Dir, keyFile)
	if err := os.WriteFile(kf, []byte("chexpercept-demo-placeholder\n"), 0o600); err != nil {
		return fmt.Errorf("demo: writing %s: %w", kf, err)
	}

	// The deep validation decodes every image first, on all the cores;
	// a benchmark that fails it stops the demo there. The evaluations
	// then only read and hash the images it decoded (eval's Verified):
	// each image is decoded once.
	vline, err := d.validate()
	if err != nil {
		return err
	}
	d.say("%s", vline)

	d.images = eval.NewImageCache(d.res.Benchmark, demoImageCache, false)
	t := time.Now()
	urls := map[string]string{}
	for _, m := range simModels {
		sim, err := fakemodel.LoadSimulated(fakemodel.SimConfig{Benchmark: d.res.Benchmark, Accuracy: m.accuracy, Seed: m.seed,
			MislabelRate: mislabelRate, MislabelSeed: mislabelSeed, TextPrior: textPrior, IgnoresImage: m.guesses})
		if err != nil {
			return fmt.Errorf("demo: simulated model %s: %w", m.name, err)
		}
		url, _, stop, err := fakemodel.StartServer(d.ctx, fakemodel.ServerConfig{Policy: fakemodel.PolicySimulated,
			PolicySeed: m.seed, Simulated: sim})
		if err != nil {
			return fmt.Errorf("demo: starting serve-baseline: %w", err)
		}
		defer stop()
		fmt.Fprintf(d.log, "serve-baseline (policy simulated, %s) listening at %s\n", m.name, url)
		urls[m.name] = url
	}
	type outcome struct {
		sum  *eval.Summary
		err  error
		took time.Duration
	}
	// All at once: the oracle baseline, the simulated models, the random
	// baseline, then the controls.
	nSim := len(simModels)
	nRandom := 1 + nSim
	outs := make([]outcome, nRandom+1+len(controlModels))
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			start := time.Now()
			switch {
			case i == 0:
				outs[i].sum, outs[i].err = d.eval(reg, prices, "baseline", "oracle", nil, "", "")
			case i <= nSim:
				m := simModels[i-1]
				outs[i].sum, outs[i].err = d.eval(reg, prices, "openai", m.name, []string{urls[m.name]}, kf, "")
			case i == nRandom:
				outs[i].sum, outs[i].err = d.eval(reg, prices, "baseline", "random", nil, "", "")
			default:
				name := controlModels[i-nRandom-1]
				outs[i].sum, outs[i].err = d.eval(reg, prices, "openai", name, []string{urls[name]}, kf, results.ControlTextOnly)
			}
			outs[i].took = time.Since(start)
		})
	}
	wg.Wait()
	for i, o := range outs {
		if o.err != nil {
			return o.err
		}
		if i <= nRandom {
			d.res.RunDirs = append(d.res.RunDirs, o.sum.RunDir)
		} else {
			d.res.ControlDirs = append(d.res.ControlDirs, o.sum.RunDir)
		}
	}
	d.say("eval in process: baseline oracle (alongside the others): %s … %s", counts(outs[0].sum), outs[0].took.Round(time.Millisecond))
	d.note("(the baseline named oracle answers every question right)")
	d.note("oracle mode implicit: after a wrong answer the model is shown the right one, so each stage is" +
		" also scored on its own; every run of the demo uses it")
	d.say("eval over HTTP: %d simulated models (serve-baseline --policy simulated on loopback ports, provider openai), concurrently … %s",
		nSim, time.Since(t).Round(time.Millisecond))
	d.note("a simulated model's stage accuracy is %s", fakemodel.AccuracyMeaning)
	for i, m := range simModels {
		if m.guesses {
			d.note("%s (%s): answers from the question's text alone, whatever image it is shown; %s", m.name, m.domain, counts(outs[1+i].sum))
			continue
		}
		d.note("%s (%s): stage accuracies %s %% at stages 1-4; %s", m.name, m.domain, percents(m.accuracy), counts(outs[1+i].sum))
	}
	var ctl []string
	for i, name := range controlModels {
		ctl = append(ctl, fmt.Sprintf("%s (%s)", name, counts(outs[nRandom+i].sum)))
	}
	d.note("image controls, alongside: the same questions with every image removed (text-only), asked of %s", strings.Join(ctl, " and "))
	last := outs[nRandom]
	d.say("eval in process: baseline random (alongside): %s … %s", counts(last.sum), last.took.Round(time.Millisecond))
	return d.st.set("eval", fp)
}

// percents writes shares as whole percentages: "98/90/80/70".
func percents(a [4]float64) string {
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = strconv.FormatFloat(math.Round(1000*x)/10, 'f', -1, 64)
	}
	return strings.Join(parts, "/")
}

func counts(s *eval.Summary) string {
	c := s.Results.Counts
	txt := fmt.Sprintf("%d/%d records ok, %d calls", c.RecordsOK, c.RecordsSelected, c.Calls)
	if s.AlreadyDone > 0 {
		txt += fmt.Sprintf(" (%d records kept from an earlier run)", s.AlreadyDone)
	}
	return txt
}

func (d *runner) eval(reg *registry.Registry, prices *registry.Prices, prov, model string, endpoints []string, apiKeyFile string, control results.Control) (*eval.Summary, error) {
	m, notice, err := eval.ResolveModel(reg, prices, prov, model, false)
	if err != nil {
		return nil, fmt.Errorf("demo: eval %s/%s: %w", prov, model, err)
	}
	if notice != "" {
		fmt.Fprintln(d.log, "notice:", notice)
	}
	o := eval.Options{
		BenchDir:        d.res.Benchmark,
		OutDir:          d.res.Results,
		Model:           m,
		Endpoints:       endpoints,
		APIKeyFile:      apiKeyFile,
		PriceFileSHA256: prices.SHA256,
		// Loopback calls answer at once; a short deadline turns a hang
		// into a retry instead of a stuck demo.
		Timeout: 30 * time.Second,
		// Six runs share the machine at once: a few records each keep
		// both cores busy, and far fewer request bodies (megabytes of
		// base64 each) are in memory at a time than at the default 16.
		Concurrency: demoConcurrency,
		// One cache of encoded images for all the runs: each image is
		// base64-encoded once, and the bundle is held once, not once a
		// run.
		Images:   d.images,
		CacheDir: filepath.Join(d.res.Dir, cacheDir),
		// The images the deep validation decoded are only hashed.
		Verified: d.wasDecoded,
		Log:      d.log,
		Job:      d.opt.Job,
		Control:  control,
	}
	if control != "" {
		model += " --control " + string(control)
	}
	sum, err := eval.Run(d.ctx, o)
	if err != nil {
		return nil, fmt.Errorf("demo: eval %s/%s: %w", prov, model, err)
	}
	switch {
	case sum.Interrupted:
		return nil, fmt.Errorf("demo: eval %s/%s interrupted; run the demo again to continue", prov, model)
	case sum.Results == nil:
		return nil, fmt.Errorf("demo: eval %s/%s wrote no summary (%s)", prov, model, sum.RunDir)
	case sum.Results.Counts.RecordsError > 0:
		return nil, fmt.Errorf("demo: eval %s/%s: %d records ended in error (see %s and %s)",
			prov, model, sum.Results.Counts.RecordsError, filepath.Join(sum.RunDir, rundir.ResultsFile), logFile)
	}
	return sum, nil
}

func (d *runner) report() error {
	t := time.Now()
	// The report folder is ours; a fresh one never mixes in stale files.
	if err := os.RemoveAll(d.res.Report); err != nil {
		return fmt.Errorf("demo: removing the old report: %w", err)
	}
	var doms strings.Builder
	doms.WriteString("# run model → domain group, for the report's findings (chexpercept report --domains)\n")
	for _, m := range simModels {
		fmt.Fprintf(&doms, "%s: %s\n", m.name, m.domain)
	}
	if err := atomicfile.WriteFile(d.opt.Job, d.res.Domains, []byte(doms.String())); err != nil {
		return fmt.Errorf("demo: writing %s: %w", domainsFile, err)
	}
	res, err := report.Generate(d.ctx, report.Config{
		Load:        runset.Loader([]string{d.res.Results}, runset.Options{Benchmark: d.res.Benchmark}),
		Out:         d.res.Report,
		DomainsFile: d.res.Domains,
		Report:      report.Options{Version: version.String(), Workers: d.opt.Workers, Job: d.opt.Job},
	})
	if res != nil {
		for _, w := range res.Warnings {
			fmt.Fprintln(d.log, "report warning:", w)
		}
	}
	if err != nil {
		return fmt.Errorf("demo: report: %w", err)
	}
	d.res.Analysis = res
	warn := ""
	if n := len(res.Warnings); n > 0 {
		warn = fmt.Sprintf(", %d warning(s) in %s", n, logFile)
	}
	d.say("report: %d runs, domain groups from %s → %s/ (reference CSVs, ext_*.csv, report.md, plots, index.html%s) … %s",
		len(res.Runs), domainsFile, reportDir, warn, time.Since(t).Round(time.Millisecond))
	if res.Domains != nil {
		for _, v := range res.Domains.Verdict {
			d.note("finding (oracle mode %s), claim %d, %s: %s. %s.", v.OracleMode, v.Claim, claimNames[v.Claim], v.Status, v.Reason)
		}
	}
	if res.ImageControl != nil {
		d.note("%s", imageVerdict(res.ImageControl))
		for _, u := range res.ImageControl.Uses {
			name := strings.TrimPrefix(u.Run, "openai_")
			if u.UsesImage() {
				d.note("(%s: its accuracy drops reliably without the image at %s; elsewhere, on these few records, no reliable drop)", name, strings.Join(u.Drops, ", "))
			} else {
				d.note("(%s: no reliable drop at any stage without the image: it answers without using it)", name)
			}
		}
		d.note("(the image controls in full: report.md, \"%s\")", report.ImageUseTitle)
	}
	return nil
}

// imageVerdict is the demo's verdict on the image controls in one line:
// which model uses the image and which does not.
func imageVerdict(ic *analysis.ImageControl) string {
	var parts []string
	for _, u := range ic.Uses {
		yes := "no"
		if u.UsesImage() {
			yes = "yes"
		}
		parts = append(parts, strings.TrimPrefix(u.Run, "openai_")+": "+yes)
	}
	return "does the model use the image? " + strings.Join(parts, "; ")
}

// shownFlags is the number of flagged items the demo prints per mode.
const shownFlags = 4

var claimNames = map[int]string{1: "depth decay", 2: "medical vs general"}

// itemHealth prints what item health flagged and why, and the command
// that sends the flagged cases back to review.
func (d *runner) itemHealth() error {
	res := d.res.Analysis
	flagged := 0
	for _, h := range res.Health {
		if h.Skipped != "" {
			return fmt.Errorf("demo: item health (oracle %s) was not computed: %s", h.Mode, h.Skipped)
		}
		flags := h.Flags()
		flagged += len(flags)
		d.say("item health (oracle mode %s): %d of %d item questions flagged as probably mislabeled; %.1f (sd %.1f) expected by chance under random answering",
			h.Mode, len(flags), len(h.Items), h.Expected, h.SD)
		for i, f := range flags {
			if i == shownFlags {
				d.note("… and %d more in %s/%s", len(flags)-shownFlags, reportDir, report.FlaggedItemsFile)
				break
			}
			rec := res.Set.Bench.Lookup(f.Key)
			d.note("flag: %s, question %q: %d of %d models answered %s; the ground truth is %s",
				textsafe.OneLine(f.Key), f.Q.Name(), f.ModalN, f.Runs, answerWords(rec, f.Q, f.Modal), answerWords(rec, f.Q, f.GT))
		}
	}
	if len(res.Health) == 0 {
		return fmt.Errorf("demo: the report has no item health (no non-baseline runs)")
	}
	if flagged == 0 {
		d.note("nothing flagged: no item drew the same wrong answer from enough models")
		return nil
	}
	d.note("(the simulated models share a wrong answer on some questions, as if the ground truth were wrong there;" +
		" with real models a flag is a reason to look again.) To send the flagged cases back to review:")
	printCommand(d.w, "chexpercept review init",
		"--source", filepath.Join(d.res.Dir, phantomDir, "manifest.jsonl"),
		"--only", filepath.Join(d.res.Report, report.FlaggedItemsFile),
		"--review-db", filepath.Join(d.res.Dir, "rereview.sqlite"))
	return nil
}

// printCommand prints a command to copy, one flag and its path a line,
// continued with backslashes; a flag whose path would make its line
// longer than MaxLine has the path on a line of its own.
func printCommand(w io.Writer, command string, flagPaths ...string) {
	fmt.Fprintf(w, "%s%s", detail, command)
	for i := 0; i+1 < len(flagPaths); i += 2 {
		flag, path := flagPaths[i], textsafe.ShellQuote(flagPaths[i+1])
		line := detail + "  " + flag + " " + path + " \\"
		if len([]rune(line)) <= MaxLine {
			fmt.Fprintf(w, " \\\n%s  %s %s", detail, flag, path)
		} else {
			fmt.Fprintf(w, " \\\n%s  %s \\\n%s    %s", detail, flag, detail, path)
		}
	}
	fmt.Fprintln(w)
}

// answerWords is an answer ("1,3") as its options' texts, quoted, with
// the numbers when the texts are unknown.
func answerWords(rec *benchmark.Record, q benchmark.Question, ans string) string {
	if rec != nil {
		if t := report.OptionText(rec, q, ans); t != "" {
			return strconv.Quote(textsafe.OneLine(t))
		}
	}
	return "option " + ans
}

// writeHeadline prints, per run, the end-to-end accuracy of each stage and
// the mean depth for each path (lesions pooled).
func writeHeadline(w io.Writer, res *analysis.Result) {
	if res == nil {
		return
	}
	width := len("model")
	for _, rr := range res.Runs {
		width = max(width, len(res.Label(rr)))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "End-to-end accuracy (%) per stage and mean depth, all lesions")
	fmt.Fprintln(w, "(path RR revision-required, RF revision-free, LF lesion-free):")
	fmt.Fprintf(w, "%-*s  path   n  stage1  stage2  stage3  stage4  depth\n", width, "model")
	for _, rr := range res.Runs {
		name := res.Label(rr)
		if !rr.Scored {
			fmt.Fprintf(w, "%-*s  (not scored)\n", width, name)
			continue
		}
		for _, p := range benchmark.Paths {
			n := 0
			var cells []string
			for _, k := range benchmark.Stages {
				c := rr.Stage(p, "all", k)
				if c == nil || !c.Applicable || !c.E2E.Valid {
					cells = append(cells, "N/A")
					continue
				}
				n = max(n, c.E2E.N)
				cells = append(cells, fmt.Sprintf("%.1f", 100*c.E2E.Value))
			}
			depth := "N/A"
			if dc := rr.DepthOf(p, "all"); dc != nil && dc.Valid {
				depth = fmt.Sprintf("%.2f", dc.Mean)
			}
			fmt.Fprintf(w, "%-*s  %-4s %3d  %6s  %6s  %6s  %6s  %5s\n", width, name, p.Short(), n,
				cells[0], cells[1], cells[2], cells[3], depth)
			name = ""
		}
	}
	if note := report.StageNote(res, res.Runs, benchmark.Paths...); note != "" {
		wrap(w, "", "", note)
	}
	fmt.Fprintln(w)
}

// claimDir makes dir a demo directory: it creates it, or accepts it when it
// is empty or already carries the marker; anything else is refused.
func claimDir(j *job.Job, dir string) (*state, error) {
	st, err := outdir.Require(dir, "demo", markerFile)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	marker := filepath.Join(dir, markerFile)
	if st == outdir.Marked {
		if err := outdir.CheckTree(dir); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
	} else {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("demo: creating %s: %w", dir, err)
		}
		// The first marker is written in place, not renamed into place:
		// a demo stopped while writing it leaves the marker's name, which
		// its rerun recognises. Later updates are atomic (state.save).
		if err := outdir.WriteMarker(marker, []byte(markerHeader+"\n")); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
	}
	// The demo's own files at the top (each step's folder is swept by the
	// step's command).
	own := func(rel string) bool { return rel == readmeFile || rel == domainsFile }
	if err := outdir.RemoveStale(dir, own, markerFile); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return readState(j, marker)
}

// state is the marker file: a header line, then "step fingerprint" lines
// for the steps that completed.
type state struct {
	job   *job.Job // tracks the marker's atomic rewrites
	path  string
	order []string
	steps map[string]string
}

func readState(j *job.Job, path string) (*state, error) {
	f, err := safefile.Open(path, safefile.NoFollow)
	if err != nil {
		return nil, fmt.Errorf("demo: reading %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read-only
	st := &state{job: j, path: path, steps: map[string]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		step, fp, ok := strings.Cut(sc.Text(), " ")
		if !ok || !strings.HasPrefix(step, "step:") {
			continue // the header, or a line we do not know: the step reruns
		}
		step = strings.TrimPrefix(step, "step:")
		st.order = append(st.order, step)
		st.steps[step] = fp
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("demo: reading %s: %w", path, err)
	}
	return st, nil
}

func (s *state) get(step string) string { return s.steps[step] }

func (s *state) set(step, fp string) error {
	if _, ok := s.steps[step]; !ok {
		s.order = append(s.order, step)
	}
	s.steps[step] = fp
	return s.save()
}

func (s *state) reset(steps ...string) error {
	for _, st := range steps {
		delete(s.steps, st)
	}
	return s.save()
}

func (s *state) save() error {
	var b strings.Builder
	b.WriteString(markerHeader + "\n")
	for _, step := range s.order {
		if fp, ok := s.steps[step]; ok {
			fmt.Fprintf(&b, "step:%s %s\n", step, fp)
		}
	}
	if err := atomicfile.WriteFile(s.job, s.path, []byte(b.String())); err != nil {
		return fmt.Errorf("demo: writing %s: %w", s.path, err)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func writeReadme(j *job.Job, dir string) error {
	text := `chexpercept demo output — SYNTHETIC, UNREVIEWED DATA

Everything here was generated by "chexpercept demo". The radiographs are
synthetic phantoms, not patient images, and the benchmark was built with
--accept-all: no radiologist reviewed a single case (build_info.json records
review_mode "accept_all"). Use it to see how the tools fit together, never to
judge a model. The simulated models are not models either: they answer the
benchmark's ground truth at set accuracies, and share a wrong answer on a
tenth of the questions so that item health has something to flag; one,
sim-medical-small, answers from the question's text alone whatever image it
is shown, and the image controls (the same questions without the images)
show which model uses the image. The
PNGs are written at the fastest compression level (larger files, same
pixels): the benchmark is built with the default configuration but for
bundle_png_compression: fast.

  phantom/     synthetic source set (manifest.jsonl, images, masks, contact sheet)
  benchmark/   the benchmark built from it (chexpercept.json, image bundle, SHA256SUMS)
  results/     evaluation runs: openai_sim-* (five simulated models, each a
               serve-baseline --policy simulated asked over HTTP; one,
               sim-medical-small, answers from the question's text alone),
               two image controls, openai_sim-*_text-only (the same
               questions without the images), and baseline_oracle and
               baseline_random (in process)
  domains.yaml the simulated models' domain groups, for the report's findings
  report/      tables, plots and index.html (open it in a browser);
               flagged_items.csv lists the items item health flagged
  cache/       response cache (used only by deterministic runs; never in your home)
               and the image verification memo
  demo.log     detailed output of every step

Run "chexpercept demo --out <this directory>" again to reuse the finished
steps; delete the directory to start from scratch.
`
	if err := atomicfile.WriteFile(j, filepath.Join(dir, readmeFile), []byte(text)); err != nil {
		return fmt.Errorf("demo: writing %s: %w", readmeFile, err)
	}
	return nil
}
