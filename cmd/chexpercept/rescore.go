package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runs"
)

// newRescoreCmd returns the command rescore: a finished run re-parsed into a new run directory.
func newRescoreCmd(jo job.Options) *cobra.Command {
	var parseMode, benchDir string
	var force bool
	cmd := &cobra.Command{
		Use:   "rescore RUN_DIR --parse-mode reference|strict",
		Short: "Re-parse a finished run offline into a new run directory",
		Long: `rescore re-parses every stored raw reply of a finished run with another parse
mode (spec protocol.md §7) and writes a NEW run directory next to it: the run
name gets "_strict" (strict mode) or "_rescored" (reference mode) appended,
under the same oracle_<mode>/ folder. The source run is never modified. The
new directory holds every file of a run (manifest with the new parse mode and
rescored_from, results.jsonl, all_results.json, summary.json, the reference
CSVs). For oracle_none runs the result is exact; for oracle runs only the
labels change: the conversation (oracle decisions, injected texts, patched
history) stays the one the source run had under its own parse mode.

The benchmark is the one named in the run's manifest unless --benchmark is
given; its chexpercept.json must have the manifest's SHA-256. The last line
printed is the new run directory. That directory must be new, empty or hold
only shard folders; one holding a run is replaced only with --force, and one
holding anything else is refused (exit status 2, before anything is written).`,
		Args: needArgs("RUN_DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			if parseMode != "reference" && parseMode != "strict" {
				return withExit(2, fmt.Errorf("--parse-mode %q: want reference or strict", parseMode))
			}
			src := args[0]
			if benchDir == "" {
				m, err := rundir.ReadManifest(src)
				if err != nil {
					return withExit(2, err)
				}
				benchDir = m.Dataset.Path
				if benchDir == "" {
					return withExit(2, fmt.Errorf("%s: the manifest names no dataset path; pass --benchmark", filepath.Join(src, rundir.ManifestFile)))
				}
			}
			bench, err := benchdir.Load(benchDir)
			if err != nil {
				return withExit(2, err)
			}
			var rep *runs.RescoreReport
			err = runJob(cmd.Context(), jo, "rescore", func(j *job.Job) error {
				var err error
				rep, err = runs.Rescore(j.Context(), src, runs.RescoreOptions{Mode: parse.Mode(parseMode), Bench: bench, Force: force, Job: j})
				return err
			})
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			if err != nil {
				return withExit(2, withHints(err, forceHint))
			}
			fmt.Fprintf(os.Stderr, "rescored %d records (%d asked turns) in %s mode; %d turn(s) changed correctness (%s)\n",
				rep.Records, rep.TurnsRescored, parseMode, rep.LabelsChanged, time.Since(start).Round(time.Millisecond))
			if rep.Oracle {
				fmt.Fprintf(os.Stderr, "note: %s is an oracle run: only the labels changed; the conversation (oracle decisions, injected texts, patched history) is the source run's, made under its own parse mode\n",
					filepath.Base(filepath.Clean(src)))
			}
			fmt.Println(rep.Dir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&parseMode, "parse-mode", "", "parse mode to apply: reference or strict (required)")
	f.StringVar(&benchDir, "benchmark", "", "benchmark directory (default: the dataset path in the run's manifest)")
	f.BoolVar(&force, "force", false, "replace the target run directory if it already holds a run")
	_ = cmd.MarkFlagRequired("parse-mode")
	return cmd
}
