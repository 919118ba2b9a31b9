package analysis

import (
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
)

// TestReadersVerdict: claim 3's rule on hand-made differences.
func TestReadersVerdict(t *testing.T) {
	diff := func(model string, d, lo, hi float64) DiffRow {
		return DiffRow{Comparison: ComparisonModel + model, OracleMode: "none", Path: benchmark.RevisionRequired, Stage: 1,
			ModelA: model, Valid: true, Diff: d, Lo: lo, Hi: hi}
	}
	for _, tc := range []struct {
		name             string
		diffs            []DiffRow
		readers, models  int
		status, inReason string
	}{
		{"every model below", []DiffRow{diff("a", -0.3, -0.4, -0.2), diff("b", -0.1, -0.2, -0.01)}, 2, 2, Supported, "closest model is b"},
		{"one model above", []DiffRow{diff("a", -0.3, -0.4, -0.2), diff("b", 0.1, 0.02, 0.2)}, 2, 2, NotSupported, "b is ahead"},
		{"an interval reaches 0", []DiffRow{diff("a", -0.3, -0.4, -0.2), diff("b", -0.05, -0.2, 0.1)}, 2, 2, Undecided, "reaches 0"},
		{"one reader", []DiffRow{diff("a", -0.3, -0.4, -0.2)}, 1, 1, Undecided, "at least 2"},
		{"no model", nil, 3, 0, Undecided, "no model run"},
	} {
		v := readersVerdict(&ReadersResult{Diffs: tc.diffs}, "none", tc.readers, tc.models)
		if v.Claim != 3 || v.Status != tc.status || !strings.Contains(v.Reason, tc.inReason) {
			t.Errorf("%s: %+v", tc.name, v)
		}
	}
}
