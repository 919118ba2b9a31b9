package review

import (
	"slices"
	"sort"

	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/stats"
)

// categories are the decision categories agreement is measured on.
var categories = []string{reviewlog.DecisionAccept, reviewlog.DecisionReject, reviewlog.DecisionUnsure}

// CohenKappa is Cohen's κ (stats.CohenKappa) of two reviewers over
// paired decisions (equal length; categories accept/reject/unsure). NaN
// when it is undefined: no pairs, a decision outside the categories, or
// both reviewers giving one and the same decision throughout.
func CohenKappa(a, b []string) float64 {
	ia, ib := make([]int, len(a)), make([]int, len(b))
	for i, d := range a {
		ia[i] = slices.Index(categories, d)
	}
	for i, d := range b {
		ib[i] = slices.Index(categories, d)
	}
	return stats.CohenKappa(ia, ib, len(categories))
}

// FleissKappa is Fleiss' κ (stats.FleissKappa) for cases each decided by
// the same number m ≥ 2 of reviewers; counts[i][j] is how many put case i
// in category j. NaN when it is undefined (no cases, fewer than two
// reviewers, or every decision in one category).
func FleissKappa(counts [][3]int) float64 {
	rows := make([][]int, len(counts))
	for i := range counts {
		rows[i] = counts[i][:]
	}
	return stats.FleissKappa(rows)
}

// PairAgreement is Cohen's κ of one pair of reviewers over the cases both
// have decided.
type PairAgreement struct {
	A, B   string
	N      int     // cases both decided
	Agree  int     // of which they gave the same decision
	Kappa  float64 // NaN when undefined
	Shared int     // cases assigned to both
}

// Agreement summarises reviewer agreement over the store's state.
type Agreement struct {
	Pairs []PairAgreement // every pair sharing at least one case, by names
	// Fleiss' κ over the cases with exactly M assigned reviewers (M ≥ 2,
	// the most common overlap) that all of them decided.
	FleissN     int
	FleissM     int
	FleissKappa float64
}

// ComputeAgreement derives the pairwise and overall agreement from a
// snapshot (latest decision per reviewer; admin resolutions do not count).
func ComputeAgreement(st []*CaseState) Agreement {
	type key struct{ a, b string }
	pairs := map[key]*struct {
		shared int
		ra, rb []string
	}{}
	mCount := map[int]int{}
	for _, cs := range st {
		if len(cs.Assigned) >= 2 {
			mCount[len(cs.Assigned)]++
		}
		for i := range cs.Assigned {
			for j := i + 1; j < len(cs.Assigned); j++ {
				a, b, ai, bi := cs.Assigned[i], cs.Assigned[j], i, j
				if naturalLess(b, a) {
					a, b, ai, bi = b, a, j, i
				}
				p := pairs[key{a, b}]
				if p == nil {
					p = &struct {
						shared int
						ra, rb []string
					}{}
					pairs[key{a, b}] = p
				}
				p.shared++
				if da, db := cs.Latest[ai], cs.Latest[bi]; da != nil && db != nil {
					p.ra = append(p.ra, da.Decision)
					p.rb = append(p.rb, db.Decision)
				}
			}
		}
	}
	var ag Agreement
	for k, p := range pairs {
		pa := PairAgreement{A: k.a, B: k.b, N: len(p.ra), Shared: p.shared, Kappa: CohenKappa(p.ra, p.rb)}
		for i := range p.ra {
			if p.ra[i] == p.rb[i] {
				pa.Agree++
			}
		}
		ag.Pairs = append(ag.Pairs, pa)
	}
	sort.Slice(ag.Pairs, func(i, j int) bool {
		if ag.Pairs[i].A != ag.Pairs[j].A {
			return naturalLess(ag.Pairs[i].A, ag.Pairs[j].A)
		}
		return naturalLess(ag.Pairs[i].B, ag.Pairs[j].B)
	})
	for m, c := range mCount {
		if c > mCount[ag.FleissM] || (c == mCount[ag.FleissM] && m < ag.FleissM) {
			ag.FleissM = m
		}
	}
	var counts [][3]int
	if ag.FleissM >= 2 {
	cases:
		for _, cs := range st {
			if len(cs.Assigned) != ag.FleissM {
				continue
			}
			var row [3]int
			for _, a := range cs.Latest {
				if a == nil {
					continue cases
				}
				row[slices.Index(categories, a.Decision)]++
			}
			counts = append(counts, row)
		}
	}
	ag.FleissN = len(counts)
	ag.FleissKappa = FleissKappa(counts)
	return ag
}

// naturalLess orders reviewer names so that r2 < r10.
func naturalLess(a, b string) bool {
	if len(a) != len(b) {
		pa, pb := prefixLen(a), prefixLen(b)
		if a[:pa] == b[:pb] && pa < len(a) && pb < len(b) {
			return len(a) < len(b)
		}
	}
	return a < b
}

func prefixLen(s string) int {
	i := 0
	for i < len(s) && !(s[i] >= '0' && s[i] <= '9') {
		i++
	}
	return i
}
