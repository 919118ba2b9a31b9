package stats

import (
	"math"
	"slices"
)

// BootstrapMean returns the percentile 95 % bootstrap interval of the
// mean of xs (Efron & Tibshirani 1993): b replicates, each the mean of
// len(xs) values drawn with replacement by src.UintN, in the order xs
// is given. ok is false when xs is empty or b < 1.
func BootstrapMean(xs []float64, b int, src Source) (lo, hi float64, ok bool) {
	if len(xs) == 0 || b < 1 {
		return 0, 0, false
	}
	lo, hi = PercentileInterval(resampleMeans(xs, nil, b, src))
	return lo, hi, true
}

// BootstrapPairedDiff returns the percentile 95 % bootstrap interval of
// mean(a) − mean(b) over paired data: each of reps replicates draws
// len(a) indices with replacement by src.UintN and takes the same index
// in both series, so the pairing is kept. ok is false when the series
// are empty or of different lengths, or reps < 1.
func BootstrapPairedDiff(a, b []float64, reps int, src Source) (lo, hi float64, ok bool) {
	if len(a) == 0 || len(a) != len(b) || reps < 1 {
		return 0, 0, false
	}
	lo, hi = PercentileInterval(resampleMeans(a, b, reps, src))
	return lo, hi, true
}

// resampleMeans returns reps bootstrap replicates of the mean of a (b
// nil) or of the paired differences a − b: each the mean over len(a)
// indices drawn with replacement by src.UintN.
func resampleMeans(a, b []float64, reps int, src Source) []float64 {
	n := len(a)
	out := make([]float64, reps)
	un := uint64(n)
	for i := range out {
		s := 0.0
		for j := 0; j < n; j++ {
			k := src.UintN(un)
			if b == nil {
				s += a[k]
			} else {
				s += a[k] - b[k]
			}
		}
		out[i] = s / float64(n)
	}
	return out
}

// PermutationP is the two-sided permutation test of mean(a) − mean(b)
// (Fisher 1935; Good 2005): p is the share of relabelings of the pooled
// values into groups of len(a) and len(b) whose |difference of means| is
// at least the observed one, the observed labelling included (ties within
// 1e−12 count as extreme). When there are at most maxExact relabelings
// all are enumerated (exact is true); otherwise draws random relabelings
// are taken by shuffling with src and p = (1 + #extreme)/(1 + draws)
// (Phipson & Smyth 2010). minP is the smallest p the test can give with
// these group sizes: 1/C(n, len(a)), doubled for equal groups, where a
// relabeling and its mirror image are equally extreme; no less than
// 1/(1 + draws) when drawn. Both groups must be non-empty.
func PermutationP(a, b []float64, maxExact, draws int, src Source) (p, minP float64, exact bool) {
	pool := append(slices.Clone(a), b...)
	n, k := len(pool), len(a)
	total := 0.0
	for _, x := range pool {
		total += x
	}
	diff := func(sumA float64) float64 { return sumA/float64(k) - (total-sumA)/float64(n-k) }
	obs := math.Abs(diff(sum(a)))
	const eps = 1e-12
	c := binomial(n, k)
	minP = 1 / c
	if 2*k == n {
		minP = 2 / c
	}
	if c <= float64(maxExact) {
		count := 0
		idx := make([]int, k)
		for i := range idx {
			idx[i] = i
		}
		for {
			s := 0.0
			for _, i := range idx {
				s += pool[i]
			}
			if math.Abs(diff(s)) >= obs-eps {
				count++
			}
			if !nextCombination(idx, n) {
				break
			}
		}
		return float64(count) / c, min(1, minP), true
	}
	perm := make([]int, n)
	count := 0
	for d := 0; d < draws; d++ {
		for i := range perm {
			perm[i] = i
		}
		shuffle(src, perm)
		s := 0.0
		for _, i := range perm[:k] {
			s += pool[i]
		}
		if math.Abs(diff(s)) >= obs-eps {
			count++
		}
	}
	return float64(1+count) / float64(1+draws), max(minP, 1/float64(1+draws)), false
}

// shuffle permutes xs uniformly by Fisher–Yates, from the last element
// down, drawing each swap partner with src.
func shuffle(src Source, xs []int) {
	for i := len(xs) - 1; i >= 1; i-- {
		j := src.UintN(uint64(i + 1))
		xs[i], xs[j] = xs[j], xs[i]
	}
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

// nextCombination advances idx (k ascending indices below n) to the next
// combination in lexicographic order; false after the last.
func nextCombination(idx []int, n int) bool {
	k := len(idx)
	i := k - 1
	for i >= 0 && idx[i] == n-k+i {
		i--
	}
	if i < 0 {
		return false
	}
	idx[i]++
	for j := i + 1; j < k; j++ {
		idx[j] = idx[j-1] + 1
	}
	return true
}
