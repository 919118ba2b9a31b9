package analysis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/mrmc"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/stats"
)

// Readers and models: when runs of human readers (provider human, from
// `read export`) are among the runs, the readers of an oracle mode are
// one panel, analysed as a multi-reader multi-case (MRMC) study
// (internal/mrmc, docs/mrmc.md): a case is a record, the figure of merit
// a stage's end-to-end accuracy. Every comparison uses only the records
// every compared party answered: the readers' mean (with the
// one-modality Obuchowski–Rockette interval, Hillis 2007) on the records
// every reader answered; each model − readers (the model a reader
// without reader variance) on the records the model and every reader
// answered. Claim 3 of the findings ("models fall short of expert
// readers at each perception level") is decided from those differences.
//
// A sequential aided study (runs whose manifest names the arm, unaided
// or aided, and the model run shown) adds aided − unaided per path and
// stage by the two-modality random-readers random-cases analysis, and
// how often readers switched after seeing the model's answer.

// MinReaders is the number of readers claim 3 needs: one reader says
// nothing about readers in general.
const MinReaders = 2

// MinReaderRecords is the number of paired records a model − readers
// cell needs to count toward claim 3: the minimum claim 1 asks of its
// records (MinDecayRecords).
const MinReaderRecords = MinDecayRecords

// ReadersResult is the readers-and-models part of a report.
type ReadersResult struct {
	Modes   []string    // oracle modes with readers, sorted
	Readers []ReaderSet // per mode: the panel (unaided readers)
	// MRMC are the rows of ext_reader_mrmc.csv: per mode, path and stage
	// the readers' mean, then each model − readers; then the aided
	// studies' aided − unaided rows.
	MRMC     []MRMCRow
	Studies  []AidedStudy
	Switches []SwitchRow
	Kappa    []KappaRow
	Time     []TimeRow
	Verdict  []Verdict // claim 3 per mode
}

// ReaderSet names the reader runs of a mode's panel.
type ReaderSet struct {
	OracleMode string
	Runs       []string
}

// Comparisons of an MRMCRow.
const (
	ComparisonReaders = "readers"
	ComparisonModel   = "model:" // + run name
	ComparisonAided   = "aided-unaided"
)

// MRMCRow is one MRMC analysis of one path and stage: the readers' mean,
// a model − readers, or aided − unaided. Numbers are fractions; NaN when
// undefined (SE, df, interval and p are NaN when the standard error is 0
// or undefined, or with fewer than 2 readers or 2 records).
type MRMCRow struct {
	Comparison, OracleMode string
	Model                  string // model rows: the run
	Study, AidRun          string // aided rows
	Path                   benchmark.Path
	Stage                  benchmark.Stage
	NReaders, NRecords     int
	Estimate, SE, DF       float64
	Lo, Hi, P              float64
}

// Valid reports whether the row has an interval.
func (r *MRMCRow) Valid() bool { return !math.IsNaN(r.Lo) && !math.IsNaN(r.Hi) }

// AidedStudy is one sequential aided study of a mode: its readers with
// both arms and the model run shown to them (Found: among the runs).
type AidedStudy struct {
	OracleMode, Study, AidRun string
	Readers                   []string // reader names, sorted
	Found                     bool
}

// SwitchRow counts how one reader of an aided study changed a stage's
// answer after seeing the model's, on the records where the stage
// applies and the reader (both arms) and the model answered: a stage's
// answer is right when all its questions are.
type SwitchRow struct {
	OracleMode, Study, AidRun, Reader string
	Path                              benchmark.Path
	Stage                             benchmark.Stage
	NRecords                          int
	// ModelWrong counts records the reader had right unaided and the
	// model wrong; RightToWrong those of them the reader then had wrong.
	ModelWrong, RightToWrong int
	// ModelRight counts records the reader had wrong unaided and the
	// model right; WrongToRight those of them the reader then had right.
	ModelRight, WrongToRight int
}

// KappaRow is the readers' agreement on one question type in a mode:
// Fleiss' κ over the records every reader answered (the categories are
// the parsed answer sets).
type KappaRow struct {
	OracleMode string
	Question   benchmark.Question
	NReaders   int
	NItems     int
	Kappa      float64 // NaN when undefined
}

// TimeRow is the readers' reading time of one stage in a mode: seconds
// per record over the records where the stage was asked.
type TimeRow struct {
	OracleMode     string
	Stage          benchmark.Stage
	NRecords       int
	MeanS, MedianS float64
}

// isReader reports whether a run is a human reader's.
func isReader(rr *RunResult) bool { return rr.Run.Kind == results.KindHuman }

// isAidedArm reports whether a reader run is an arm of a sequential
// aided study (it names the model run shown).
func isAidedArm(rr *RunResult) bool {
	return rr.Run.Reading != nil && rr.Run.Reading.AidRun != "" &&
		(rr.Run.Reading.Arm == results.ArmUnaided || rr.Run.Reading.Arm == results.ArmAided)
}

// analyzeReaders computes the readers-and-models part; nil without
// reader runs.
func analyzeReaders(res *Result) *ReadersResult {
	var out *ReadersResult
	for _, mode := range res.Modes() {
		var readers, arms, models []*RunResult
		for _, rr := range res.Runs {
			if !rr.Scored || rr.Run.OracleMode != mode {
				continue
			}
			switch {
			case isReader(rr) && isAidedArm(rr):
				arms = append(arms, rr)
				// The unaided arm is also a reader's own reading.
				if rr.Run.Reading.Arm == results.ArmUnaided {
					readers = append(readers, rr)
				}
			case isReader(rr):
				if rr.Run.Reading == nil || rr.Run.Reading.Arm != results.ArmAided {
					readers = append(readers, rr)
				}
			case rr.Run.Kind.Model():
				models = append(models, rr)
			}
		}
		if len(readers) == 0 && len(arms) == 0 {
			continue
		}
		if out == nil {
			out = &ReadersResult{}
		}
		out.Modes = append(out.Modes, mode)
		set := ReaderSet{OracleMode: mode}
		for _, rr := range readers {
			set.Runs = append(set.Runs, rr.Run.Name)
		}
		out.Readers = append(out.Readers, set)
		out.addMode(mode, readers, models)
		out.addAided(mode, arms, models)
	}
	return out
}

// stageMap is a run's end-to-end outcome (1 right through the stage, 0
// not) per record key where stage k applies on path pi.
func stageMap(rr *RunResult, pi int, k benchmark.Stage) map[string]float64 {
	xs, keys := stageVector(rr, pi, k)
	m := make(map[string]float64, len(keys))
	for i, key := range keys {
		m[key] = xs[i]
	}
	return m
}

// commonKeys are the keys present in every map, sorted.
func commonKeys(ms ...map[string]float64) []string {
	if len(ms) == 0 {
		return nil
	}
	var keys []string
	for key := range ms[0] {
		all := true
		for _, m := range ms[1:] {
			if _, ok := m[key]; !ok {
				all = false
				break
			}
		}
		if all {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

// scoresOn are the maps' values on keys, one slice per map.
func scoresOn(ms []map[string]float64, keys []string) [][]float64 {
	out := make([][]float64, len(ms))
	for j, m := range ms {
		out[j] = make([]float64, len(keys))
		for c, key := range keys {
			out[j][c] = m[key]
		}
	}
	return out
}

func undefinedRow(comparison, mode string, path benchmark.Path, k benchmark.Stage, nReaders, nRecords int) MRMCRow {
	return MRMCRow{Comparison: comparison, OracleMode: mode, Path: path, Stage: k, NReaders: nReaders, NRecords: nRecords,
		Estimate: math.NaN(), SE: math.NaN(), DF: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), P: math.NaN()}
}

// set takes an MRMC interval, its bounds clipped to the values the
// figure can take: [0, 1] for the readers' mean, [−1, 1] for a
// difference (a t interval knows no bounds; NaN stays NaN).
func (r *MRMCRow) set(iv mrmc.Interval) {
	r.Estimate, r.SE, r.DF, r.Lo, r.Hi, r.P = iv.Estimate, iv.SE, iv.DF, iv.Lo, iv.Hi, iv.P
	if math.IsNaN(iv.Lo) { // no interval: no standard error to speak of either
		r.SE, r.DF, r.P = math.NaN(), math.NaN(), math.NaN()
		return
	}
	floor := -1.0
	if r.Comparison == ComparisonReaders {
		floor = 0
	}
	if r.Lo < floor {
		r.Lo = floor
	}
	if r.Hi > 1 {
		r.Hi = 1
	}
}

// meanOfMeans is the mean over the scores' rows of each row's mean (NaN
// without rows or columns): an estimate without an interval.
func meanOfMeans(scores [][]float64) float64 {
	if len(scores) == 0 || len(scores[0]) == 0 {
		return math.NaN()
	}
	var t float64
	for _, s := range scores {
		t += mean(s)
	}
	return t / float64(len(scores))
}

func (rs *ReadersResult) addMode(mode string, readers, models []*RunResult) {
	for pi, path := range benchmark.Paths {
		for _, k := range benchmark.Stages {
			if !benchmark.StageApplies(path, false, k) {
				continue
			}
			vecs := make([]map[string]float64, len(readers))
			for j, rr := range readers {
				vecs[j] = stageMap(rr, pi, k)
			}
			keys := commonKeys(vecs...)
			scores := scoresOn(vecs, keys)
			row := undefinedRow(ComparisonReaders, mode, path, k, len(readers), len(keys))
			row.Estimate = meanOfMeans(scores)
			if iv, err := mrmc.PanelMean(mrmc.Accuracy, scores, nil, 0); err == nil {
				row.set(iv)
			}
			rs.MRMC = append(rs.MRMC, row)
			for _, m := range models {
				mv := stageMap(m, pi, k)
				keys := commonKeys(append(slices.Clone(vecs), mv)...)
				scores := scoresOn(append(slices.Clone(vecs), mv), keys)
				row := undefinedRow(ComparisonModel+m.Run.Name, mode, path, k, len(readers), len(keys))
				row.Model = m.Run.Name
				if len(keys) > 0 && len(readers) > 0 {
					row.Estimate = mean(scores[len(readers)]) - meanOfMeans(scores[:len(readers)])
				}
				if s, err := mrmc.ModelVersusPanel(mrmc.Accuracy, scores[len(readers)], scores[:len(readers)], nil, 0, 0); err == nil {
					row.set(s.Interval)
				}
				rs.MRMC = append(rs.MRMC, row)
			}
		}
	}
	rs.Kappa = append(rs.Kappa, readerKappa(mode, readers)...)
	rs.Time = append(rs.Time, readerTime(mode, readers)...)
	rs.Verdict = append(rs.Verdict, readersVerdict(rs.MRMC, mode, len(readers), len(models)))
}

// addAided adds the aided studies of a mode: aided − unaided per path
// and stage over the readers with both arms, and their switches.
func (rs *ReadersResult) addAided(mode string, arms, models []*RunResult) {
	type pair struct{ unaided, aided *RunResult }
	studies := map[string]map[string]*pair{}
	aidRun := map[string]string{}
	for _, rr := range arms {
		a := rr.Run.Reading
		if studies[a.Study] == nil {
			studies[a.Study] = map[string]*pair{}
			aidRun[a.Study] = a.AidRun
		}
		p := studies[a.Study][a.Reader]
		if p == nil {
			p = &pair{}
			studies[a.Study][a.Reader] = p
		}
		if a.Arm == results.ArmAided {
			p.aided = rr
		} else {
			p.unaided = rr
		}
	}
	for _, study := range slices.Sorted(maps.Keys(studies)) {
		st := AidedStudy{OracleMode: mode, Study: study, AidRun: aidRun[study]}
		var pairs []*pair
		for _, reader := range slices.Sorted(maps.Keys(studies[study])) {
			if p := studies[study][reader]; p.unaided != nil && p.aided != nil {
				st.Readers = append(st.Readers, reader)
				pairs = append(pairs, p)
			}
		}
		if len(pairs) == 0 {
			continue
		}
		var model *RunResult
		for _, m := range models {
			if m.Run.Name == st.AidRun {
				model, st.Found = m, true
			}
		}
		rs.Studies = append(rs.Studies, st)
		for pi, path := range benchmark.Paths {
			for _, k := range benchmark.Stages {
				if !benchmark.StageApplies(path, false, k) {
					continue
				}
				var vecs []map[string]float64 // aided arms, then unaided
				for _, p := range pairs {
					vecs = append(vecs, stageMap(p.aided, pi, k))
				}
				for _, p := range pairs {
					vecs = append(vecs, stageMap(p.unaided, pi, k))
				}
				keys := commonKeys(vecs...)
				scores := scoresOn(vecs, keys)
				r := len(pairs)
				row := undefinedRow(ComparisonAided, mode, path, k, r, len(keys))
				row.Study, row.AidRun = study, st.AidRun
				if len(keys) > 0 {
					row.Estimate = meanOfMeans(scores[:r]) - meanOfMeans(scores[r:])
				}
				d := &mrmc.Data{FOM: mrmc.Accuracy, Modalities: []string{results.ArmAided, results.ArmUnaided}, Readers: st.Readers, Cases: keys,
					Scores: [][][]float64{scores[:r], scores[r:]}}
				if a, err := mrmc.Analyze(d, 0); err == nil {
					row.set(a.Designs[0].Diffs[0].Interval)
				}
				rs.MRMC = append(rs.MRMC, row)
				if model == nil {
					continue
				}
				for i, p := range pairs {
					rs.Switches = append(rs.Switches, switchRow(st, st.Readers[i], p.unaided, p.aided, model, pi, k))
				}
			}
		}
	}
}

// stageRight is a run's own answer to stage k (all its questions right)
// per record key where the stage applies on path pi.
func stageRight(rr *RunResult, pi int, k benchmark.Stage) map[string]bool {
	m := map[string]bool{}
	for i := range rr.Scores {
		s := &rr.Scores[i]
		if s.Path == pi && s.App[k-1] {
			m[s.Key] = s.Cor[k-1]
		}
	}
	return m
}

func switchRow(st AidedStudy, reader string, unaided, aided, model *RunResult, pi int, k benchmark.Stage) SwitchRow {
	row := SwitchRow{OracleMode: st.OracleMode, Study: st.Study, AidRun: st.AidRun, Reader: reader, Path: benchmark.Paths[pi], Stage: k}
	u, a, m := stageRight(unaided, pi, k), stageRight(aided, pi, k), stageRight(model, pi, k)
	for key, ur := range u {
		ar, ok1 := a[key]
		mr, ok2 := m[key]
		if !ok1 || !ok2 {
			continue
		}
		row.NRecords++
		switch {
		case ur && !mr:
			row.ModelWrong++
			if !ar {
				row.RightToWrong++
			}
		case !ur && mr:
			row.ModelRight++
			if ar {
				row.WrongToRight++
			}
		}
	}
	return row
}

// answerKey is a turn's parsed answer as a category ("" when the turn was
// not asked or not parsed).
func answerKey(t *results.Turn) string {
	if t == nil || t.Status != results.TurnAsked || t.Parsed == nil || len(*t.Parsed) == 0 {
		return ""
	}
	s := slices.Clone(*t.Parsed)
	slices.Sort(s)
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// readerKappa is Fleiss' κ per question type over the records every
// reader of the mode answered.
func readerKappa(mode string, readers []*RunResult) []KappaRow {
	var rows []KappaRow
	byKey := make([]map[string]*results.Record, len(readers))
	for i, rr := range readers {
		byKey[i] = map[string]*results.Record{}
		for _, r := range rr.Run.Records {
			if r.Status == results.StatusOK {
				byKey[i][r.KeyID] = r
			}
		}
	}
	for q := benchmark.Question(0); q < benchmark.NumQuestions; q++ {
		row := KappaRow{OracleMode: mode, Question: q, NReaders: len(readers), Kappa: math.NaN()}
		var items [][]string
		cats := map[string]int{}
		var catOrder []string
		if len(readers) > 0 {
			for _, r := range readers[0].Run.Records {
				answers := make([]string, len(readers))
				all := true
				for i := range readers {
					a := answerKey(turnOf(byKey[i][r.KeyID], q))
					if a == "" {
						all = false
						break
					}
					answers[i] = a
				}
				if !all {
					continue
				}
				for _, a := range answers {
					if _, ok := cats[a]; !ok {
						cats[a] = len(catOrder)
						catOrder = append(catOrder, a)
					}
				}
				items = append(items, answers)
			}
		}
		row.NItems = len(items)
		counts := make([][]int, len(items))
		for i, answers := range items {
			counts[i] = make([]int, len(catOrder))
			for _, a := range answers {
				counts[i][cats[a]]++
			}
		}
		row.Kappa = stats.FleissKappa(counts)
		rows = append(rows, row)
	}
	return rows
}

func turnOf(r *results.Record, q benchmark.Question) *results.Turn {
	if r == nil {
		return nil
	}
	return r.Turn(q)
}

// readerTime is the seconds per record the readers took at each stage.
func readerTime(mode string, readers []*RunResult) []TimeRow {
	var rows []TimeRow
	for _, k := range benchmark.Stages {
		var secs []float64
		for _, rr := range readers {
			for _, r := range rr.Run.Records {
				ms, asked := int64(0), false
				for _, q := range k.Questions() {
					if t := r.Turn(q); t != nil && t.Status == results.TurnAsked {
						ms += t.TotalMS
						asked = true
					}
				}
				if asked {
					secs = append(secs, float64(ms)/1000)
				}
			}
		}
		row := TimeRow{OracleMode: mode, Stage: k, NRecords: len(secs), MeanS: math.NaN(), MedianS: math.NaN()}
		if len(secs) > 0 {
			slices.Sort(secs)
			row.MeanS, row.MedianS = mean(secs), stats.Quantile(secs, 0.5)
		}
		rows = append(rows, row)
	}
	return rows
}

// readersVerdict decides claim 3 in a mode from the model − readers
// rows. A cell counts when the model and every reader share at least
// MinReaderRecords records and the difference has an interval. Not
// supported when some counted cell's interval lies above 0; supported
// when every cell of every model counts and lies below 0; undecided
// otherwise — "too few records" when no cell, or not every cell, has
// the records a verdict needs — and with fewer than MinReaders readers
// or no model.
func readersVerdict(rows []MRMCRow, mode string, nReaders, nModels int) Verdict {
	v := Verdict{Claim: 3, OracleMode: mode, Status: Undecided}
	if nModels == 0 {
		v.Reason = "no model run to compare with the readers"
		return v
	}
	if nReaders < MinReaders {
		v.Reason = fmt.Sprintf("%d reader(s): at least %d are needed to speak of readers in general", nReaders, MinReaders)
		return v
	}
	var closest *MRMCRow
	counted, short, most := 0, 0, 0
	for i := range rows {
		d := &rows[i]
		if d.OracleMode != mode || !strings.HasPrefix(d.Comparison, ComparisonModel) {
			continue
		}
		most = max(most, d.NRecords)
		if d.NRecords < MinReaderRecords || !d.Valid() {
			short++
			continue
		}
		counted++
		if d.Lo > 0 {
			v.Status = notSupported
			v.Reason = fmt.Sprintf("%d readers, %d model(s): %s is ahead of the readers on %s stage %d by %s points [%s, %s] (MRMC, %d paired records, p = %.3f)",
				nReaders, nModels, d.Model, d.Path, d.Stage, spts(d.Estimate), spts(d.Lo), spts(d.Hi), d.NRecords, d.P)
			return v
		}
		if closest == nil || d.Hi > closest.Hi {
			closest = d
		}
	}
	if closest == nil {
		v.Reason = fmt.Sprintf("too few records: the readers and a model share at most %d record(s) in a path and stage, fewer than the %d a verdict needs", most, MinReaderRecords)
		return v
	}
	cell := fmt.Sprintf("%d readers, %d model(s), %d cell(s): the closest model is %s on %s stage %d, %s points [%s, %s] from the readers' mean (MRMC, %d paired records)",
		nReaders, nModels, counted, closest.Model, closest.Path, closest.Stage, spts(closest.Estimate), spts(closest.Lo), spts(closest.Hi), closest.NRecords)
	switch {
	case closest.Hi >= 0:
		v.Reason = cell + "; its interval reaches 0"
	case short > 0:
		v.Reason = cell + fmt.Sprintf("; too few records: %d cell(s) have fewer than %d paired records or no interval", short, MinReaderRecords)
	default:
		v.Status, v.Reason = supported, cell
	}
	return v
}
