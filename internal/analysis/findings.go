package analysis

import (
	"fmt"

	"github.com/chexpercept/chexpercept/internal/benchmark"
)

// Verdict statuses.
const (
	Supported    = "supported"
	NotSupported = "not supported"
	Undecided    = "undecided at this sample size"
)

// Verdict is the finding on one claim in one oracle mode. Claim 1: deep
// stages decay precipitously; claim 2: medical models have no advantage
// over general ones.
type Verdict struct {
	Claim      int
	OracleMode string
	Status     string
	Reason     string // the numbers behind the status
}

// analyzeDomains runs the whole domain analysis of res.
func analyzeDomains(res *Result, o *Options) (*DomainResult, []string) {
	members, warns := assignGroups(res, &o.Domains)
	dr := &DomainResult{Members: members}
	var jobs []func()
	for _, mode := range res.Modes() {
		var groups []string
		for _, g := range groupOrder(members) {
			if len(groupRuns(members, g, mode)) > 0 {
				groups = append(groups, g)
			}
		}
		start := len(dr.Groups)
		for _, g := range groups {
			for _, path := range benchmark.Paths {
				for _, k := range benchmark.Stages {
					if benchmark.StageApplies(path, false, k) {
						dr.Groups = append(dr.Groups, GroupRow{Group: g, OracleMode: mode, Path: path, Stage: k})
					}
				}
			}
		}
		for i := start; i < len(dr.Groups); i++ {
			row := &dr.Groups[i]
			runs := groupRuns(members, row.Group, mode)
			jobs = append(jobs, func() { *row = groupRow(runs, row.Group, mode, pathIndex(row.Path), row.Stage, o) })
		}
		med, gen := groupRuns(members, GroupMedical, mode), groupRuns(members, GroupGeneral, mode)
		if len(med) > 0 && len(gen) > 0 {
			start := len(dr.Diffs)
			for _, path := range benchmark.Paths {
				for _, k := range benchmark.Stages {
					if benchmark.StageApplies(path, false, k) {
						dr.Diffs = append(dr.Diffs, DiffRow{OracleMode: mode, Path: path, Stage: k})
					}
				}
			}
			for i := start; i < len(dr.Diffs); i++ {
				row := &dr.Diffs[i]
				jobs = append(jobs, func() { *row = domainDiff(med, gen, mode, pathIndex(row.Path), row.Stage, o) })
			}
		}
	}
	decay, jobs := decayJobs(members, res.Modes(), o, jobs)
	runJobs(jobs, o.Workers)
	for _, rows := range decay {
		dr.Decay = append(dr.Decay, rows...)
	}
	pairs, pw := matchedPairs(members, o)
	dr.Diffs = append(dr.Diffs, pairs...)
	warns = append(warns, pw...)
	for _, mode := range res.Modes() {
		dr.Verdict = append(dr.Verdict, decayVerdict(dr, mode), domainVerdict(dr, mode))
	}
	return dr, warns
}

// decayJobs lays out the decay units (per mode and path: each run, then
// each group) and appends the jobs that fill their rows.
func decayJobs(members []DomainMember, modes []string, o *Options, jobs []func()) ([][]DecayRow, []func()) {
	type unit struct {
		name, cell, mode string
		group            bool
		runs             []*RunResult
		path             benchmark.Path
	}
	var units []unit
	for _, mode := range modes {
		for _, path := range DecayPaths {
			for _, m := range members {
				if m.Run.Run.OracleMode == mode {
					units = append(units, unit{m.Run.Run.Name, m.Run.Run.Name, mode, false, []*RunResult{m.Run}, path})
				}
			}
			for _, g := range groupOrder(members) {
				if runs := groupRuns(members, g, mode); len(runs) > 0 {
					units = append(units, unit{g, "group:" + g, mode, true, runs, path})
				}
			}
		}
	}
	out := make([][]DecayRow, len(units))
	for i, u := range units {
		jobs = append(jobs, func() {
			pi := pathIndex(u.path)
			var recs [][]decayRec
			for _, rr := range u.runs {
				if d := decayRecords(rr, pi); len(d) > 0 {
					recs = append(recs, d)
				}
			}
			if len(recs) == 0 {
				return
			}
			out[i] = decayRows(recs, u.name, u.cell, u.mode, u.group, u.path, o)
		})
	}
	return out, jobs
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
		base := o.Domains.Registry[a.Run.Run.Model].Base
		if base == "" {
			continue
		}
		for _, b := range members {
			if b.Run.Run.Model != base || b.Run.Run.OracleMode != a.Run.Run.OracleMode {
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
			row.B++
		case xa[i] < y:
			row.C++
		}
	}
	row.NPaired = len(va)
	row.MinP = McNemarP(row.NPaired, 0)
	if row.NPaired == 0 {
		return row
	}
	row.Valid, row.Diff = true, mean(va)-mean(vb)
	row.Lo, row.Hi, _ = BootstrapPairedDiff(va, vb, o.Bootstrap, o.Seed, PairCellID(fmt.Sprintf("e2e_%d", k), a.Run.Name, b.Run.Name, path, "all"))
	row.PValid, row.P = true, McNemarP(row.B, row.C)
	return row
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
		case d.Group && d.Unit == GroupAll && d.Stage == 1:
			first = d
		case d.Group && d.Unit == GroupAll && d.Stage == benchmark.StageAttributeExtraction:
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
	v.Reason = fmt.Sprintf("revision_required, mean of %d model(s): e2e stage 1 %s%% [%s–%s], stage 4 %s%% [%s–%s]; ratio stage 4 / stage 1 %.2f [%.2f–%.2f]; %d of %d model(s) flagged individually",
		deepest.NModels, pts(first.Acc), pts(first.AccLo), pts(first.AccHi), pts(deepest.Acc), pts(deepest.AccLo), pts(deepest.AccHi),
		deepest.Ratio, deepest.RLo, deepest.RHi, flagged, models)
	switch {
	case deepest.NModels < 2:
		v.Reason += "; one model says nothing about models in general"
	case deepest.RHi < PrecipitousBelow:
		v.Status = Supported
	case deepest.RLo >= PrecipitousBelow:
		v.Status = NotSupported
	default:
		v.Reason += fmt.Sprintf("; the interval straddles %.2f", PrecipitousBelow)
	}
	return v
}

// domainVerdict decides claim 2 in a mode from the medical − general
// rows (every path and stage).
func domainVerdict(dr *DomainResult, mode string) Verdict {
	v := Verdict{Claim: 2, OracleMode: mode, Status: Undecided}
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
			v.Status = NotSupported
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
		v.Status, v.Reason = Supported, cell
		return v
	}
	v.Reason = cell + fmt.Sprintf("; an advantage of %s points or more is not excluded", pts(AdvantageMargin))
	return v
}
