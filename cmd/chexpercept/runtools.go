package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/eval"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/results"
)

// runEngine gives the run-directory tools of internal/results (rescore,
// merge, import-reference) the protocol engine and the runner's
// selection and finalisation, which that package cannot import.
type runEngine struct{}

func (runEngine) Rescore(r *results.Record, b *benchmark.Record, mode string, glm bool) (*results.Record, error) {
	m, err := parse.ParseMode(mode)
	if err != nil {
		return nil, err
	}
	return protocol.Rescore(r, b, m, glm)
}

func (runEngine) Replay(rec *benchmark.Record, index int, s results.ReplaySettings,
	answer func(k int, t results.ReplayTurn) (results.ReplayReply, error)) *results.Record {
	opts := protocol.Options{BenchDir: s.BenchDir, Index: index, Oracle: protocol.OracleMode(s.Oracle),
		Parse: parse.Mode(s.Parse), GLMBoxUnwrap: s.GLMBoxUnwrap, Now: s.Now}
	plan, err := protocol.Plan(rec, s.BenchDir)
	if err != nil {
		return protocol.ErrorRecord(rec, opts, err)
	}
	var asked []protocol.PlannedTurn
	for _, p := range plan {
		if p.Asked() {
			asked = append(asked, p)
		}
	}
	k := 0
	call := func(_ context.Context, msgs []protocol.Message) (protocol.Reply, error) {
		if k >= len(asked) {
			return protocol.Reply{}, fmt.Errorf("more calls than asked turns")
		}
		last := msgs[len(msgs)-1]
		rep, err := answer(k, results.ReplayTurn{UserText: last.Text, Planned: asked[k].Text, Images: last.ImagePaths})
		k++
		if err != nil {
			return protocol.Reply{}, err
		}
		// Timing, attempts and finish reason are unknown for a replayed
		// answer and stay zero/null.
		return protocol.Reply{Text: rep.Text, Usage: rep.Usage, CostUSD: rep.CostUSD}, nil
	}
	return protocol.Run(context.Background(), rec, opts, call)
}

func (runEngine) Select(b *benchmark.Benchmark, selection *ojson.Value) (*results.WholeSelection, error) {
	var sel eval.Selection
	if err := json.Unmarshal(ojson.MarshalCompact(selection), &sel); err != nil {
		return nil, err
	}
	sel.Shard = nil
	idx, err := eval.Select(b.Records, sel)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(idx))
	for i, ix := range idx {
		keys[i] = b.Records[ix].KeyID
	}
	return &results.WholeSelection{Keys: keys, SelectionSHA256: sel.Hash(), KeysSHA256: eval.KeysHash(keys)}, nil
}

func (runEngine) Finalize(dir string, manifest *ojson.Value, selected int, wallTime float64) error {
	var man eval.Manifest
	if err := json.Unmarshal(ojson.Marshal(manifest), &man); err != nil {
		return fmt.Errorf("%s: manifest: %v", dir, err)
	}
	_, err := eval.Finalize(dir, &man, eval.Model{Backend: man.Model.Backend, ModelID: man.Model.ModelID}, selected, wallTime)
	return err
}

// since formats an elapsed time for the commands' closing lines.
func since(t time.Time) string { return time.Since(t).Round(time.Millisecond).String() }
