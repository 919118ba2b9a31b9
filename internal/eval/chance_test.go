package eval

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// The random baseline scores at the chance level of every question type
// (spec §10.3: 1/n for single choice, 1/2^m for multi-select): the chance
// level lies inside the observed proportion's Wilson interval. z = 3.29
// (99.9 %) because nine question types are tested at once.
//
// The draw is a function of the policy seed and the conversation's texts
// only (§11.1), so records whose texts are identical (the same lesion's
// detection question, say) get the same answer within one run; the
// samples are therefore pooled over many policy seeds, whose draws are
// independent, rather than over records of one run.
func TestRandomScoresChance(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("40 runs")
	}
	dir := generatedBench(t)
	var recs []*results.Record
	for seed := int64(0); seed < 40; seed++ {
		o := baseOptions(dir, t.TempDir(), model(t, "baseline", "random"))
		o.Oracle, o.Concurrency, o.AllowInvalid, o.PolicySeed = protocol.OracleNone, 16, true, seed
		s := run(t, o)
		rs, _ := rundir.ReadResults(filepath.Join(s.RunDir, rundir.ResultsFile))
		recs = append(recs, rs...)
	}
	bench, err := benchdir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	chance := map[string]float64{} // key|step → chance of a uniform random answer
	for _, r := range bench.Records {
		plan, _ := protocol.Plan(r, dir)
		for _, p := range plan {
			c := 1 / float64(p.NOptions)
			if p.Multi {
				c = 1 / math.Pow(2, float64(p.NOptions-1))
			}
			chance[r.KeyID+"|"+p.Step] = c
		}
	}
	type agg struct {
		n, k   int
		chance float64
	}
	by := map[string]*agg{}
	for _, r := range recs {
		for _, tn := range r.Turns {
			if tn.Status != results.TurnAsked {
				continue
			}
			a := by[tn.Step]
			if a == nil {
				a = &agg{}
				by[tn.Step] = a
			}
			a.n++
			if *tn.Correct {
				a.k++
			}
			a.chance += chance[r.KeyID+"|"+tn.Step]
		}
	}
	if len(by) != 9 {
		t.Fatalf("%d question types asked, want 9", len(by))
	}
	const z = 3.29
	for step, a := range by {
		n, p := float64(a.n), float64(a.k)/float64(a.n)
		centre := (p + z*z/(2*n)) / (1 + z*z/n)
		half := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / (1 + z*z/n)
		c := a.chance / n
		if c < centre-half || c > centre+half {
			t.Errorf("%s: accuracy %.3f (n=%d), chance %.3f outside [%.3f, %.3f]", step, p, a.n, c, centre-half, centre+half)
		} else {
			t.Logf("%s: accuracy %.3f (n=%d), chance %.3f", step, p, a.n, c)
		}
	}
}
