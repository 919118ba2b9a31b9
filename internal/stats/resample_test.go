package stats

import (
	"math"
	"testing"
)

// script is a Source that replays fixed draws (modulo n).
type script struct {
	draws []uint64
	i     int
}

func (s *script) UintN(n uint64) uint64 {
	v := s.draws[s.i%len(s.draws)] % n
	s.i++
	return v
}

// splitmix is a small deterministic Source for the Monte Carlo tests
// (SplitMix64; modulo bias is irrelevant here).
type splitmix uint64

func (s *splitmix) UintN(n uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return (z ^ (z >> 31)) % n
}

func TestBootstrapMean(t *testing.T) {
	xs := []float64{0, 1, 2, 3}
	tests := []struct {
		name   string
		xs     []float64
		b      int
		draws  []uint64
		lo, hi float64
		ok     bool
	}{
		// One replicate: both bounds are its mean, (3+3+0+1)/4.
		{"one replicate", xs, 1, []uint64{3, 3, 0, 1}, 1.75, 1.75, true},
		// Two replicates, (0+0+0+0)/4 and (3+3+3+3)/4: quantiles 0.075 and 2.925.
		{"two replicates", xs, 2, []uint64{0, 0, 0, 0, 3, 3, 3, 3}, 0.075, 2.925, true},
		{"constant", []float64{2, 2, 2}, 50, []uint64{0, 1, 2, 1}, 2, 2, true},
		{"empty", nil, 50, []uint64{0}, 0, 0, false},
		{"no replicate", xs, 0, []uint64{0}, 0, 0, false},
	}
	for _, tc := range tests {
		lo, hi, ok := BootstrapMean(tc.xs, tc.b, &script{draws: tc.draws})
		if ok != tc.ok || !near(lo, tc.lo, 1e-12) || !near(hi, tc.hi, 1e-12) {
			t.Errorf("%s: [%v, %v] %v, want [%v, %v] %v", tc.name, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
	src := splitmix(1)
	lo, hi, _ := BootstrapMean([]float64{0, 1, 2, 3, 4, 4, 2, 1}, 2000, &src)
	if m := 17.0 / 8; !(lo < m && m < hi) || lo < 0 || hi > 4 {
		t.Errorf("interval [%v, %v] does not hold the mean %v", lo, hi, m)
	}
}

func TestBootstrapPairedDiff(t *testing.T) {
	a := []float64{0, 1, 2, 3, 4, 4, 2, 1}
	shifted := make([]float64, len(a))
	for i, x := range a {
		shifted[i] = x - 1
	}
	tests := []struct {
		name   string
		a, b   []float64
		reps   int
		lo, hi float64
		ok     bool
	}{
		{"identical", a, a, 500, 0, 0, true},
		{"shift", a, shifted, 500, 1, 1, true},
		{"lengths differ", a, a[:3], 500, 0, 0, false},
		{"empty", nil, nil, 500, 0, 0, false},
		{"no replicate", a, a, 0, 0, 0, false},
	}
	for _, tc := range tests {
		src := splitmix(7)
		lo, hi, ok := BootstrapPairedDiff(tc.a, tc.b, tc.reps, &src)
		if ok != tc.ok || !near(lo, tc.lo, 1e-12) || !near(hi, tc.hi, 1e-12) {
			t.Errorf("%s: [%v, %v] %v, want [%v, %v] %v", tc.name, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
	// The pairing is kept: a single replicate drawing indices 0, 0, 1
	// gives ((5−1) + (5−1) + (7−6))/3 = 3.
	lo, hi, _ := BootstrapPairedDiff([]float64{5, 7, 9}, []float64{1, 6, 0}, 1, &script{draws: []uint64{0, 0, 1}})
	if lo != 3 || hi != 3 {
		t.Errorf("scripted replicate = [%v, %v], want 3", lo, hi)
	}
}

func TestPermutationP(t *testing.T) {
	tests := []struct {
		a, b    []float64
		p, minP float64
	}{
		// 3 vs 3, fully separated: 2 of C(6,3) = 20 relabelings as extreme.
		{[]float64{1, 1, 1}, []float64{0, 0, 0}, 2.0 / 20, 2.0 / 20},
		{[]float64{0.5}, []float64{0.5}, 1, 1},
		{[]float64{1, 0.9}, []float64{0, 0.1, 0.2}, 1.0 / 10, 1.0 / 10},
		// All values equal: every relabeling ties.
		{[]float64{0.3, 0.3}, []float64{0.3, 0.3}, 1, 2.0 / 6},
	}
	for i, tc := range tests {
		p, minP, exact := PermutationP(tc.a, tc.b, 20000, 9999, &script{draws: []uint64{0}})
		if !near(p, tc.p, 1e-12) || !near(minP, tc.minP, 1e-12) || !exact {
			t.Errorf("case %d: p %v, min %v, exact %v; want %v, %v, true", i, p, minP, exact, tc.p, tc.minP)
		}
	}
	// 10 vs 10 fully separated: 184,756 relabelings, above the limit, so
	// drawn; no draw is as extreme, so p is its floor 1/(1 + draws).
	a := []float64{.9, .8, .85, .95, .7, .9, .88, .92, .81, .86}
	b := []float64{.1, .2, .15, .05, .3, .1, .12, .08, .19, .14}
	s1, s2 := splitmix(3), splitmix(3)
	p1, min1, ex := PermutationP(a, b, 20000, 999, &s1)
	p2, _, _ := PermutationP(a, b, 20000, 999, &s2)
	if ex || p1 != p2 || p1 != 1.0/1000 || min1 != 1.0/1000 {
		t.Errorf("Monte Carlo: p %v and %v, min %v, exact %v; want 1/1000 twice, not exact", p1, p2, min1, ex)
	}
	// Drawn from overlapping groups, p estimates the exact p.
	a, b = []float64{1, 3, 5, 7, 9, 11}, []float64{2, 4, 6, 8, 10, 12}
	pe, _, _ := PermutationP(a, b, 20000, 9999, &s1)
	pd, _, exd := PermutationP(a, b, 100, 9999, &s1)
	if exd || math.Abs(pd-pe) > 0.02 {
		t.Errorf("Monte Carlo p %v (exact %v), exact p %v", pd, exd, pe)
	}
}

func TestShuffleIsPermutation(t *testing.T) {
	src := splitmix(11)
	xs := []int{0, 1, 2, 3, 4, 5, 6}
	seen := map[[7]int]bool{}
	for range 200 {
		shuffle(&src, xs)
		var k [7]int
		copy(k[:], xs)
		seen[k] = true
		have := make([]bool, len(xs))
		for _, x := range xs {
			have[x] = true
		}
		for i, h := range have {
			if !h {
				t.Fatalf("shuffle lost %d: %v", i, xs)
			}
		}
	}
	if len(seen) < 150 {
		t.Errorf("200 shuffles of 7 gave %d orders; want nearly all distinct", len(seen))
	}
}
