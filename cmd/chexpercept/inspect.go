package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/build"
	"github.com/chexpercept/chexpercept/internal/job"
)

// newInspectCmd returns the command inspect: one case of a built benchmark re-run and explained.
func newInspectCmd(jo job.Options) *cobra.Command {
	var key, src, bench string
	cmd := &cobra.Command{
		Use:   "inspect --benchmark BENCH_DIR --key KEY_ID",
		Short: "Re-run one case of a built benchmark and explain every choice (build.md §12)",
		Long: `inspect re-runs one case from scratch with the configuration and seed of
BENCH_DIR/build_info.json and writes BENCH_DIR/inspect/<key_id>/: summary.txt
with every answer's derivation, geometry.png, regions.png, overlaps.json,
deformation.json, steps/, fakes/, points.png and revision_options.png.
Failed cases are explained too. The case line is taken from BENCH_DIR/work/;
--source names the manifest or candidates file when work/ does not have it.
BENCH_DIR must be a build's directory (BENCH_DIR/work/.chexpercept-build, or
build_info.json and SHA256SUMS), and an existing inspect/<key_id>/ is
replaced only when it holds nothing but files inspect writes; otherwise
inspect stops with exit status 2 before writing anything.`,
		Args: benchmarkArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if key == "" {
				return withExit(2, errors.New("--key is required"))
			}
			// inspect/<key_id>/ lies in the benchmark directory, which a
			// build may be writing: the folder's lock is the build's.
			benchDir := benchmarkDir(bench, args)
			unlock, err := lockOutDir(benchDir)
			if err != nil {
				return err
			}
			defer unlock()
			var dir string
			err = runJob(cmd.Context(), jo, "inspect", func(j *job.Job) error {
				var err error
				dir, err = build.Inspect(build.InspectOptions{Dir: benchDir, Key: key, Source: src, Job: j})
				return err
			})
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			if err != nil {
				return withExit(2, withHints(err, flagHint{build.ErrNoWorkState, "; pass --source with the build's manifest or candidates"}))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&bench, "benchmark", "", "the build's benchmark directory")
	cmd.Flags().StringVar(&key, "key", "", "key_id of the case")
	cmd.Flags().StringVar(&src, "source", "", "manifest or candidates file (only when work/ lacks the case)")
	return cmd
}
