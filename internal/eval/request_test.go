package eval

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/provider"
)

// TestRequestsCarryNoGroundTruth: the request eval builds for a network
// model holds nothing of the question's ground truth. Every record of a
// benchmark is asked through the runner's own request builder twice, once
// with its plan's ground truths and once with every ground truth replaced;
// every field of every request (encoding/json of the whole Request) must
// come out byte for byte the same, while the ground truth handed beside
// the request (to an in-process oracle only) follows the plan.
func TestRequestsCarryNoGroundTruth(t *testing.T) {
	bench := generatedBench(t)
	b, err := benchdir.Load(bench)
	if err != nil {
		t.Fatal(err)
	}
	o := baseOptions(bench, t.TempDir(), model(t, "opensource", "qwen2.5-vl-7b"))
	o.Oracle = protocol.OracleNone // no earlier answer is fed back
	o.CacheDir = t.TempDir()
	o.Endpoints = []string{"http://127.0.0.1:1/v1"} // never called: requests are only built
	o.defaults()
	r := &runner{o: &o, bench: b}
	if err := r.setup(); err != nil {
		t.Fatal(err)
	}
	defer r.memo.close()
	if _, ok := r.pool.eps[0].client.(fakemodel.AnswerKeyed); ok {
		t.Fatal("a network model's client is one that is handed answers")
	}
	ctx := context.Background()
	requests := 0
	for i, rec := range b.Records {
		tk := &task{index: i, rec: rec}
		plan, err := tk.planned(bench)
		if err != nil {
			t.Fatal(err)
		}
		hashes, err := r.verify.record(ctx, protocol.ImagesToSend(plan))
		if err != nil {
			t.Fatal(err)
		}
		// ask runs the record's conversation through the request builder
		// with the asked turns given, answering "Answer: 1" to each call.
		ask := func(asked []protocol.PlannedTurn) (reqs []string, gts [][]int) {
			cs := &caseState{r: r, task: tk, asked: asked,
				imgs: &recordImages{cache: r.images, hashes: hashes, got: map[string]*provider.Image{}}}
			popts := protocol.Options{BenchDir: bench, Index: i, Oracle: o.Oracle, Parse: o.Parse, Profile: o.Profile}
			protocol.Run(ctx, rec, popts, func(_ context.Context, msgs []protocol.Message) (protocol.Reply, error) {
				_, req, gt, _, err := cs.request(msgs)
				if err != nil {
					t.Fatal(err)
				}
				j, err := json.Marshal(req)
				if err != nil {
					t.Fatal(err)
				}
				reqs, gts = append(reqs, string(j)), append(gts, gt)
				return protocol.Reply{Text: "Answer: 1"}, nil
			})
			return reqs, gts
		}
		var asked, swapped []protocol.PlannedTurn
		for _, p := range plan {
			if !p.Asked() {
				continue
			}
			asked = append(asked, p)
			q := p
			q.GT = []int{p.NOptions + 1 + len(p.GT)} // no option of the question
			swapped = append(swapped, q)
		}
		reqs, gts := ask(asked)
		reqs2, gts2 := ask(swapped)
		if len(reqs) == 0 || len(reqs) != len(reqs2) {
			t.Fatalf("%s: %d and %d calls", rec.KeyID, len(reqs), len(reqs2))
		}
		for k := range reqs {
			if reqs[k] != reqs2[k] {
				t.Errorf("%s call %d: the request changes with the ground truth:\n%.300s\n%.300s", rec.KeyID, k+1, reqs[k], reqs2[k])
			}
			if !slices.Equal(gts[k], asked[k].GT) || !slices.Equal(gts2[k], swapped[k].GT) {
				t.Errorf("%s call %d: ground truth beside the request %v, %v; want the plan's %v, %v", rec.KeyID, k+1, gts[k], gts2[k], asked[k].GT, swapped[k].GT)
			}
		}
		requests += len(reqs)
	}
	t.Logf("%d requests of %d records compared", requests, len(b.Records))
}
