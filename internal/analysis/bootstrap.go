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
	"github.com/chexpercept/chexpercept/internal/stats"
)

// DefaultBootstrap and defaultSeed are the spec's bootstrap defaults.
const (
	DefaultBootstrap = 2000
	defaultSeed      = 20260619
)

// Bootstrap cell kinds: the first part of a cell's RNG label, after
// which comes the digest of the cell's data (cellLabel).
const (
	kindDepth  = "depth"  // a run's mean depth in one cell
	kindDecay  = "decay"  // one run on a decay path, all stages at once
	kindDomain = "domain" // a group on a path (two levels), all stages at once
	// A paired comparison's kind is its metric: e2e_<k>, op_<k> or depth.
)

// cellLabel is the RNG label of one bootstrap cell: its kind and the
// SHA-256 of its data, never a run name, so that identical answers give
// identical intervals whatever the runs are called. The data are put in
// a canonical order first (see bootstrapMean), as a resample's
// distribution does not depend on the order of the records.
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

// bootstrapMean is the percentile 95 % interval of the mean of xs over b
// replicates (stats.BootstrapMean) on the values sorted, drawn from the
// cell's own RNG (cellLabel of kind and the sorted values). ok is false
// when xs is empty or b < 1.
func bootstrapMean(xs []float64, b int, seed uint64, kind string) (lo, hi float64, ok bool) {
	if len(xs) == 0 || b < 1 {
		return 0, 0, false
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return stats.BootstrapMean(xs, b, rng.New(cellLabel(seed, kind, bitsOf(nil, xs...))))
}

// bootstrapPairedDiff is the percentile 95 % interval of mean(a) −
// mean(b) over paired resamples (stats.BootstrapPairedDiff) on the pairs
// sorted, drawn from the RNG seeded from kind and the sorted pairs.
func bootstrapPairedDiff(a, bs []float64, b int, seed uint64, kind string) (lo, hi float64, ok bool) {
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
	sa, sb := make([]float64, n), make([]float64, n)
	for i, p := range pairs {
		data = bitsOf(data, p[0], p[1])
		sa[i], sb[i] = p[0], p[1]
	}
	return stats.BootstrapPairedDiff(sa, sb, b, rng.New(cellLabel(seed, kind, data)))
}
