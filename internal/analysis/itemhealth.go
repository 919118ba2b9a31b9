package analysis

// Item health (protocol.md §10 is silent, so the rules below are
// ours and docs/item-health.md states them): the answers of several
// evaluated models are evidence about the items themselves. Per question
// of each record we count how the counted runs answered, and flag the
// items whose answers point at a wrong ground truth, a broken question or
// an item that only weak models get right.
//
// Evidence: the scored runs of one oracle mode of the kinds model and
// rehearsal (baseline policies — oracle, random, first … —, image-removal
// controls and human readers never count), at least MinItemRuns of them.
// Oracle modes are kept apart because patched histories change what a
// later question means. Readers are people in a study, often of a
// sample, and an aided arm saw a model's answers: their answers would
// change the flags with the study's design, so they are shown beside the
// flags, as their own evidence (how many of the readers who answered
// alone gave the models' modal answer, and the ground truth), and never
// counted in them.
//
// Image controls: the control runs of a mode (results.KindControl:
// models asked without the image) are counted apart, for one rule of
// their own. An item that at least the flag share of them answer right is
// answerable without the image — a text cue in the question, or an answer
// set so skewed that the most frequent answer is right — and so measures
// no perception; it is flagged answerable_without_image under the same
// chance rule as majority_wrong (here: random runs right that often).
//
// Chance: every rule has a false-flag probability under random answering
// (each run picks one of the K answers of the question uniformly; K = n
// options for single choice, 2^m for a multi-select question with m
// non-None options, the random baseline's answer space). A rule is
// applied to an item only when that probability is at most MaxChance;
// the expected number of false flags under random answering, Σ p over
// the items, and its standard deviation are reported beside the count.

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/stats"
)

// Item-health defaults.
const (
	// MinItemRuns is the number of counted runs below which no item
	// statistics are computed.
	MinItemRuns = 3
	// DefaultFlagShare is the share of counted runs that must agree on
	// one wrong answer for majority_wrong.
	DefaultFlagShare = 0.8
	// MaxChance is the largest false-flag probability under random
	// answering at which unanimous_wrong and majority_wrong are applied
	// to an item: binary questions need 5 runs, 4-option ones 3.
	MaxChance = 0.05
	// MinDiscRuns is the number of runs answering an item below which
	// negative_discrimination is never flagged: the correlation's
	// sampling sd is about 1/√(R−1), too wide with fewer runs.
	MinDiscRuns = 10
	// DiscAlpha is the one-sided level of the negative-discrimination
	// test (t approximation of the point-biserial correlation).
	DiscAlpha = 0.01
)

// Item-health flag reason codes: a report writes them into
// flagged_items.csv (joined with ";"), and a review round (package
// review) reads them back. The set is closed; anything else in a reason
// column is refused.
const (
	FlagUnanimousWrong = "unanimous_wrong"
	FlagMajorityWrong  = "majority_wrong"
	FlagNegativeDisc   = "negative_discrimination"
	FlagParseFailures  = "parse_failures"
	// FlagWithoutImage marks an item that most models answer right in
	// their image-control runs.
	FlagWithoutImage = "answerable_without_image"
)

// FlagReasons lists every flag reason code, in rule order.
var FlagReasons = []string{FlagUnanimousWrong, FlagMajorityWrong, FlagNegativeDisc, FlagParseFailures, FlagWithoutImage}

// ItemStat is one question of one record.
type ItemStat struct {
	Key     string
	Index   int // the record's position in the benchmark
	Path    benchmark.Path
	Lesion  string
	Q       benchmark.Question
	GT      string // canonical ground truth ("2", "1,3")
	Answers int    // K: the size of the answer space
	// Runs counts the counted runs that were asked the question; Correct
	// those scored correct; Unparsed those whose answer failed to parse
	// (§10.3's parse failure).
	Runs, Correct, Unparsed int
	// Modal is the most chosen parsed answer ("" when none parsed; ties:
	// the first in byte order), ModalN its count.
	Modal  string
	ModalN int
	// PCorrect = Correct/Runs. Difficulty = (1 − PCorrect)/(1 − 1/K): 0
	// when every run is right, 1 at chance level, above 1 below chance.
	PCorrect, Difficulty float64
	// Discrimination is the corrected item-total (point-biserial)
	// correlation over the runs; NaN when undefined.
	Discrimination float64
	// ControlRuns counts the mode's image-control runs that were asked
	// the question, ControlCorrect those scored correct (without the
	// image).
	ControlRuns, ControlCorrect int
	// PChance is the probability that the rules applied to this item
	// flag it under random answering.
	PChance float64
	Reasons []string // flag reason codes, in rule order
	// Readers counts the readers' runs (unaided arms, not counted above)
	// that were asked the question; ReadersModal those whose parsed
	// answer is the counted runs' modal answer, ReadersGT those scored
	// correct.
	Readers, ReadersModal, ReadersGT int
}

// AgreeShare is the modal answer's share of the runs asked.
func (s *ItemStat) AgreeShare() float64 {
	if s.Runs == 0 {
		return math.NaN()
	}
	return float64(s.ModalN) / float64(s.Runs)
}

// PositionBias is one single-choice question type with K options: how
// often each option index was chosen (over the counted runs' parsed
// answers) against how often it is the ground truth (over the items),
// with a chi-square test of homogeneity of the two distributions.
type PositionBias struct {
	Q           benchmark.Question
	K           int
	Chosen, GT  []int   // per option index 1..K at 0..K−1
	Chi2        float64 // NaN when DF < 1
	DF          int
	P           float64 // NaN when DF < 1
	NItems, NAn int     // items and parsed answers counted
}

// ItemHealth is the item analysis of one oracle mode.
type ItemHealth struct {
	Mode string
	Runs []string // the counted runs' names
	// ControlRuns are the names of the mode's image-control runs (counted
	// apart, for answerable_without_image only).
	ControlRuns []string
	// Readers are the readers' runs shown beside the flags: the mode's
	// human runs but for aided arms.
	Readers []string
	// Skipped says why nothing was computed ("" when computed).
	Skipped   string
	FlagShare float64
	Items     []ItemStat // benchmark order, then question order
	Bias      []PositionBias
	// Flagged counts the items with a reason; Expected and SD are the
	// mean and standard deviation of that count under random answering
	// (items independent).
	Flagged      int
	Expected, SD float64
}

// Flags returns the flagged items.
func (h *ItemHealth) Flags() []*ItemStat {
	var out []*ItemStat
	for i := range h.Items {
		if len(h.Items[i].Reasons) > 0 {
			out = append(out, &h.Items[i])
		}
	}
	return out
}

// CheckFlagShare validates a majority_wrong share: a majority, so above
// one half, and at most 1.
func CheckFlagShare(s float64) error {
	if s == 0 {
		return nil
	}
	if !(s > 0.5 && s <= 1) {
		return fmt.Errorf("flag share %v: want a share above 0.5 and at most 1", s)
	}
	return nil
}

// counted reports whether a run is evidence about items: the answers of
// models (rehearsals included). A baseline's answers are a policy's, a
// control's are given without the image, and a reader's are shown
// beside the flags (shownReader).
func counted(rr *RunResult) bool {
	return rr.Scored && rr.Run.Kind.Model()
}

// shownReader reports whether a run is a reader's shown beside the
// flags: one who answered alone (an aided arm saw a model's answers).
func shownReader(rr *RunResult) bool {
	a, ok := rr.Run.ReaderOf()
	return ok && rr.Scored && a.Arm != results.ArmAided
}

// ComputeItemHealth computes the item analysis of every oracle mode that
// has a scored model's run.
func ComputeItemHealth(res *Result, flagShare float64) []*ItemHealth {
	if flagShare == 0 {
		flagShare = DefaultFlagShare
	}
	var out []*ItemHealth
	for _, mode := range res.Modes() {
		var runs, controls, readers []*RunResult
		for _, rr := range res.Runs {
			switch {
			case rr.Run.OracleMode != mode:
			case counted(rr):
				runs = append(runs, rr)
			case rr.Scored && rr.Run.Kind == results.KindControl:
				controls = append(controls, rr)
			case shownReader(rr):
				readers = append(readers, rr)
			}
		}
		if len(runs) == 0 {
			continue
		}
		h := &ItemHealth{Mode: mode, FlagShare: flagShare}
		for _, rr := range runs {
			h.Runs = append(h.Runs, rr.Run.Name)
		}
		for _, rr := range controls {
			h.ControlRuns = append(h.ControlRuns, rr.Run.Name)
		}
		for _, rr := range readers {
			h.Readers = append(h.Readers, rr.Run.Name)
		}
		switch {
		case len(runs) < MinItemRuns:
			h.Skipped = fmt.Sprintf("%d model run(s); item statistics need at least %d", len(runs), MinItemRuns)
		case res.Set.Bench == nil:
			h.Skipped = "no benchmark loaded; item statistics need its answer options"
		default:
			h.compute(res.Set.Bench, runs, controls)
			h.beside(readers)
		}
		out = append(out, h)
	}
	return out
}

// beside counts, per item, the readers asked the question and how many
// of them gave the counted runs' modal answer and the ground truth.
func (h *ItemHealth) beside(readers []*RunResult) {
	byKey := recordsByKey(readers)
	for i := range h.Items {
		s := &h.Items[i]
		for ri := range readers {
			o, ok := observe(byKey[ri][s.Key], s.Q, s.Answers)
			if !ok {
				continue
			}
			s.Readers++
			if s.Modal != "" && o.ans == s.Modal {
				s.ReadersModal++
			}
			if o.correct {
				s.ReadersGT++
			}
		}
	}
}

// obs is one run's answer to one item: ans "" when unparsed.
type obs struct {
	run      int
	ans      string
	correct  bool
	unparsed bool
}

// cell is one item's observations while computing.
type cell struct {
	stat *ItemStat
	obs  []obs
}

func (h *ItemHealth) compute(b *benchmark.Benchmark, runs, controls []*RunResult) {
	byKey, ctlByKey := recordsByKey(runs), recordsByKey(controls)
	var cells []cell
	for idx, rec := range b.Records {
		g := gtOf(rec)
		for _, q := range benchmark.Questions {
			if !g.app[q] || g.chance[q] <= 0 {
				continue
			}
			st := ItemStat{Key: rec.KeyID, Index: idx, Path: rec.Path(), Lesion: rec.Lesion, Q: q, GT: g.gt[q],
				Answers: int(math.Round(1 / g.chance[q])), Discrimination: nan}
			c := cell{}
			for ri := range runs {
				if o, ok := observe(byKey[ri][rec.KeyID], q, st.Answers); ok {
					o.run = ri
					c.obs = append(c.obs, o)
				}
			}
			for ri := range controls {
				if o, ok := observe(ctlByKey[ri][rec.KeyID], q, st.Answers); ok {
					st.ControlRuns++
					if o.correct {
						st.ControlCorrect++
					}
				}
			}
			h.Items = append(h.Items, st)
			cells = append(cells, c)
		}
	}
	for i := range cells {
		cells[i].stat = &h.Items[i]
		cells[i].tally()
	}
	discriminate(cells, len(runs))
	for i := range cells {
		h.flag(cells[i].stat)
	}
	h.Bias = positionBias(cells)
}

// recordsByKey indexes each run's records by key_id.
func recordsByKey(runs []*RunResult) []map[string]*results.Record {
	out := make([]map[string]*results.Record, len(runs))
	for i, rr := range runs {
		out[i] = make(map[string]*results.Record, len(rr.Run.Records))
		for _, r := range rr.Run.Records {
			out[i][r.KeyID] = r
		}
	}
	return out
}

// observe reads one run's answer to question q of a record.
func observe(r *results.Record, q benchmark.Question, k int) (obs, bool) {
	if r == nil {
		return obs{}, false
	}
	t := r.Turn(q)
	if t == nil || t.Status != results.TurnAsked {
		return obs{}, false
	}
	o := obs{correct: t.Correct != nil && *t.Correct, unparsed: IsParseFailure(t)}
	strict := r.ParseMode == "strict" // strict failures are never guessed
	if t.Parsed != nil && len(*t.Parsed) > 0 && !(strict && o.unparsed) {
		nums := *t.Parsed
		if !q.Multi() {
			nums = nums[:1]
		}
		ok := true
		for _, n := range nums {
			if n < 1 || (!q.Multi() && n > k) {
				ok = false
			}
		}
		if ok {
			o.ans = canonGT(nums)
		}
	}
	return o, true
}

// tally fills the counts, the modal answer and the shares.
func (c *cell) tally() {
	s := c.stat
	counts := map[string]int{}
	for _, o := range c.obs {
		s.Runs++
		if o.correct {
			s.Correct++
		}
		if o.unparsed {
			s.Unparsed++
		}
		if o.ans != "" {
			counts[o.ans]++
		}
	}
	for _, a := range slices.Sorted(maps.Keys(counts)) {
		if counts[a] > s.ModalN {
			s.Modal, s.ModalN = a, counts[a]
		}
	}
	s.PCorrect, s.Difficulty = nan, nan
	if s.Runs > 0 {
		s.PCorrect = float64(s.Correct) / float64(s.Runs)
		if s.Answers > 1 {
			s.Difficulty = (1 - s.PCorrect) / (1 - 1/float64(s.Answers))
		}
	}
}

// discriminate computes each item's corrected item-total correlation: the
// Pearson correlation, over the runs that answered the item, between the
// item's 0/1 score and the run's share correct over all other items of
// the mode. Leaving the item out of the total avoids the part-whole
// inflation of the uncorrected point-biserial, which with a handful of
// items, or an item answered by few runs, would push every item towards
// positive discrimination.
func discriminate(cells []cell, nRuns int) {
	asked := make([]float64, nRuns)
	right := make([]float64, nRuns)
	for _, c := range cells {
		for _, o := range c.obs {
			asked[o.run]++
			if o.correct {
				right[o.run]++
			}
		}
	}
	xs, ys := []float64{}, []float64{}
	for _, c := range cells {
		xs, ys = xs[:0], ys[:0]
		for _, o := range c.obs {
			x := 0.0
			if o.correct {
				x = 1
			}
			if asked[o.run] < 2 {
				continue
			}
			xs = append(xs, x)
			ys = append(ys, (right[o.run]-x)/(asked[o.run]-1))
		}
		c.stat.Discrimination = stats.Pearson(xs, ys)
	}
}

// flag applies the rules to one item and adds its chance probability to
// the expected count.
func (h *ItemHealth) flag(s *ItemStat) {
	r, k := s.Runs, s.Answers
	wrongModal := s.ModalN > 0 && s.Modal != s.GT
	var p float64
	if r >= MinItemRuns {
		// The tolerance keeps 0.8·5 at 4, but must not let a share just
		// above one half ask for only half of the runs: a tie is no
		// majority, and the chance formula needs disjoint events.
		need := max(int(math.Ceil(h.FlagShare*float64(r)-1e-9)), r/2+1)
		pu, pm := chanceUnanimousWrong(k, r), chanceMajorityWrong(k, r, need)
		switch {
		case pm <= MaxChance:
			p = pm
			if wrongModal && s.ModalN == r {
				s.Reasons = append(s.Reasons, FlagUnanimousWrong)
			} else if wrongModal && s.ModalN >= need {
				s.Reasons = append(s.Reasons, FlagMajorityWrong)
			}
		case pu <= MaxChance:
			p = pu
			if wrongModal && s.ModalN == r {
				s.Reasons = append(s.Reasons, FlagUnanimousWrong)
			}
		}
	}
	if r >= MinDiscRuns && !math.IsNaN(s.Discrimination) {
		// Union with the agreement rules, taken as independent (an upper
		// bound would add them; the difference is second order).
		p = 1 - (1-p)*(1-DiscAlpha)
		if stats.CorrelationLowerP(s.Discrimination, r) < DiscAlpha {
			s.Reasons = append(s.Reasons, FlagNegativeDisc)
		}
	}
	// Random answers always parse: this rule has no chance component.
	if r >= MinItemRuns && 2*s.Unparsed > r {
		s.Reasons = append(s.Reasons, FlagParseFailures)
	}
	if rc := s.ControlRuns; rc >= MinItemRuns {
		// The chance that random control runs are right this often,
		// P(Bin(rc, 1/k) ≥ need), applied as majority_wrong's is.
		need := max(int(math.Ceil(h.FlagShare*float64(rc)-1e-9)), rc/2+1)
		if pc := chanceRight(k, rc, need); pc <= MaxChance {
			p = 1 - (1-p)*(1-pc)
			if s.ControlCorrect >= need {
				s.Reasons = append(s.Reasons, FlagWithoutImage)
			}
		}
	}
	s.PChance = p
	h.Expected += p
	h.SD = math.Sqrt(h.SD*h.SD + p*(1-p))
	if len(s.Reasons) > 0 {
		h.Flagged++
	}
}

// chanceUnanimousWrong is the probability that r runs answering an item
// with k answers uniformly at random all give the same wrong answer:
// (k−1)/k^r.
func chanceUnanimousWrong(k, r int) float64 {
	if k < 2 || r < 1 {
		return 0
	}
	return float64(k-1) * math.Pow(float64(k), -float64(r))
}

// chanceRight is the probability that at least need of r runs answering
// an item with k answers uniformly at random are right: P(Bin(r, 1/k) ≥
// need).
func chanceRight(k, r, need int) float64 {
	if k < 2 || r < 1 {
		return 1
	}
	return stats.BinomialTail(r, 1/float64(k), max(need, 1))
}

// chanceMajorityWrong is the probability that at least need of r random
// runs agree on one wrong answer: (k−1)·P(Bin(r, 1/k) ≥ need). The events
// "answer a reaches need" are disjoint when need > r/2 (CheckFlagShare
// guarantees it), so the sum is exact; for smaller need it is an upper
// bound.
func chanceMajorityWrong(k, r, need int) float64 {
	if k < 2 || r < 1 {
		return 0
	}
	return min(1, float64(k-1)*stats.BinomialTail(r, 1/float64(k), max(need, 1)))
}

// positionBias tabulates chosen and ground-truth option indices per
// single-choice question type and option count.
func positionBias(cells []cell) []PositionBias {
	type key struct {
		q benchmark.Question
		k int
	}
	tabs := map[key]*PositionBias{}
	var order []key
	for _, c := range cells {
		s := c.stat
		if s.Q.Multi() || s.Answers < 2 {
			continue
		}
		kk := key{s.Q, s.Answers}
		pb := tabs[kk]
		if pb == nil {
			pb = &PositionBias{Q: s.Q, K: s.Answers, Chosen: make([]int, s.Answers), GT: make([]int, s.Answers)}
			tabs[kk] = pb
			order = append(order, kk)
		}
		if g, err := strconv.Atoi(s.GT); err == nil && g >= 1 && g <= s.Answers {
			pb.GT[g-1]++
			pb.NItems++
		}
		for _, o := range c.obs {
			if a, err := strconv.Atoi(o.ans); err == nil && a >= 1 && a <= s.Answers {
				pb.Chosen[a-1]++
				pb.NAn++
			}
		}
	}
	slices.SortFunc(order, func(a, b key) int {
		if a.q != b.q {
			return int(a.q) - int(b.q)
		}
		return a.k - b.k
	})
	out := make([]PositionBias, 0, len(order))
	for _, kk := range order {
		pb := tabs[kk]
		pb.Chi2, pb.DF = stats.Homogeneity(pb.Chosen, pb.GT)
		if pb.DF < 1 { // one option only ever seen: nothing to test
			pb.Chi2 = nan
		}
		pb.P = stats.ChiSquareP(pb.Chi2, pb.DF)
		out = append(out, *pb)
	}
	return out
}
