package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/runs"
)

// newMergeCmd returns the command merge: the shards of a run into one run.
func newMergeCmd(jo job.Options) *cobra.Command {
	var out, benchDir string
	var force bool
	cmd := &cobra.Command{
		Use:   "merge DIR... --out RESULTS_DIR [--benchmark BENCH_DIR]",
		Short: "Combine the shards of a sharded run into one run directory",
		Long: `merge takes shard folders (shard-<i>-of-<n>/, written by eval --shard i/n) or
run directories holding them, and writes the normal run directory
RESULTS_DIR/<run name>/oracle_<mode>/ with every file of a run (spec
protocol.md §9.5). It refuses, with exit status 2 and the reason, shards
whose manifests differ in anything but the shard (and the hashes derived
from it), created_at and the dataset path; a missing shard; two folders for
the same shard; and a key_id present in two shards.

The merged results.jsonl holds every shard's last line per key_id in
benchmark order; image paths in all_results.json point into --benchmark
(default: the dataset path of the first shard's manifest), whose
chexpercept.json must be the one the shards were run on. The last line
printed is the merged run directory.

The run directory RESULTS_DIR/<run name>/oracle_<mode>/ must be new, empty
or hold only shard folders (left as they are); one holding a run
(manifest.json or results.jsonl) is replaced only with --force; one holding
anything else is refused (exit status 2, before anything is written).`,
		Args: needSomeArgs("DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			var rep *runs.MergeReport
			err := runJob(cmd.Context(), jo, "merge", func(j *job.Job) error {
				var err error
				rep, err = runs.Merge(j.Context(), args, runs.MergeOptions{Out: out, BenchDir: benchDir, Force: force, Job: j})
				return err
			})
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			if err != nil {
				return withExit(2, withHints(err, forceHint, flagHint{runs.ErrNoDatasetPath, "; pass --benchmark"}))
			}
			fmt.Fprintf(os.Stderr, "merged %d shards: %d records (%d with status error) of %d selected (%s)\n",
				rep.Shards, rep.Records, rep.Errors, rep.Selected, time.Since(start).Round(time.Millisecond))
			if n := len(rep.Missing); n > 0 {
				ex := rep.Missing
				if n > 3 {
					ex = ex[:3]
				}
				fmt.Fprintf(os.Stderr, "warning: %d selected record(s) have no result in any shard (e.g. %v); resume those shards and merge again\n", n, ex)
			}
			fmt.Println(rep.Dir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "results folder to write the merged run into (required; its run directory must be new, empty or, with --force, a run)")
	f.StringVar(&benchDir, "benchmark", "", "benchmark directory on this machine (default: the first shard manifest's dataset path)")
	f.BoolVar(&force, "force", false, "replace the merged run directory if it already holds a run")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
