package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/demo"
	"github.com/chexpercept/chexpercept/internal/job"
)

// newDemoCmd returns the command demo: the whole pipeline on synthetic data.
func newDemoCmd(jo job.Options) *cobra.Command {
	var opt demo.Options
	cmd := &cobra.Command{
		Use:   "demo [--out DIR]",
		Short: "Run the whole pipeline on synthetic data: phantom, build, validate, eval, report, item health",
		Long: `demo shows every part of chexpercept working together, with nothing to
set up and no network: it generates synthetic phantom radiographs, builds a
small benchmark from them with --accept-all (all seven lesions, one
lesion-free, one revision-free and one revision-required case each; marked
UNREVIEWED), validates it with --deep, then evaluates at once the
in-process oracle and random baselines and five simulated models of
distinct skill, each a serve-baseline --policy simulated on a loopback
port asked through the real HTTP client (provider openai), and writes the
report with domain groups (medical vs general, from DIR/domains.yaml).
It prints each step, the findings' verdicts, the items that item health
flagged with the reason and the review init --only command that sends
them back to review, the headline table and, as its last line, the path
of index.html.

The simulated models answer the benchmark's ground truth at set stage
accuracies, and share a wrong answer on a tenth of the questions, as if the
ground truth were wrong there: that is what item health flags. The demo
writes its PNGs at the fastest compression level (bundle_png_compression:
fast; larger files, the same pixels).

DIR (default ./` + demo.DefaultDir + `) is created if needed. A non-empty
directory not made by demo is refused. Running demo again into the same
DIR reuses the finished steps (an interrupted build or evaluation resumes);
delete DIR to start from scratch. Nothing is written outside DIR.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			unlock, err := lockOutDir(opt.Out)
			if err != nil {
				return err
			}
			defer unlock()
			opt.Stdout = cmd.OutOrStdout()
			// One job for the whole demo, its concurrent evaluations
			// included (demo.Options.Job). It winds down at the first
			// signal: the evaluations write their summaries as eval does.
			notice := newStoppingNotice("demo")
			err = job.Run(cmd.Context(), job.RunOptions{Options: jo, Stopping: notice.start, WindDown: true}, func(j *job.Job) error {
				opt.Job = j
				_, err := demo.Run(j.Context(), opt)
				return err
			})
			notice.stop()
			var in *job.Interrupted
			switch {
			case errors.As(err, &in) && in.Err != nil:
				return withExit(130, in.Err) // interrupted; a rerun resumes
			case errors.As(err, &in):
				return withExit(130, errors.New("demo: interrupted; run the demo again to continue"))
			case err != nil:
				return withExit(2, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Out, "out", demo.DefaultDir, "demo directory (created; reused when it holds an earlier demo)")
	f.IntVar(&opt.Workers, "workers", 0, "worker goroutines (default: number of CPUs)")
	return cmd
}
