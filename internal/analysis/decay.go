package analysis

import (
	"math"
	"slices"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// DecayPaths are the paths along which accuracy can decay (more than one
// stage applies).
var DecayPaths = []benchmark.Path{benchmark.RevisionRequired, benchmark.RevisionFree}

// decayRec is one record's stage applicability and e2e outcome.
type decayRec struct{ app, ok [4]bool }

func decayRecords(rr *RunResult, pi int) []decayRec {
	var out []decayRec
	for i := range rr.Scores {
		s := &rr.Scores[i]
		if s.Path != pi {
			continue
		}
		d := decayRec{app: s.App}
		for k := 0; k < 4; k++ {
			d.ok[k] = s.App[k] && s.Chain(benchmark.Stage(k+1))
		}
		out = append(out, d)
	}
	return out
}

// stageAcc is e2e_k per stage over recs (NaN where no record applies).
func stageAcc(recs []decayRec, idx func(j int) int) [4]float64 {
	var app, ok [4]int
	for j := range recs {
		d := &recs[idx(j)]
		for k := 0; k < 4; k++ {
			if d.app[k] {
				app[k]++
				if d.ok[k] {
					ok[k]++
				}
			}
		}
	}
	var acc [4]float64
	for k := range acc {
		acc[k] = math.NaN()
		if app[k] > 0 {
			acc[k] = float64(ok[k]) / float64(app[k])
		}
	}
	return acc
}

// meanAcc averages per-model stage accuracies, skipping NaN.
func meanAcc(accs [][4]float64) [4]float64 {
	var out [4]float64
	for k := range out {
		t, n := 0.0, 0
		for _, a := range accs {
			if !math.IsNaN(a[k]) {
				t += a[k]
				n++
			}
		}
		out[k] = math.NaN()
		if n > 0 {
			out[k] = t / float64(n)
		}
	}
	return out
}

// decayReplicate is one bootstrap replicate of the stage accuracies of
// units: with twoLevel, models are drawn first and then each drawn
// model's records; otherwise units has one model whose records are drawn.
func decayReplicate(r *rng.RNG, units [][]decayRec, twoLevel bool) [4]float64 {
	accs := make([][4]float64, len(units))
	for i := range units {
		u := units[i]
		if twoLevel {
			u = units[r.UintN(uint64(len(units)))]
		}
		n := uint64(len(u))
		draws := make([]int, len(u))
		for j := range draws {
			draws[j] = int(r.UintN(n))
		}
		accs[i] = stageAcc(u, func(j int) int { return draws[j] })
	}
	return meanAcc(accs)
}

// decayRows computes the rows of one unit (a run, or a group of runs with
// twoLevel) along one path: e2e_k and e2e_k / e2e_1 with percentile
// intervals from one RNG per (unit, mode, path). A replicate whose
// stage-1 accuracy is 0 has no ratio and is left out of that ratio's
// quantiles; the ratio is NA when the point estimate has none.
func decayRows(units [][]decayRec, unit, cellUnit, mode string, group bool, path benchmark.Path, o *Options) []DecayRow {
	accs := make([][4]float64, len(units))
	n := 0
	for i, u := range units {
		accs[i] = stageAcc(u, func(j int) int { return j })
		n += len(u)
	}
	point := meanAcc(accs)
	r := rng.New(bootLabel(o.Seed, DecayCellID(cellUnit, mode, path)))
	var accReps, ratioReps [4][]float64
	for b := 0; b < o.Bootstrap; b++ {
		a := decayReplicate(r, units, group)
		for k := 0; k < 4; k++ {
			if math.IsNaN(a[k]) {
				continue
			}
			accReps[k] = append(accReps[k], a[k])
			if a[0] > 0 {
				ratioReps[k] = append(ratioReps[k], a[k]/a[0])
			}
		}
	}
	var rows []DecayRow
	for _, k := range benchmark.Stages {
		if !benchmark.StageApplies(path, false, k) {
			continue
		}
		row := DecayRow{Unit: unit, OracleMode: mode, Group: group, Path: path, Stage: k, NModels: len(units), N: n}
		if v := point[k-1]; !math.IsNaN(v) && len(accReps[k-1]) > 0 {
			row.AccValid, row.Acc = true, v
			row.AccLo, row.AccHi = percentileCI(slices.Clone(accReps[k-1]))
		}
		if row.AccValid && point[0] > 0 && len(ratioReps[k-1]) > 0 {
			row.RatioValid, row.Ratio = true, point[k-1]/point[0]
			row.RLo, row.RHi = percentileCI(ratioReps[k-1])
			row.Precipitous = k > 1 && row.RHi < PrecipitousBelow
		}
		rows = append(rows, row)
	}
	return rows
}
