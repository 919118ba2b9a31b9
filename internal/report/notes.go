package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark"
)

// Notes under a table say what its numbers alone would mislead about:
// a stage counted over fewer records than the row's n, and a majority row
// decided by a tie. Each is derived from the numbers, so it appears only
// where it is true.

// StageNote is "" when, on every path of paths, every run of runs counts
// each applicable stage over its n (the path's records), and otherwise
// one sentence saying which stage counts fewer and why: stage 4 leaves out
// the records of heart-type lesions, which have no stage 4.
func StageNote(res *analysis.Result, runs []*analysis.RunResult, paths ...benchmark.Path) string {
	var parts []string
	fewer := map[benchmark.Stage]bool{}
	for _, p := range paths {
		for _, k := range benchmark.Stages {
			counts := map[[2]int]bool{}
			for _, rr := range runs {
				if !rr.Scored {
					continue
				}
				n := rr.DepthOf(p, "all").N
				c := rr.Stage(p, "all", k)
				if c == nil || !c.Applicable || !c.E2E.Valid || c.E2E.N == n {
					continue
				}
				counts[[2]int{c.E2E.N, n}] = true
			}
			if len(counts) == 0 {
				continue
			}
			fewer[k] = true
			if len(counts) == 1 {
				for nk := range counts {
					parts = append(parts, fmt.Sprintf("on %s, stage %d is over %d of the %d records", p, k, nk[0], nk[1]))
				}
			} else {
				parts = append(parts, fmt.Sprintf("on %s, stage %d is over fewer records than n", p, k))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	why := "a stage counts only the records it applies to"
	if heart := heartLesions(res, runs, paths); len(heart) > 0 && len(fewer) == 1 && fewer[benchmark.StageAttributeExtraction] {
		why = fmt.Sprintf("stage 4 leaves out the records of heart-type lesions (%s), which have no stage 4", strings.Join(heart, ", "))
	}
	return fmt.Sprintf("n counts the path's records; %s: %s.", why, strings.Join(parts, "; "))
}

// heartLesions lists the lesions that have stage 1 but no stage 4 on one
// of paths in a run of runs: the heart-type lesions of the records.
func heartLesions(res *analysis.Result, runs []*analysis.RunResult, paths []benchmark.Path) []string {
	var out []string
	for _, l := range res.Lesions {
		if l == "all" || slices.Contains(out, l) {
			continue
		}
		for _, rr := range runs {
			if !rr.Scored {
				continue
			}
			for _, p := range paths {
				c1, c4 := rr.Stage(p, l, 1), rr.Stage(p, l, 4)
				if c1 != nil && c1.Applicable && c1.E2E.N > 0 && c4 != nil && !c4.Applicable && benchmark.StageApplies(p, false, 4) {
					if !slices.Contains(out, l) {
						out = append(out, l)
					}
				}
			}
		}
	}
	return out
}

// leaderboardNote is the note under the leaderboard: its stage-4 columns
// count fewer records than its Records column when heart-type lesions
// are among the records.
func leaderboardNote(res *analysis.Result, runs []*analysis.RunResult) string {
	heart := heartLesions(res, runs, []benchmark.Path{benchmark.RevisionRequired, benchmark.RevisionFree})
	if len(heart) == 0 {
		return ""
	}
	return fmt.Sprintf("The stage-4 columns leave out the records of heart-type lesions (%s), which have no stage 4; "+
		"the stage tables below give each stage's records.", strings.Join(heart, ", "))
}

// majorityTieNote is the note under a stage table's majority row when an
// answer it gives on path won a tie: the row's stage then follows from
// the tie rule (the first answer in byte order), not from the benchmark.
func majorityTieNote(res *analysis.Result, path benchmark.Path) string {
	if res.Chance == nil {
		return ""
	}
	var parts []string
	for _, k := range benchmark.Stages {
		if !benchmark.StageApplies(path, false, k) {
			continue
		}
		for _, q := range k.Questions() {
			if n := res.Chance.MajorityTied[q]; n > 1 {
				parts = append(parts, fmt.Sprintf("%d answers of %s (stage %d) are equally frequent over the benchmark, "+
					"and of a tie the row gives the first in byte order, %q", n, q.Name(), k, res.Chance.Majority[q]))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	which := "that stage"
	if len(parts) > 1 {
		which = "these stages"
	}
	return "*majority*: " + strings.Join(parts, "; ") + ". Its cells of " + which + " follow from this tie rule, not from an answer the benchmark favours."
}
