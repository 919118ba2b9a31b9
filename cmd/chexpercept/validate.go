package main

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/validate"
)

// newValidateCmd returns the command validate: the checks of a benchmark.
func newValidateCmd() *cobra.Command {
	var opt validate.Options
	var asJSON bool
	var bench string
	cmd := &cobra.Command{
		Use:   "validate --benchmark BENCH_DIR [--deep] [--strict] [--skip-images] [--expect-full] [--json]",
		Short: "Check a benchmark directory against the format specification",
		Long: `Check chexpercept.json and the chexpercept/ image bundle against every rule
of the benchmark format. Each finding is one line:
  <SEVERITY> <code> <key_id or -> <location> <message>
followed by a summary (records per lesion and path, questions, expected
model calls, SHA-256 of chexpercept.json). With --json the findings are
JSON Lines on stdout and the summary goes to stderr.

Exit status: 0 no errors, 1 at least one error, 2 the validator could not run.`,
		Args: benchmarkArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := validate.Run(cmd.Context(), benchmarkDir(bench, args), opt)
			if err != nil {
				return withExit(2, err)
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			if asJSON {
				err = rep.WriteJSONLines(out)
				if err == nil {
					err = rep.WriteSummary(cmd.ErrOrStderr())
				}
			} else {
				err = rep.WriteText(out)
			}
			if ferr := out.Flush(); err == nil {
				err = ferr
			}
			if err != nil {
				return withExit(2, fmt.Errorf("writing the report: %w", err))
			}
			if code := rep.ExitCode(); code != 0 {
				return silentExit(code)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&bench, "benchmark", "", "benchmark directory (holds chexpercept.json)")
	f.BoolVar(&opt.Deep, "deep", false, "decode every image fully instead of reading PNG headers only, and check the files against the build's SHA256SUMS")
	f.BoolVar(&opt.Strict, "strict", false, "treat warnings as errors")
	f.BoolVar(&opt.SkipImages, "skip-images", false, "skip the file and image checks (path-safety checks of the JSON still run)")
	f.BoolVar(&opt.ExpectFull, "expect-full", false, "warn when the composition is not 100 LF / 100 RF / 100 RR per lesion")
	f.BoolVar(&asJSON, "json", false, "print findings as JSON Lines (severity, code, key_id, location, message)")
	return cmd
}
