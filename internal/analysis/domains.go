package analysis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/stats"
)

// The domain analysis tests the paper's two claims on the runs at hand:
// end-to-end accuracy per domain group of models (general, medical,
// proprietary, and all models pooled) with a two-level bootstrap, the
// difference medical − general with a permutation test over model
// labels, matched medical/base pairs with McNemar's test, and the decay
// of accuracy along the sequential paths. The metric is e2e_k throughout
// (the paper's): the share of records with stages 1..k all correct.

// Group names. groupAll pools every non-baseline run of a mode.
const (
	groupGeneral     = "general"
	groupMedical     = "medical"
	groupProprietary = "proprietary"
	groupAll         = "all"
)

// ComparisonDomain names the medical − general rows of ext_domain_diff.csv.
const ComparisonDomain = "medical-general"

// PrecipitousBelow is the rule for a "precipitous drop": the upper bound
// of the 95 % interval of e2e_k / e2e_1 lies below this.
const PrecipitousBelow = 0.5

// MinDecayRecords is the fewest records a model (or pooled group) needs at
// a stage before its ratio may be called a precipitous drop or decide
// claim 1: a percentile bootstrap of a handful of records that are all
// wrong gives the zero-width interval [0, 0], a certainty the data do not
// hold (0 of 6 is compatible with a true 40 %).
const MinDecayRecords = 30

// AdvantageMargin is the smallest medical advantage (in accuracy, 0–1)
// the findings treat as an advantage: "no advantage" is supported only
// when every interval of medical − general lies below it.
const AdvantageMargin = 0.05

// Permutation test sizes: exact enumeration up to ExactPermLimit
// relabelings, else PermDraws seeded random relabelings.
const (
	ExactPermLimit = 20000
	PermDraws      = 9999
)

// DomainModel is what the model registry says about one alias.
type DomainModel struct{ Domain, Base string }

// DomainOptions configure the domain groups.
type DomainOptions struct {
	Registry  map[string]DomainModel // alias → domain and base
	Overrides map[string]string      // run name or model → group (a domains file)
	Source    string                 // the domains file, named in warnings
}

// DomainMember is a scored non-baseline run and its group.
type DomainMember struct {
	Run    *RunResult
	Group  string // "" when no group is known
	Source string // "registry", "domains file (run)", "domains file (model)"
}

// GroupRow is one line of ext_domain.csv: a group's mean e2e accuracy
// over its models, with a two-level bootstrap interval.
type GroupRow struct {
	Group, OracleMode string
	Path              benchmark.Path
	Stage             benchmark.Stage
	NModels, NItems   int
	Valid             bool
	Value, Lo, Hi     float64
}

// DiffRow is one line of ext_domain_diff.csv: medical − general (two
// groups) or a matched pair (Comparison "pair:A:B").
type DiffRow struct {
	Comparison, OracleMode string
	Path                   benchmark.Path
	Stage                  benchmark.Stage
	NA, NB                 int // models per group, or 1 and 1 for a pair
	Valid                  bool
	Diff, Lo, Hi           float64
	PValid                 bool
	P, MinP                float64 // MinP: the smallest p the test can give here
	Exact                  bool    // exact enumeration (or exact binomial for a pair)
	// Matched pairs only: the paired records and the discordant counts
	// (B: A correct and B wrong; C: A wrong and B correct).
	ModelA, ModelB string
	NPaired, B, C  int
}

// DecayRow is one stage of the decay along a path, for one model
// (Group false) or one group.
type DecayRow struct {
	Unit, OracleMode  string
	Group             bool
	Path              benchmark.Path
	Stage             benchmark.Stage
	NModels           int
	N                 int // records for which the stage applies (a group: its largest model's)
	AccValid          bool
	Acc, AccLo, AccHi float64
	RatioValid        bool
	Ratio, RLo, RHi   float64
	Precipitous       bool
}

// DomainResult is the whole domain analysis.
type DomainResult struct {
	Members []DomainMember
	Groups  []GroupRow
	Diffs   []DiffRow // medical − general rows, then matched pairs
	Decay   []DecayRow
	Verdict []Verdict
	// Ungrouped is set when no model has a domain group: claim 2 is not
	// assessed, claim 1 still is (on all models pooled).
	Ungrouped bool
}

// domainPermCellID is the cell id of the Monte Carlo permutations of
// medical − general.
func domainPermCellID(mode string, path benchmark.Path, k benchmark.Stage) string {
	return "domain-perm|" + groupMedical + "|" + groupGeneral + "|" + mode + "|" + string(path) + "|" + strconv.Itoa(int(k))
}

// assignGroups gives each scored non-baseline run its group: the domains
// file by run name, then by model, then the registry's domain.
func assignGroups(res *Result, o *DomainOptions) ([]DomainMember, []string) {
	var members []DomainMember
	var warns []string
	used := map[string]bool{}
	var missing []string
	for _, rr := range res.Runs {
		if !rr.Scored || !rr.Run.Kind.Model() { // baselines and controls are not grouped; readers are compared in readers.go
			continue
		}
		m := DomainMember{Run: rr}
		model := runModel(rr.Run)
		if g, ok := o.Overrides[rr.Run.Name]; ok {
			m.Group, m.Source = g, "domains file (run)"
			used[rr.Run.Name] = true
		} else if g, ok := o.Overrides[model]; ok && model != "" {
			m.Group, m.Source = g, "domains file (model)"
			used[model] = true
		} else if e, ok := o.Registry[model]; ok && e.Domain != "" {
			m.Group, m.Source = e.Domain, "registry"
		} else {
			missing = append(missing, rr.Run.ID())
		}
		members = append(members, m)
	}
	if len(missing) > 0 {
		warns = append(warns, fmt.Sprintf("domain groups: no domain known for %s (model not in the registry or without a domain, and not in a domains file); left out of the groups", strings.Join(missing, ", ")))
	}
	keys := make([]string, 0, len(o.Overrides))
	for k := range o.Overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if used[k] {
			continue
		}
		matched := false
		for _, rr := range res.Runs {
			if rr.Run.Name == k || runModel(rr.Run) == k {
				matched = true // e.g. a baseline, or a run also named by name
			}
		}
		if !matched {
			warns = append(warns, fmt.Sprintf("%s: %q names no run and no model of this report; ignored", o.Source, k))
		}
	}
	return members, warns
}

// runModel is the run's model as its manifest names it or, without a
// manifest, the label of its run name (§9.1: <provider>_<label>, less
// the _no_thinking and _strict suffixes).
func runModel(r *Run) string {
	if r.Model != "" {
		return r.Model
	}
	_, label, ok := strings.Cut(r.Name, "_")
	if !ok {
		return ""
	}
	label = strings.TrimSuffix(label, "_strict")
	return strings.TrimSuffix(label, "_no_thinking")
}

// groupOrder lists the groups present: general, medical, proprietary,
// any others in byte order, then all.
func groupOrder(members []DomainMember) []string {
	var extra []string
	have := map[string]bool{}
	for _, m := range members {
		if m.Group == "" {
			continue
		}
		have[m.Group] = true
		if !slices.Contains([]string{groupGeneral, groupMedical, groupProprietary}, m.Group) && !slices.Contains(extra, m.Group) {
			extra = append(extra, m.Group)
		}
	}
	slices.Sort(extra)
	var out []string
	for _, g := range []string{groupGeneral, groupMedical, groupProprietary} {
		if have[g] {
			out = append(out, g)
		}
	}
	out = append(out, extra...)
	if len(members) > 0 {
		out = append(out, groupAll)
	}
	return out
}

// groupRuns are the runs of a group in a mode (groupAll: every member).
func groupRuns(members []DomainMember, group, mode string) []*RunResult {
	var out []*RunResult
	for _, m := range members {
		if m.Run.Run.OracleMode == mode && (m.Group == group || (group == groupAll)) {
			out = append(out, m.Run)
		}
	}
	return out
}

// stageVector is a run's e2e_k outcomes (1 or 0) on the records of a
// path for which stage k applies, and their keys.
func stageVector(rr *RunResult, pi int, k benchmark.Stage) ([]float64, []string) {
	var xs []float64
	var keys []string
	for i := range rr.Scores {
		s := &rr.Scores[i]
		if s.Path != pi || !s.App[k-1] {
			continue
		}
		v := 0.0
		if s.chain(k) {
			v = 1
		}
		xs, keys = append(xs, v), append(keys, s.Key)
	}
	return xs, keys
}

// permutationP is the permutation test of medical − general
// (stats.PermutationP): every relabeling enumerated when there are at
// most ExactPermLimit, else PermDraws drawn from the cell's RNG (the
// seed and cellID).
func permutationP(a, b []float64, seed uint64, cellID string) (p, minP float64, exact bool) {
	r := rng.New("chexpercept/bootstrap/" + strconv.FormatUint(seed, 10) + "/" + cellID)
	return stats.PermutationP(a, b, ExactPermLimit, PermDraws, r)
}
