package analysis

import (
	"context"
	"fmt"
	"strconv"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

// PairRow is one line of ext_pairwise.csv: a paired comparison of two
// runs of the same oracle mode on the keys that are ok in both.
type PairRow struct {
	ModelA, ModelB, OracleMode string
	Path                       benchmark.Path
	Lesion, Metric             string
	NPaired                    int
	Valid                      bool // false when n_paired is 0
	ValueA, ValueB, Diff       float64
	Lo, Hi                     float64
}

// pairMetrics lists the metrics compared for a path: e2e_k and op_k for
// each stage that applies to some record of the path, then depth.
func pairMetrics(path benchmark.Path) []string {
	var m []string
	for _, k := range benchmark.Stages {
		if benchmark.StageApplies(path, false, k) {
			ks := strconv.Itoa(int(k))
			m = append(m, "e2e_"+ks, "op_"+ks)
		}
	}
	return append(m, "depth")
}

// metricValue is a score's value for a metric and whether it counts
// (the stage applies to the record).
func metricValue(s *Score, metric string) (float64, bool) {
	if metric == "depth" {
		return float64(s.Depth), true
	}
	k := benchmark.Stage(metric[len(metric)-1] - '0')
	if !s.App[k-1] {
		return 0, false
	}
	var ok bool
	if metric[0] == 'e' {
		ok = s.chain(k)
	} else {
		ok = s.Cor[k-1]
	}
	if ok {
		return 1, true
	}
	return 0, true
}

// cellValue is the run's value of a metric in a cell (all its records).
func cellValue(rr *RunResult, metric string, pi int, lesion string) (float64, int) {
	t, n := 0.0, 0
	for i := range rr.Scores {
		s := &rr.Scores[i]
		if !inCell(s, pi, lesion) {
			continue
		}
		if v, ok := metricValue(s, metric); ok {
			t += v
			n++
		}
	}
	if n == 0 {
		return nan, 0
	}
	return t / float64(n), n
}

type pairJob struct {
	a, b   *RunResult
	pi     int
	lesion string
	metric string
}

func comparePairs(ctx context.Context, res *Result, o *Options) ([]PairRow, []string) {
	var warns []string
	byName := map[string][]*RunResult{}
	for _, rr := range res.Runs {
		if rr.Scored {
			byName[rr.Run.Name] = append(byName[rr.Run.Name], rr)
		}
	}
	var jobs []pairJob
	seen := map[string]bool{}
	addJob := func(j pairJob) {
		id := fmt.Sprintf("%s|%s|%s|%d|%s|%s", j.a.Run.Name, j.b.Run.Name, j.a.Run.OracleMode, j.pi, j.lesion, j.metric)
		if !seen[id] {
			seen[id] = true
			jobs = append(jobs, j)
		}
	}
	for _, p := range o.Compare {
		as, bs := byName[p[0]], byName[p[1]]
		switch {
		case len(as) == 0:
			warns = append(warns, fmt.Sprintf("--compare %s,%s: no scored run named %q; comparison left out", p[0], p[1], p[0]))
			continue
		case len(bs) == 0:
			warns = append(warns, fmt.Sprintf("--compare %s,%s: no scored run named %q; comparison left out", p[0], p[1], p[1]))
			continue
		case p[0] == p[1]:
			warns = append(warns, fmt.Sprintf("--compare %s,%s: a run compared with itself; left out", p[0], p[1]))
			continue
		}
		common := false
		for _, a := range as {
			for _, b := range bs {
				if a.Run.OracleMode != b.Run.OracleMode {
					continue
				}
				common = true
				warns = append(warns, pairDiffers(a.Run, b.Run)...)
				for pi, path := range benchmark.Paths {
					for _, lesion := range res.Lesions {
						for _, m := range pairMetrics(path) {
							addJob(pairJob{a: a, b: b, pi: pi, lesion: lesion, metric: m})
						}
					}
				}
			}
		}
		if !common {
			warns = append(warns, fmt.Sprintf("--compare %s,%s: the runs share no oracle mode (comparisons are only between runs of the same mode); left out", p[0], p[1]))
		}
	}
	if o.CompareBest {
		for _, mode := range res.Modes() {
			var runs []*RunResult
			for _, rr := range res.Runs {
				if rr.Scored && rr.Run.OracleMode == mode {
					runs = append(runs, rr)
				}
			}
			if len(runs) < 2 {
				continue
			}
			for pi, path := range benchmark.Paths {
				for _, lesion := range res.Lesions {
					for _, m := range pairMetrics(path) {
						// Best: highest value; ties by run name (runs are in name order).
						var best *RunResult
						bv := nan
						for _, rr := range runs {
							v, n := cellValue(rr, m, pi, lesion)
							if n > 0 && (best == nil || v > bv) {
								best, bv = rr, v
							}
						}
						if best == nil {
							continue
						}
						for _, rr := range runs {
							if rr != best {
								addJob(pairJob{a: best, b: rr, pi: pi, lesion: lesion, metric: m})
							}
						}
					}
				}
			}
		}
	}
	rows := make([]PairRow, len(jobs))
	fns := make([]func(), len(jobs))
	for i, j := range jobs {
		fns[i] = func() { rows[i] = pairRow(j, o) }
	}
	runJobs(ctx, fns, o.Workers)
	return rows, warns
}

// pairDiffers warns when two compared runs differ in benchmark, parse
// mode or prompt profile.
func pairDiffers(a, b *Run) []string {
	var w []string
	check := func(what, x, y string) {
		if x != y && x != "" && y != "" {
			w = append(w, fmt.Sprintf("compared runs %s and %s (oracle %s) differ in %s: %s vs %s", a.Name, b.Name, a.OracleMode, what, x, y))
		}
	}
	if a.BenchmarkSHA256 != "" && b.BenchmarkSHA256 != "" { // unknown is no difference
		check("benchmark sha256", results.ShortHash(a.BenchmarkSHA256), results.ShortHash(b.BenchmarkSHA256))
	}
	check("parse mode", a.ParseMode, b.ParseMode)
	check("prompt profile", a.ProfileName+" "+results.ShortHash(a.ProfileSHA256), b.ProfileName+" "+results.ShortHash(b.ProfileSHA256))
	return w
}

func pairRow(j pairJob, o *Options) PairRow {
	path, lesion := benchmark.Paths[j.pi], j.lesion
	row := PairRow{ModelA: j.a.Run.Name, ModelB: j.b.Run.Name, OracleMode: j.a.Run.OracleMode, Path: path, Lesion: lesion, Metric: j.metric}
	// Only ok records in both runs are paired, whatever the error policy.
	bIdx := make(map[string]*Score, len(j.b.Scores))
	for i := range j.b.Scores {
		s := &j.b.Scores[i]
		if s.OK && inCell(s, j.pi, j.lesion) {
			bIdx[s.Key] = s
		}
	}
	var xa, xb []float64
	for i := range j.a.Scores {
		sa := &j.a.Scores[i]
		if !sa.OK || !inCell(sa, j.pi, j.lesion) {
			continue
		}
		sb := bIdx[sa.Key]
		if sb == nil {
			continue
		}
		va, ok := metricValue(sa, j.metric)
		if !ok {
			continue
		}
		vb, _ := metricValue(sb, j.metric)
		xa, xb = append(xa, va), append(xb, vb)
	}
	row.NPaired = len(xa)
	if row.NPaired == 0 {
		return row
	}
	row.Valid = true
	row.ValueA, row.ValueB = mean(xa), mean(xb)
	row.Diff = row.ValueA - row.ValueB
	row.Lo, row.Hi, _ = bootstrapPairedDiff(xa, xb, o.Bootstrap, o.Seed, j.metric)
	return row
}

func mean(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}
