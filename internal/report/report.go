// Package report writes a report directory from an analysis (spec
// protocol.md §10.4): the reference all-models CSVs per oracle mode, our
// ext_*.csv tables, summary.json, report.md, PNG and SVG plots drawn with
// gonum/plot, and index.html, a page that works from disk: the tables,
// the plots and an item browser whose compact index is embedded in the
// page while the items' details sit in data/c<C>.js sidecars (chunks of
// ChunkSize items) loaded on demand through script tags (a page opened as
// a file cannot fetch JSON).
// Images are relative links into the benchmark directory, or thumbnails
// copied under img/ with EmbedImages.
package report

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
)

// Options configure Write.
type Options struct {
	EmbedImages bool   // copy thumbnails under img/ instead of linking the benchmark
	Version     string // tool version shown in the report
	Workers     int    // 0: GOMAXPROCS; the output does not depend on it
	// Job is the command's job: it tracks the temporary files of the
	// atomic writes (outdir.WriteFile). Nil tracks nothing.
	Job *job.Job
}

// Write writes every file of the report into dir (created if needed).
// Once ctx ends it writes no further file and returns ctx's error; the
// report stays unfinished (its marker still lists the earlier report's
// files), and the same command run again writes it whole.
func Write(ctx context.Context, res *analysis.Result, dir string, opts Options) error {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if err := claimDir(dir); err != nil {
		return err
	}
	before, err := outdir.ListOwned(dir, MarkerName, isReportFile)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	warnings := res.Warnings
	files := map[string][]byte{
		"ext_stage_accuracy.csv": extStage(res),
		"ext_depth.csv":          extDepth(res),
		"ext_subquestion.csv":    extSub(res),
		"ext_parse.csv":          extParse(res),
		"ext_usage.csv":          extUsage(res),
		"ext_chance.csv":         extChance(res),
		"ext_pairwise.csv":       extPairwise(res),
		"ext_domain.csv":         extDomain(res),
		"ext_domain_diff.csv":    extDomainDiff(res),
		"ext_domain_decay.csv":   extDomainDecay(res),
		ImageControlFile:         extImageControl(res),
		"summary.json":           summaryJSON(res, warnings),
	}
	maps.Copy(files, healthFiles(res))
	maps.Copy(files, readersFiles(res))
	for _, mode := range res.Modes() {
		for name, data := range refCSVs(res, mode) {
			files[filepath.Join(RefDir(mode), name)] = data
		}
	}
	d := buildDoc(res, warnings, opts.Version)
	files["report.md"] = append(markdown(d), healthMarkdown(res)...)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := outdir.WriteFile(opts.Job, dir, name, files[name]); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}

	if err := writeSamples(ctx, opts.Job, res, dir, opts.Version); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	// Plots and the item sidecars are drawn and written by one pool.
	jobs := append(plotJobs(res), findingsPlotJobs(res)...)
	if err := writeHTML(ctx, res, d, jobs, dir, opts); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("report: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := outdir.FinishOwned(opts.Job, dir, MarkerName, markerText, isReportFile, before); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// MarkerName marks a report directory, which a later report may rewrite.
const MarkerName = ".chexpercept-report"

const markerText = "chexpercept report: `chexpercept report` may rewrite the files it wrote here\n"

// claimDir accepts dir when it is new, empty, or an earlier report (one
// carrying the marker), and writes the marker first, in place
// (outdir.WriteMarker), so a report stopped at any point is recognised
// by its rerun; in an earlier report it removes the temporary files an
// interrupted one left. A folder of files that
// merely share a report's names (index.html, report.md, summary.json) is
// not one: only the marker says that a report wrote them. A report
// overwrites only the names it writes, never through a symbolic link
// (outdir.WriteFile), and deletes only the files an earlier report listed
// in its marker as written and this one did not write (outdir.FinishOwned).
func claimDir(dir string) error {
	st, err := checkDir(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if st != outdir.Marked {
		if err := outdir.WriteMarker(filepath.Join(dir, MarkerName), []byte(markerText)); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		return nil
	}
	return removeTemps(dir)
}

// removeTemps deletes the temporary files ("<name>.tmp-<digits>") that a
// report killed while writing left in dir, an earlier report: they are
// the debris of its own atomic writes, of the kinds of file a report
// writes (checkDir has refused anything in it that is not a plain file or
// folder).
func removeTemps(dir string) error {
	if err := outdir.RemoveStale(dir, isReportFile, MarkerName); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// reportExts are the extensions of the files a report writes.
var reportExts = []string{".html", ".md", ".json", ".csv", ".png", ".parquet", ".txt", ".js", ".svg"}

// isReportFile reports whether rel, a path in a report folder, has the
// extension of a file a report writes.
func isReportFile(rel string) bool { return slices.Contains(reportExts, path.Ext(rel)) }

// checkDir is claimDir without writing anything.
func checkDir(dir string) (outdir.State, error) {
	st, names, err := outdir.Look(dir, MarkerName)
	if err != nil {
		return st, fmt.Errorf("report: %w", err)
	}
	switch st {
	case outdir.Other:
		return st, outdir.Foreign(dir, names, "report", MarkerName)
	case outdir.Marked:
		if err := outdir.CheckTree(dir); err != nil {
			return st, fmt.Errorf("report: %w", err)
		}
	}
	return st, nil
}

// runAll runs fns on up to workers goroutines and returns the first
// error in fns order. Once ctx ends the functions not yet started are
// not run, and the error is ctx's.
func runAll(ctx context.Context, fns []func() error, workers int) error {
	errs := make([]error, len(fns))
	parallel(len(fns), workers, func(i int) {
		if errs[i] = ctx.Err(); errs[i] == nil {
			errs[i] = fns[i]()
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// parallel calls f(0..n−1) on up to workers goroutines.
func parallel(n, workers int, f func(i int)) {
	if workers <= 1 || n < 2 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// Config is everything `chexpercept report` needs.
type Config struct {
	// Load reads the runs and the benchmark the report is made of
	// (runset.Loader: the run directories under the inputs). It is
	// called once the output folder has been accepted, so that a folder
	// the report may not write is refused before the long read.
	Load func(context.Context) (*analysis.Set, error)
	Out  string // REPORT_DIR
	// ModelFiles extend the model registry (as for eval); it gives each
	// run's domain group and a medical model's base.
	ModelFiles []string
	// DomainsFile, when set, maps run names or models to groups and
	// overrides the registry's domains.
	DomainsFile string
	Analysis    analysis.Options
	Report      Options
}

// Generate loads the runs, analyses them and writes the report. The
// result (with every warning) is returned even when writing fails. Once
// ctx ends it stops, between its steps and between the files it writes,
// with ctx's error.
func Generate(ctx context.Context, cfg Config) (*analysis.Result, error) {
	// Refuse the output directory before the (long) analysis.
	if _, err := checkDir(cfg.Out); err != nil {
		return nil, err
	}
	doms, err := domainOptions(cfg.ModelFiles, cfg.DomainsFile)
	if err != nil {
		return nil, err
	}
	cfg.Analysis.Domains = doms
	if cfg.Load == nil {
		return nil, errors.New("report: no runs to read")
	}
	set, err := cfg.Load(ctx)
	if set == nil {
		set = &analysis.Set{}
	}
	if err != nil {
		return &analysis.Result{Set: set, Warnings: set.Warnings}, err
	}
	if err := ctx.Err(); err != nil {
		return &analysis.Result{Set: set, Warnings: set.Warnings}, err
	}
	res, err := analysis.Analyze(ctx, set, cfg.Analysis)
	if err != nil {
		return &analysis.Result{Set: set, Warnings: set.Warnings}, err
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, Write(ctx, res, cfg.Out, cfg.Report)
}
