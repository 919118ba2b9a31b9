package analysis

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/stats"
)

// Verdict statuses.
const (
	supported    = "supported"
	notSupported = "not supported"
	Undecided    = "undecided at this sample size"
	// NotAssessed is claim 2's status when no run has a domain group.
	NotAssessed = "not assessed"
)

// Verdict is the finding on one claim in one oracle mode. Claim 1: deep
// stages decay precipitously; claim 2: medical models have no advantage
// over general ones.
type Verdict struct {
	Claim      int
	OracleMode string
	// Scope narrows the verdict within its oracle mode: claim 3's reader
	// panel (Panel.Name); "" for claims 1 and 2.
	Scope  string
	Status string
	Reason string // the numbers behind the status
}

// bootKey names one bootstrap: a group (on every path) or a run (on the
// decay paths) in one oracle mode.
type bootKey struct {
	unit, mode string
	group      bool
	pi         int
}

type bootJob struct {
	runs []*RunResult
	ub   *unitBoot
}

// analyzeDomains runs the whole domain analysis of res.
func analyzeDomains(ctx context.Context, res *Result, o *Options) (*DomainResult, []string) {
	members, warns := assignGroups(res, &o.Domains)
	dr := &DomainResult{Members: members}
	if len(members) == 0 {
		return dr, warns
	}
	if !slices.ContainsFunc(members, func(m DomainMember) bool { return m.Group != "" }) {
		// No run has a group: claim 2 is not assessed (the findings say
		// how to give groups), and a run without a domain is no news,
		// unless a domains file was given: then a key that names no run
		// (a typo) is why, and must be said. Claim 1 needs no groups: it
		// is decided on all models pooled.
		dr.Ungrouped = true
		if len(o.Domains.Overrides) == 0 {
			warns = nil
		}
	}
	boots := runBoots(ctx, members, res.Modes(), o)
	if ctx.Err() != nil {
		return dr, warns // Analyze returns ctx's error
	}
	for _, mode := range res.Modes() {
		groups := modeGroups(members, mode)
		for _, g := range groups {
			for pi, path := range benchmark.Paths {
				for _, k := range benchmark.Stages {
					if benchmark.StageApplies(path, false, k) {
						dr.Groups = append(dr.Groups, groupRow(boots[bootKey{g, mode, true, pi}], g, mode, pi, k))
					}
				}
			}
		}
		med, gen := boots[bootKey{groupMedical, mode, true, 0}], boots[bootKey{groupGeneral, mode, true, 0}]
		if med != nil && gen != nil {
			for pi, path := range benchmark.Paths {
				for _, k := range benchmark.Stages {
					if benchmark.StageApplies(path, false, k) {
						dr.Diffs = append(dr.Diffs, domainDiff(boots[bootKey{groupMedical, mode, true, pi}].ub, boots[bootKey{groupGeneral, mode, true, pi}].ub, mode, pi, k, o))
					}
				}
			}
		}
		for _, path := range decayPaths {
			pi := pathIndex(path)
			for _, m := range members {
				if j := boots[bootKey{m.Run.Run.Name, mode, false, pi}]; j != nil && j.ub != nil {
					dr.Decay = append(dr.Decay, j.ub.decayRows(m.Run.Run.Name, mode, false, path)...)
				}
			}
			for _, g := range groups {
				if j := boots[bootKey{g, mode, true, pi}]; j.ub != nil {
					dr.Decay = append(dr.Decay, j.ub.decayRows(g, mode, true, path)...)
				}
			}
		}
	}
	pairs, pw := matchedPairs(members, o)
	dr.Diffs = append(dr.Diffs, pairs...)
	warns = append(warns, pw...)
	for _, mode := range res.Modes() {
		dr.Verdict = append(dr.Verdict, decayVerdict(dr, mode), domainVerdict(dr, mode))
	}
	return dr, warns
}

// modeGroups are the groups with a run in mode, in groupOrder.
func modeGroups(members []DomainMember, mode string) []string {
	var out []string
	for _, g := range groupOrder(members) {
		if len(groupRuns(members, g, mode)) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// runBoots runs every bootstrap, one job each: each group on every path
// (two levels) and each run on the decay paths (records only).
func runBoots(ctx context.Context, members []DomainMember, modes []string, o *Options) map[bootKey]*bootJob {
	boots := map[bootKey]*bootJob{}
	var fns []func()
	add := func(k bootKey, runs []*RunResult) {
		j := &bootJob{runs: runs}
		boots[k] = j
		fns = append(fns, func() {
			var units [][]decayRec
			for _, rr := range runs {
				if u := pathRecords(rr, k.pi); len(u) > 0 {
					units = append(units, u)
				}
			}
			if len(units) == 0 {
				return
			}
			j.ub = bootUnit(units, k.group, o)
		})
	}
	for _, mode := range modes {
		for pi, path := range benchmark.Paths {
			for _, g := range modeGroups(members, mode) {
				add(bootKey{g, mode, true, pi}, groupRuns(members, g, mode))
			}
			if !slices.Contains(decayPaths, path) {
				continue
			}
			for _, m := range members {
				if m.Run.Run.OracleMode == mode {
					add(bootKey{m.Run.Run.Name, mode, false, pi}, []*RunResult{m.Run})
				}
			}
		}
	}
	runJobs(ctx, fns, o.Workers)
	return boots
}

// groupRow is one ext_domain.csv row from a group's bootstrap.
func groupRow(j *bootJob, group, mode string, pi int, k benchmark.Stage) GroupRow {
	row := GroupRow{Group: group, OracleMode: mode, Path: benchmark.Paths[pi], Stage: k}
	items := map[string]bool{}
	for _, rr := range j.runs {
		_, keys := stageVector(rr, pi, k)
		for _, key := range keys {
			items[key] = true
		}
	}
	row.NItems = len(items)
	if j.ub == nil || math.IsNaN(j.ub.point[k-1]) {
		return row
	}
	row.NModels, row.Value = j.ub.nModels[k-1], j.ub.point[k-1]
	row.Lo, row.Hi, row.Valid = j.ub.ci(k)
	return row
}

// domainDiff is medical − general in one cell: the difference of the
// group means; its interval from the two groups' replicates (independent
// resamples, each from its group's own cell), replicate by replicate;
// and a permutation p-value over the model labels.
func domainDiff(med, gen *unitBoot, mode string, pi int, k benchmark.Stage, o *Options) DiffRow {
	path := benchmark.Paths[pi]
	row := DiffRow{Comparison: ComparisonDomain, OracleMode: mode, Path: path, Stage: k}
	if med == nil || gen == nil {
		return row
	}
	row.NA, row.NB = med.nModels[k-1], gen.nModels[k-1]
	if row.NA == 0 || row.NB == 0 {
		return row
	}
	row.Diff = med.point[k-1] - gen.point[k-1]
	if row.Lo, row.Hi, row.Valid = diffCI(med, gen, k); !row.Valid {
		return row
	}
	row.P, row.MinP, row.Exact = permutationP(stageOf(med.models, k), stageOf(gen.models, k), o.Seed, domainPermCellID(mode, path, k))
	row.PValid = true
	return row
}

// stageOf is the models' accuracies at stage k (models without it left out).
func stageOf(models [][4]float64, k benchmark.Stage) []float64 {
	var out []float64
	for _, m := range models {
		if !math.IsNaN(m[k-1]) {
			out = append(out, m[k-1])
		}
	}
	return out
}

// matchedPairs compares each run of a model that has a registry base
// with each run of that base in the same oracle mode, per path and
// stage, on the keys ok in both: e2e_k of each, the discordant counts,
// a paired bootstrap interval of the difference (the ext_pairwise cell
// id, so the numbers agree with --compare) and McNemar's exact p.
func matchedPairs(members []DomainMember, o *Options) ([]DiffRow, []string) {
	var rows []DiffRow
	var warns []string
	for _, a := range members {
		base := o.Domains.Registry[runModel(a.Run.Run)].Base
		if base == "" {
			continue
		}
		for _, b := range members {
			if runModel(b.Run.Run) != base || b.Run.Run.OracleMode != a.Run.Run.OracleMode {
				continue
			}
			warns = append(warns, pairDiffers(a.Run.Run, b.Run.Run)...)
			for pi, path := range benchmark.Paths {
				for _, k := range benchmark.Stages {
					if benchmark.StageApplies(path, false, k) {
						rows = append(rows, matchedRow(a.Run, b.Run, pi, k, o))
					}
				}
			}
		}
	}
	return rows, warns
}

func matchedRow(a, b *RunResult, pi int, k benchmark.Stage, o *Options) DiffRow {
	path := benchmark.Paths[pi]
	row := DiffRow{Comparison: "pair:" + a.Run.Name + ":" + b.Run.Name, OracleMode: a.Run.OracleMode, Path: path, Stage: k,
		NA: 1, NB: 1, ModelA: a.Run.Name, ModelB: b.Run.Name, Exact: true}
	ps := pairStage(a, b, pi, k, o)
	row.NPaired, row.B, row.C = ps.n, ps.b, ps.c
	row.MinP = stats.McNemarP(row.NPaired, 0)
	if ps.n == 0 {
		return row
	}
	row.Valid, row.Diff, row.Lo, row.Hi = true, ps.diff, ps.lo, ps.hi
	row.PValid, row.P = true, ps.p
	return row
}

// pairedStage is a paired comparison of two runs' end-to-end accuracy at
// one stage of one path, on the records ok in both for which the stage
// applies.
type pairedStage struct {
	n     int // paired records
	b, c  int // discordant: a right and b wrong; a wrong and b right
	both  int // right in both
	accA  float64
	accB  float64
	diff  float64 // accA − accB
	lo    float64 // 95 % interval of diff
	hi    float64
	p     float64 // McNemar's exact test
	right int     // right in a
}

// pairStage compares a with b at stage k of path pi: e2e_k of each, the
// discordant counts, a paired bootstrap interval of the difference (the
// ext_pairwise cell id, so the numbers agree with --compare; Newcombe's
// interval from the two runs' Wilson intervals when every replicate gives
// the same difference) and McNemar's exact p. n is 0 when no record
// pairs.
func pairStage(a, b *RunResult, pi int, k benchmark.Stage, o *Options) pairedStage {
	var ps pairedStage
	xb, kb := stageVector(b, pi, k)
	bv := make(map[string]float64, len(kb))
	for i, key := range kb {
		bv[key] = xb[i]
	}
	okA := map[string]bool{}
	for i := range a.Scores {
		okA[a.Scores[i].Key] = a.Scores[i].OK
	}
	okB := map[string]bool{}
	for i := range b.Scores {
		okB[b.Scores[i].Key] = b.Scores[i].OK
	}
	var va, vb []float64
	xa, ka := stageVector(a, pi, k)
	for i, key := range ka {
		y, ok := bv[key]
		if !ok || !okA[key] || !okB[key] {
			continue
		}
		va, vb = append(va, xa[i]), append(vb, y)
		switch {
		case xa[i] > y:
			ps.b++
		case xa[i] < y:
			ps.c++
		case y == 1:
			ps.both++
		}
	}
	ps.n = len(va)
	if ps.n == 0 {
		return ps
	}
	ps.right = ps.b + ps.both
	ps.accA, ps.accB = mean(va), mean(vb)
	ps.diff = ps.accA - ps.accB
	ps.lo, ps.hi, _ = bootstrapPairedDiff(va, vb, o.Bootstrap, o.Seed, fmt.Sprintf("e2e_%d", k))
	if ps.lo == ps.hi {
		// Every replicate the same difference (no discordant pair): the
		// interval from the two runs' Wilson intervals instead.
		ka, kb := int(math.Round(ps.accA*float64(ps.n))), int(math.Round(ps.accB*float64(ps.n)))
		ps.lo, ps.hi, _ = stats.Newcombe(ps.accA, ka, ps.n, ps.accB, kb, ps.n)
	}
	ps.p = stats.McNemarP(ps.b, ps.c)
	return ps
}

func pts(x float64) string  { return fmt.Sprintf("%.1f", 100*x) }
func spts(x float64) string { return fmt.Sprintf("%+.1f", 100*x) }

// decayVerdict decides claim 1 in a mode from the pooled group's ratio
// e2e_4 / e2e_1 on revision_required (the full sequential path).
func decayVerdict(dr *DomainResult, mode string) Verdict {
	v := Verdict{Claim: 1, OracleMode: mode, Status: Undecided}
	var deepest, first *DecayRow
	flagged, models := 0, 0
	for i := range dr.Decay {
		d := &dr.Decay[i]
		if d.OracleMode != mode || d.Path != benchmark.RevisionRequired {
			continue
		}
		switch {
		case d.Group && d.Unit == groupAll && d.Stage == 1:
			first = d
		case d.Group && d.Unit == groupAll && d.Stage == benchmark.StageAttributeExtraction:
			deepest = d
		case !d.Group && d.Stage == benchmark.StageAttributeExtraction:
			models++
			if d.Precipitous {
				flagged++
			}
		}
	}
	if deepest == nil || first == nil || !deepest.RatioValid {
		v.Reason = "no model run with revision_required records scored at stage 1 and 4"
		return v
	}
	v.Reason = fmt.Sprintf("revision_required, mean of %d model(s): end-to-end accuracy at stage 1 %s%% [%s–%s], at stage 4 %s%% [%s–%s]; ratio stage 4 / stage 1 %.2f [%.2f–%.2f]; %d of %d model(s) flagged individually",
		deepest.NModels, pts(first.Acc), pts(first.AccLo), pts(first.AccHi), pts(deepest.Acc), pts(deepest.AccLo), pts(deepest.AccHi),
		deepest.Ratio, deepest.RLo, deepest.RHi, flagged, models)
	switch {
	case deepest.NModels < 2:
		v.Reason += "; one model says nothing about models in general"
	case deepest.N < MinDecayRecords:
		v.Reason += fmt.Sprintf("; %d revision-required records at stage 4 are fewer than the %d a verdict needs", deepest.N, MinDecayRecords)
	case deepest.RHi < PrecipitousBelow:
		v.Status = supported
	case deepest.RLo >= PrecipitousBelow:
		v.Status = notSupported
	default:
		v.Reason += fmt.Sprintf("; the interval straddles %.2f", PrecipitousBelow)
	}
	return v
}

// domainVerdict decides claim 2 in a mode from the medical − general
// rows (every path and stage).
func domainVerdict(dr *DomainResult, mode string) Verdict {
	v := Verdict{Claim: 2, OracleMode: mode, Status: Undecided}
	if dr.Ungrouped {
		v.Status = NotAssessed
		v.Reason = "pass --domains FILE to give the models their domain groups (none of this report's models has a domain in the model registry)"
		return v
	}
	var rows []*DiffRow
	for i := range dr.Diffs {
		d := &dr.Diffs[i]
		if d.OracleMode == mode && d.Comparison == ComparisonDomain && d.Valid {
			rows = append(rows, d)
		}
	}
	if len(rows) == 0 {
		v.Reason = "needs at least one medical and one general model"
		return v
	}
	nm, ng := rows[0].NA, rows[0].NB
	for _, d := range rows {
		nm, ng = min(nm, d.NA), min(ng, d.NB)
	}
	size := fmt.Sprintf("%d medical and %d general model(s)", nm, ng)
	if nm < 2 || ng < 2 {
		v.Reason = size + ": with one model in a group, a model's quirks cannot be told from its domain; the permutation test's smallest p here is " + fmt.Sprintf("%.3f", rows[0].MinP)
		return v
	}
	if rows[0].MinP > 0.05 {
		v.Reason = fmt.Sprintf("%s: the permutation test's smallest p is %.3f, so no difference could reach p ≤ 0.05", size, rows[0].MinP)
		return v
	}
	worst := rows[0]
	for _, d := range rows {
		if d.Lo > 0 && d.P <= 0.05 {
			v.Status = notSupported
			v.Reason = fmt.Sprintf("%s: medical ahead on %s stage %d by %s points [%s, %s], permutation p = %.3f", size, d.Path, d.Stage, spts(d.Diff), spts(d.Lo), spts(d.Hi), d.P)
			return v
		}
		if d.Hi > worst.Hi {
			worst = d
		}
	}
	cell := fmt.Sprintf("%s: medical − general at most %s points (upper bound, %s stage %d: %s [%s, %s], p = %.3f)",
		size, spts(worst.Hi), worst.Path, worst.Stage, spts(worst.Diff), spts(worst.Lo), spts(worst.Hi), worst.P)
	if worst.Hi < AdvantageMargin {
		v.Status, v.Reason = supported, cell
		return v
	}
	v.Reason = cell + fmt.Sprintf("; an advantage of %s points or more is not excluded", pts(AdvantageMargin))
	return v
}
