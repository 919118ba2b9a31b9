package analysis

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/stats"
)

// decayPaths are the paths along which accuracy can decay (more than one
// stage applies).
var decayPaths = []benchmark.Path{benchmark.RevisionRequired, benchmark.RevisionFree}

// decayRec is one record's stage applicability (bit k−1 for stage k)
// and, in the high four bits, its e2e outcome per stage.
type decayRec uint8

func (d decayRec) app() uint8 { return uint8(d) & 15 }
func (d decayRec) ok() uint8  { return uint8(d) >> 4 }

// pathRecords are a run's records on path pi.
func pathRecords(rr *RunResult, pi int) []decayRec {
	var out []decayRec
	for i := range rr.Scores {
		s := &rr.Scores[i]
		if s.Path != pi {
			continue
		}
		var d decayRec
		for k := 0; k < 4; k++ {
			if s.App[k] {
				d |= 1 << k
				if s.chain(benchmark.Stage(k + 1)) {
					d |= 1 << (k + 4)
				}
			}
		}
		out = append(out, d)
	}
	return out
}

type stageCounts struct{ app, ok [4]int }

// add counts m records like d.
func (c *stageCounts) add(d decayRec, m int) {
	for k := 0; k < 4; k++ {
		if d.app()&(1<<k) != 0 {
			c.app[k] += m
			if d.ok()&(1<<k) != 0 {
				c.ok[k] += m
			}
		}
	}
}

// acc is e2e_k per stage (NaN where no record applies).
func (c *stageCounts) acc() [4]float64 {
	var a [4]float64
	for k := range a {
		a[k] = math.NaN()
		if c.app[k] > 0 {
			a[k] = float64(c.ok[k]) / float64(c.app[k])
		}
	}
	return a
}

// meanAcc averages per-model stage accuracies, skipping NaN, and counts
// the models that have the stage.
func meanAcc(accs [][4]float64) (m [4]float64, n [4]int) {
	for k := range m {
		t := 0.0
		for _, a := range accs {
			if !math.IsNaN(a[k]) {
				t += a[k]
				n[k]++
			}
		}
		m[k] = math.NaN()
		if n[k] > 0 {
			m[k] = t / float64(n[k])
		}
	}
	return m, n
}

// unitBoot is the bootstrap of one unit (a run, or a group's runs) on one
// path: per stage the point accuracy (the mean of its models'), the
// number of models with the stage, the records for which it applies (a
// group's models answer the same records, so its largest model's count,
// not their sum), each model's accuracy, the replicates (NaN where a
// replicate has no record of the stage) and the pooled counts over the
// unit's models that a degenerate bootstrap falls back to.
type unitBoot struct {
	point   [4]float64
	nModels [4]int
	n       [4]int
	models  [][4]float64
	reps    [4][]float64
	pooled  stageCounts // records of each stage over all models, and those correct
	// passed1[k] counts the pooled records for which stage k+1 applies
	// and stage 1 is correct: the denominator of the ratio's fallback.
	passed1 [4]int
}

// bootUnit resamples units (one record list per model) b times. With
// twoLevel, each replicate draws as many models as there are, with
// replacement, then as many records of each drawn model as it has;
// otherwise there is one model and only its records are drawn. Every
// stage of a replicate comes from the same draw, so ratios between
// stages are consistent. The RNG is seeded from the units' content
// (records and models in a canonical order), so that units with the same
// answers get the same replicates whatever their runs are called.
func bootUnit(units [][]decayRec, twoLevel bool, o *Options) *unitBoot {
	// Drawing models from a group of one always draws that model: the
	// resample is the one-level one, and so is its seed, so a group of
	// one model shows that model's intervals.
	twoLevel = twoLevel && len(units) > 1
	ub := &unitBoot{models: make([][4]float64, len(units))}
	for i, u := range units {
		var c stageCounts
		for _, d := range u {
			c.add(d, 1)
			ub.pooled.add(d, 1)
			for k := 0; k < 4; k++ {
				if d.app()&(1<<k) != 0 && d.ok()&1 != 0 {
					ub.passed1[k]++
				}
			}
		}
		ub.models[i] = c.acc()
		for k := range ub.n {
			ub.n[k] = max(ub.n[k], c.app[k])
		}
	}
	ub.point, ub.nModels = meanAcc(ub.models)
	for k := range ub.reps {
		ub.reps[k] = make([]float64, o.Bootstrap)
	}
	// The canonical order: each unit's records sorted, units sorted.
	sorted := make([][]decayRec, len(units))
	for i, u := range units {
		sorted[i] = slices.Sorted(slices.Values(u))
	}
	slices.SortFunc(sorted, slices.Compare)
	var data []byte
	// Each model's records as indices into its few distinct kinds, so a
	// replicate counts draws per kind and folds the counts once.
	type compact struct {
		idx   []uint8
		kinds []decayRec
	}
	cs := make([]compact, len(sorted))
	for i, u := range sorted {
		data = binary.AppendUvarint(data, uint64(len(u)))
		var at [256]int
		for _, d := range u {
			data = append(data, byte(d))
			if at[d] == 0 {
				cs[i].kinds = append(cs[i].kinds, d)
				at[d] = len(cs[i].kinds)
			}
			cs[i].idx = append(cs[i].idx, uint8(at[d]-1))
		}
	}
	kind := kindDecay
	if twoLevel {
		kind = kindDomain
	}
	r := rng.New(cellLabel(o.Seed, kind, data))
	accs := make([][4]float64, len(cs))
	g := uint64(len(cs))
	hist := make([]int, 256)
	for b := 0; b < o.Bootstrap; b++ {
		for i := range cs {
			u := &cs[i]
			if twoLevel {
				u = &cs[r.UintN(g)]
			}
			h := hist[:len(u.kinds)]
			clear(h)
			n := uint64(len(u.idx))
			for range u.idx {
				h[u.idx[r.UintN(n)]]++
			}
			var c stageCounts
			for j, m := range h {
				c.add(u.kinds[j], m)
			}
			accs[i] = c.acc()
		}
		m, _ := meanAcc(accs)
		for k := range m {
			ub.reps[k][b] = m[k]
		}
	}
	return ub
}

// ci is the interval of stage k's accuracy: the percentile interval of
// the defined replicates, or, when every replicate is the same number (0
// of 6 records right resamples to 0 every time), the Wilson interval of
// the pooled counts, since a zero-width interval from a finite sample
// claims a certainty the data do not hold.
func (ub *unitBoot) ci(k benchmark.Stage) (lo, hi float64, ok bool) {
	var xs []float64
	for _, x := range ub.reps[k-1] {
		if !math.IsNaN(x) {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return 0, 0, false
	}
	lo, hi = stats.PercentileInterval(xs)
	if lo == hi {
		return stats.Wilson(ub.pooled.ok[k-1], ub.pooled.app[k-1])
	}
	return lo, hi, true
}

// decayRows are a unit's rows along path: e2e_k and e2e_k / e2e_1 with
// their intervals. A replicate whose stage-1 accuracy is 0 has no ratio
// and is left out of the ratio's quantiles; the ratio is NA when the
// point estimate has none. A degenerate ratio interval (every replicate
// the same ratio) falls back to the Wilson interval of the pooled records
// of stage k that passed stage 1 and were right through stage k, widened
// to hold the point ratio.
func (ub *unitBoot) decayRows(unit, mode string, group bool, path benchmark.Path) []DecayRow {
	var rows []DecayRow
	for _, k := range benchmark.Stages {
		if !benchmark.StageApplies(path, false, k) {
			continue
		}
		row := DecayRow{Unit: unit, OracleMode: mode, Group: group, Path: path, Stage: k, NModels: ub.nModels[k-1], N: ub.n[k-1]}
		if v := ub.point[k-1]; !math.IsNaN(v) {
			row.Acc = v
			row.AccLo, row.AccHi, row.AccValid = ub.ci(k)
		}
		var ratios []float64
		for b, x := range ub.reps[k-1] {
			if first := ub.reps[0][b]; !math.IsNaN(x) && first > 0 {
				ratios = append(ratios, x/first)
			}
		}
		if row.AccValid && ub.point[0] > 0 && len(ratios) > 0 {
			row.Ratio = ub.point[k-1] / ub.point[0]
			row.RLo, row.RHi = stats.PercentileInterval(ratios)
			row.RatioValid = true
			if row.RLo == row.RHi && k > 1 { // stage 1's ratio is 1 by definition
				row.RLo, row.RHi, row.RatioValid = stats.Wilson(ub.pooled.ok[k-1], ub.passed1[k-1])
				row.RLo, row.RHi = min(row.RLo, row.Ratio), max(row.RHi, row.Ratio)
			}
			row.Precipitous = row.RatioValid && k > 1 && row.RHi < PrecipitousBelow && row.N >= MinDecayRecords
		}
		rows = append(rows, row)
	}
	return rows
}

// diffCI is the percentile interval of a − b at stage k, replicate by
// replicate of the two bootstraps (independent resamples); ok is false
// when no replicate has both values.
func diffCI(a, b *unitBoot, k benchmark.Stage) (lo, hi float64, ok bool) {
	var reps []float64
	for i, x := range a.reps[k-1] {
		if y := b.reps[k-1][i]; !math.IsNaN(x) && !math.IsNaN(y) {
			reps = append(reps, x-y)
		}
	}
	if len(reps) == 0 {
		return 0, 0, false
	}
	lo, hi = stats.PercentileInterval(reps)
	if lo == hi {
		// Every replicate the same difference (both groups 0 of n, say):
		// the interval from the two groups' Wilson intervals instead.
		return stats.Newcombe(a.point[k-1], a.pooled.ok[k-1], a.pooled.app[k-1], b.point[k-1], b.pooled.ok[k-1], b.pooled.app[k-1])
	}
	return lo, hi, true
}
