package analysis

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/stats"
)

func TestChanceRates(t *testing.T) {
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"unanimous K=2 R=5", chanceUnanimousWrong(2, 5), 1.0 / 32},
		{"unanimous K=4 R=3", chanceUnanimousWrong(4, 3), 3.0 / 64},
		{"unanimous multi m=3 R=4", chanceUnanimousWrong(8, 4), 7.0 / 4096},
		// 3 wrong answers × P(Bin(5, 1/4) ≥ 4).
		{"majority K=4 R=5 need 4", chanceMajorityWrong(4, 5, 4), 3 * (5*math.Pow(0.25, 4)*0.75 + math.Pow(0.25, 5))},
		{"majority need R = unanimous", chanceMajorityWrong(3, 6, 6), chanceUnanimousWrong(3, 6)},
		{"majority K=2 R=5 need 4", chanceMajorityWrong(2, 5, 4), 6.0 / 32},
		{"one answer", chanceUnanimousWrong(1, 5), 0},
	} {
		if !closeTo(c.got, c.want, 1e-15) {
			t.Errorf("%s: %.17g, want %.17g", c.name, c.got, c.want)
		}
	}
}

func TestPearsonCorrected(t *testing.T) {
	if r := stats.Pearson([]float64{1, 0, 1, 0}, []float64{0.9, 0.1, 0.8, 0.2}); !(r > 0.9) {
		t.Errorf("r = %v", r)
	}
	if r := stats.Pearson([]float64{1, 1, 1}, []float64{0.1, 0.5, 0.9}); !math.IsNaN(r) {
		t.Errorf("constant item: %v", r)
	}
}

// simulate runs the rules on nItems items answered by nRuns uniform
// random runs (the answer space of each item drawn from {2, 3, 4, 8}),
// and returns the number flagged with the expected count and its sd.
func simulate(nItems, nRuns int, seed string) (*ItemHealth, []cell) {
	r := rng.New("itemhealth-sim/" + seed)
	h := &ItemHealth{FlagShare: DefaultFlagShare}
	h.Items = make([]ItemStat, nItems)
	cells := make([]cell, nItems)
	for i := range cells {
		k := []int{2, 3, 4, 8}[r.IntRange(0, 3)]
		h.Items[i] = ItemStat{Key: fmt.Sprint(i), Q: benchmark.QRevisionResult, Answers: k, GT: fmt.Sprint(r.IntRange(1, k)), Discrimination: nan}
		cells[i].stat = &h.Items[i]
		for run := 0; run < nRuns; run++ {
			a := fmt.Sprint(r.IntRange(1, k))
			cells[i].obs = append(cells[i].obs, obs{run: run, ans: a, correct: a == h.Items[i].GT})
		}
		cells[i].tally()
	}
	discriminate(cells, nRuns)
	for i := range cells {
		h.flag(cells[i].stat)
	}
	return h, cells
}

// Under random answering every rule stays within its stated rate: the
// number of flagged items is at most the expected count plus 3 sd (a
// fixed seed makes the check deterministic), for 5 runs (agreement rules
// only) and for 12 runs (discrimination too).
func TestFalseFlagRateSimulated(t *testing.T) {
	for _, runs := range []int{3, 5, 12} {
		h, _ := simulate(4000, runs, fmt.Sprint(runs))
		bound := h.Expected + 3*h.SD
		t.Logf("%d runs: %d of %d items flagged; expected %.1f (sd %.1f)", runs, h.Flagged, len(h.Items), h.Expected, h.SD)
		if float64(h.Flagged) > bound {
			t.Errorf("%d runs: %d flagged, more than expected %.1f + 3·%.1f", runs, h.Flagged, h.Expected, h.SD)
		}
		if runs == 3 && h.Expected == 0 {
			t.Error("3 runs: 4- and 8-answer items should be testable")
		}
	}
}

func TestFlagRules(t *testing.T) {
	mk := func(k int, gt string, answers ...string) *ItemStat {
		h := &ItemHealth{FlagShare: DefaultFlagShare}
		s := &ItemStat{Answers: k, GT: gt, Discrimination: nan}
		c := cell{stat: s}
		for i, a := range answers {
			o := obs{run: i, ans: a, correct: a == gt}
			if a == "" {
				o.unparsed = true
			}
			c.obs = append(c.obs, o)
		}
		c.tally()
		h.flag(s)
		return s
	}
	for _, c := range []struct {
		name string
		s    *ItemStat
		want []string
	}{
		{"unanimous 4 options 3 runs", mk(4, "1", "2", "2", "2"), []string{FlagUnanimousWrong}},
		{"unanimous binary 3 runs: too likely by chance", mk(2, "1", "2", "2", "2"), nil},
		{"unanimous binary 5 runs", mk(2, "1", "2", "2", "2", "2", "2"), []string{FlagUnanimousWrong}},
		{"majority 4 of 5, K=4", mk(4, "1", "2", "2", "2", "2", "3"), []string{FlagMajorityWrong}},
		{"majority 4 of 5, binary: not testable", mk(2, "1", "2", "2", "2", "2", "1"), nil},
		{"majority right", mk(4, "1", "1", "1", "1", "1", "3"), nil},
		{"split", mk(4, "1", "2", "2", "3", "3", "4"), nil},
		{"parse failures", mk(4, "1", "", "", "", "1"), []string{FlagParseFailures}},
		{"half parse failures", mk(4, "1", "", "", "1", "1"), nil},
	} {
		if !slices.Equal(c.s.Reasons, c.want) {
			t.Errorf("%s: reasons %v, want %v (modal %q %d/%d)", c.name, c.s.Reasons, c.want, c.s.Modal, c.s.ModalN, c.s.Runs)
		}
	}
}

func TestNegativeDiscrimination(t *testing.T) {
	// 12 runs over 40 items: runs 0–5 strong (all right), 6–11 weak (all
	// wrong) on items 1..39; item 0 is the reverse.
	h := &ItemHealth{FlagShare: DefaultFlagShare}
	h.Items = make([]ItemStat, 40)
	cells := make([]cell, 40)
	for i := range cells {
		h.Items[i] = ItemStat{Answers: 4, GT: "1", Discrimination: nan}
		cells[i].stat = &h.Items[i]
		for run := 0; run < 12; run++ {
			strong := run < 6
			right := strong != (i == 0)
			a := "2"
			if right {
				a = "1"
			}
			cells[i].obs = append(cells[i].obs, obs{run: run, ans: a, correct: right})
		}
		cells[i].tally()
	}
	discriminate(cells, 12)
	for i := range cells {
		h.flag(cells[i].stat)
	}
	if d := h.Items[0].Discrimination; !(d < -0.99) || !slices.Contains(h.Items[0].Reasons, FlagNegativeDisc) {
		t.Errorf("item 0: discrimination %v, reasons %v", d, h.Items[0].Reasons)
	}
	if d := h.Items[1].Discrimination; !(d > 0.99) || slices.Contains(h.Items[1].Reasons, FlagNegativeDisc) {
		t.Errorf("item 1: discrimination %v, reasons %v", d, h.Items[1].Reasons)
	}
}

func closeTo(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestMajorityWrongNeedsMajority: with a share just above one half, a tie
// (5 of 10 runs on one wrong answer, 5 on the right one) is no majority.
func TestMajorityWrongNeedsMajority(t *testing.T) {
	for _, tc := range []struct {
		share  float64
		modalN int
		want   bool
	}{
		{0.5 + 1e-12, 5, false},
		{0.5 + 1e-12, 6, true},
		{0.8, 8, true},
		{0.8, 7, false},
	} {
		h := &ItemHealth{FlagShare: tc.share}
		s := &ItemStat{Runs: 10, Correct: 10 - tc.modalN, Answers: 50, GT: "1", Modal: "2", ModalN: tc.modalN, Discrimination: math.NaN()}
		h.flag(s)
		if got := slices.Contains(s.Reasons, FlagMajorityWrong); got != tc.want {
			t.Errorf("share %v, %d of 10 wrong alike: majority_wrong %v, want %v (reasons %v)", tc.share, tc.modalN, got, tc.want, s.Reasons)
		}
	}
}

// TestAnswerableWithoutImage: an item that at least the flag share of
// the control runs answer right is flagged answerable_without_image, only
// where that many random runs would be right with probability at most
// MaxChance; the chance enters p_chance.
func TestAnswerableWithoutImage(t *testing.T) {
	for _, tc := range []struct {
		name          string
		k, runs, good int
		want          bool
		pc            float64 // the rule's chance, 0 when not applied
	}{
		{"4 options, 4 of 5 right", 4, 5, 4, true, 5*math.Pow(0.25, 4)*0.75 + math.Pow(0.25, 5)},
		{"4 options, 3 of 5 right", 4, 5, 3, false, 5*math.Pow(0.25, 4)*0.75 + math.Pow(0.25, 5)},
		{"binary, 5 of 5 right: too likely by chance", 2, 5, 5, false, 0},
		{"binary, 6 of 6 right", 2, 6, 6, false, 0}, // need 5 of 6: P = 7/64 > 0.05
		{"binary, 8 of 8 right", 2, 8, 8, true, 9.0 / 256},
		{"4 options, 2 control runs: too few", 4, 2, 2, false, 0},
	} {
		h := &ItemHealth{FlagShare: DefaultFlagShare}
		s := &ItemStat{Answers: tc.k, GT: "1", Discrimination: math.NaN(), ControlRuns: tc.runs, ControlCorrect: tc.good}
		h.flag(s)
		if got := slices.Contains(s.Reasons, FlagWithoutImage); got != tc.want {
			t.Errorf("%s: flagged %v, want %v", tc.name, got, tc.want)
		}
		if !closeTo(s.PChance, tc.pc, 1e-15) {
			t.Errorf("%s: p_chance %.17g, want %.17g", tc.name, s.PChance, tc.pc)
		}
	}
}
