package eval

import (
	"context"
	"fmt"
	"io"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// DryRunReport counts what a run would send, without sending anything.
// Conversations are simulated with ground-truth answers ("Answer: N"), so
// no oracle text or patch is triggered; input tokens are estimated at
// about 4 bytes per text token plus a fixed count per image
// (fakemodel.EstimateUsage).
type DryRunReport struct {
	Records        int
	Calls          int
	ImagePayloads  int // images sent, counting every re-send of history images
	DistinctImages int
	ImageBytes     int64 // bytes of the distinct image files
	InputTokens    int64 // estimated
	// OutputShort assumes terse answers; OutputMax assumes every call
	// spends its whole output budget (MaxTokensPerCall).
	OutputShort, OutputMax int64
	MaxTokensPerCall       int64
	CostLow, CostHigh      *float64 // nil when the model is unpriced
	Errors                 []string // records that could not be planned
}

func dryRun(o *Options, bench *benchmark.Benchmark, todo []int) *DryRunReport {
	rep := &DryRunReport{Records: len(todo), MaxTokensPerCall: maxTokens(o.Model.Sampling)}
	distinct := map[string]bool{}
	for _, ix := range todo {
		rec := bench.Records[ix]
		plan, err := protocol.Plan(rec, o.BenchDir)
		if err != nil {
			rep.Errors = append(rep.Errors, err.Error())
			continue
		}
		var asked []protocol.PlannedTurn
		for _, p := range plan {
			if p.Asked() {
				asked = append(asked, p)
			}
		}
		// The text-only control sends no image; the blank-radiograph
		// control as many as the benchmark's (its bytes are estimated by
		// theirs, which are larger).
		textOnly := o.Control == results.ControlTextOnly
		if !textOnly {
			for _, p := range protocol.ImagesToSend(plan) {
				distinct[p] = true
			}
		}
		n := 0
		caller := func(_ context.Context, msgs []protocol.Message) (protocol.Reply, error) {
			p := asked[n]
			n++
			reply := parse.FormatAnswer(p.GT)
			texts := make([]string, len(msgs))
			imgs := 0
			for i, m := range msgs {
				texts[i] = m.Text
				if !textOnly {
					imgs += len(m.ImagePaths)
				}
			}
			u := fakemodel.EstimateUsage(texts, imgs, reply)
			rep.Calls++
			rep.ImagePayloads += imgs
			rep.InputTokens += u.Input
			rep.OutputShort += u.Output
			return protocol.Reply{Text: reply}, nil
		}
		protocol.Run(context.Background(), rec, protocol.Options{BenchDir: o.BenchDir, Index: ix, Oracle: o.Oracle,
			Parse: o.Parse, Profile: o.Profile, GLMBoxUnwrap: o.Model.GLMBoxUnwrap}, caller)
	}
	rep.DistinctImages = len(distinct)
	for p := range distinct {
		if fi, err := statRel(o.BenchDir, p); err == nil {
			rep.ImageBytes += fi
		}
	}
	rep.OutputMax = int64(rep.Calls) * rep.MaxTokensPerCall
	if pr := o.Model.Price; pr != nil {
		lo := pr.Cost(runmodel.Usage{Input: rep.InputTokens, Output: rep.OutputShort})
		hi := pr.Cost(runmodel.Usage{Input: rep.InputTokens, Output: rep.OutputMax})
		rep.CostLow, rep.CostHigh = &lo, &hi
	} else if o.Model.Backend == runmodel.BackendBaseline {
		zero := 0.0
		rep.CostLow, rep.CostHigh = &zero, &zero
	}
	return rep
}

func maxTokens(s runmodel.Sampling) int64 {
	for _, p := range []*int64{s.MaxTokens, s.MaxCompletionTokens, s.MaxOutputTokens} {
		if p != nil {
			return *p
		}
	}
	return 8192
}

// Write prints the report.
func (d *DryRunReport) Write(w io.Writer) {
	fmt.Fprintf(w, "dry run: nothing was sent\n")
	fmt.Fprintf(w, "  records to ask:   %d\n", d.Records)
	fmt.Fprintf(w, "  calls:            %d\n", d.Calls)
	fmt.Fprintf(w, "  image payloads:   %d (%d distinct images, %.1f MB)\n", d.ImagePayloads, d.DistinctImages, float64(d.ImageBytes)/1e6)
	fmt.Fprintf(w, "  input tokens:     ~%d (estimate: 4 bytes per text token, %d per image)\n", d.InputTokens, fakemodel.EstTokensPerImage)
	fmt.Fprintf(w, "  output tokens:    ~%d with terse answers, at most %d (%d per call)\n", d.OutputShort, d.OutputMax, d.MaxTokensPerCall)
	if d.CostLow != nil {
		fmt.Fprintf(w, "  estimated cost:   $%.4f (terse answers) to $%.4f (every call at its output limit)\n", *d.CostLow, *d.CostHigh)
	} else {
		fmt.Fprintf(w, "  estimated cost:   unknown (the model has no price entry)\n")
	}
	for _, e := range d.Errors {
		fmt.Fprintf(w, "  cannot plan: %s\n", e)
	}
}
