package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/stats"
)

// TestReadersVerdict: claim 3's rule on hand-made MRMC rows.
func TestReadersVerdict(t *testing.T) {
	diff := func(model string, n int, d, lo, hi float64) MRMCRow {
		return MRMCRow{Comparison: ComparisonModel + model, OracleMode: "none", Path: benchmark.RevisionRequired, Stage: 1,
			Model: model, NReaders: 2, NRecords: n, Estimate: d, SE: 0.05, DF: 10, Lo: lo, Hi: hi, P: 0.5}
	}
	const n = MinReaderRecords
	for _, tc := range []struct {
		name             string
		rows             []MRMCRow
		readers, models  int
		status, inReason string
	}{
		{"every model below", []MRMCRow{diff("a", n, -0.3, -0.4, -0.2), diff("b", n, -0.1, -0.2, -0.01)}, 2, 2, supported, "closest model is b"},
		{"one model above", []MRMCRow{diff("a", n, -0.3, -0.4, -0.2), diff("b", n, 0.1, 0.02, 0.2)}, 2, 2, notSupported, "b is ahead"},
		{"an interval reaches 0", []MRMCRow{diff("a", n, -0.3, -0.4, -0.2), diff("b", n, -0.05, -0.2, 0.1)}, 2, 2, Undecided, "reaches 0"},
		{"one reader", []MRMCRow{diff("a", n, -0.3, -0.4, -0.2)}, 1, 1, Undecided, "at least 2"},
		{"no model", nil, 3, 0, Undecided, "no model run"},
		{"too few records", []MRMCRow{diff("a", 2, 0.7, 0.4, 1)}, 2, 1, Undecided, "too few records: the readers and a model share at most 2 record(s)"},
		{"some cells too few", []MRMCRow{diff("a", n, -0.3, -0.4, -0.2), diff("a", n-1, -0.3, -0.4, -0.2)}, 2, 1, Undecided, "too few records: 1 cell(s)"},
		{"no interval", []MRMCRow{diff("a", n, -0.3, math.NaN(), math.NaN())}, 2, 1, Undecided, "too few records"},
	} {
		v := readersVerdict(tc.rows, "none", tc.readers, tc.models)
		if v.Claim != 3 || v.Status != tc.status || !strings.Contains(v.Reason, tc.inReason) {
			t.Errorf("%s: %+v", tc.name, v)
		}
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
