package source

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// LesionCounts is the sampling report of one lesion.
type LesionCounts struct {
	Lesion string
	// Pool sizes before caps.
	Global, Basic, ManifestPositive int
	NegativePool                    int
	// Candidates taken.
	Positives, Negatives int
	// Negatives skipped because their image was already used (§3).
	NegativeDuplicates int
	// MIMIC conversion drops (§3 items 4 and 5), filled by MergeMIMIC.
	NoLesionMask, DuplicatePositive int
}

// SampleReport summarises a Sample run.
type SampleReport struct {
	Seed    uint64
	Order   string
	Lesions []LesionCounts
}

// MergeMIMIC copies the per-lesion drop counts of a MIMIC conversion into
// the report.
func (r *SampleReport) MergeMIMIC(st *MIMICStats) {
	if st == nil {
		return
	}
	for i := range r.Lesions {
		l := r.Lesions[i].Lesion
		r.Lesions[i].NoLesionMask = st.NoLesionMask[l]
		r.Lesions[i].DuplicatePositive = st.DuplicatePositive[l]
	}
}

// Print writes the counts per lesion and label.
func (r *SampleReport) Print(w io.Writer) {
	fmt.Fprintf(w, "sampling seed %d, order %s\n", r.Seed, r.Order)
	for _, l := range r.Lesions {
		fmt.Fprintf(w, "%-14s positive %5d (pools: global %d, basic %d, manifest %d",
			l.Lesion, l.Positives, l.Global, l.Basic, l.ManifestPositive)
		if l.NoLesionMask > 0 || l.DuplicatePositive > 0 {
			fmt.Fprintf(w, "; dropped: no_lesion_mask %d, duplicate_positive %d", l.NoLesionMask, l.DuplicatePositive)
		}
		fmt.Fprintf(w, ")  negative %5d (pool %d, image already used %d)\n", l.Negatives, l.NegativePool, l.NegativeDuplicates)
	}
}

// Pool names of §13's sampling RNG labels.
const (
	poolGlobal           = "global"
	poolBasic            = "basic"
	poolNegative         = "negative"
	poolManifestPositive = "manifest-positive"
	poolManifestNegative = "manifest-negative"
)

// poolOf assigns a case to its §3 pool. MIMIC cases carry SourceType
// global/basic from FromMIMIC; everything else is a manifest case.
func poolOf(c *Case) string {
	switch {
	case c.Positive() && c.SourceType == "global":
		return poolGlobal
	case c.Positive() && c.SourceType == "basic":
		return poolBasic
	case c.Positive():
		return poolManifestPositive
	case c.SourceType == "global" || c.SourceType == "basic":
		return poolNegative
	}
	return poolManifestNegative
}

// Sample orders and caps cases into candidates (§3). cases must be in
// document order (as ReadSource and FromMIMIC return them). The result is,
// for each lesion of cfg.Lesions in the spec's lesion order, its positive
// candidates then its negative candidates; each returned case is a copy
// with Rank (0-based within lesion and label), SourceType and SampleSeed
// set. Lines of lesions outside cfg.Lesions are ignored. It stops, with
// ctx's error, once ctx ends (checked at every lesion and pool).
func Sample(ctx context.Context, cases []*Case, cfg buildcfg.Config, seed uint64) ([]*Case, SampleReport, error) {
	rep := SampleReport{Seed: seed, Order: cfg.SamplingOrder}
	wanted := map[string]bool{}
	for _, l := range cfg.Lesions {
		wanted[l] = true
	}
	pools := map[string]map[string][]*Case{} // lesion → pool → cases, document order
	for i, c := range cases {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, rep, ctx.Err()
		}
		if !wanted[c.Lesion] {
			continue
		}
		if pools[c.Lesion] == nil {
			pools[c.Lesion] = map[string][]*Case{}
		}
		p := poolOf(c)
		pools[c.Lesion][p] = append(pools[c.Lesion][p], c)
	}
	order := func(lesion, pool string) []*Case {
		xs := append([]*Case(nil), pools[lesion][pool]...)
		if cfg.SamplingOrder == "file_order" {
			return xs
		}
		sort.SliceStable(xs, func(i, j int) bool { return xs[i].KeyID() < xs[j].KeyID() })
		rng.Shuffle(rng.New(fmt.Sprintf("chexpercept/sample/%d/%s/%s", seed, lesion, pool)), xs)
		return xs
	}
	var lesions []string
	for _, l := range cfg.LesionSet().Names() {
		if wanted[l] {
			lesions = append(lesions, l)
		}
	}
	positives := map[string][]*Case{}
	used := map[string]bool{}
	for _, l := range lesions {
		if err := ctx.Err(); err != nil {
			return nil, rep, err
		}
		var ps []*Case
		for _, p := range []string{poolGlobal, poolBasic, poolManifestPositive} {
			ps = append(ps, order(l, p)...)
		}
		if len(ps) > cfg.MaxPositiveCandidates {
			ps = ps[:max(0, cfg.MaxPositiveCandidates)]
		}
		positives[l] = ps
		if cfg.ExcludePositiveImagesFromNegatives {
			for _, c := range ps {
				used[c.DedupKey()] = true
			}
		}
	}
	var out []*Case
	take := func(c *Case, rank int) {
		cc := *c
		cc.Rank = rank
		if cc.SourceType == "" {
			cc.SourceType = "manifest"
		}
		s := seed
		cc.SampleSeed = &s
		out = append(out, &cc)
	}
	for _, l := range lesions {
		if err := ctx.Err(); err != nil {
			return nil, rep, err
		}
		lc := LesionCounts{
			Lesion:           l,
			Global:           len(pools[l][poolGlobal]),
			Basic:            len(pools[l][poolBasic]),
			ManifestPositive: len(pools[l][poolManifestPositive]),
			NegativePool:     len(pools[l][poolNegative]) + len(pools[l][poolManifestNegative]),
		}
		for i, c := range positives[l] {
			take(c, i)
		}
		lc.Positives = len(positives[l])
		var ns []*Case
		for _, p := range []string{poolNegative, poolManifestNegative} {
			ns = append(ns, order(l, p)...)
		}
		for _, c := range ns {
			if lc.Negatives >= cfg.MaxNegativeCandidates {
				break
			}
			k := c.DedupKey()
			if used[k] {
				lc.NegativeDuplicates++
				continue
			}
			used[k] = true
			take(c, lc.Negatives)
			lc.Negatives++
		}
		rep.Lesions = append(rep.Lesions, lc)
	}
	return out, rep, nil
}
