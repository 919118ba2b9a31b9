package analysis

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/chexpercept/chexpercept/internal/rng"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestBootstrapSeeding(t *testing.T) {
	xs := []float64{0, 1, 2, 3, 4, 4, 2, 1}
	// With B = 1 both bounds are the single replicate, which we recompute
	// from the label: the kind and the SHA-256 of the sorted values.
	sorted := slices.Sorted(slices.Values(xs))
	var data []byte
	for _, x := range sorted {
		data = binary.BigEndian.AppendUint64(data, math.Float64bits(x))
	}
	sum := sha256.Sum256(data)
	r := rng.New(fmt.Sprintf("chexpercept/bootstrap/%d/depth/%x", 20260619, sum))
	s := 0.0
	for range xs {
		s += sorted[r.UintN(uint64(len(xs)))]
	}
	want := s / float64(len(xs))
	lo, hi, ok := bootstrapMean(xs, 1, defaultSeed, kindDepth)
	if !ok || lo != want || hi != want {
		t.Fatalf("B=1 replicate = [%v,%v], want %v", lo, hi, want)
	}
	// Deterministic, the same for the same data in any order, and
	// specific to the kind.
	lo1, hi1, _ := bootstrapMean(xs, 2000, defaultSeed, kindDepth)
	lo2, hi2, _ := bootstrapMean(xs, 2000, defaultSeed, kindDepth)
	if lo1 != lo2 || hi1 != hi2 {
		t.Fatal("bootstrap not deterministic")
	}
	rev := slices.Clone(xs)
	slices.Reverse(rev)
	if lo, hi, _ := bootstrapMean(rev, 2000, defaultSeed, kindDepth); lo != lo1 || hi != hi1 {
		t.Errorf("the same values in another order: [%v,%v], want [%v,%v]", lo, hi, lo1, hi1)
	}
	lo3, hi3, _ := bootstrapMean(xs, 2000, defaultSeed, kindDepth+"x")
	if lo3 == lo1 && hi3 == hi1 {
		t.Error("different kinds gave the same interval")
	}
	m := 17.0 / 8
	if !(lo1 < m && m < hi1) || lo1 < 0 || hi1 > 4 {
		t.Errorf("interval [%v,%v] does not hold the mean %v", lo1, hi1, m)
	}
	if lo, hi, _ := bootstrapMean([]float64{2, 2, 2}, 100, 1, "c"); lo != 2 || hi != 2 {
		t.Errorf("constant series: [%v,%v]", lo, hi)
	}
	if _, _, ok := bootstrapMean(nil, 100, 1, "c"); ok {
		t.Error("empty series should not be valid")
	}
	// Paired: identical series differ by exactly 0; a constant shift by it.
	if lo, hi, _ := bootstrapPairedDiff(xs, xs, 500, 1, "p"); lo != 0 || hi != 0 {
		t.Errorf("paired identical: [%v,%v]", lo, hi)
	}
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = x - 1
	}
	if lo, hi, _ := bootstrapPairedDiff(xs, ys, 500, 1, "p"); !near(lo, 1, 1e-12) || !near(hi, 1, 1e-12) {
		t.Errorf("paired shift: [%v,%v]", lo, hi)
	}
}
