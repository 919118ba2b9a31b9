// Package analysistest writes small benchmarks and run directories for
// the tests of the analysis and report packages. Runs are produced by the
// real protocol engine (protocol.Run) talking to a policy, so their
// records have the shape eval writes.
package analysistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// Policy answers one asked turn of a record.
type Policy func(rec *benchmark.Record, turn protocol.PlannedTurn) string

func answer(nums []int) string {
	parts := make([]string, len(nums))
	for i, n := range nums {
		parts[i] = strconv.Itoa(n)
	}
	return "Answer: " + strings.Join(parts, ",")
}

// Oracle answers the ground truth.
func Oracle(_ *benchmark.Record, t protocol.PlannedTurn) string { return answer(t.GT) }

// First always answers option 1.
func First(_ *benchmark.Record, _ protocol.PlannedTurn) string { return "Answer: 1" }

// Random answers uniformly (single choice: one of n; multi-select: None
// alone or a non-empty subset of the other options), seeded by the key,
// the turn and seed.
func Random(seed int) Policy {
	return func(rec *benchmark.Record, t protocol.PlannedTurn) string {
		r := rng.New(fmt.Sprintf("analysistest/random/%d/%s/%s", seed, rec.KeyID, t.ID))
		if !t.Multi {
			return answer([]int{r.IntRange(1, t.NOptions)})
		}
		m := t.NOptions - 1
		v := int(r.UintN(uint64(1) << uint(m)))
		if v == 0 {
			return answer([]int{t.NOptions})
		}
		var nums []int
		for i := 0; i < m; i++ {
			if v&(1<<i) != 0 {
				nums = append(nums, i+1)
			}
		}
		return answer(nums)
	}
}

// Table answers from a map "key/T3" → reply, falling back to def.
func Table(replies map[string]string, def Policy) Policy {
	return func(rec *benchmark.Record, t protocol.PlannedTurn) string {
		if s, ok := replies[rec.KeyID+"/"+t.ID]; ok {
			return s
		}
		return def(rec, t)
	}
}

// WriteBench writes a benchmark with flat images under dir.
func WriteBench(dir string, recs []*benchmark.Record) (*benchmark.Benchmark, error) {
	if err := benchtest.Write(dir, recs, false); err != nil {
		return nil, err
	}
	return benchdir.Load(dir)
}

// Run describes one run directory to write.
type Run struct {
	Provider, Label string // run name = Provider_Label
	Oracle          string // none, implicit, explicit
	Parse           string // reference (default) or strict
	Policy          Policy
	// Errors lists keys whose record ends with status error at T1.
	Errors map[string]bool
	// Cost per call; nil leaves the calls unpriced.
	Cost *float64
	// Selected, when > 0, is the manifest's selected_records; 0 leaves
	// the member out, as in manifests that predate it.
	Selected int
	// Finished, when > 0, writes only the first Finished records, as an
	// interrupted run leaves its files.
	Finished int
	// ServerOwner, when set, gives the manifest a server identity, as
	// eval's preflight records it, whose model entry is owned_by it
	// (provider.BaselineOwner: chexpercept's stand-in server).
	ServerOwner string
	// Only, when not nil, writes only these records (a reader who read
	// a sample of the benchmark); the manifest selects as many.
	Only map[string]bool
	// Reading, when not nil, is the manifest's reading arm.
	Reading *results.ReadingArm
	// Control, when set, makes the run the image-control run of
	// Provider_Label (kind control, named Provider_Label_<control>).
	Control results.Control
}

// Name is the run name.
func (r *Run) Name() string { return results.ControlRunName(r.Provider+"_"+r.Label, r.Control) }

// Write runs every record of b through the protocol engine and writes
// <resultsDir>/<run name>/oracle_<mode>/ with manifest.json,
// results.jsonl and all_results.json. It returns the run directory.
func (r *Run) Write(resultsDir string, b *benchmark.Benchmark) (string, error) {
	if r.Parse == "" {
		r.Parse = "reference"
	}
	dir := filepath.Join(resultsDir, r.Name(), "oracle_"+r.Oracle)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	absBench, err := filepath.Abs(b.Dir)
	if err != nil {
		return "", err
	}
	var recs []*results.Record
	var lines []byte
	t0 := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	for i, rec := range b.Records {
		if r.Finished > 0 && i >= r.Finished {
			break
		}
		if r.Only != nil && !r.Only[rec.KeyID] {
			continue
		}
		plan, err := protocol.Plan(rec, b.Dir)
		if err != nil {
			return "", err
		}
		var asked []protocol.PlannedTurn
		for _, p := range plan {
			if p.Asked() {
				asked = append(asked, p)
			}
		}
		n := 0
		call := func(_ context.Context, _ []protocol.Message) (protocol.Reply, error) {
			if r.Errors[rec.KeyID] {
				return protocol.Reply{}, fmt.Errorf("HTTP 500 after 6 attempts")
			}
			p := asked[n]
			n++
			lat := int64(100 + (i*37+n*11)%400)
			rep := protocol.Reply{Text: r.Policy(rec, p), LatencyMS: lat, TotalMS: lat, Attempts: 1,
				Usage: &results.TokenUse{InputTokens: 1000, OutputTokens: 10, TotalTokens: 1010}}
			if r.Cost != nil {
				c := *r.Cost
				rep.CostUSD = &c
			}
			return rep, nil
		}
		res := protocol.Run(context.Background(), rec, protocol.Options{
			BenchDir: b.Dir, Index: i, Oracle: protocol.OracleMode(r.Oracle), Parse: parse.Mode(r.Parse),
			Now: func() time.Time { return t0 },
		}, call)
		for j := range res.Turns {
			// The runner records what a failed call cost (the protocol
			// engine sees no reply): 6 attempts over 1.5 s.
			if tn := &res.Turns[j]; tn.Status == results.TurnError {
				tn.Attempts, tn.TotalMS = 6, 1500
			}
		}
		line, err := res.MarshalLine()
		if err != nil {
			return "", err
		}
		lines = append(lines, line...)
		recs = append(recs, res)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.ResultsFile), lines, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.AllResultsFile), results.MarshalAllResults(recs, absBench, "baseline", r.Label), 0o644); err != nil {
		return "", err
	}
	m := ojson.NewObject().
		Set("schema", ojson.Str("chexpercept/run-manifest/1")).
		Set("dataset", ojson.NewObject().Set("path", ojson.Str(absBench)).Set("sha256", ojson.Str(b.SHA256)).Set("records", ojson.Int(int64(len(b.Records))))).
		Set("run_name", ojson.Str(r.Name())).
		Set("model", ojson.NewObject().Set("name", ojson.Str(r.Label)).Set("provider", ojson.Str(r.Provider))).
		Set("oracle_mode", ojson.Str(r.Oracle)).
		Set("parse_mode", ojson.Str(r.Parse)).
		Set("prompt_profile", ojson.NewObject().Set("name", ojson.Str("default")).Set("sha256", ojson.Str(strings.Repeat("ab", 32))))
	if id := b.Identity; id.Known() {
		m.Get("dataset").Set("identity", ojson.NewObject().Set("file", ojson.Str(id.File)).Set("sha256", ojson.Str(id.SHA256)))
	}
	if r.Selected > 0 {
		m.Set("selected_records", ojson.Int(int64(r.Selected)))
	}
	if r.ServerOwner != "" {
		m.Set("server_identity", ojson.NewObject().Set("verified", ojson.Bool(true)).Set("source", ojson.Str("models_list")).
			Set("id", ojson.Str(r.Label)).Set("owned_by", ojson.Str(r.ServerOwner)).Set("sha256", ojson.Str(strings.Repeat("cd", 32))))
	}
	if r.Control != "" {
		m.Set("kind", ojson.Str(string(results.KindControl))).Set("control", ojson.Str(string(r.Control)))
	}
	if r.Reading != nil {
		arm := ojson.NewObject().Set("study", ojson.Str(r.Reading.Study)).Set("reader", ojson.Str(r.Reading.Reader)).Set("arm", ojson.Str(r.Reading.Arm))
		if r.Reading.AidRun != "" {
			arm.Set("aid_run", ojson.Str(r.Reading.AidRun))
		}
		m.Set("reading", arm)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.ManifestFile), append(ojson.Marshal(m), '\n'), 0o644); err != nil {
		return "", err
	}
	return dir, nil
}
