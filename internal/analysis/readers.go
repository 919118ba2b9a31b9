package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/agreement"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

// Readers and models: when runs of human readers (provider human, from
// `read export`) are among the runs, the readers of an oracle mode are
// one group — their mean end-to-end accuracy per path and stage with a
// two-level bootstrap interval (readers resampled, then each resampled
// reader's records: the same resampling as a domain group's) — and every
// model run of the mode is compared with it. Claim 3 of the findings
// ("models fall short of expert readers at each perception level") is
// decided from those differences.

// MinReaders is the number of readers claim 3 needs: one reader says
// nothing about readers in general.
const MinReaders = 2

// ReadersResult is the readers-and-models part of a report.
type ReadersResult struct {
	Modes   []string    // oracle modes with readers, sorted
	Readers []ReaderSet // per mode
	Groups  []GroupRow  // the readers' mean per mode, path and stage (Group "readers")
	Diffs   []DiffRow   // model − readers (Comparison "model:<run>"), per mode, model, path, stage
	Kappa   []KappaRow
	Time    []TimeRow
	Verdict []Verdict // claim 3 per mode
}

// ReaderSet names the reader runs of a mode.
type ReaderSet struct {
	OracleMode string
	Runs       []string
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

// GroupReaders is the Group of the readers' rows.
const GroupReaders = "readers"

// ComparisonModel prefixes a DiffRow's Comparison for a model − readers row.
const ComparisonModel = "model:"

// IsReader reports whether a run is a human reader's.
func IsReader(rr *RunResult) bool { return rr.Run.Provider == results.ProviderHuman }

// analyzeReaders computes the readers-and-models part; nil without
// reader runs.
func analyzeReaders(res *Result, o *Options) *ReadersResult {
	var out *ReadersResult
	for _, mode := range res.Modes() {
		var readers, models []*RunResult
		for _, rr := range res.Runs {
			if !rr.Scored || rr.Run.OracleMode != mode {
				continue
			}
			switch {
			case IsReader(rr):
				readers = append(readers, rr)
			case rr.Run.Provider != BaselineProvider && !strings.HasPrefix(rr.Run.Name, "baseline_"):
				models = append(models, rr)
			}
		}
		if len(readers) == 0 {
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
		out.addMode(mode, readers, models, o)
	}
	return out
}

func (rs *ReadersResult) addMode(mode string, readers, models []*RunResult, o *Options) {
	for pi, path := range benchmark.Paths {
		var units [][]decayRec
		for _, rr := range readers {
			if u := pathRecords(rr, pi); len(u) > 0 {
				units = append(units, u)
			}
		}
		var rb *unitBoot
		if len(units) > 0 {
			rb = bootUnit(units, true, o)
		}
		job := &bootJob{runs: readers, ub: rb}
		for _, k := range benchmark.Stages {
			if !benchmark.StageApplies(path, false, k) {
				continue
			}
			rs.Groups = append(rs.Groups, groupRow(job, GroupReaders, mode, pi, k))
		}
		for _, m := range models {
			var mb *unitBoot
			if u := pathRecords(m, pi); len(u) > 0 && rb != nil {
				mb = bootUnit([][]decayRec{u}, false, o)
			}
			for _, k := range benchmark.Stages {
				if benchmark.StageApplies(path, false, k) {
					rs.Diffs = append(rs.Diffs, modelDiff(mb, rb, m.Run.Name, mode, path, k))
				}
			}
		}
	}
	rs.Kappa = append(rs.Kappa, readerKappa(mode, readers)...)
	rs.Time = append(rs.Time, readerTime(mode, readers)...)
	rs.Verdict = append(rs.Verdict, readersVerdict(rs, mode, len(readers), len(models)))
}

// modelDiff is model − readers in one cell, its interval from the two
// bootstraps' replicates (independent resamples), replicate by replicate.
func modelDiff(model, readers *unitBoot, run, mode string, path benchmark.Path, k benchmark.Stage) DiffRow {
	row := DiffRow{Comparison: ComparisonModel + run, OracleMode: mode, Path: path, Stage: k, NA: 1, ModelA: run}
	if model == nil || readers == nil {
		return row
	}
	row.NB = readers.nModels[k-1]
	if math.IsNaN(model.point[k-1]) || math.IsNaN(readers.point[k-1]) {
		return row
	}
	row.Diff = model.point[k-1] - readers.point[k-1]
	row.Lo, row.Hi, row.Valid = diffCI(model, readers, k)
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
		row.Kappa = agreement.Fleiss(counts)
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
			row.MeanS, row.MedianS = mean(secs), Quantile(secs, 0.5)
		}
		rows = append(rows, row)
	}
	return rows
}

// readersVerdict decides claim 3 in a mode from the model − readers rows:
// supported when at every path and stage every model's interval lies
// below 0, not supported when some model's interval lies above 0 at some
// path and stage, undecided otherwise or with fewer than MinReaders
// readers or no model.
func readersVerdict(rs *ReadersResult, mode string, nReaders, nModels int) Verdict {
	v := Verdict{Claim: 3, OracleMode: mode, Status: Undecided}
	if nModels == 0 {
		v.Reason = "no model run to compare with the readers"
		return v
	}
	if nReaders < MinReaders {
		v.Reason = fmt.Sprintf("%d reader(s): at least %d are needed to speak of readers in general", nReaders, MinReaders)
		return v
	}
	var closest *DiffRow
	valid := 0
	for i := range rs.Diffs {
		d := &rs.Diffs[i]
		if d.OracleMode != mode || !d.Valid {
			continue
		}
		valid++
		if d.Lo > 0 {
			v.Status = NotSupported
			v.Reason = fmt.Sprintf("%d readers, %d model(s): %s is ahead of the readers on %s stage %d by %s points [%s, %s]",
				nReaders, nModels, d.ModelA, d.Path, d.Stage, spts(d.Diff), spts(d.Lo), spts(d.Hi))
			return v
		}
		if closest == nil || d.Hi > closest.Hi {
			closest = d
		}
	}
	if closest == nil {
		v.Reason = "no path and stage with both reader and model records"
		return v
	}
	cell := fmt.Sprintf("%d readers, %d model(s), %d cell(s): the closest model is %s on %s stage %d, %s points [%s, %s] from the readers' mean",
		nReaders, nModels, valid, closest.ModelA, closest.Path, closest.Stage, spts(closest.Diff), spts(closest.Lo), spts(closest.Hi))
	if closest.Hi < 0 {
		v.Status, v.Reason = Supported, cell
		return v
	}
	v.Reason = cell + "; its interval reaches 0"
	return v
}
