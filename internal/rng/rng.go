// Package rng is the project's one source of seeded randomness.
//
// Every random choice in a build, in evaluation sampling, in the random
// baseline and in bootstrap intervals goes through an RNG made here, so that
// the same inputs and seed give the same bytes on every run and at any
// parallelism. The generator is PCG-DXSM (math/rand/v2) seeded from the
// SHA-256 of a label string, and the primitives below are defined exactly
// (spec build.md §13) so results never depend on library internals.
package rng

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"math/rand/v2"
)

// RNG draws from one PCG-DXSM stream. It is not safe for concurrent use;
// each case, stratum or bootstrap cell owns its own.
type RNG struct {
	pcg    *rand.PCG
	digest [32]byte
}

// New returns the RNG seeded from SHA-256(label): the first 8 digest bytes
// (big-endian) are s1, the next 8 are s2.
func New(label string) *RNG {
	d := sha256.Sum256([]byte(label))
	s1 := binary.BigEndian.Uint64(d[0:8])
	s2 := binary.BigEndian.Uint64(d[8:16])
	return &RNG{pcg: rand.NewPCG(s1, s2), digest: d}
}

// DigestHex is the 64 lowercase hex digits of the seeding digest (the
// "case seed" recorded in cases.jsonl).
func (r *RNG) DigestHex() string { return hex.EncodeToString(r.digest[:]) }

// U64 returns the next raw 64-bit value.
func (r *RNG) U64() uint64 { return r.pcg.Uint64() }

// UintN returns a uniform value in [0, n) by Lemire's multiply-shift with
// rejection, without a power-of-two shortcut. n must be > 0.
func (r *RNG) UintN(n uint64) uint64 {
	if n == 0 {
		panic("rng: UintN(0)")
	}
	hi, lo := bits.Mul64(r.U64(), n)
	if lo < n {
		thr := -n % n
		for lo < thr {
			hi, lo = bits.Mul64(r.U64(), n)
		}
	}
	return hi
}

// IntN is UintN for int arguments.
func (r *RNG) IntN(n int) int { return int(r.UintN(uint64(n))) }

// IntRange returns a uniform int in [a, b], inclusive.
func (r *RNG) IntRange(a, b int) int { return a + int(r.UintN(uint64(b-a+1))) }

// Coin returns true with probability 1/2.
func (r *RNG) Coin() bool { return r.UintN(2) == 1 }

// Float64 returns a uniform float64 in [0, 1) with 53 random bits.
func (r *RNG) Float64() float64 { return float64(r.U64()>>11) * (1.0 / (1 << 53)) }

// Uniform returns a + (b-a)·Float64().
func (r *RNG) Uniform(a, b float64) float64 { return a + float64((b-a)*r.Float64()) }

// Choice returns xs[UintN(len(xs))]. xs must not be empty.
func Choice[T any](r *RNG, xs []T) T { return xs[r.UintN(uint64(len(xs)))] }

// Shuffle permutes xs in place: for i = n−1 down to 1, swap xs[i] and
// xs[UintN(i+1)].
func Shuffle[T any](r *RNG, xs []T) {
	for i := len(xs) - 1; i >= 1; i-- {
		j := r.UintN(uint64(i + 1))
		xs[i], xs[j] = xs[j], xs[i]
	}
}

// Sample returns k elements drawn without replacement, in draw order, by a
// partial Fisher–Yates shuffle of a copy of xs. k is clamped to [0, len(xs)].
func Sample[T any](r *RNG, xs []T, k int) []T {
	n := len(xs)
	if k > n {
		k = n
	}
	if k <= 0 {
		return []T{}
	}
	a := make([]T, n)
	copy(a, xs)
	for i := 0; i < k; i++ {
		j := i + int(r.UintN(uint64(n-i)))
		a[i], a[j] = a[j], a[i]
	}
	return a[:k:k]
}
