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

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/eval"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/version"
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

func init() {
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
file and the key. The last line printed is the run directory.`,
		Args: needArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			file := args[0]
			if benchDir == "" || out == "" {
				return withExit(2, fmt.Errorf("--benchmark and --out are required"))
			}
			// The file first: a missing file is the real problem, not
			// the settings its path would have given.
			if fi, err := os.Stat(file); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return withExit(2, fmt.Errorf("%s: no such file", file))
				}
				return withExit(2, err)
			} else if fi.IsDir() {
				return withExit(2, fmt.Errorf("%s: is a directory; give the all_results.json file", file))
			}
			pp, pm, po, pnt, pstrict := refPathSettings(file)
			f := cmd.Flags()
			if !f.Changed("provider") {
				prov = pp
			}
			if !f.Changed("model") {
				model = pm
			}
			if !f.Changed("oracle") {
				oracle = po
			}
			if !f.Changed("no-thinking") {
				noThinking = pnt
			}
			if !f.Changed("parse-mode") {
				parseMode = "reference"
				if pstrict {
					parseMode = "strict"
				}
			}
			for _, x := range []struct{ v, flag string }{{prov, "provider"}, {model, "model"}, {oracle, "oracle"}} {
				if x.v == "" {
					return withExit(2, fmt.Errorf("%s: cannot tell the %s from the path (expected <provider>_<model>/oracle_<mode>/all_results.json); pass --%s", file, x.flag, x.flag))
				}
			}
			om, err := protocol.ParseOracleMode(oracle)
			if err != nil {
				return withExit(2, fmt.Errorf("--oracle: %v", err))
			}
			pmode, err := parse.ParseMode(parseMode)
			if err != nil {
				return withExit(2, fmt.Errorf("--parse-mode: %v", err))
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
				fmt.Fprintln(os.Stderr, "notice:", notice)
			}
			bench, err := benchmark.Load(benchDir)
			if err != nil {
				return withExit(2, err)
			}
			benchAbs, err := filepath.Abs(benchDir)
			if err != nil {
				return withExit(2, err)
			}
			runName := eval.RunName(m.Provider, m.Label, noThinking, pmode)
			runDir := eval.RunDir(out, runName, om, nil)
			if _, err := os.Stat(filepath.Join(runDir, results.ResultsFile)); err == nil && !force {
				return withExit(2, fmt.Errorf("%s already holds a run (results.jsonl exists); pass --force to replace it", runDir))
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return withExit(2, err)
			}
			now := time.Now().UTC()
			res, err := results.ImportReference(file, data, results.ImportOptions{Bench: bench, Engine: runEngine{},
				Settings: results.ReplaySettings{BenchDir: benchDir, Oracle: string(om), Parse: string(pmode),
					GLMBoxUnwrap: m.GLMBoxUnwrap, Now: func() time.Time { return now }}})
			if err != nil {
				return withExit(2, err)
			}
			if res.ModelID != "" && res.ModelID != m.ModelID {
				fmt.Fprintf(os.Stderr, "notice: the file's token_usage names model_id %q; recording it instead of %q\n", res.ModelID, m.ModelID)
				m.ModelID = res.ModelID
			}
			tree, err := importManifest(m, bench, benchAbs, res.Records, runName, noThinking, om, pmode, now)
			if err != nil {
				return withExit(2, err)
			}
			abs, _ := filepath.Abs(file)
			tree.Set("imported_from", ojson.Str(abs))
			if err := results.WriteRun(runEngine{}, runDir, tree, res.Records, len(res.Records), 0); err != nil {
				return withExit(2, err)
			}
			for _, w := range res.Warnings {
				fmt.Fprintln(os.Stderr, "warning:", w)
			}
			fmt.Fprintf(os.Stderr, "imported %d records of %d in the benchmark as %s, oracle %s, %s parse (%s); timing, finish reasons and dropped records are not recoverable from all_results.json\n",
				len(res.Records), len(bench.Records), runName, om, pmode, since(start))
			fmt.Println(runDir)
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
	addCommand(cmd)
}

// importManifest is the manifest of an imported run: what the file and
// the registry tell; the prompt profile, endpoints and run policy of the
// reference run are unknown and left empty.
func importManifest(m eval.Model, bench *benchmark.Benchmark, benchAbs string, recs []*results.Record, runName string,
	noThinking bool, om protocol.OracleMode, pmode parse.Mode, now time.Time) (*ojson.Value, error) {
	keys := make([]string, len(recs))
	for i, r := range recs {
		keys[i] = r.KeyID
	}
	sel := eval.Selection{Lesions: []string{}}
	man := &eval.Manifest{
		Schema: eval.ManifestSchema, ToolVersion: version.String(), CreatedAt: now.Format(time.RFC3339),
		Dataset:   eval.Dataset{Path: benchAbs, SHA256: bench.SHA256, Records: len(bench.Records)},
		Selection: sel, SelectionSHA256: sel.Hash(), SelectedRecords: len(recs), KeysSHA256: eval.KeysHash(keys),
		RunName: runName, Sampling: m.Sampling, NoThinking: noThinking, OracleMode: string(om), ParseMode: string(pmode),
		PromptProfile: eval.ProfileInfo{Name: "unknown (imported)", Texts: []string{}},
		ImageEncoding: eval.ImageEncoding{Format: "png", Transport: "unknown (imported)"},
	}
	mi := &man.Model
	mi.Name, mi.Provider, mi.Backend, mi.ModelID = m.Name, m.Provider, m.Backend, m.ModelID
	mi.Quirks = append([]string{}, m.Quirks...)
	mi.Endpoints = []string{}
	if m.Alias != "" {
		a := m.Alias
		mi.Alias = &a
	}
	if m.Backend == "baseline" {
		p := m.ModelID
		mi.Policy = &p
	}
	return ojson.ValueOf(man)
}
