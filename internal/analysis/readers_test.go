package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/mrmc"
	"github.com/chexpercept/chexpercept/internal/stats"
)

// TestReadersVerdict: claim 3's rule on hand-made MRMC rows: Holm over
// the counted cells for "not supported", every cell below 0 for
// "supported", at least MinReaders readers for either, and a pre-stated
// primary comparison in place of the cells.
func TestReadersVerdict(t *testing.T) {
	// diff is a row whose interval and p agree: a t interval on 10 df.
	diff := func(model string, k benchmark.Stage, n int, d, se float64) MRMCRow {
		const q = 2.2281388519862744 // t(0.975; 10)
		tt := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 10}
		return MRMCRow{Comparison: ComparisonModel + model, OracleMode: "none", Path: benchmark.RevisionRequired, Stage: k,
			Model: model, NReaders: 4, NRecords: n, Estimate: d, SE: se, DF: 10, Lo: d - q*se, Hi: d + q*se, P: 2 * tt.Survival(math.Abs(d)/se)}
	}
	noInterval := func(r MRMCRow) MRMCRow {
		r.Lo, r.Hi, r.P, r.NA = math.NaN(), math.NaN(), math.NaN(), string(mrmc.NoVariance)
		return r
	}
	panel := func(readers int) *Panel {
		p := &Panel{OracleMode: "none", Study: "s1", Arm: "unaided"}
		for i := range readers {
			p.Readers = append(p.Readers, fmt.Sprintf("reader%d", i+1))
		}
		return p
	}
	const n = MinReaderRecords
	// p one-sided 0.02 and 0.03: each alone "ahead" at 0.025, but over
	// two cells Holm's first threshold is 0.0125.
	ahead002 := diff("b", 2, n, 0.1, 0.1/2.3593) // t = 2.3593, one-sided p ≈ 0.0200 on 10 df
	ahead003 := diff("a", 1, n, 0.1, 0.1/2.1202) // one-sided p ≈ 0.0300
	for _, tc := range []struct {
		name             string
		rows             []MRMCRow
		readers, models  int
		primary          *Endpoint
		status, inReason string
	}{
		{"every model below", []MRMCRow{diff("a", 1, n, -0.3, 0.04), diff("b", 1, n, -0.1, 0.04)}, 4, 2, nil, supported, "closest model is b"},
		{"one model ahead", []MRMCRow{diff("a", 1, n, -0.3, 0.04), diff("b", 2, n, 0.1, 0.02)}, 4, 2, nil, notSupported, "b is ahead"},
		{"ahead in one cell, not after Holm", []MRMCRow{diff("a", 1, n, -0.3, 0.04), ahead002, diff("c", 3, n, -0.3, 0.04)}, 4, 3, nil, Undecided, "reaches 0"},
		{"ahead in two cells, Holm rejects both", []MRMCRow{diff("a", 1, n, 0.2, 0.02), diff("b", 2, n, 0.2, 0.02)}, 4, 2, nil, notSupported, "ahead in 2 cell(s) in all"},
		{"p 0.02 alone counts", []MRMCRow{ahead002}, 4, 1, nil, notSupported, "b is ahead"},
		{"p 0.03 alone does not", []MRMCRow{ahead003}, 4, 1, nil, Undecided, "reaches 0"},
		{"an interval reaches 0", []MRMCRow{diff("a", 1, n, -0.3, 0.04), diff("b", 1, n, -0.05, 0.06)}, 4, 2, nil, Undecided, "reaches 0"},
		{"three readers", []MRMCRow{diff("a", 1, n, -0.3, 0.04)}, 3, 1, nil, Undecided, "too few readers for a verdict (3; at least 4 are needed); the numbers: 3 readers, 1 model(s), 1 counted cell(s)"},
		{"three readers, a model ahead", []MRMCRow{diff("a", 1, n, 0.3, 0.04)}, 3, 1, nil, Undecided, "too few readers for a verdict (3; at least 4 are needed); the numbers: 3 readers, 1 model(s), 1 counted cell(s): a is ahead"},
		{"no model", nil, 4, 0, nil, Undecided, "no model run"},
		{"too few records", []MRMCRow{diff("a", 1, 2, 0.7, 0.1)}, 4, 1, nil, Undecided, "too few records: the readers and a model share at most 2 record(s)"},
		{"some cells too few", []MRMCRow{diff("a", 1, n, -0.3, 0.04), diff("a", 2, n-1, -0.3, 0.04)}, 4, 1, nil, Undecided, "too few records: 1 cell(s)"},
		{"no interval", []MRMCRow{noInterval(diff("a", 1, n, -0.3, 0.04))}, 4, 1, nil, Undecided, "too few records"},
		// The primary comparison alone decides: stage 2 is below 0, the
		// model ahead at stage 1 does not enter.
		{"primary below", []MRMCRow{diff("a", 1, n, 0.3, 0.02), diff("a", 2, n, -0.3, 0.04)}, 4, 1, &Endpoint{Path: benchmark.RevisionRequired, Stage: 2}, supported, "pre-stated primary comparison (every model on revision_required stage 2)"},
		// One primary cell is one test: p 0.03 one-sided is not enough,
		// p 0.02 is, whatever the other cells.
		{"primary alone, no Holm", []MRMCRow{ahead002, diff("x", 1, n, -0.3, 0.04), diff("y", 1, n, -0.3, 0.04)}, 4, 3, &Endpoint{Model: "b", Path: benchmark.RevisionRequired, Stage: 2}, notSupported, "b is ahead"},
		// A plan at α = 0.1 tests each verdict one-sided at 0.05: p 0.03
		// is then enough, where the default 0.025 is not.
		{"primary at its plan's alpha", []MRMCRow{ahead003}, 4, 1, &Endpoint{Model: "a", Path: benchmark.RevisionRequired, Stage: 1, Alpha: 0.1}, notSupported, "at level 0.05"},
		{"primary at its plan's alpha, below", []MRMCRow{diff("a", 1, n, -0.1, 0.1/2.1202)}, 4, 1, &Endpoint{Model: "a", Path: benchmark.RevisionRequired, Stage: 1, Alpha: 0.1}, supported, "below 0.05"},
		{"primary names no cell", []MRMCRow{diff("a", 1, n, -0.3, 0.04)}, 4, 1, &Endpoint{Path: benchmark.LesionFree, Stage: 1}, Undecided, "no such cell"},
	} {
		p := panel(tc.readers)
		p.Primary = tc.primary
		v := readersVerdict(tc.rows, p, tc.models)
		if v.Claim != 3 || v.Status != tc.status || !strings.Contains(v.Reason, tc.inReason) || v.Scope != "study s1, unaided" {
			t.Errorf("%s: %+v", tc.name, v)
		}
	}
	// The p-values above are what the cases say they are.
	if p := ahead002.OneSidedAhead(); math.Abs(p-0.02) > 2e-4 {
		t.Errorf("one-sided p %v, want 0.02", p)
	}
	if p := ahead003.OneSidedAhead(); math.Abs(p-0.03) > 2e-4 {
		t.Errorf("one-sided p %v, want 0.03", p)
	}
}

// TestHolm: Holm's step-down procedure against a worked example: p
// 0.01, 0.04, 0.03, 0.005 at 0.05 reject the first and the fourth
// (0.005 ≤ 0.0125, 0.01 ≤ 0.0167, then 0.03 > 0.025 stops).
func TestHolm(t *testing.T) {
	got := holm([]float64{0.01, 0.04, 0.03, 0.005}, 0.05)
	if want := []bool{true, false, false, true}; !slices.Equal(got, want) {
		t.Errorf("holm: %v, want %v", got, want)
	}
	if got := holm([]float64{0.01, math.NaN()}, 0.05); !slices.Equal(got, []bool{true, false}) {
		t.Errorf("holm with NaN: %v", got)
	}
}

// TestDiffCIDegenerate: two groups both 0 of 14 at a stage resample to a
// difference of 0 every time; the interval falls back to Newcombe's and
// keeps the width of the groups' own Wilson intervals.
func TestDiffCIDegenerate(t *testing.T) {
	o := &Options{Bootstrap: 200, Seed: defaultSeed}
	wrong := make([]decayRec, 14)
	for i := range wrong {
		wrong[i] = decayRec(1) // stage 1 applies, not right
	}
	a := bootUnit([][]decayRec{wrong, wrong}, true, o)
	b := bootUnit([][]decayRec{wrong}, false, o)
	lo, hi, ok := diffCI(a, b, 1)
	wlo, whi, _ := stats.Wilson(0, 28)
	if !ok || !(lo < 0 && hi > 0) || hi < whi-wlo-1e-12 {
		t.Errorf("0/28 − 0/14: [%v, %v] (ok %v), want an interval around 0 at least %v wide on each side", lo, hi, ok, whi)
	}
}
