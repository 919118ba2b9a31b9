package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/build"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/review"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
)

// newBuildCmd returns the command build: a benchmark from source data.
func newBuildCmd(jo job.Options) *cobra.Command {
	var (
		src, out, perLesion, reviewsPath, reviewDB, inspect, configPath string
		seed                                                            uint64
		workers                                                         int
		acceptAll, strict, measureFloor                                 bool
	)
	cmd := &cobra.Command{
		Use:   "build --source FILE --out BENCH_DIR (--accept-all | --reviews FILE | --review-db FILE)",
		Short: "Build a benchmark from a manifest or candidates file",
		Long: `build turns a generic manifest (sampled with the build seed) or a
candidates.jsonl (taken as is) into a CheXpercept benchmark: chexpercept.json,
the image bundle, masks, side files, reports and SHA256SUMS (build.md §11).
Only reviewed cases enter unless --accept-all is given. Rerunning the same
command resumes from BENCH_DIR/work/. Exit status: 0 success (shortfalls are
warnings), 2 global problem, 3 target shortfall with --strict-targets.

BENCH_DIR must be new or empty, or hold an earlier build of the same source
(same path or same content; its marker is BENCH_DIR/work/.chexpercept-build,
or build_info.json and SHA256SUMS for a build without work/) in which every
entry is one a build wrote: anything else in it is refused. The source file
and every image, mask, report and CheXmask CSV it names must lie outside
BENCH_DIR, and BENCH_DIR must not lie inside a folder holding the source's
images or masks (it may sit beside the source file). A symbolic link is
followed. A refused BENCH_DIR gives exit status 2 before anything is
written; a build removes only bundle folders a build recorded as its own.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if src == "" || out == "" {
				return withExit(2, errors.New("--source and --out are required"))
			}
			n := 0
			for _, b := range []bool{acceptAll, reviewsPath != "", reviewDB != ""} {
				if b {
					n++
				}
			}
			if n != 1 {
				return withExit(2, errors.New("give exactly one of --accept-all, --reviews FILE, --review-db FILE"))
			}
			cfg := buildcfg.Default()
			if configPath != "" {
				var err error
				if cfg, err = buildcfg.Load(configPath); err != nil {
					return withExit(2, err)
				}
			}
			fl := cmd.Flags()
			if changed(fl, "build-seed", "seed") {
				cfg.Seed = seed
			}
			if fl.Changed("workers") {
				if workers < 1 {
					return withExit(2, fmt.Errorf("--workers %d: must be at least 1", workers))
				}
				cfg.Workers = workers
			}
			if perLesion != "" {
				parts := strings.Split(perLesion, ",")
				if len(parts) != 3 {
					return withExit(2, fmt.Errorf("--per-lesion %q: want LF,RF,RR", perLesion))
				}
				var v [3]int
				for i, p := range parts {
					x, err := strconv.Atoi(strings.TrimSpace(p))
					if err != nil || x < 0 {
						return withExit(2, fmt.Errorf("--per-lesion %q: %q is not a count", perLesion, p))
					}
					v[i] = x
				}
				cfg.LF, cfg.RF, cfg.RR = v[0], v[1], v[2]
			}
			opt := build.Options{Source: src, Out: out, Config: cfg, Workers: cfg.Workers, Inspect: inspect,
				MeasureFloor: measureFloor, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
				Progress: isTerminal(os.Stderr)}
			switch {
			case acceptAll:
				opt.Decisions, opt.ReviewMode = reviewlog.AcceptAll{}, build.ModeAcceptAll
				fmt.Fprintln(cmd.ErrOrStderr(), "WARNING: --accept-all: every candidate is accepted WITHOUT expert review; the benchmark will be marked unreviewed.")
			case reviewsPath != "":
				l, err := reviewlog.ReadLog(reviewsPath)
				if err != nil {
					return withExit(2, err)
				}
				opt.Decisions, opt.ReviewMode = l, build.ModeReviews
			default:
				d, err := review.OpenDecisions(cmd.Context(), reviewDB)
				if err != nil {
					return withExit(2, err)
				}
				opt.Decisions, opt.ReviewMode = d, build.ModeReviewDB
			}
			unlock, err := lockOutDir(out)
			if err != nil {
				return err
			}
			defer unlock()
			var sum *build.Summary
			notice := newStoppingNotice("build")
			err = job.Run(cmd.Context(), job.RunOptions{Options: jo, Stopping: notice.start}, func(j *job.Job) error {
				opt.Job = j
				var err error
				sum, err = build.Run(j.Context(), opt)
				return err
			})
			notice.stop()
			var in *job.Interrupted
			if errors.As(err, &in) {
				// The work's own error says where it stopped.
				why := " (its work was given up before it stopped)"
				if in.Err != nil {
					why = fmt.Sprintf(" (%v)", in.Err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "chexpercept build: interrupted; the same command run again resumes%s\n", why)
				return silentExit(130)
			}
			if err != nil {
				return withExit(2, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d cases, %d questions\n", out, sum.Included, sum.Questions)
			if strict && len(sum.Shortfalls) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "chexpercept build: %d target shortfall(s) with --strict-targets\n", len(sum.Shortfalls))
				return silentExit(3)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&src, "source", "", "generic manifest or candidates.jsonl (build.md §2.4)")
	f.StringVar(&out, "out", "", "benchmark directory to write (new, empty, or an earlier build of this source)")
	namedSeedFlag(f, &seed, "build-seed", "build seed: every case's draws (default: config key seed, else 0)")
	f.StringVar(&perLesion, "per-lesion", "", "targets per lesion LF,RF,RR (default 100,100,100)")
	f.IntVar(&workers, "workers", 0, "case workers (default: number of CPUs)")
	f.BoolVar(&acceptAll, "accept-all", false, "accept every candidate without review (recorded; the benchmark is unreviewed)")
	f.StringVar(&reviewsPath, "reviews", "", "reviews.jsonl with the review decisions")
	f.StringVar(&reviewDB, "review-db", "", "review app database (SQLite)")
	f.StringVar(&inspect, "inspect", "", "write the inspect view for all|failed|KEY,KEY,…")
	f.BoolVar(&strict, "strict-targets", false, "exit 3 when a target is not reached")
	f.StringVar(&configPath, "config", "", "YAML configuration (build.md §2.5)")
	f.BoolVar(&measureFloor, "measure-png-floor", false, "after assembly, time the re-encoding of every bundle and mask PNG by image/png at its default level, the floor the build is compared with (build_timing.json)")
	return cmd
}
