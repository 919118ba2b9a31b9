package analysistest

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
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
	// Reading is a reader's run's study ("" when NA), reader and arm,
	// from samples.csv's study, reader and arm columns.
	Reading map[string]Reading
}

// Reading is a reader's run's place in its study, as samples.csv gives it.
type Reading struct{ Study, Reader, Arm string }

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
	o := &Outcomes{Correct: map[string]map[string]map[benchmark.Question]bool{}, Path: map[string]benchmark.Path{}, Heart: map[string]bool{}, Human: map[string]bool{},
		Reading: map[string]Reading{}}
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
		if o.Human[run] {
			rd := Reading{Study: get(row, "study"), Reader: get(row, "reader"), Arm: get(row, "arm")}
			if rd.Study == "NA" {
				rd.Study = ""
			}
			o.Reading[run] = rd
		}
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

// commonKeys are the records of path that every run has an end-to-end
// outcome for at stage k, sorted.
func (o *Outcomes) commonKeys(runs []string, path benchmark.Path, k benchmark.Stage) []string {
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
	return keys
}

// Paired is each run's end-to-end outcomes on the records every run
// has, in key order.
func (o *Outcomes) Paired(runs []string, path benchmark.Path, k benchmark.Stage) [][]float64 {
	keys := o.commonKeys(runs, path, k)
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
// two-sided p of 0. With a standard error of 0 (no variance) there is no
// interval and no p: lo, hi and p are NaN, se 0 and df as computed (NaN
// when 0/0).
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
	den := msr + float64(r)*cov2
	switch {
	case den == 0:
		df = math.NaN()
	case msr == 0:
		df = math.Inf(1) // only the case variance is left: the normal
	default:
		df = den * den / (msr * msr / float64(r-1))
	}
	if df > mrmc.MaxFiniteDF {
		df = math.Inf(1) // the engine's bound: beyond it, the normal
	}
	if se == 0 {
		return est, se, df, math.NaN(), math.NaN(), math.NaN()
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

// panelRuns are the reader runs of a row's panel in samples.csv, in the
// order of their readers (study, then reader): the runs of the study
// and arm, or with pooled of every study of the arm.
func (o *Outcomes) panelRuns(study, arm string, pooled bool) []string {
	var runs []string
	for run, rd := range o.Reading {
		if rd.Arm == arm && (pooled || rd.Study == study) {
			runs = append(runs, run)
		}
	}
	slices.SortFunc(runs, func(a, b string) int {
		ra, rb := o.Reading[a], o.Reading[b]
		return strings.Compare(ra.Study+"\x00"+ra.Reader, rb.Study+"\x00"+rb.Reader)
	})
	return runs
}

// aidedRuns are an aided study's readers' aided runs and unaided runs,
// reader by reader, of the readers with both arms.
func (o *Outcomes) aidedRuns(study string) (aided, unaided []string) {
	arms := map[string]map[string]string{}
	for run, rd := range o.Reading {
		if rd.Study != study {
			continue
		}
		if arms[rd.Reader] == nil {
			arms[rd.Reader] = map[string]string{}
		}
		arms[rd.Reader][rd.Arm] = run
	}
	for _, reader := range slices.Sorted(maps.Keys(arms)) {
		if a, u := arms[reader]["aided"], arms[reader]["unaided"]; a != "" && u != "" {
			aided, unaided = append(aided, a), append(unaided, u)
		}
	}
	return aided, unaided
}

// MRMCChecked is what RecheckReaderMRMC went through.
type MRMCChecked struct {
	Rows         int // rows of the oracle mode checked
	WithInterval int // of those, rows with an interval
	ScoresFiles  int // scores tables read back and compared
}

// RecheckReaderMRMC recomputes every row of oracle mode in
// reportDir/ext_reader_mrmc.csv from samples.csv alone. A row's panel is
// the reader runs of its study and arm (samples.csv's study, reader and
// arm; every study of the arm when the row is pooled), paired on the
// records every compared party answered: a `readers` row's mean and a
// `model:<run>` row's difference are recomputed by a brute-force
// jackknife (OROne), unclipped, with the NA reason a row without an
// interval must give; an `aided-unaided` row's readers, records and
// estimate. Each row's scores table (scores_file) must hold exactly
// those paired scores: the readers, in the panel's order, then the model
// named by its run. It returns one line per disagreement.
func RecheckReaderMRMC(reportDir, mode string, recs []*benchmark.Record) (problems []string, checked MRMCChecked, err error) {
	o, err := ReadOutcomes(reportDir, mode, recs)
	if err != nil {
		return nil, checked, err
	}
	header, rows, err := readTable(filepath.Join(reportDir, "ext_reader_mrmc.csv"))
	if err != nil {
		return nil, checked, err
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
		if get(row, "oracle_mode") != mode {
			continue
		}
		checked.Rows++
		comparison, study, arm := get(row, "comparison"), get(row, "study"), get(row, "arm")
		if study == "NA" {
			study = ""
		}
		path := benchmark.Path(get(row, "path"))
		stage, _ := strconv.Atoi(get(row, "stage"))
		k := benchmark.Stage(stage)
		where := fmt.Sprintf("ext_reader_mrmc.csv row %d (%s %s %s %s %d)", i+2, comparison, study, arm, path, stage)
		model, isModel := strings.CutPrefix(comparison, "model:")
		var runs []string
		var aided bool
		switch {
		case comparison == "aided-unaided":
			a, u := o.aidedRuns(study)
			runs, aided = append(a, u...), true
		case comparison == "readers" || isModel:
			runs = o.panelRuns(study, arm, get(row, "pooled") == "true")
		default:
			problems = append(problems, where+": unknown comparison")
			continue
		}
		nReaders := len(runs)
		if aided {
			nReaders /= 2
		}
		if isModel {
			runs = append(slices.Clone(runs), model)
		}
		figs := o.Paired(runs, path, k)
		n := len(figs[0])
		if got := get(row, "n_records"); got != strconv.Itoa(n) || get(row, "n_readers") != strconv.Itoa(nReaders) {
			problems = append(problems, fmt.Sprintf("%s: n_records %s, n_readers %s; samples.csv: %d paired records, %d readers", where, got, get(row, "n_readers"), n, nReaders))
			continue
		}
		problems = append(problems, o.checkScoresFile(reportDir, get(row, "scores_file"), where, runs, model, arm, aided, path, k, figs, &checked)...)
		if aided {
			est := math.NaN()
			if n > 0 {
				est = 0
				for j := range nReaders {
					est += (meanOf(figs[j]) - meanOf(figs[nReaders+j])) / float64(nReaders)
				}
			}
			if got, want := num(row, "estimate"), est; !sameNum(got, want) {
				problems = append(problems, fmt.Sprintf("%s: estimate %v, recomputed %v", where, got, want))
			}
			if !math.IsNaN(num(row, "ci_low")) {
				checked.WithInterval++
			}
			continue
		}
		est, se, df, lo, hi, p, reason := recompute(figs, isModel, comparison == "readers", nReaders)
		if got := get(row, "na_reason"); got != orNA(reason) {
			problems = append(problems, fmt.Sprintf("%s: na_reason %s, recomputed %s", where, got, orNA(reason)))
		}
		for _, c := range []struct {
			col  string
			want float64
		}{{"estimate", est}, {"se", se}, {"df", df}, {"ci_low", lo}, {"ci_high", hi}, {"p_value", p}} {
			if got := num(row, c.col); !sameNum(got, c.want) {
				problems = append(problems, fmt.Sprintf("%s: %s %v, recomputed %v", where, c.col, got, c.want))
			}
		}
		if !math.IsNaN(lo) {
			checked.WithInterval++
		}
	}
	return problems, checked, nil
}

// recompute is a `readers` or `model:` row's numbers and NA reason from
// the paired scores figs of its runs (a model row: the last is the
// model's): the brute-force jackknife of the readers' figures, or of
// each reader's difference from the model.
func recompute(figs [][]float64, isModel, isMean bool, nReaders int) (est, se, df, lo, hi, p float64, reason string) {
	est, se, df, lo, hi, p = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
	n := len(figs[0])
	switch {
	case nReaders < 2:
		reason = "too_few_readers"
	case n < 2:
		reason = "too_few_records"
	}
	if isModel {
		m := figs[len(figs)-1]
		figs = figs[:len(figs)-1]
		for j := range figs {
			d := make([]float64, n)
			for c := range m {
				d[c] = m[c] - figs[j][c]
			}
			figs[j] = d
		}
	}
	if reason != "" {
		if n > 0 && nReaders > 0 {
			est = 0
			for _, f := range figs {
				est += meanOf(f) / float64(len(figs))
			}
		}
		return est, se, df, lo, hi, p, reason
	}
	est, se, df, lo, hi, p = OROne(figs)
	if isMean {
		p = math.NaN()
	}
	if se == 0 {
		reason = "no_variance"
	}
	return est, se, df, lo, hi, p, reason
}

// checkScoresFile compares a row's scores table with the paired scores
// figs of runs (a model row: the last is the model; an aided row: the
// aided runs, then the unaided) on the records they share.
func (o *Outcomes) checkScoresFile(reportDir, name, where string, runs []string, model, arm string, aided bool, path benchmark.Path, k benchmark.Stage, figs [][]float64, checked *MRMCChecked) []string {
	n := len(figs[0])
	if n == 0 {
		if name != "NA" {
			return []string{fmt.Sprintf("%s: scores_file %s for a row without records", where, name)}
		}
		return nil
	}
	if name == "NA" {
		return []string{where + ": no scores_file for a row with records"}
	}
	data, err := os.ReadFile(filepath.Join(reportDir, filepath.FromSlash(name)))
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", where, err)}
	}
	d, err := mrmc.ParseScores(bytes.NewReader(data), name, mrmc.Accuracy)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", where, err)}
	}
	checked.ScoresFiles++
	keys := o.commonKeys(runs, path, k)
	want := &mrmc.Data{FOM: mrmc.Accuracy, Modalities: []string{arm}, Cases: keys}
	readers := runs
	if aided {
		want.Modalities = []string{"aided", "unaided"}
		readers = runs[:len(runs)/2]
		want.Scores = [][][]float64{figs[:len(runs)/2], figs[len(runs)/2:]}
	} else {
		want.Scores = [][][]float64{figs}
	}
	for _, run := range readers {
		name := o.Reading[run].Reader
		if run == model {
			name = model
		}
		want.Readers = append(want.Readers, name)
	}
	if len(o.Reading) > 0 && !aided && slices.ContainsFunc(readers, func(run string) bool { return run != model && o.Reading[run].Study != o.Reading[readers[0]].Study }) {
		for j, run := range readers { // a pooled panel: study/reader
			if run != model {
				study := o.Reading[run].Study
				if study == "" {
					study = "(not recorded)"
				}
				want.Readers[j] = study + "/" + o.Reading[run].Reader
			}
		}
	}
	if !reflect.DeepEqual(d, want) {
		return []string{fmt.Sprintf("%s: %s holds modalities %v, readers %v, %d cases; samples.csv gives %v, %v, %d", where, name, d.Modalities, d.Readers, len(d.Cases), want.Modalities, want.Readers, len(want.Cases))}
	}
	return nil
}

// sameNum reports whether a CSV number (6 decimals) is the recomputed
// value: both NaN, both +Inf, or within the rounding of 6 decimals.
func sameNum(got, want float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) == math.IsNaN(want)
	}
	if math.IsInf(want, 1) || math.IsInf(got, 1) {
		return math.IsInf(want, 1) && math.IsInf(got, 1)
	}
	return math.Abs(got-want) <= 1e-6*math.Max(1, math.Abs(want))
}

func meanOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x / float64(len(xs))
	}
	return s
}

func orNA(s string) string {
	if s == "" {
		return "NA"
	}
	return s
}
