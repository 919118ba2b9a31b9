package analysis

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
)

// itemGT is what the chance baselines need of one benchmark record: per
// question (indexed by benchmark.Question) the uniform chance of a correct
// guess and the ground truth as a canonical string ("1", "1,3").
type itemGT struct {
	path   int
	lesion string
	heart  bool // a heart-type positive (its depth gains one)
	app    [benchmark.NumQuestions]bool
	chance [benchmark.NumQuestions]float64
	gt     [benchmark.NumQuestions]string
}

// canonGT is a ground truth as the chance baselines key it: the option
// numbers ascending, each once, comma-joined.
func canonGT(idx []int) string { return parse.Canonical(parse.OptionSet(idx)) }

// multiChance is 1/2^m for m non-None options.
func multiChance(m int) float64 {
	if m < 0 {
		m = 0
	}
	return 1 / float64(uint64(1)<<uint(m))
}

func single(n int) float64 {
	if n <= 0 {
		return 0
	}
	return 1 / float64(n)
}

func gtOf(rec *benchmark.Record) itemGT {
	path := rec.Path()
	g := itemGT{path: pathIndex(path), lesion: rec.Lesion, heart: rec.IsHeartType()}
	set := func(q benchmark.Question, chance float64, gt string) {
		if benchmark.Applies(path, g.heart, q) {
			g.app[q], g.chance[q], g.gt[q] = true, chance, gt
		}
	}
	set(benchmark.QDetection, single(len(rec.Detection.AnswerOptions)), strconv.Itoa(rec.Detection.AnswerIndex))
	if c := rec.Contour; c != nil {
		set(benchmark.QContourEval, single(len(c.ContourEval.AnswerOptions)), strconv.Itoa(c.ContourEval.AnswerIndex))
		nonNone := func(opts []benchmark.PointOption) int {
			m := 0
			for _, o := range opts {
				if o.Point != nil {
					m++
				}
			}
			return m
		}
		set(benchmark.QExpansion, multiChance(nonNone(c.Expansion.AnswerOptions)), canonGT(c.Expansion.AnswerIndex))
		set(benchmark.QContraction, multiChance(nonNone(c.Contraction.AnswerOptions)), canonGT(c.Contraction.AnswerIndex))
		set(benchmark.QRevisionResult, single(len(c.RevisionResult.AnswerOptions)), strconv.Itoa(c.RevisionResult.AnswerIndex))
	}
	if a := rec.Attributes; a != nil {
		set(benchmark.QDistribution, single(len(a.Distribution.AnswerOptions)), strconv.Itoa(a.Distribution.AnswerIndex))
		m := 0
		for _, o := range a.Location.AnswerOptions {
			if o != benchmark.LocationNone && !strings.HasPrefix(o, "None") {
				m++
			}
		}
		set(benchmark.QLocation, multiChance(m), canonGT(a.Location.AnswerIndex))
		set(benchmark.QSeverity, single(len(a.Severity.AnswerOptions)), strconv.Itoa(a.Severity.AnswerIndex))
		set(benchmark.QComparison, single(len(a.Comparison.AnswerOptions)), strconv.Itoa(a.Comparison.AnswerIndex))
	}
	return g
}

// ChanceRow is one line of ext_chance.csv. Kind is "question", "stage",
// "e2e" or "depth"; MajorityAnswer is empty except for questions.
type ChanceRow struct {
	Path                 benchmark.Path
	Lesion, Target, Kind string
	N                    int
	Uniform, MajorityAcc float64
	MajorityAnswer       string
}

// Chance holds the chance baselines of a benchmark.
type Chance struct {
	Rows []ChanceRow
	// Majority is the most frequent canonical GT per question type over
	// the whole benchmark (ties: byte order).
	Majority [benchmark.NumQuestions]string
	// MajorityTied is how many answers share the top count of Majority's
	// question (1: no tie; 0: no record asks it).
	MajorityTied [benchmark.NumQuestions]int
	index        map[string]int // "path|lesion|target" → row
}

// Get returns the row for a cell and target, or nil.
func (c *Chance) Get(path benchmark.Path, lesion, target string) *ChanceRow {
	if c == nil {
		return nil
	}
	if i, ok := c.index[string(path)+"|"+lesion+"|"+target]; ok {
		return &c.Rows[i]
	}
	return nil
}

// computeChance derives the uniform and majority baselines of §10.3 from
// the benchmark alone, per path × lesion cell, averaged over the cell's
// records. Its records say which are heart-type.
func computeChance(b *benchmark.Benchmark) *Chance {
	items := make([]itemGT, 0, len(b.Records))
	for _, r := range b.Records {
		g := gtOf(r)
		if g.path >= 0 && g.lesion != "" {
			items = append(items, g)
		}
	}
	c := &Chance{index: map[string]int{}}
	for _, q := range benchmark.Questions {
		counts := map[string]int{}
		for _, it := range items {
			if it.app[q] {
				counts[it.gt[q]]++
			}
		}
		best, bestN, tied := "", -1, 0
		for _, k := range slices.Sorted(maps.Keys(counts)) {
			switch {
			case counts[k] > bestN:
				best, bestN, tied = k, counts[k], 1
			case counts[k] == bestN:
				tied++
			}
		}
		c.Majority[q], c.MajorityTied[q] = best, tied
	}
	lesions := lesionList(b, nil)
	heart := heartLesions(b, nil, lesions)
	for pi, path := range benchmark.Paths {
		for _, lesion := range lesions {
			var cell []itemGT
			for _, it := range items {
				if it.path == pi && (lesion == allLesions || it.lesion == lesion) {
					cell = append(cell, it)
				}
			}
			c.addCell(heart, path, lesion, cell)
		}
	}
	// Pooled RR+RF rows for the attribute questions (the reference's
	// attribute detail table pools the two paths).
	for _, lesion := range lesions {
		if heart[lesion] {
			continue
		}
		var cell []itemGT
		for _, it := range items {
			if benchmark.Paths[it.path].Positive() && (lesion == allLesions || it.lesion == lesion) {
				cell = append(cell, it)
			}
		}
		for _, q := range benchmark.StageAttributeExtraction.Questions() {
			c.addQuestion(PooledPath, lesion, q, cell)
		}
	}
	return c
}

func (c *Chance) add(row ChanceRow) {
	c.index[string(row.Path)+"|"+row.Lesion+"|"+row.Target] = len(c.Rows)
	c.Rows = append(c.Rows, row)
}

// addQuestion adds the row of question q over the cell's items to which
// it applies.
func (c *Chance) addQuestion(path benchmark.Path, lesion string, q benchmark.Question, cell []itemGT) {
	n, u, maj := 0, 0.0, 0
	for _, it := range cell {
		if it.app[q] {
			n++
			u += it.chance[q]
			if it.gt[q] == c.Majority[q] {
				maj++
			}
		}
	}
	c.add(ChanceRow{Path: path, Lesion: lesion, Target: q.Name(), Kind: "question", N: n,
		Uniform: ratio(u, n), MajorityAcc: ratio(float64(maj), n), MajorityAnswer: c.Majority[q]})
}

// recChance is one record's chance per stage (index stage−1): the product
// of its questions' chances; the majority policy passes a stage when
// every question's GT is the majority answer.
type recChance struct {
	app      [4]bool
	stage    [4]float64
	majStage [4]bool
	heart    bool
}

func (c *Chance) recChances(cell []itemGT) []recChance {
	recs := make([]recChance, len(cell))
	for i, it := range cell {
		r := &recs[i]
		for k := 0; k < 4; k++ {
			r.stage[k], r.majStage[k] = 1, true
		}
		for _, q := range benchmark.Questions {
			if !it.app[q] {
				continue
			}
			k := q.Stage() - 1
			r.app[k] = true
			r.stage[k] *= it.chance[q]
			if it.gt[q] != c.Majority[q] {
				r.majStage[k] = false
			}
		}
		r.heart = it.heart
	}
	return recs
}

// addCell adds a (path, lesion) cell's rows: its questions, its stages
// (stage_k and e2e_k) and its expected depth.
func (c *Chance) addCell(heart heartSet, path benchmark.Path, lesion string, cell []itemGT) {
	for _, q := range benchmark.Questions {
		if heart.applies(path, lesion, q) {
			c.addQuestion(path, lesion, q, cell)
		}
	}
	recs := c.recChances(cell)
	for _, k := range benchmark.Stages {
		if !heart.stageApplies(path, lesion, k) {
			continue
		}
		n := 0
		var su, sm, eu, em float64
		for _, r := range recs {
			if !r.app[k-1] {
				continue
			}
			n++
			su += r.stage[k-1]
			if r.majStage[k-1] {
				sm++
			}
			pu, pm := 1.0, true
			for j := 0; j < int(k); j++ {
				if r.app[j] {
					pu *= r.stage[j]
					pm = pm && r.majStage[j]
				}
			}
			eu += pu
			if pm {
				em++
			}
		}
		ks := strconv.Itoa(int(k))
		c.add(ChanceRow{Path: path, Lesion: lesion, Target: "stage_" + ks, Kind: "stage", N: n, Uniform: ratio(su, n), MajorityAcc: ratio(sm, n)})
		c.add(ChanceRow{Path: path, Lesion: lesion, Target: "e2e_" + ks, Kind: "e2e", N: n, Uniform: ratio(eu, n), MajorityAcc: ratio(em, n)})
	}
	c.addDepth(path, lesion, recs)
}

// addDepth adds the expected depth: Σ_k P(stages 1..k correct) over the
// applicable stages, plus the heart-type +1 term (all applicable correct).
func (c *Chance) addDepth(path benchmark.Path, lesion string, recs []recChance) {
	var du, dm float64
	for _, r := range recs {
		pu, pm, depthM := 1.0, true, 0
		for k := 0; k < 4; k++ {
			if !r.app[k] {
				continue
			}
			pu *= r.stage[k]
			du += pu
			pm = pm && r.majStage[k]
			if pm {
				depthM++
			}
		}
		if r.heart {
			du += pu
			if pm {
				depthM++
			}
		}
		dm += float64(depthM)
	}
	c.add(ChanceRow{Path: path, Lesion: lesion, Target: "depth", Kind: "depth", N: len(recs), Uniform: ratio(du, len(recs)), MajorityAcc: ratio(dm, len(recs))})
}

func ratio(x float64, n int) float64 {
	if n == 0 {
		return nan
	}
	return x / float64(n)
}
