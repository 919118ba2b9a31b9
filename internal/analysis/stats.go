package analysis

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"strconv"

	"github.com/chexpercept/chexpercept/internal/rng"
)

// Z is the two-sided 95 % normal quantile used by every Wilson interval.
const Z = 1.959963984540054

// DefaultBootstrap and DefaultSeed are the spec's bootstrap defaults.
const (
	DefaultBootstrap = 2000
	DefaultSeed      = 20260619
)

// Wilson returns the Wilson score interval of k successes out of n
// (spec protocol.md §10.3). ok is false when n is 0.
func Wilson(k, n int) (lo, hi float64, ok bool) {
	if n <= 0 {
		return 0, 0, false
	}
	fn := float64(n)
	p := float64(k) / fn
	z2 := Z * Z
	den := 1 + z2/fn
	centre := (p + z2/(2*fn)) / den
	half := Z * math.Sqrt(p*(1-p)/fn+z2/(4*fn*fn)) / den
	return clamp01(centre - half), clamp01(centre + half), true
}

func clamp01(x float64) float64 { return min(1, max(0, x)) }

// Quantile returns the q-quantile of sorted xs by linear interpolation at
// position (len−1)·q.
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

// Bootstrap cell kinds: the first part of a cell's RNG label, after
// which comes the digest of the cell's data (cellLabel).
const (
	KindDepth  = "depth"  // a run's mean depth in one cell
	KindDecay  = "decay"  // one run on a decay path, all stages at once
	KindDomain = "domain" // a group on a path (two levels), all stages at once
	// A paired comparison's kind is its metric: e2e_<k>, op_<k> or depth.
)

// cellLabel is the RNG label of one bootstrap cell: its kind and the
// SHA-256 of its data, never a run name, so that identical answers give
// identical intervals whatever the runs are called. The data are put in
// a canonical order first (see sortedBits), as a resample's distribution
// does not depend on the order of the records.
func cellLabel(seed uint64, kind string, data []byte) string {
	sum := sha256.Sum256(data)
	return "chexpercept/bootstrap/" + strconv.FormatUint(seed, 10) + "/" + kind + "/" + hex.EncodeToString(sum[:])
}

// bitsOf appends the IEEE bits of each x to dst, big-endian.
func bitsOf(dst []byte, xs ...float64) []byte {
	for _, x := range xs {
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(x))
	}
	return dst
}

// BootstrapMean returns the percentile 95 % interval of the mean of xs
// over b replicates, each drawing len(xs) indices with UintN from the
// cell's own RNG (cellLabel of kind and the values, sorted). ok is false
// when xs is empty or b < 1.
func BootstrapMean(xs []float64, b int, seed uint64, kind string) (lo, hi float64, ok bool) {
	n := len(xs)
	if n == 0 || b < 1 {
		return 0, 0, false
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	r := rng.New(cellLabel(seed, kind, bitsOf(nil, xs...)))
	reps := make([]float64, b)
	un := uint64(n)
	for i := range reps {
		s := 0.0
		for j := 0; j < n; j++ {
			s += xs[r.UintN(un)]
		}
		reps[i] = s / float64(n)
	}
	slices.Sort(reps)
	return Quantile(reps, 0.025), Quantile(reps, 0.975), true
}

// BootstrapPairedDiff returns the percentile 95 % interval of mean(a) −
// mean(b) over paired resamples: each replicate draws len(a) indices and
// uses the same index in both series. The pairs are sorted, and the RNG
// seeded from kind and the sorted pairs.
func BootstrapPairedDiff(a, bs []float64, b int, seed uint64, kind string) (lo, hi float64, ok bool) {
	n := len(a)
	if n == 0 || n != len(bs) || b < 1 {
		return 0, 0, false
	}
	pairs := make([][2]float64, n)
	for i := range pairs {
		pairs[i] = [2]float64{a[i], bs[i]}
	}
	slices.SortFunc(pairs, func(x, y [2]float64) int {
		if c := cmp.Compare(x[0], y[0]); c != 0 {
			return c
		}
		return cmp.Compare(x[1], y[1])
	})
	data := make([]byte, 0, 16*n)
	for _, p := range pairs {
		data = bitsOf(data, p[0], p[1])
	}
	r := rng.New(cellLabel(seed, kind, data))
	reps := make([]float64, b)
	un := uint64(n)
	for i := range reps {
		s := 0.0
		for j := 0; j < n; j++ {
			p := pairs[r.UintN(un)]
			s += p[0] - p[1]
		}
		reps[i] = s / float64(n)
	}
	slices.Sort(reps)
	return Quantile(reps, 0.025), Quantile(reps, 0.975), true
}

// Percentile is the q-quantile (0..1) of unsorted xs, interpolated like
// Quantile; it sorts a copy.
func Percentile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return Quantile(s, q)
}

// Newcombe is the interval of the difference pa − pb of two independent
// shares by Newcombe's hybrid score method (the MOVER of two Wilson
// intervals): with (la, ua) the Wilson interval of ka of na and (lb, ub)
// that of kb of nb, the bounds are d − √((pa − la)² + (ub − pb)²) and
// d + √((ua − pa)² + (pb − lb)²). pa and pb are the point estimates (a
// group's mean of its models' shares, which may differ from its pooled
// share); each Wilson interval is widened to hold its point. ok is false
// when a group has no record.
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
