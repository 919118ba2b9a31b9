package analysistest

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/mrmc"
)

// Outcomes are a report's samples.csv read back: per run and record,
// each question's outcome (asked and right), and each record's path and
// heart-type (from the benchmark).
type Outcomes struct {
	Correct map[string]map[string]map[benchmark.Question]bool // run → key → question → asked and right
	Path    map[string]benchmark.Path
	Heart   map[string]bool
	Human   map[string]bool // runs of provider human
}

// readTable reads a CSV file whose first row is its header.
func readTable(path string) ([]string, [][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil, nil, fmt.Errorf("%s: %v (%d rows)", path, err, len(rows))
	}
	return rows[0], rows[1:], nil
}

func column(header []string) func(row []string, name string) string {
	idx := map[string]int{}
	for i, h := range header {
		idx[h] = i
	}
	return func(row []string, name string) string {
		i, ok := idx[name]
		if !ok {
			panic("no column " + name)
		}
		return row[i]
	}
}

// ReadOutcomes reads reportDir/samples.csv of oracle mode for the
// benchmark records recs; error records are left out, as the report
// leaves them out by default.
func ReadOutcomes(reportDir, mode string, recs []*benchmark.Record) (*Outcomes, error) {
	o := &Outcomes{Correct: map[string]map[string]map[benchmark.Question]bool{}, Path: map[string]benchmark.Path{}, Heart: map[string]bool{}, Human: map[string]bool{}}
	for _, r := range recs {
		o.Heart[r.KeyID] = r.IsHeartType()
	}
	turn := map[string]benchmark.Question{}
	for _, q := range benchmark.Questions {
		turn[q.Turn()] = q
	}
	header, rows, err := readTable(filepath.Join(reportDir, "samples.csv"))
	if err != nil {
		return nil, err
	}
	get := column(header)
	for _, row := range rows {
		run, key := get(row, "run"), get(row, "key_id")
		if get(row, "oracle_mode") != mode || get(row, "record_status") != "ok" {
			continue
		}
		if o.Correct[run] == nil {
			o.Correct[run] = map[string]map[benchmark.Question]bool{}
		}
		if o.Correct[run][key] == nil {
			o.Correct[run][key] = map[benchmark.Question]bool{}
		}
		o.Human[run] = get(row, "provider") == "human"
		o.Path[key] = benchmark.Path(get(row, "path"))
		q, ok := turn[get(row, "turn")]
		if !ok {
			return nil, fmt.Errorf("samples.csv: turn %q", get(row, "turn"))
		}
		o.Correct[run][key][q] = get(row, "status") == "asked" && get(row, "correct") == "true"
	}
	return o, nil
}

// StageOwn is whether every question of stage k that applies to the
// record was asked and right.
func (o *Outcomes) StageOwn(run, key string, k benchmark.Stage) bool {
	for _, q := range benchmark.Questions {
		if q.Stage() == k && benchmark.Applies(o.Path[key], o.Heart[key], q) && !o.Correct[run][key][q] {
			return false
		}
	}
	return true
}

// E2E is the record's end-to-end outcome at stage k (every applicable
// stage 1..k right); ok is false when the run has no row of the record,
// or the record is not on path or stage k does not apply to it.
func (o *Outcomes) E2E(run, key string, path benchmark.Path, k benchmark.Stage) (v float64, ok bool) {
	if _, has := o.Correct[run][key]; !has || o.Path[key] != path || !benchmark.StageApplies(path, o.Heart[key], k) {
		return 0, false
	}
	for j := benchmark.Stage(1); j <= k; j++ {
		if benchmark.StageApplies(path, o.Heart[key], j) && !o.StageOwn(run, key, j) {
			return 0, true
		}
	}
	return 1, true
}

// Paired is each run's end-to-end outcomes on the records every run
// has, in key order.
func (o *Outcomes) Paired(runs []string, path benchmark.Path, k benchmark.Stage) [][]float64 {
	var keys []string
	for key := range o.Path {
		all := true
		for _, run := range runs {
			if _, ok := o.E2E(run, key, path, k); !ok {
				all = false
			}
		}
		if all {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	out := make([][]float64, len(runs))
	for j, run := range runs {
		out[j] = []float64{}
		for _, key := range keys {
			v, _ := o.E2E(run, key, path, k)
			out[j] = append(out[j], v)
		}
	}
	return out
}

// OROne is the one-modality Obuchowski–Rockette analysis of per-reader
// case scores by brute force: each reader's accuracy recomputed without
// each case, the covariance of two readers' leave-one-out accuracies,
// MS(R), Hillis' degrees of freedom and the 95 % t interval, with the
// two-sided p of 0.
func OROne(figs [][]float64) (est, se, df, lo, hi, p float64) {
	r, c := len(figs), len(figs[0])
	theta := make([]float64, r)
	jack := make([][]float64, r)
	for j, s := range figs {
		for k := range s {
			var sum float64
			for i, x := range s {
				if i != k {
					sum += x
				}
			}
			jack[j] = append(jack[j], sum/float64(c-1))
		}
		for _, x := range s {
			theta[j] += x / float64(c)
		}
		est += theta[j] / float64(r)
	}
	var msr, cov2 float64
	for j := range theta {
		msr += (theta[j] - est) * (theta[j] - est) / float64(r-1)
	}
	for j := range jack {
		for j2 := range jack {
			if j == j2 {
				continue
			}
			var ma, mb, s float64
			for k := range jack[j] {
				ma += jack[j][k] / float64(c)
				mb += jack[j2][k] / float64(c)
			}
			for k := range jack[j] {
				s += (jack[j][k] - ma) * (jack[j2][k] - mb)
			}
			cov2 += s * float64(c-1) / float64(c) / float64(r*(r-1))
		}
	}
	// Rounding residue is 0, on scales far from any real value: accuracies
	// are multiples of 1/c, so a real MS(R) is at least 1/(r·c²) and a
	// real jackknife variance at least 1/c² (far above 1e-20 and 1e-24 for
	// any benchmark); a covariance within 1e-10 of the largest variance is
	// rounding of covariances that are equal.
	var maxVar float64
	for j := range jack {
		var m, v float64
		for _, x := range jack[j] {
			m += x / float64(c)
		}
		for _, x := range jack[j] {
			v += (x - m) * (x - m) * float64(c-1) / float64(c)
		}
		maxVar = math.Max(maxVar, v)
	}
	if math.Abs(cov2) <= 1e-10*maxVar || math.Abs(cov2) <= 1e-20 {
		cov2 = 0
	}
	if msr <= 1e-24 {
		msr = 0
	}
	cov2 = math.Max(cov2, 0)
	se = math.Sqrt(msr/float64(r) + cov2)
	df = (msr + float64(r)*cov2) * (msr + float64(r)*cov2) / (msr * msr / float64(r-1))
	if df > mrmc.MaxFiniteDF {
		df = math.Inf(1) // the engine's bound: beyond it, the normal
	}
	var q float64
	if math.IsInf(df, 1) {
		q = distuv.UnitNormal.Quantile(0.975)
		p = 2 * distuv.UnitNormal.Survival(math.Abs(est)/se)
	} else {
		tt := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
		q = tt.Quantile(0.975)
		p = 2 * tt.Survival(math.Abs(est)/se)
	}
	return est, se, df, est - q*se, est + q*se, p
}

// RecheckReaderMRMC recomputes every `readers` and `model:<run>` row of
// reportDir/ext_reader_mrmc.csv in oracle mode from samples.csv alone:
// the readers are the provider-human runs of readers, paired on the
// records every compared party answered. It returns one line per
// disagreement, and the number of rows checked that have an interval.
func RecheckReaderMRMC(reportDir, mode string, recs []*benchmark.Record, readers []string) (problems []string, withInterval int, err error) {
	o, err := ReadOutcomes(reportDir, mode, recs)
	if err != nil {
		return nil, 0, err
	}
	header, rows, err := readTable(filepath.Join(reportDir, "ext_reader_mrmc.csv"))
	if err != nil {
		return nil, 0, err
	}
	get := column(header)
	num := func(row []string, col string) float64 {
		switch v := get(row, col); v {
		case "NA":
			return math.NaN()
		case "inf":
			return math.Inf(1)
		default:
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return math.NaN()
			}
			return x
		}
	}
	for i, row := range rows {
		comparison := get(row, "comparison")
		if get(row, "oracle_mode") != mode || !(comparison == "readers" || strings.HasPrefix(comparison, "model:")) {
			continue
		}
		path := benchmark.Path(get(row, "path"))
		stage, _ := strconv.Atoi(get(row, "stage"))
		k := benchmark.Stage(stage)
		where := fmt.Sprintf("ext_reader_mrmc.csv row %d (%s %s %d)", i+2, comparison, path, stage)
		runs := slices.Clone(readers)
		if model, ok := strings.CutPrefix(comparison, "model:"); ok {
			runs = append([]string{model}, readers...)
		}
		figs := o.Paired(runs, path, k)
		n := len(figs[0])
		if got := get(row, "n_records"); got != strconv.Itoa(n) || get(row, "n_readers") != strconv.Itoa(len(readers)) {
			problems = append(problems, fmt.Sprintf("%s: n_records %s, n_readers %s; samples.csv: %d paired records, %d readers", where, got, get(row, "n_readers"), n, len(readers)))
			continue
		}
		if n < 2 {
			if !math.IsNaN(num(row, "ci_low")) {
				problems = append(problems, fmt.Sprintf("%s: an interval from %d records", where, n))
			}
			continue
		}
		floor := -1.0
		if comparison == "readers" {
			floor = 0
		} else {
			model := figs[0]
			figs = figs[1:]
			for j := range figs {
				d := make([]float64, n)
				for c := range model {
					d[c] = model[c] - figs[j][c]
				}
				figs[j] = d
			}
		}
		est, se, df, lo, hi, p := OROne(figs)
		if comparison == "readers" {
			p = math.NaN()
		}
		lo, hi = math.Max(lo, floor), math.Min(hi, 1)
		if !(se > 0) {
			se, df, lo, hi, p = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		}
		for _, c := range []struct {
			col  string
			want float64
		}{{"estimate", est}, {"se", se}, {"df", df}, {"ci_low", lo}, {"ci_high", hi}, {"p_value", p}} {
			got := num(row, c.col)
			same := math.IsNaN(got) == math.IsNaN(c.want) &&
				(math.IsNaN(got) || math.IsInf(c.want, 1) && math.IsInf(got, 1) || math.Abs(got-c.want) <= 1e-6*math.Max(1, math.Abs(c.want)))
			if !same {
				problems = append(problems, fmt.Sprintf("%s: %s %v, recomputed %v", where, c.col, got, c.want))
			}
		}
		if !math.IsNaN(lo) {
			withInterval++
		}
	}
	return problems, withInterval, nil
}
