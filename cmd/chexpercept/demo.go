package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/demo"
)

func init() {
	var opt demo.Options
	cmd := &cobra.Command{
		Use:   "demo [--out DIR]",
		Short: "Run the whole pipeline on synthetic data: phantom, build, validate, eval, report",
		Long: `demo shows every part of chexpercept working together in about a minute,
with nothing to set up and no network: it generates synthetic phantom
radiographs, builds a small benchmark from them with --accept-all (all seven
lesions, one lesion-free, one revision-free and one revision-required case
each; marked UNREVIEWED), validates it with --deep, starts serve-baseline
(random policy) on a loopback port and evaluates it through the real HTTP
client (provider openai), evaluates the in-process oracle and random
baselines, and writes the report. It prints each step, the headline table
and, as its last line, the path of index.html.

DIR (default ./` + demo.DefaultDir + `) is created if needed. A non-empty
directory not made by demo is refused. Running demo again into the same
DIR reuses the finished steps (an interrupted build or evaluation resumes);
delete DIR to start from scratch. Nothing is written outside DIR.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opt.Stdout = cmd.OutOrStdout()
			if _, err := demo.Run(ctx, opt); err != nil {
				if ctx.Err() != nil {
					return withExit(130, err) // interrupted; a rerun resumes
				}
				return withExit(2, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Out, "out", demo.DefaultDir, "demo directory (created; reused when it holds an earlier demo)")
	f.IntVar(&opt.Workers, "workers", 0, "worker goroutines (default: number of CPUs)")
	addCommand(cmd)
}
