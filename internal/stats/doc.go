// Package stats holds the statistics the analysis and the apps share:
// intervals for shares and their differences, resampling intervals,
// significance tests and chance-corrected agreement. It knows nothing of
// benchmarks, runs or reviews: its inputs are counts, scores and ratings,
// its outputs numbers.
//
// The model throughout is the textbook one. A share is k successes out of
// n independent trials of one probability; a difference of two shares
// compares two independent samples (Newcombe), or paired outcomes
// (McNemar, paired bootstrap); a permutation test exchanges the labels of
// two groups of independent units under the null of no difference; a
// correlation's test assumes a bivariate normal; agreement is corrected
// for the agreement expected from the raters' marginal category shares
// (Cohen, Fleiss). Every interval is two-sided at 95 %.
//
// Undefined results are signalled, never guessed: an interval comes with
// ok false (an empty sample), a statistic as NaN (a constant series, one
// category only). Randomness enters only through a [Source] the caller
// seeds, so the same inputs and source give the same bytes.
package stats

// Source is the stream of random draws a resampling method consumes:
// UintN returns a uniform integer in [0, n) for n ≥ 1. The project's
// labelled generator (internal/rng) is one.
type Source interface {
	UintN(n uint64) uint64
}
