package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/eval"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/runs"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// refPathSettings reads provider, model, flags and oracle mode from a
// reference path <provider>_<model>[_no_thinking][_strict]/oracle_<mode>/all_results.json.
// Parts that cannot be read are left empty; nothing is read unless the
// file sits in an oracle_<mode> folder.
func refPathSettings(file string) (prov, model, oracle string, noThinking, strict bool) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return
	}
	dir := filepath.Dir(abs)
	o, ok := strings.CutPrefix(filepath.Base(dir), "oracle_")
	if !ok {
		return // not the reference layout: nothing to read
	}
	oracle = o
	p, rest, ok := strings.Cut(filepath.Base(filepath.Dir(dir)), "_")
	if !ok || p == "" || rest == "" {
		return
	}
	rest, strict = strings.CutSuffix(rest, "_strict")
	rest, noThinking = strings.CutSuffix(rest, "_no_thinking")
	return p, rest, oracle, noThinking, strict
}

// checkRefFile checks that the file to import exists and is not a
// directory.
func checkRefFile(file string) error {
	fi, err := os.Stat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file", file)
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s: is a directory; give the all_results.json file", file)
	}
	return nil
}

// refPathDefaults sets the flags the user did not give to what the
// reference path says (refPathSettings).
func refPathDefaults(f *pflag.FlagSet, file string, prov, model, oracle, parseMode *string, noThinking *bool) {
	pp, pm, po, pnt, pstrict := refPathSettings(file)
	if !f.Changed("provider") {
		*prov = pp
	}
	if !f.Changed("model") {
		*model = pm
	}
	if !f.Changed("oracle") {
		*oracle = po
	}
	if !f.Changed("no-thinking") {
		*noThinking = pnt
	}
	if !f.Changed("parse-mode") {
		*parseMode = "reference"
		if pstrict {
			*parseMode = "strict"
		}
	}
}

// newImportReferenceCmd returns the command import-reference: a reference evaluator's results as a run directory.
func newImportReferenceCmd(jo job.Options) *cobra.Command {
	var benchDir, out, prov, model, oracle, parseMode string
	var modelFiles []string
	var noThinking, force bool
	cmd := &cobra.Command{
		Use:   "import-reference FILE --benchmark BENCH_DIR --out RESULTS_DIR [--provider P] [--model NAME] [--oracle MODE]",
		Short: "Turn a reference evaluator's all_results.json into a run directory",
		Long: `import-reference reads an all_results.json written by the reference evaluator
(or exported by us) and writes the run directory
RESULTS_DIR/<provider>_<label>[_no_thinking][_strict]/oracle_<mode>/ with every
file of a run. Provider, model, oracle mode and the _no_thinking/_strict
flags default to what the reference path
<provider>_<model>[_no_thinking][_strict]/oracle_<mode>/all_results.json says.

Each record is rebuilt by replaying its chat_history replies through our
protocol engine on BENCH_DIR: which turns are asked, every parse (with its
rule), correctness, oracle decisions and stages are re-derived; the texts
sent and fed back are the file's. Disagreements (a different parse, other
prompt wording, another benchmark version) are listed as warnings. Not
recoverable: latency, attempts, finish reasons, separately returned
reasoning, record times (set to the import time), records the reference
dropped, and per-turn usage unless token_usage has one entry per turn. A key
that is not in the benchmark, or malformed content, is an error naming the
file and the key. The last line printed is the run directory. That
directory must be new, empty or hold only shard folders; one holding a run
is replaced only with --force, and one holding anything else is refused
(exit status 2, before anything is written).`,
		Args: needArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			file := args[0]
			if benchDir == "" || out == "" {
				return withExit(2, fmt.Errorf("--benchmark and --out are required"))
			}
			// The file first: a missing file is the real problem, not
			// the settings its path would have given.
			if err := checkRefFile(file); err != nil {
				return withExit(2, err)
			}
			refPathDefaults(cmd.Flags(), file, &prov, &model, &oracle, &parseMode, &noThinking)
			for _, x := range []struct{ v, flag string }{{prov, "provider"}, {model, "model"}, {oracle, "oracle"}} {
				if x.v == "" {
					return withExit(2, fmt.Errorf("%s: cannot tell the %s from the path (expected <provider>_<model>/oracle_<mode>/all_results.json); pass --%s", file, x.flag, x.flag))
				}
			}
			om, err := protocol.ParseOracleMode(oracle)
			if err != nil {
				return withExit(2, fmt.Errorf("--oracle: %w", err))
			}
			pmode, err := parse.ParseMode(parseMode)
			if err != nil {
				return withExit(2, fmt.Errorf("--parse-mode: %w", err))
			}
			reg, err := registry.Load(modelFiles...)
			if err != nil {
				return withExit(2, err)
			}
			m, notice, err := eval.ResolveModel(reg, nil, prov, model, noThinking)
			if err != nil {
				return withExit(2, err)
			}
			if notice != "" {
				fmt.Fprintln(os.Stderr, "notice:", textsafe.OneLine(notice))
			}
			bench, err := benchdir.Load(benchDir)
			if err != nil {
				return withExit(2, err)
			}
			var rep *runs.ImportReport
			err = runJob(cmd.Context(), jo, "import-reference", func(j *job.Job) error {
				var err error
				rep, err = runs.ImportReference(j.Context(), file, runs.ImportOptions{Bench: bench, Model: m, Out: out,
					NoThinking: noThinking, Oracle: om, Parse: pmode, Force: force, Job: j})
				return err
			})
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			if err != nil {
				return withExit(2, withHints(err, forceHint))
			}
			if rep.FileModelID != "" {
				fmt.Fprintf(os.Stderr, "notice: the file's token_usage names model_id %q; recording it instead of %q\n", rep.FileModelID, m.ModelID)
			}
			for _, w := range rep.Warnings {
				fmt.Fprintln(os.Stderr, "warning:", textsafe.OneLine(w))
			}
			fmt.Fprintf(os.Stderr, "imported %d records of %d in the benchmark as %s, oracle %s, %s parse (%s); timing, finish reasons and dropped records are not recoverable from all_results.json\n",
				rep.Records, len(bench.Records), rep.RunName, om, pmode, time.Since(start).Round(time.Millisecond))
			fmt.Println(rep.Dir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&benchDir, "benchmark", "", "benchmark directory the reference run used (required)")
	f.StringVar(&out, "out", "", "results folder to write the run into (required)")
	f.StringVar(&prov, "provider", "", "provider (default: from the reference path)")
	f.StringVar(&model, "model", "", "model alias or id (default: from the reference path)")
	f.StringVar(&oracle, "oracle", "", "oracle mode of the reference run: none, implicit or explicit (default: from the path)")
	f.StringVar(&parseMode, "parse-mode", "", "parse mode to re-derive answers with (default: strict for a _strict run name, else reference)")
	f.BoolVar(&noThinking, "no-thinking", false, "the run used --no-thinking (default: from a _no_thinking run name)")
	f.StringArrayVar(&modelFiles, "models", nil, "extra models.yaml extending the registry (repeatable)")
	f.BoolVar(&force, "force", false, "replace the run directory if it already holds a run")
	return cmd
}
