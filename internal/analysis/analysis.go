// Package analysis turns runs into the numbers of a report (spec
// protocol.md §10): over a Set of runs in memory (package runset reads
// them from run directories; this package does no file I/O of runs or
// benchmarks), it scores every
// record under our semantics, where a stage counts only when all its
// sub-questions were asked and correct and any failure breaks the chain
// (ScoreRecord), and aggregates per model × path × lesion cell: end-to-end,
// oracle-passed and conditional stage accuracy, depth, sub-question
// accuracy, each with its n and a 95 % interval (Wilson for shares,
// percentile bootstrap for depth and for paired model differences). Chance
// and majority baselines come from the benchmark alone (Result.Chance).
// Beyond the cells it tests the findings' claims (domain groups, decay,
// readers against models) and the health of the items. The statistical
// methods themselves (intervals, tests, κ) are those of internal/stats;
// this package chooses them, feeds them and seeds their resampling.
//
// The reference-compatible numbers (§10.1) are not recomputed here: each
// Run carries the results package's RefMetrics.
//
// Every bootstrap cell owns an RNG seeded from its kind and a digest of
// its data (never a run name), so results are the same bytes at any
// parallelism and identical answers give identical intervals.
package analysis

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/stats"
)

var nan = math.NaN()

// Error policies (--error-policy).
const (
	ErrorsExclude = "exclude"
	ErrorsWrong   = "wrong"
)

// Options configure Analyze.
type Options struct {
	ErrorPolicy string      // ErrorsExclude (default) or ErrorsWrong
	Bootstrap   int         // replicates; 0 means DefaultBootstrap
	Seed        uint64      // bootstrap seed; 0 means the default, 20260619
	Compare     [][2]string // --compare A,B pairs of run names
	CompareBest bool
	// Domains say which domain group each model belongs to (the report's
	// findings); empty: no run has a group.
	Domains DomainOptions
	// FlagShare is the majority_wrong share of item health; 0 means
	// DefaultFlagShare.
	FlagShare float64
	// Workers bounds the goroutines used for bootstrap cells; 0 means
	// GOMAXPROCS. The output does not depend on it.
	Workers int
	// PoolStudies makes the readers of every reader study of an oracle
	// mode one panel per arm. Without it each study is a panel of its
	// own: the same person may have read in two studies.
	PoolStudies bool
	// Primary lists pre-stated primary comparisons of claim 3, one per
	// reader study at most: the verdict of the study's unaided panel
	// then rests on that comparison alone.
	Primary []Endpoint
}

// Prop is a share with its Wilson interval; Valid is false when the cell
// does not apply or has n = 0 (written NA / N/A).
type Prop struct {
	N, K   int
	Valid  bool
	Value  float64
	Lo, Hi float64
}

func prop(k, n int) Prop {
	lo, hi, ok := stats.Wilson(k, n)
	p := Prop{N: n, K: k, Valid: ok, Lo: lo, Hi: hi}
	if ok {
		p.Value = float64(k) / float64(n)
	}
	return p
}

// StageCell is one (path, lesion, stage) cell of one run: the three views.
type StageCell struct {
	Path          benchmark.Path
	Lesion        string
	Stage         benchmark.Stage
	Applicable    bool
	E2E, OP, Cond Prop
}

// DepthCell is one (path, lesion) depth cell.
type DepthCell struct {
	Path         benchmark.Path
	Lesion       string
	N            int
	Valid        bool
	Mean, Lo, Hi float64
	Max          int
}

// SubCell is one question's accuracy in a (path, lesion) cell; Path may
// be PooledPath (attributes only).
type SubCell struct {
	Path       benchmark.Path
	Lesion     string
	Q          benchmark.Question
	Applicable bool
	Acc        Prop
	Jaccard    float64 // mean; NaN when not multi-select or n = 0
}

// PooledPath labels the pooled RR+RF rows of the reference's attribute
// detail table: a table path, not a record's.
const PooledPath = benchmark.RevisionRequired + "+" + benchmark.RevisionFree

// ParseRow is one question type's parse statistics for a run (Question
// "all" sums every type).
type ParseRow struct {
	Question                                   string
	NAsked, NFail, NOutOfRange, NEmpty, NTrunc int
}

// UsageRow is a run's usage. Cost is NaN when a call was unpriced; the
// latency percentiles (over asked, non-cached calls) are NaN without any.
type UsageRow struct {
	NItems, NOK, NError, NCalls                            int
	InputTokens, CachedInputTokens, OutputTokens, Thinking int64
	Cost                                                   float64
	LatencyP50, LatencyP95                                 float64
}

// RunResult is everything computed for one run.
type RunResult struct {
	Run    *Run
	Scored bool // false when the run has no usable results.jsonl
	Scores []Score
	Stages []StageCell // path × lesion × stage 1..4, in table order
	Depth  []DepthCell // path × lesion
	Sub    []SubCell
	Parse  []ParseRow
	Usage  UsageRow
}

// Stage returns the stage cell, or nil.
func (rr *RunResult) Stage(path benchmark.Path, lesion string, k benchmark.Stage) *StageCell {
	for i := range rr.Stages {
		c := &rr.Stages[i]
		if c.Path == path && c.Lesion == lesion && c.Stage == k {
			return c
		}
	}
	return nil
}

// DepthOf returns the depth cell, or nil.
func (rr *RunResult) DepthOf(path benchmark.Path, lesion string) *DepthCell {
	for i := range rr.Depth {
		c := &rr.Depth[i]
		if c.Path == path && c.Lesion == lesion {
			return c
		}
	}
	return nil
}

// SubOf returns a sub-question cell, or nil.
func (rr *RunResult) SubOf(path benchmark.Path, lesion string, q benchmark.Question) *SubCell {
	for i := range rr.Sub {
		c := &rr.Sub[i]
		if c.Path == path && c.Lesion == lesion && c.Q == q {
			return c
		}
	}
	return nil
}

// Result is a whole analysis.
type Result struct {
	Options  Options
	Set      *Set
	Runs     []*RunResult // in Set.Runs order
	Chance   *Chance      // nil without a benchmark
	Pairs    []PairRow
	Domains  *DomainResult
	Warnings []string // the Set's warnings, then the analysis's
	// Lesions are the lesions of the cells: "all", the benchmark's
	// declared lesions in order, then others the runs hold.
	Lesions []string

	// Health is the item analysis per oracle mode with a non-baseline
	// run (itemhealth.go).
	Health []*ItemHealth

	// Readers is the readers-and-models part (readers.go); nil without
	// runs of human readers.
	Readers *ReadersResult

	// ImageControl compares each model's run with its image-control
	// runs (imagecontrol.go); nil without a control run that pairs.
	ImageControl *ImageControl
}

// Modes lists the oracle modes present, sorted.
func (r *Result) Modes() []string {
	var m []string
	for _, rr := range r.Runs {
		if !slices.Contains(m, rr.Run.OracleMode) {
			m = append(m, rr.Run.OracleMode)
		}
	}
	slices.Sort(m)
	return m
}

func (o *Options) normalise() error {
	switch o.ErrorPolicy {
	case "":
		o.ErrorPolicy = ErrorsExclude
	case ErrorsExclude, ErrorsWrong:
	default:
		return fmt.Errorf("error policy %q: want exclude or wrong", o.ErrorPolicy)
	}
	if o.Bootstrap == 0 {
		o.Bootstrap = DefaultBootstrap
	}
	if o.Bootstrap < 1 {
		return fmt.Errorf("bootstrap replicates %d: want at least 1", o.Bootstrap)
	}
	if o.Seed == 0 {
		o.Seed = defaultSeed
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return CheckFlagShare(o.FlagShare)
}

// Analyze computes every metric of §10.3 for the runs of set. Once ctx
// ends it stops, between runs and between bootstrap cells, with ctx's
// error.
func Analyze(ctx context.Context, set *Set, opts Options) (*Result, error) {
	if err := opts.normalise(); err != nil {
		return nil, err
	}
	res := &Result{Options: opts, Set: set, Warnings: slices.Clone(set.Warnings), Lesions: lesionList(set.Bench, set.Runs)}
	if set.Bench != nil {
		res.Chance = computeChance(set.Bench)
	}
	heart := heartLesions(set.Bench, set.Runs, res.Lesions)
	res.Runs = make([]*RunResult, len(set.Runs))
	score := make([]func(), len(set.Runs))
	for i, run := range set.Runs {
		rr := &RunResult{Run: run, Scored: run.Records != nil}
		res.Runs[i] = rr
		score[i] = func() {
			rr.Usage, rr.Parse = usageAndParse(run)
			if !rr.Scored {
				return
			}
			for _, rec := range run.Records {
				if s, ok := ScoreRecord(rec, opts.ErrorPolicy == ErrorsWrong); ok {
					rr.Scores = append(rr.Scores, s)
				}
			}
			rr.cells(heart, res.Lesions)
		}
	}
	runJobs(ctx, score, opts.Workers)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Depth bootstraps are the expensive part: one job per cell.
	var jobs []func()
	for _, rr := range res.Runs {
		for j := range rr.Depth {
			jobs = append(jobs, func() { rr.bootDepth(j, &opts) })
		}
	}
	runJobs(ctx, jobs, opts.Workers)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pairs, warns := comparePairs(ctx, res, &opts)
	res.Pairs = pairs
	res.Warnings = append(res.Warnings, warns...)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Domains, warns = analyzeDomains(ctx, res, &opts)
	res.Warnings = append(res.Warnings, warns...)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.ImageControl, warns = analyzeImageControl(ctx, res, &opts)
	res.Warnings = append(res.Warnings, warns...)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Health = ComputeItemHealth(res, opts.FlagShare)
	res.Readers, warns = analyzeReaders(res)
	res.Warnings = append(res.Warnings, warns...)
	return res, nil
}

// runJobs runs jobs on up to workers goroutines. Once ctx ends it starts
// no more (those started finish): the caller checks ctx and drops the
// partial result.
func runJobs(ctx context.Context, jobs []func(), workers int) {
	if workers <= 1 || len(jobs) < 2 {
		for _, j := range jobs {
			if ctx.Err() != nil {
				return
			}
			j()
		}
		return
	}
	ch := make(chan func())
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				j()
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		ch <- j
	}
	close(ch)
	wg.Wait()
}

// inCell reports whether a score belongs to the (path, lesion) cell.
func inCell(s *Score, pi int, lesion string) bool {
	return s.Path == pi && (lesion == allLesions || s.Lesion == lesion)
}

func (rr *RunResult) cells(heart heartSet, lesions []string) {
	for pi, path := range benchmark.Paths {
		for _, lesion := range lesions {
			var cell []*Score
			for i := range rr.Scores {
				if inCell(&rr.Scores[i], pi, lesion) {
					cell = append(cell, &rr.Scores[i])
				}
			}
			for _, k := range benchmark.Stages {
				rr.Stages = append(rr.Stages, stageCell(path, lesion, k, heart.stageApplies(path, lesion, k), cell))
			}
			dc := DepthCell{Path: path, Lesion: lesion, N: len(cell), Max: path.MaxDepth()}
			if dc.N > 0 {
				t := 0
				for _, s := range cell {
					t += s.Depth
				}
				dc.Valid, dc.Mean = true, float64(t)/float64(dc.N)
			}
			rr.Depth = append(rr.Depth, dc)
			for _, q := range benchmark.Questions {
				rr.Sub = append(rr.Sub, subCell(path, lesion, q, heart.applies(path, lesion, q), cell))
			}
		}
	}
	// Pooled RR+RF, attributes only (as in the reference detail table).
	for _, lesion := range lesions {
		var cell []*Score
		for i := range rr.Scores {
			s := &rr.Scores[i]
			if benchmark.Paths[s.Path].Positive() && (lesion == allLesions || s.Lesion == lesion) {
				cell = append(cell, s)
			}
		}
		for _, q := range benchmark.StageAttributeExtraction.Questions() {
			rr.Sub = append(rr.Sub, subCell(PooledPath, lesion, q, !heart[lesion], cell))
		}
	}
}

// stageCell computes the three views of stage k over a cell's scores.
func stageCell(path benchmark.Path, lesion string, k benchmark.Stage, applicable bool, cell []*Score) StageCell {
	sc := StageCell{Path: path, Lesion: lesion, Stage: k, Applicable: applicable}
	if !applicable {
		return sc
	}
	n, e2e, op, condN := 0, 0, 0, 0
	for _, s := range cell {
		if !s.App[k-1] {
			continue
		}
		n++
		if s.Cor[k-1] {
			op++
		}
		if s.chain(k - 1) {
			condN++
			if s.Cor[k-1] {
				e2e++
			}
		}
	}
	sc.E2E, sc.OP, sc.Cond = prop(e2e, n), prop(op, n), prop(e2e, condN)
	return sc
}

func subCell(path benchmark.Path, lesion string, q benchmark.Question, applicable bool, cell []*Score) SubCell {
	sc := SubCell{Path: path, Lesion: lesion, Q: q, Applicable: applicable, Jaccard: nan}
	if !applicable && path != PooledPath {
		return sc
	}
	n, k, jac := 0, 0, 0.0
	for _, s := range cell {
		if !s.QApp[q] {
			continue
		}
		n++
		if s.QCor[q] {
			k++
		}
		jac += s.Jac[q]
	}
	sc.Acc = prop(k, n)
	if q.Multi() && n > 0 {
		sc.Jaccard = jac / float64(n)
	}
	return sc
}

func (rr *RunResult) bootDepth(j int, o *Options) {
	dc := &rr.Depth[j]
	if !dc.Valid {
		return
	}
	pi := pathIndex(dc.Path)
	xs := make([]float64, 0, dc.N)
	for i := range rr.Scores {
		if inCell(&rr.Scores[i], pi, dc.Lesion) {
			xs = append(xs, float64(rr.Scores[i].Depth))
		}
	}
	dc.Lo, dc.Hi, _ = bootstrapMean(xs, o.Bootstrap, o.Seed, kindDepth)
}

func usageAndParse(run *Run) (UsageRow, []ParseRow) {
	u := UsageRow{Cost: 0}
	rows := make([]ParseRow, benchmark.NumQuestions+1)
	for _, q := range benchmark.Questions {
		rows[q].Question = q.Name()
	}
	rows[benchmark.NumQuestions].Question = "all"
	if run.Records == nil {
		u.Cost, u.LatencyP50, u.LatencyP95 = nan, nan, nan
		return u, rows
	}
	priced := true
	var lat []float64
	for _, r := range run.Records {
		u.NItems++
		if r.Status == results.StatusOK {
			u.NOK++
		} else {
			u.NError++
		}
		u.InputTokens += r.Usage.InputTokens
		u.CachedInputTokens += r.Usage.CachedInputTokens
		u.OutputTokens += r.Usage.OutputTokens
		u.Thinking += r.Usage.ThinkingTokens
		if r.Usage.CostUSD == nil {
			priced = false
		} else {
			u.Cost += *r.Usage.CostUSD
		}
		for i := range r.Turns {
			t := &r.Turns[i]
			if t.Status != results.TurnAsked {
				continue
			}
			u.NCalls++
			if !t.Cached {
				lat = append(lat, float64(t.LatencyMS))
			}
			// The question's row (when the step is known) and "all".
			idx := []int{benchmark.NumQuestions}
			if q, ok := benchmark.QuestionOfStep(t.Step); ok {
				idx = []int{int(q), benchmark.NumQuestions}
			}
			for _, row := range idx {
				p := &rows[row]
				p.NAsked++
				if IsParseFailure(t) {
					p.NFail++
				}
				if t.InRange != nil && !*t.InRange {
					p.NOutOfRange++
				}
				if t.Raw != nil && *t.Raw == "" {
					p.NEmpty++
				}
				if t.FinishReason != nil && *t.FinishReason == "length" {
					p.NTrunc++
				}
			}
		}
	}
	if !priced {
		u.Cost = nan
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		u.LatencyP50, u.LatencyP95 = stats.Quantile(lat, 0.5), stats.Quantile(lat, 0.95)
	} else {
		u.LatencyP50, u.LatencyP95 = nan, nan
	}
	return u, rows
}

// Headline is one entry of summary.json's per-run metrics.
type Headline struct {
	Path   benchmark.Path
	Metric string
	N      int
	Valid  bool
	Value  float64
	Lo, Hi float64
}

// Headlines lists, per path (lesion all), e2e_k and op_k for each
// applicable stage and then depth.
func (rr *RunResult) Headlines() []Headline {
	var out []Headline
	if !rr.Scored {
		return out
	}
	for _, path := range benchmark.Paths {
		for _, k := range benchmark.Stages {
			c := rr.Stage(path, "all", k)
			if c == nil || !c.Applicable {
				continue
			}
			ks := strconv.Itoa(int(k))
			for _, v := range []struct {
				name string
				p    Prop
			}{{"e2e_" + ks, c.E2E}, {"op_" + ks, c.OP}} {
				out = append(out, Headline{Path: path, Metric: v.name, N: v.p.N, Valid: v.p.Valid, Value: v.p.Value, Lo: v.p.Lo, Hi: v.p.Hi})
			}
		}
		d := rr.DepthOf(path, "all")
		out = append(out, Headline{Path: path, Metric: "depth", N: d.N, Valid: d.Valid, Value: d.Mean, Lo: d.Lo, Hi: d.Hi})
	}
	return out
}

// Label is the run's name in plots and tables: the run name, with the
// oracle mode appended when several modes are reported.
func (r *Result) Label(rr *RunResult) string {
	if len(r.Modes()) > 1 {
		return rr.Run.Name + " [" + rr.Run.OracleMode + "]"
	}
	return rr.Run.Name
}
