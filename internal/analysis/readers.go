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
// `read export`) are among the runs, the readers are people in reader
// studies. A reader's run says its study, its reader and its arm
// (Run.ReaderOf); the readers of one oracle mode, study and arm are one
// panel, analysed as a multi-reader multi-case (MRMC) study
// (internal/mrmc, docs/mrmc.md): a case is a record, the figure of merit
// a stage's end-to-end accuracy. Two studies are never one panel unless
// the options pool them (Options.PoolStudies): the same person may have
// read in both, and would count twice. Every comparison uses only the
// records every compared party answered: the panel's mean (the
// one-modality Obuchowski–Rockette interval, Hillis 2007) on the records
// every reader of the panel answered; each model − readers (the model a
// reader without reader variance) on the records the model and every
// reader answered. Each row keeps the scores it was computed from
// (MRMCRow.Data), the fully crossed table `chexpercept mrmc` reads.
//
// Claim 3 of the findings ("models fall short of expert readers") is
// decided per unaided panel from its model − readers rows, each verdict a
// test at the one-sided level VerdictLevel (VerdictLevel's comment says
// how). The aided arm of a sequential aided study saw a model's answers:
// it is its own panel (its mean), compared with its unaided arm only
// (aided − unaided per path and stage, the two-modality random-readers
// random-cases analysis) and never with the models, and the switches
// after the model's answer are counted per reader.

// MinReaders is the number of readers a claim-3 verdict needs: with
// fewer, Hillis' degrees of freedom are about one or two and the
// intervals say little about readers in general.
const MinReaders = 4

// MinMRMCReaders is the number of readers a reader-study analysis needs
// at all: with fewer, the readers' rows are NA (NATooFewReaders).
const MinMRMCReaders = 2

// MinReaderRecords is the number of paired records a model − readers
// cell needs to count toward claim 3: the minimum claim 1 asks of its
// records (MinDecayRecords).
const MinReaderRecords = MinDecayRecords

// VerdictLevel is the one-sided level of each verdict of claim 3, the
// one side of the rows' two-sided 95 % intervals. "Supported" (every
// model below the readers in every cell) is an intersection–union test:
// every cell's interval must lie below 0, each cell a one-sided test at
// this level, which is then the level of the verdict with no correction.
// "Not supported" (some model ahead of the readers in some cell) is a
// union of cell tests: Holm's step-down procedure over the counted
// cells' one-sided p-values holds its familywise error to this level. A
// pre-stated primary comparison (Endpoint) replaces the cells by its
// own.
const VerdictLevel = 0.025

// Reasons an MRMC row has no interval, beside the engine's
// (mrmc.NoVariance); written in ext_reader_mrmc.csv's na_reason.
const (
	NATooFewReaders = "too_few_readers" // fewer than 2 readers
	NATooFewRecords = "too_few_records" // fewer than 2 paired records
	NAUndefined     = "undefined"       // no interval for another reason
)

// ExplainNA is an MRMC row's na_reason in words.
func ExplainNA(reason string) string {
	switch reason {
	case NATooFewReaders:
		return "fewer than 2 readers"
	case NATooFewRecords:
		return "fewer than 2 paired records"
	case NAUndefined:
		return "undefined"
	}
	return mrmc.Reason(reason).Explain()
}

// ReadersResult is the readers-and-models part of a report.
type ReadersResult struct {
	Modes  []string // oracle modes with readers, sorted
	Panels []Panel  // per mode, then study, then arm
	// MRMC are the rows of ext_reader_mrmc.csv: per panel, path and
	// stage the readers' mean, then (unaided panels) each model −
	// readers; then the aided studies' aided − unaided rows.
	MRMC     []MRMCRow
	Studies  []AidedStudy
	Switches []SwitchRow
	Kappa    []KappaRow
	Time     []TimeRow
	Board    []BoardRow
	Verdict  []Verdict // claim 3 per unaided panel
}

// Panel is the readers of one oracle mode, study and arm: the people an
// MRMC analysis takes as a sample of readers.
type Panel struct {
	OracleMode string
	// Study is the reader study ("" when the runs do not record one);
	// Studies lists the studies of a pooled panel (nil unless it pools
	// two or more), and Study is then their names joined by " + ".
	Study   string
	Studies []string
	Arm     string   // results.ArmUnaided or results.ArmAided
	Readers []string // reader names; "study/reader" in a pooled panel
	Runs    []string // their runs, in Readers order
	// Primary is claim 3's pre-stated primary comparison of the study
	// (Options.Primary); nil when none was stated.
	Primary *Endpoint
	// ReaderBlocks is, in a split-plot study, each reader's block (in
	// Readers order; nil: fully crossed): the analysis estimates the
	// readers' covariances within blocks.
	ReaderBlocks []string
	// Plan is the study's analysis plan fixed at read init (from its
	// runs' manifests; nil: none). Its primary endpoint is the panel's
	// Primary unless Options.Primary states one.
	Plan *results.StudyPlan
	runs []*RunResult
}

// Design is the panel's design in words: "fully crossed" or
// "split-plot, B blocks".
func (p *Panel) Design() string { return designText(p.ReaderBlocks) }

// designText is the design of readers in the given blocks.
func designText(readerBlocks []string) string {
	if readerBlocks == nil {
		return "fully crossed"
	}
	seen := map[string]bool{}
	for _, b := range readerBlocks {
		seen[b] = true
	}
	if len(seen) == 1 {
		return "split-plot, 1 block"
	}
	return fmt.Sprintf("split-plot, %d blocks", len(seen))
}

// Pooled reports whether the panel pools readers of several studies.
func (p *Panel) Pooled() bool { return len(p.Studies) > 1 }

// Compared reports whether the panel is compared with the models: an
// unaided arm. The aided arm saw a model's answers.
func (p *Panel) Compared() bool { return p.Arm == results.ArmUnaided }

// Name names the panel in the report's lines: its study (or studies)
// and arm.
func (p *Panel) Name() string {
	switch {
	case p.Pooled():
		return "studies " + p.Study + " pooled, " + p.Arm
	case p.Study == "":
		return "study not recorded, " + p.Arm
	}
	return "study " + p.Study + ", " + p.Arm
}

// Endpoint is a pre-stated primary comparison of claim 3 in one study:
// one path and stage, of one model run (Model "" : of every model), at
// the two-sided level Alpha its plan states (0: mrmc.DefaultAlpha), so
// that each verdict is one-sided at Alpha/2.
type Endpoint struct {
	OracleMode, Study string
	Model             string
	Path              benchmark.Path
	Stage             benchmark.Stage
	Alpha             float64
}

// Comparisons of an MRMCRow.
const (
	ComparisonReaders = "readers"
	ComparisonModel   = "model:" // + run name
	ComparisonAided   = "aided-unaided"
)

// MRMCRow is one MRMC analysis of one path and stage: a panel's mean, a
// model − readers, or aided − unaided. Numbers are fractions. Estimate,
// SE, DF, the interval and P are the engine's, unclipped, so that they
// always agree with each other (Shown clips the interval for display);
// NaN when undefined, and NA then says why the interval is missing.
type MRMCRow struct {
	Comparison, OracleMode string
	Model                  string // model rows: the run
	// Study and Arm are the panel's (Arm "" for aided − unaided, whose
	// Study is the aided study); Pooled marks a panel of several
	// studies.
	Study, Arm         string
	Pooled             bool
	AidRun             string // aided rows: the model run shown
	Path               benchmark.Path
	Stage              benchmark.Stage
	NReaders, NRecords int
	Estimate, SE, DF   float64
	Lo, Hi, P          float64
	NA                 string // "" with an interval; else NATooFewReaders, … or an mrmc.Reason
	// Design is the readers' design, Panel.Design: "fully crossed" or
	// "split-plot, B blocks".
	Design string
	// Data is the table analysed (chexpercept mrmc's
	// scores table): the panel's readers in the arm's modality, a model
	// row's run as one more reader (the algorithm), or the two arms as
	// modalities "aided" and "unaided". Nil without a record.
	Data *mrmc.Data
}

// Valid reports whether the row has an interval.
func (r *MRMCRow) Valid() bool { return !math.IsNaN(r.Lo) && !math.IsNaN(r.Hi) }

// Shown is the interval as the report shows it: clipped to the values
// the figure can take, [0, 1] for a mean and [−1, 1] for a difference,
// with whether each bound was clipped. The row itself is not changed.
func (r *MRMCRow) Shown() (lo, hi float64, loClipped, hiClipped bool) {
	floor := -1.0
	if r.Comparison == ComparisonReaders {
		floor = 0
	}
	return mrmc.Interval{Lo: r.Lo, Hi: r.Hi}.Clip(floor, 1)
}

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

// KappaRow is a panel's agreement on one question type: Fleiss' κ over
// the records every reader of the panel answered (the categories are the
// parsed answer sets).
type KappaRow struct {
	OracleMode, Study, Arm string
	Pooled                 bool
	Question               benchmark.Question
	NReaders               int
	NItems                 int
	Kappa                  float64 // NaN when undefined
}

// TimeRow is a panel's reading time of one stage: seconds per record
// over its readers' records where the stage was asked. The aided arm's
// time of a turn runs from its first display to the final answer, so it
// includes the unaided answer's.
type TimeRow struct {
	OracleMode, Study, Arm string
	Pooled                 bool
	Stage                  benchmark.Stage
	NReaders, NRecords     int
	MeanS, MedianS         float64
}

// BoardCells are the leaderboard's columns: end-to-end accuracy at the
// last stage of each path.
var BoardCells = []struct {
	Path  benchmark.Path
	Stage benchmark.Stage
}{{benchmark.RevisionRequired, 4}, {benchmark.RevisionFree, 4}, {benchmark.LesionFree, 1}}

// BoardRow is a reader's or (in an unaided panel) a model's row of a
// panel's leaderboard: per BoardCells cell, the end-to-end accuracy on
// the records every reader of the panel answered (and the model, for a
// model), so that readers and models are ranked on the same records.
type BoardRow struct {
	Panel  int    // index into ReadersResult.Panels
	Run    string // the run
	Reader string // the reader's name in the panel; "" for a model
	Cells  []Prop // BoardCells order
}

// analyzeReaders computes the readers-and-models part; nil without
// reader runs. The warnings name a reader given twice in one panel.
func analyzeReaders(res *Result) (*ReadersResult, []string) {
	var out *ReadersResult
	var warns []string
	for _, mode := range res.Modes() {
		var humans, models []*RunResult
		for _, rr := range res.Runs {
			if !rr.Scored || rr.Run.OracleMode != mode {
				continue
			}
			if _, ok := rr.Run.ReaderOf(); ok {
				humans = append(humans, rr)
			} else if rr.Run.Kind.Model() {
				models = append(models, rr)
			}
		}
		if len(humans) == 0 {
			continue
		}
		if out == nil {
			out = &ReadersResult{}
		}
		out.Modes = append(out.Modes, mode)
		panels, w := formPanels(mode, humans, &res.Options)
		warns = append(warns, w...)
		for _, p := range panels {
			out.Panels = append(out.Panels, p)
			out.addPanel(len(out.Panels)-1, models)
		}
		out.addAided(mode, humans, models)
	}
	return out, warns
}

// formPanels groups a mode's reader runs into panels by study and arm
// (by arm alone when the options pool studies). A reader with two runs
// in one study and arm (a study exported twice under other names) is one
// person: the first run by name is kept and the other left out, with a
// warning.
func formPanels(mode string, humans []*RunResult, o *Options) ([]Panel, []string) {
	type key struct{ study, arm string }
	type member struct {
		rr  *RunResult
		arm results.ReadingArm
	}
	groups := map[key][]member{}
	var warns []string
	seen := map[[3]string]string{}
	for _, rr := range humans {
		a, _ := rr.Run.ReaderOf()
		id := [3]string{a.Study, a.Arm, a.Reader}
		if first, ok := seen[id]; ok {
			warns = append(warns, fmt.Sprintf("oracle mode %s: reader %s of %s has two runs, %s and %s; %s is left out of the readers' panel (one person counts once)",
				mode, a.Reader, (&Panel{Study: a.Study, Arm: a.Arm}).Name(), first, rr.Run.Name, rr.Run.Name))
			continue
		}
		seen[id] = rr.Run.Name
		k := key{a.Study, a.Arm}
		if o.PoolStudies {
			k.study = ""
		}
		groups[k] = append(groups[k], member{rr, a})
	}
	var panels []Panel
	for k, ms := range groups {
		p := Panel{OracleMode: mode, Study: k.study, Arm: k.arm}
		studies := map[string]bool{}
		for _, m := range ms {
			studies[m.arm.Study] = true
		}
		if len(studies) > 1 {
			for _, s := range slices.Sorted(maps.Keys(studies)) {
				p.Studies = append(p.Studies, studyText(s))
			}
			p.Study = strings.Join(p.Studies, " + ")
		} else {
			p.Study = ms[0].arm.Study
		}
		slices.SortFunc(ms, func(a, b member) int {
			return strings.Compare(a.arm.Study+"\x00"+a.arm.Reader, b.arm.Study+"\x00"+b.arm.Reader)
		})
		for _, m := range ms {
			name := m.arm.Reader
			if p.Pooled() {
				name = studyText(m.arm.Study) + "/" + name
			}
			p.Readers = append(p.Readers, name)
			p.Runs = append(p.Runs, m.rr.Run.Name)
			p.runs = append(p.runs, m.rr)
		}
		if !p.Pooled() {
			// A split-plot study's readers read their block's records
			// only; pooled studies are analysed as one crossed panel.
			for _, m := range ms {
				if m.arm.Design == results.DesignSplitPlot {
					p.ReaderBlocks = make([]string, len(ms))
					for j, m := range ms {
						p.ReaderBlocks[j] = m.arm.Block
					}
					break
				}
			}
			for _, m := range ms {
				if m.arm.Plan != nil {
					p.Plan = m.arm.Plan
					break
				}
			}
			if p.Plan != nil {
				p.Primary = &Endpoint{OracleMode: mode, Study: p.Study, Model: p.Plan.Primary.Model,
					Path: benchmark.Path(p.Plan.Primary.Path), Stage: benchmark.Stage(p.Plan.Primary.Stage), Alpha: p.Plan.Alpha}
			}
			for i := range o.Primary {
				if e := &o.Primary[i]; e.OracleMode == mode && e.Study == p.Study {
					p.Primary = e
				}
			}
		}
		panels = append(panels, p)
	}
	slices.SortFunc(panels, func(a, b Panel) int {
		if c := strings.Compare(a.Study, b.Study); c != 0 {
			return c
		}
		return armOrder(a.Arm) - armOrder(b.Arm)
	})
	return panels, warns
}

// studyText is a study's name in a pooled panel's names.
func studyText(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}

// armOrder puts the unaided arm first.
func armOrder(arm string) int {
	switch arm {
	case results.ArmUnaided:
		return 0
	case results.ArmAided:
		return 1
	}
	return 2
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

// newRow is a row of panel p (nil for aided − unaided) without numbers
// yet.
func newRow(comparison string, p *Panel, path benchmark.Path, k benchmark.Stage, nReaders, nRecords int) MRMCRow {
	r := MRMCRow{Comparison: comparison, Path: path, Stage: k, NReaders: nReaders, NRecords: nRecords,
		Estimate: math.NaN(), SE: math.NaN(), DF: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), P: math.NaN()}
	if p != nil {
		r.OracleMode, r.Study, r.Arm, r.Pooled = p.OracleMode, p.Study, p.Arm, p.Pooled()
	}
	return r
}

// analyse runs the row's analysis over d (the readers in d.Readers, and
// for a model row the algorithm among them) unless the row has too few
// readers or records for one, and takes its interval as it is.
func (r *MRMCRow) analyse(d *mrmc.Data, algorithm string) {
	if len(d.Cases) > 0 {
		r.Data = d
	}
	switch {
	case r.NReaders < MinMRMCReaders:
		r.NA = NATooFewReaders
		return
	case r.NRecords < 2:
		r.NA = NATooFewRecords
		return
	}
	var iv mrmc.Interval
	if algorithm != "" {
		_, rows, err := mrmc.SplitAlgorithm(d, algorithm, 0, 0)
		if err != nil {
			r.NA = NAUndefined
			return
		}
		iv = rows[0].Interval
	} else {
		a, err := mrmc.Analyze(d, 0)
		if err != nil {
			r.NA = NAUndefined
			return
		}
		if len(d.Modalities) == 1 {
			iv = a.Designs[0].Means[0].Interval
		} else {
			iv = a.Designs[0].Diffs[0].Interval
		}
	}
	r.Estimate, r.SE, r.DF, r.Lo, r.Hi, r.P = iv.Estimate, iv.SE, iv.DF, iv.Lo, iv.Hi, iv.P
	r.NA = string(iv.NA)
	if r.NA == "" && !r.Valid() {
		r.NA = NAUndefined
	}
}

// studyData is the MRMC study of the readers' outcomes per record, vecs
// per modality and reader. Fully crossed (readerBlocks nil): on the
// records every reader has in every modality. Split-plot (readerBlocks,
// each reader's block): each block on the records every reader of the
// block has in every modality, the blocks in the order their first
// reader comes.
func studyData(modalities, readers, readerBlocks []string, vecs [][]map[string]float64) *mrmc.Data {
	d := &mrmc.Data{FOM: mrmc.Accuracy, Modalities: modalities, Readers: slices.Clone(readers)}
	if readerBlocks == nil {
		var all []map[string]float64
		for _, v := range vecs {
			all = append(all, v...)
		}
		d.Cases = commonKeys(all...)
		for _, v := range vecs {
			d.Scores = append(d.Scores, scoresOn(v, d.Cases))
		}
		return d
	}
	index := map[string]int{}
	for _, b := range readerBlocks {
		if _, ok := index[b]; !ok {
			index[b] = len(d.Blocks)
			d.Blocks = append(d.Blocks, b)
		}
		d.ReaderBlock = append(d.ReaderBlock, index[b])
	}
	for bi, name := range d.Blocks {
		var all []map[string]float64
		for _, v := range vecs {
			for j := range readers {
				if readerBlocks[j] == name {
					all = append(all, v[j])
				}
			}
		}
		for _, key := range commonKeys(all...) {
			d.Cases = append(d.Cases, key)
			d.CaseBlock = append(d.CaseBlock, bi)
		}
	}
	for _, v := range vecs {
		scores := make([][]float64, len(readers))
		for j := range readers {
			scores[j] = make([]float64, len(d.Cases))
			for c, key := range d.Cases {
				scores[j][c] = math.NaN()
				if d.CaseBlock[c] == d.ReaderBlock[j] {
					scores[j][c] = v[j][key]
				}
			}
		}
		d.Scores = append(d.Scores, scores)
	}
	return d
}

// panelMean is the readers' mean of their own records' means: over the
// records of a split-plot reader's block only.
func panelMean(scores [][]float64, d *mrmc.Data) float64 {
	if d.Blocks == nil {
		return meanOfMeans(scores)
	}
	if len(scores) == 0 || len(d.Cases) == 0 {
		return math.NaN()
	}
	var t float64
	for j, s := range scores {
		var sum float64
		n := 0
		for c, x := range s {
			if d.CaseBlock[c] == d.ReaderBlock[j] {
				sum += x
				n++
			}
		}
		if n == 0 {
			return math.NaN()
		}
		t += sum / float64(n)
	}
	return t / float64(len(scores))
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

// addPanel adds panel pi's rows: per path and stage the readers' mean
// and, for an unaided panel, each model − readers; its agreement, time,
// leaderboard and (unaided) claim-3 verdict.
func (rs *ReadersResult) addPanel(pi int, models []*RunResult) {
	p := &rs.Panels[pi]
	var compared []*RunResult
	if p.Compared() {
		compared = models
	}
	first := len(rs.MRMC)
	for pathIdx, path := range benchmark.Paths {
		for _, k := range benchmark.Stages {
			if !benchmark.StageApplies(path, false, k) {
				continue
			}
			vecs := make([]map[string]float64, len(p.runs))
			for j, rr := range p.runs {
				vecs[j] = stageMap(rr, pathIdx, k)
			}
			d := studyData([]string{p.Arm}, p.Readers, p.ReaderBlocks, [][]map[string]float64{vecs})
			row := newRow(ComparisonReaders, p, path, k, len(p.runs), len(d.Cases))
			row.Design = p.Design()
			row.Estimate = panelMean(d.Scores[0], d)
			row.analyse(d, "")
			rs.MRMC = append(rs.MRMC, row)
			for _, m := range compared {
				all := append(slices.Clone(vecs), stageMap(m, pathIdx, k))
				keys := commonKeys(all...)
				scores := scoresOn(all, keys)
				row := newRow(ComparisonModel+m.Run.Name, p, path, k, len(p.runs), len(keys))
				row.Model, row.Design = m.Run.Name, p.Design()
				if len(keys) > 0 && len(p.runs) > 0 {
					row.Estimate = mean(scores[len(p.runs)]) - meanOfMeans(scores[:len(p.runs)])
				}
				readers := append(slices.Clone(p.Readers), m.Run.Name)
				row.analyse(&mrmc.Data{FOM: mrmc.Accuracy, Modalities: []string{p.Arm}, Readers: readers, Cases: keys, Scores: [][][]float64{scores}}, m.Run.Name)
				rs.MRMC = append(rs.MRMC, row)
			}
		}
	}
	rs.Kappa = append(rs.Kappa, readerKappa(p)...)
	rs.Time = append(rs.Time, readerTime(p)...)
	rs.Board = append(rs.Board, board(pi, p, compared)...)
	if p.Compared() {
		rs.Verdict = append(rs.Verdict, readersVerdict(rs.MRMC[first:], p, len(models)))
	}
}

// board is a panel's leaderboard: each reader, then each compared model,
// on the records every reader answered (and the model).
func board(pi int, p *Panel, models []*RunResult) []BoardRow {
	type cell struct {
		pathIdx int
		vecs    []map[string]float64
		keys    []string
	}
	cells := make([]cell, len(BoardCells))
	for c, bc := range BoardCells {
		cells[c].pathIdx = slices.Index(benchmark.Paths, bc.Path)
		for _, rr := range p.runs {
			cells[c].vecs = append(cells[c].vecs, stageMap(rr, cells[c].pathIdx, bc.Stage))
		}
		cells[c].keys = commonKeys(cells[c].vecs...)
	}
	propOn := func(m map[string]float64, keys []string) Prop {
		n, k := 0, 0
		for _, key := range keys {
			if v, ok := m[key]; ok {
				n++
				if v == 1 {
					k++
				}
			}
		}
		return prop(k, n)
	}
	var rows []BoardRow
	for j, rr := range p.runs {
		row := BoardRow{Panel: pi, Run: rr.Run.Name, Reader: p.Readers[j]}
		for c := range cells {
			row.Cells = append(row.Cells, propOn(cells[c].vecs[j], cells[c].keys))
		}
		rows = append(rows, row)
	}
	for _, m := range models {
		row := BoardRow{Panel: pi, Run: m.Run.Name}
		for c, bc := range BoardCells {
			row.Cells = append(row.Cells, propOn(stageMap(m, cells[c].pathIdx, bc.Stage), cells[c].keys))
		}
		rows = append(rows, row)
	}
	return rows
}

// addAided adds the aided studies of a mode: aided − unaided per path
// and stage over the readers with both arms, and their switches.
func (rs *ReadersResult) addAided(mode string, humans, models []*RunResult) {
	type pair struct{ unaided, aided *RunResult }
	studies := map[string]map[string]*pair{}
	aidRun := map[string]string{}
	for _, rr := range humans {
		a, _ := rr.Run.ReaderOf()
		if a.AidRun == "" || (a.Arm != results.ArmUnaided && a.Arm != results.ArmAided) {
			continue
		}
		if studies[a.Study] == nil {
			studies[a.Study] = map[string]*pair{}
			aidRun[a.Study] = a.AidRun
		}
		p := studies[a.Study][a.Reader]
		if p == nil {
			p = &pair{}
			studies[a.Study][a.Reader] = p
		}
		switch {
		case a.Arm == results.ArmAided && p.aided == nil:
			p.aided = rr
		case a.Arm == results.ArmUnaided && p.unaided == nil:
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
		// A split-plot study's readers keep their blocks in both arms.
		var readerBlocks []string
		for i, p := range pairs {
			if a, _ := p.unaided.Run.ReaderOf(); a.Design == results.DesignSplitPlot {
				if readerBlocks == nil {
					readerBlocks = make([]string, len(pairs))
				}
				readerBlocks[i] = a.Block
			}
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
				r := len(pairs)
				d := studyData([]string{results.ArmAided, results.ArmUnaided}, st.Readers, readerBlocks, [][]map[string]float64{vecs[:r], vecs[r:]})
				row := newRow(ComparisonAided, nil, path, k, r, len(d.Cases))
				row.OracleMode, row.Study, row.AidRun, row.Design = mode, study, st.AidRun, designText(readerBlocks)
				if len(d.Cases) > 0 {
					row.Estimate = panelMean(d.Scores[0], d) - panelMean(d.Scores[1], d)
				}
				row.analyse(d, "")
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
// reader of the panel answered.
func readerKappa(p *Panel) []KappaRow {
	readers := p.runs
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
		row := KappaRow{OracleMode: p.OracleMode, Study: p.Study, Arm: p.Arm, Pooled: p.Pooled(), Question: q, NReaders: len(readers), Kappa: math.NaN()}
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

// readerTime is the seconds per record the panel's readers took at each
// stage.
func readerTime(p *Panel) []TimeRow {
	var rows []TimeRow
	for _, k := range benchmark.Stages {
		var secs []float64
		for _, rr := range p.runs {
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
		row := TimeRow{OracleMode: p.OracleMode, Study: p.Study, Arm: p.Arm, Pooled: p.Pooled(), Stage: k, NReaders: len(p.runs), NRecords: len(secs), MeanS: math.NaN(), MedianS: math.NaN()}
		if len(secs) > 0 {
			slices.Sort(secs)
			row.MeanS, row.MedianS = mean(secs), stats.Quantile(secs, 0.5)
		}
		rows = append(rows, row)
	}
	return rows
}

// OneSidedAhead is a model − readers row's one-sided p of "the model is
// not ahead of the readers" (difference ≤ 0), from its two-sided p: half
// of it when the difference is positive, one minus half otherwise; NaN
// without a p.
func (r *MRMCRow) OneSidedAhead() float64 {
	if math.IsNaN(r.P) {
		return math.NaN()
	}
	if r.Estimate > 0 {
		return r.P / 2
	}
	return 1 - r.P/2
}

// holm is Holm's step-down procedure at familywise level alpha over p:
// whether each hypothesis is rejected.
func holm(p []float64, alpha float64) []bool {
	order := make([]int, len(p))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	rejected := make([]bool, len(p))
	for i, idx := range order {
		if !(p[idx] <= alpha/float64(len(p)-i)) {
			break
		}
		rejected[idx] = true
	}
	return rejected
}

// readersVerdict decides claim 3 for an unaided panel from its model −
// readers rows (VerdictLevel says how). The cells are every model's
// paths and stages, or the panel's primary comparison when one was
// stated. A cell counts when the model and every reader share at least
// MinReaderRecords records and the difference has an interval. Not
// supported when Holm's procedure over the counted cells finds a model
// ahead of the readers; supported when every cell counts and lies below
// 0; undecided otherwise — "too few records" when no cell, or not every
// cell, has the records a verdict needs — and with no model. With fewer
// than MinReaders readers the numbers are given, but no verdict.
func readersVerdict(rows []MRMCRow, p *Panel, nModels int) Verdict {
	v := Verdict{Claim: 3, OracleMode: p.OracleMode, Scope: p.Name(), Status: Undecided}
	if nModels == 0 {
		v.Reason = "no model run to compare with the readers"
		return v
	}
	nReaders := len(p.Readers)
	var cells []*MRMCRow
	for i := range rows {
		d := &rows[i]
		if !strings.HasPrefix(d.Comparison, ComparisonModel) {
			continue
		}
		if e := p.Primary; e != nil && (d.Path != e.Path || d.Stage != e.Stage || (e.Model != "" && d.Model != e.Model)) {
			continue
		}
		cells = append(cells, d)
	}
	scope := fmt.Sprintf("%d readers, %d model(s)", nReaders, nModels)
	if e := p.Primary; e != nil {
		model := "every model"
		if e.Model != "" {
			model = e.Model
		}
		scope += fmt.Sprintf(", the pre-stated primary comparison (%s on %s stage %d)", model, e.Path, e.Stage)
	}
	level := VerdictLevel
	if e := p.Primary; e != nil && e.Alpha > 0 {
		level = e.Alpha / 2
	}
	v.Status, v.Reason = cellsVerdict(cells, scope, level)
	if len(cells) == 0 && p.Primary != nil {
		v.Status, v.Reason = Undecided, scope+": no such cell among the rows"
	}
	if nReaders < MinReaders {
		v.Status = Undecided
		v.Reason = fmt.Sprintf("too few readers for a verdict (%d; at least %d are needed); the numbers: %s", nReaders, MinReaders, v.Reason)
	}
	return v
}

// cellsVerdict is claim 3's status and its numbers over the cells.
func cellsVerdict(cells []*MRMCRow, scope string, level float64) (string, string) {
	var counted []*MRMCRow
	short, most := 0, 0
	for _, d := range cells {
		most = max(most, d.NRecords)
		if d.NRecords < MinReaderRecords || !d.Valid() {
			short++
			continue
		}
		counted = append(counted, d)
	}
	if len(counted) == 0 {
		return Undecided, fmt.Sprintf("%s: too few records: the readers and a model share at most %d record(s) in a path and stage, fewer than the %d a verdict needs", scope, most, MinReaderRecords)
	}
	ps := make([]float64, len(counted))
	for i, d := range counted {
		ps[i] = d.OneSidedAhead()
	}
	var ahead []*MRMCRow
	for i, rej := range holm(ps, level) {
		if rej {
			ahead = append(ahead, counted[i])
		}
	}
	if len(ahead) > 0 {
		slices.SortStableFunc(ahead, func(a, b *MRMCRow) int {
			return cmpFloat(a.OneSidedAhead(), b.OneSidedAhead())
		})
		d := ahead[0]
		more := ""
		if len(ahead) > 1 {
			more = fmt.Sprintf("; ahead in %d cell(s) in all", len(ahead))
		}
		return notSupported, fmt.Sprintf("%s, %d counted cell(s): %s is ahead of the readers on %s stage %d by %s points [%s, %s] (MRMC, %d paired records, one-sided p = %s, below Holm's threshold over the %d cells at level %g%s)",
			scope, len(counted), d.Model, d.Path, d.Stage, spts(d.Estimate), spts(d.Lo), spts(d.Hi), d.NRecords, pText(d.OneSidedAhead()), len(counted), level, more)
	}
	// The closest model: the cell with the least evidence of the model
	// below the readers, its one-sided p of "not below" the largest.
	closest := counted[0]
	for _, d := range counted[1:] {
		if cmpFloat(d.oneSidedBehind(), closest.oneSidedBehind()) > 0 || (d.oneSidedBehind() == closest.oneSidedBehind() && d.Hi > closest.Hi) {
			closest = d
		}
	}
	cell := fmt.Sprintf("%s, %d counted cell(s): the closest model is %s on %s stage %d, %s points [%s, %s] from the readers' mean (MRMC, %d paired records)",
		scope, len(counted), closest.Model, closest.Path, closest.Stage, spts(closest.Estimate), spts(closest.Lo), spts(closest.Hi), closest.NRecords)
	switch {
	case !(closest.oneSidedBehind() < level):
		if level == VerdictLevel {
			return Undecided, cell + "; its interval reaches 0"
		}
		return Undecided, cell + fmt.Sprintf("; its one-sided p of the model below the readers, %s, is not below %g", pText(closest.oneSidedBehind()), level)
	case short > 0:
		return Undecided, cell + fmt.Sprintf("; too few records: %d cell(s) have fewer than %d paired records or no interval", short, MinReaderRecords)
	}
	if level == VerdictLevel {
		return supported, cell + "; every interval lies below 0"
	}
	return supported, cell + fmt.Sprintf("; every cell's one-sided p of the model below the readers is below %g", level)
}

// oneSidedBehind is a model − readers row's one-sided p of "the model
// is not below the readers" (difference ≥ 0); below VerdictLevel exactly
// when the 95 % interval lies below 0.
func (r *MRMCRow) oneSidedBehind() float64 {
	if math.IsNaN(r.P) {
		return math.NaN()
	}
	if r.Estimate < 0 {
		return r.P / 2
	}
	return 1 - r.P/2
}

// cmpFloat orders two floats, NaN last.
func cmpFloat(a, b float64) int {
	switch {
	case a < b || (!math.IsNaN(a) && math.IsNaN(b)):
		return -1
	case a > b || (math.IsNaN(a) && !math.IsNaN(b)):
		return 1
	}
	return 0
}

// pText is a p-value in a verdict: 3 significant digits, "< 0.0001"
// below.
func pText(p float64) string {
	if p < 1e-4 {
		return "< 0.0001"
	}
	return strconv.FormatFloat(p, 'g', 3, 64)
}
