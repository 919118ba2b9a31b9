package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/report"
	"github.com/chexpercept/chexpercept/internal/runset"
	"github.com/chexpercept/chexpercept/internal/textsafe"
	"github.com/chexpercept/chexpercept/internal/version"
)

// newReportCmd returns the command report: tables, statistics and the HTML report of runs.
func newReportCmd(jo job.Options) *cobra.Command {
	var (
		cfg         report.Config
		benchDir    string
		allowMixed  bool
		compare     []string
		errorPolicy string
	)
	cmd := &cobra.Command{
		Use:   "report PATH... --out REPORT_DIR",
		Short: "Write the paper's tables, our statistics, plots and a browsable HTML report for run directories",
		Long: `report reads run directories (or results folders holding */oracle_<mode>/ run
directories, including reference imports) and writes into REPORT_DIR:
all_models_oracle_<mode>/all_models_*.csv (the reference's CSVs), ext_*.csv,
summary.json, report.md, plots (PNG and SVG), index.html, which works
when opened from disk, samples.csv and samples.parquet, one row per run ×
record × question turn for pandas (columns in docs/samples.md), and the
item-health files item_stats.csv, flagged_items.csv and
item_position_bias.csv (docs/item-health.md).

The findings section tests the paper's two claims (depth decay; medical vs
general models) on the runs given, grouping each run by its model's registry
domain (--models adds registry files) or by --domains FILE, a YAML mapping
of run names or models to groups; baselines are never grouped. Its numbers
are in ext_domain.csv, ext_domain_diff.csv and ext_domain_decay.csv. With
runs of human readers (read export) the readers-and-models part compares
readers and models by MRMC analysis on the records all answered; its numbers
are in ext_reader_mrmc.csv, ext_reader_agreement.csv, ext_reader_time.csv
and, with an aided study, ext_reader_switches.csv, and the scores table of
each MRMC row, which chexpercept mrmc reads, under mrmc_scores/
(docs/reading.md). Each reader study is its own panel of readers, one per
arm; --pool-studies pools the studies of an oracle mode into one panel per
arm, and every table of such a panel says so.

Each run's benchmark is named by its identity (the SHA-256 of the
benchmark's SHA256SUMS, or of chexpercept.json without one; table
"Benchmarks", summary.json). Runs of different benchmarks are refused side
by side unless --allow-mixed-benchmarks, and then every table says so; a
run made before identities were recorded is noted, not refused.

Problems with single inputs are warnings: the report of everything valid
is still written and lists what was left out.

REPORT_DIR must be new or empty, or an earlier report (marked by
REPORT_DIR/.chexpercept-report, or holding index.html, report.md and
summary.json); anything else is refused with exit status 2 before anything
is written. Rewriting a report overwrites only the files report writes and
deletes nothing.`,
		Args: needSomeArgs("PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.Out == "" {
				return withExit(2, fmt.Errorf("--out REPORT_DIR is required"))
			}
			cfg.Load = runset.Loader(args, runset.Options{Benchmark: benchDir, AllowMixed: allowMixed})
			cfg.Analysis.ErrorPolicy = errorPolicy
			// Rebuilt from the flag each time: an in-process re-run (tests)
			// must not inherit the previous run's pairs.
			cfg.Analysis.Compare = nil
			for _, c := range compare {
				a, b, ok := strings.Cut(c, ",")
				if !ok || a == "" || b == "" || strings.Contains(b, ",") {
					return withExit(2, fmt.Errorf("--compare %q: want two run names separated by a comma (A,B)", c))
				}
				cfg.Analysis.Compare = append(cfg.Analysis.Compare, [2]string{a, b})
			}
			if errorPolicy != analysis.ErrorsExclude && errorPolicy != analysis.ErrorsWrong {
				return withExit(2, fmt.Errorf("--error-policy %q: want exclude or wrong", errorPolicy))
			}
			if cfg.Analysis.Bootstrap < 1 {
				return withExit(2, fmt.Errorf("--bootstrap %d: want at least 1", cfg.Analysis.Bootstrap))
			}
			if cfg.Analysis.FlagShare == 0 { // the library reads 0 as the default
				return withExit(2, fmt.Errorf("--flag-share 0: want a share above 0.5 and at most 1"))
			}
			if err := analysis.CheckFlagShare(cfg.Analysis.FlagShare); err != nil {
				return withExit(2, fmt.Errorf("--flag-share: %w", err))
			}
			cfg.Report.Version = version.String()
			unlock, err := lockOutDir(cfg.Out)
			if err != nil {
				return err
			}
			defer unlock()
			var res *analysis.Result
			err = runJob(cmd.Context(), jo, "report", func(j *job.Job) error {
				var err error
				cfg.Report.Job = j
				res, err = report.Generate(j.Context(), cfg)
				return err
			})
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			if res != nil {
				for _, w := range res.Warnings {
					fmt.Fprintln(cmd.ErrOrStderr(), "warning:", textsafe.OneLine(w))
				}
			}
			if err != nil {
				return withExit(2, err)
			}
			scored := 0
			for _, rr := range res.Runs {
				if rr.Scored {
					scored++
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %d run(s) (%d scored), %d warning(s); wrote %s\n", len(res.Runs), scored, len(res.Warnings), filepath.Join(cfg.Out, "index.html"))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Out, "out", "", "report directory to write (new, empty, or an earlier report)")
	f.BoolVar(&cfg.Report.EmbedImages, "embed-images", false, "copy image thumbnails into REPORT_DIR/img instead of linking into the benchmark")
	f.StringVar(&errorPolicy, "error-policy", analysis.ErrorsExclude, "records with status error: exclude them, or count them as wrong")
	f.StringArrayVar(&compare, "compare", nil, "paired bootstrap comparison of two runs by run name, A,B (repeatable)")
	f.BoolVar(&cfg.Analysis.CompareBest, "compare-best", false, "compare every model with the best one of each metric and cell")
	f.IntVar(&cfg.Analysis.Bootstrap, "bootstrap", analysis.DefaultBootstrap, "bootstrap replicates for depth intervals and comparisons")
	f.Float64Var(&cfg.Analysis.FlagShare, "flag-share", analysis.DefaultFlagShare, "item health: share of runs agreeing on one wrong answer for majority_wrong (above 0.5, at most 1)")
	f.StringVar(&benchDir, "benchmark", "", "benchmark directory (default: the dataset path in the first run's manifest)")
	f.BoolVar(&allowMixed, "allow-mixed-benchmarks", false, "set runs of different benchmarks side by side (refused otherwise); every table then says so")
	f.StringArrayVar(&cfg.ModelFiles, "models", nil, "extra models.yaml extending the registry, as for eval: domains and bases of the findings (repeatable)")
	f.BoolVar(&cfg.Analysis.PoolStudies, "pool-studies", false, "readers: one panel per oracle mode and arm across reader studies, instead of one per study (readers of different studies then count as different people)")
	f.StringVar(&cfg.DomainsFile, "domains", "", "YAML mapping run names or models to domain groups (general, medical, …), overriding the registry's domains")
	return cmd
}
