package results_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// mixed answers like analysistest.Random but, for about one turn in
// seven, with a reply whose layer-A string is empty (only a think block),
// so that reference-mode runs hold unrecorded stages ({} in the export)
// as well as wrong and right ones.
func mixed(seed int) analysistest.Policy {
	rnd := analysistest.Random(seed)
	return func(rec *benchmark.Record, t protocol.PlannedTurn) string {
		if rng.New(fmt.Sprintf("results/mixed/%d/%s/%s", seed, rec.KeyID, t.ID)).UintN(7) == 0 {
			return "<think>I cannot tell from this image.</think>"
		}
		return rnd(rec, t)
	}
}

// syntheticBench writes a benchmark of benchtest.Full(n) under dir.
func syntheticBench(tb testing.TB, dir string, n int) *benchmark.Benchmark {
	tb.Helper()
	b, err := analysistest.WriteBench(filepath.Join(dir, "bench"), benchtest.Full(n))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// syntheticRun runs every record of b through the protocol engine with
// the mixed policy (one record in 40 failing at T1), writes the run under
// dir and returns its records as read back from results.jsonl.
func syntheticRun(tb testing.TB, dir string, b *benchmark.Benchmark, oracle, parse string, seed int) []*results.Record {
	tb.Helper()
	errs := map[string]bool{}
	for i, r := range b.Records {
		if i%40 == 7 {
			errs[r.KeyID] = true
		}
	}
	run := &analysistest.Run{Provider: "baseline", Label: fmt.Sprintf("mixed%d", seed), Oracle: oracle, Parse: parse, Policy: mixed(seed), Errors: errs}
	rd, err := run.Write(filepath.Join(dir, "results"), b)
	if err != nil {
		tb.Fatal(err)
	}
	recs, err := rundir.ReadResults(filepath.Join(rd, rundir.ResultsFile))
	if err != nil {
		tb.Fatal(err)
	}
	return recs
}
