package rng

import (
	"math"
	"slices"
	"testing"
)

func TestDeterministic(t *testing.T) {
	a, b := New("chexpercept/case/0/edema_ph0001_positive_0"), New("chexpercept/case/0/edema_ph0001_positive_0")
	for i := 0; i < 100; i++ {
		if a.U64() != b.U64() {
			t.Fatal("same label gave different streams")
		}
	}
	if New("x").U64() == New("y").U64() {
		t.Fatal("different labels gave the same first value")
	}
	if got := New("x").DigestHex(); len(got) != 64 {
		t.Fatalf("digest hex length %d", len(got))
	}
}

func TestUintNRange(t *testing.T) {
	r := New("range")
	counts := make([]int, 7)
	for i := 0; i < 70000; i++ {
		v := r.UintN(7)
		if v >= 7 {
			t.Fatalf("UintN(7) = %d", v)
		}
		counts[v]++
	}
	for v, c := range counts {
		if math.Abs(float64(c)-10000) > 500 {
			t.Errorf("value %d drawn %d times of 70000; want about 10000", v, c)
		}
	}
}

func TestPrimitives(t *testing.T) {
	r := New("prims")
	for i := 0; i < 1000; i++ {
		if v := r.IntRange(1, 3); v < 1 || v > 3 {
			t.Fatalf("IntRange(1,3) = %d", v)
		}
		if f := r.Float64(); f < 0 || f >= 1 {
			t.Fatalf("Float64 = %v", f)
		}
		if u := r.Uniform(0.5, 1.5); u < 0.5 || u >= 1.5 {
			t.Fatalf("Uniform = %v", u)
		}
	}
	xs := []int{1, 2, 3, 4, 5, 6, 7, 8}
	s := Sample(r, xs, 3)
	if len(s) != 3 {
		t.Fatalf("Sample len %d", len(s))
	}
	if !slices.Equal(xs, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatal("Sample modified its input")
	}
	if got := Sample(r, xs, 20); len(got) != 8 {
		t.Fatalf("Sample clamps k: len %d", len(got))
	}
	ys := slices.Clone(xs)
	Shuffle(r, ys)
	slices.Sort(ys)
	if !slices.Equal(xs, ys) {
		t.Fatal("Shuffle lost elements")
	}
}

// TestSampleMatchesDefinition checks Sample against the literal definition
// of the spec: copy; for i in 0..k-1 swap a[i], a[i+UintN(n-i)].
func TestSampleMatchesDefinition(t *testing.T) {
	xs := []string{"a", "b", "c", "d", "e"}
	r1, r2 := New("s"), New("s")
	got := Sample(r1, xs, 4)
	a := slices.Clone(xs)
	for i := 0; i < 4; i++ {
		j := i + int(r2.UintN(uint64(len(a)-i)))
		a[i], a[j] = a[j], a[i]
	}
	if !slices.Equal(got, a[:4]) {
		t.Fatalf("Sample = %v, definition gives %v", got, a[:4])
	}
}
