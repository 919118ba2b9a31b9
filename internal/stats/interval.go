package stats

import (
	"math"
	"slices"
)

// z95 is the two-sided 95 % standard normal quantile, Φ⁻¹(0.975), used
// by every Wilson interval.
const z95 = 1.959963984540054

// Wilson returns the Wilson score interval (Wilson 1927; method 3 of
// Newcombe 1998a) at 95 % for k successes out of n: the proportions p
// whose score test of k/n does not reject, centre (p̂ + z²/2n)/(1 + z²/n)
// and half-width z·√(p̂(1−p̂)/n + z²/4n²)/(1 + z²/n), clamped to [0, 1].
// ok is false when n is 0.
func Wilson(k, n int) (lo, hi float64, ok bool) {
	if n <= 0 {
		return 0, 0, false
	}
	fn := float64(n)
	p := float64(k) / fn
	z2 := z95 * z95
	den := 1 + z2/fn
	centre := (p + z2/(2*fn)) / den
	half := z95 * math.Sqrt(p*(1-p)/fn+z2/(4*fn*fn)) / den
	return clamp01(centre - half), clamp01(centre + half), true
}

func clamp01(x float64) float64 { return min(1, max(0, x)) }

// Newcombe returns the 95 % interval of the difference pa − pb of two
// independent shares by Newcombe's hybrid score method (Newcombe 1998b,
// method 10; the MOVER of two Wilson intervals): with (la, ua) the Wilson
// interval of ka of na and (lb, ub) that of kb of nb, the bounds are
// d − √((pa − la)² + (ub − pb)²) and d + √((ua − pa)² + (pb − lb)²),
// clamped to [−1, 1]. pa and pb are the point estimates: ka/na and kb/nb
// give method 10 itself; a caller whose point differs from the pooled
// share (a mean of several units' shares) passes its own, and each Wilson
// interval is widened to hold its point. ok is false when a sample is
// empty or a point is NaN.
func Newcombe(pa float64, ka, na int, pb float64, kb, nb int) (lo, hi float64, ok bool) {
	la, ua, okA := Wilson(ka, na)
	lb, ub, okB := Wilson(kb, nb)
	if !okA || !okB || math.IsNaN(pa) || math.IsNaN(pb) {
		return 0, 0, false
	}
	la, ua = min(la, pa), max(ua, pa)
	lb, ub = min(lb, pb), max(ub, pb)
	d := pa - pb
	lo = d - math.Sqrt((pa-la)*(pa-la)+(ub-pb)*(ub-pb))
	hi = d + math.Sqrt((ua-pa)*(ua-pa)+(pb-lb)*(pb-lb))
	return max(lo, -1), min(hi, 1), true
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of sorted by linear
// interpolation between order statistics at position (n−1)·q (Hyndman &
// Fan 1996, definition 7); NaN when sorted is empty.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := float64(len(sorted)-1) * q
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// PercentileInterval is the percentile 95 % interval of bootstrap
// replicates (Efron & Tibshirani 1993, §13.3): their 2.5 % and 97.5 %
// quantiles by [Quantile]. It sorts reps in place.
func PercentileInterval(reps []float64) (lo, hi float64) {
	slices.Sort(reps)
	return Quantile(reps, 0.025), Quantile(reps, 0.975)
}
