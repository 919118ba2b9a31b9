package stats

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// sameOrBothNaN compares results that may be undefined.
func sameOrBothNaN(got, want, tol float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	return near(got, want, tol)
}

func TestWilson(t *testing.T) {
	// Published Wilson 95 % intervals to 4 decimals (Newcombe 1998a,
	// Table I, method 3; Brown, Cai & DasGupta 2001).
	tests := []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{5, 10, 0.2366, 0.7634},
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{1, 29, 0.0061, 0.1718},
	}
	for _, tc := range tests {
		lo, hi, ok := Wilson(tc.k, tc.n)
		if !ok || !near(lo, tc.lo, 5e-5) || !near(hi, tc.hi, 5e-5) {
			t.Errorf("Wilson(%d, %d) = [%.5f, %.5f] %v, want [%.4f, %.4f]", tc.k, tc.n, lo, hi, ok, tc.lo, tc.hi)
		}
	}
	if _, _, ok := Wilson(0, 0); ok {
		t.Error("Wilson(0, 0) is valid; want no interval for an empty sample")
	}
	// The formula itself, for 3 of 7.
	lo, hi, _ := Wilson(3, 7)
	p, n, z := 3.0/7, 7.0, z95
	c := (p + z*z/(2*n)) / (1 + z*z/n)
	h := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / (1 + z*z/n)
	if lo != c-h || hi != c+h {
		t.Errorf("Wilson(3, 7) = [%v, %v], want [%v, %v]", lo, hi, c-h, c+h)
	}
}

func TestNewcombe(t *testing.T) {
	// Newcombe (1998b), Table II, method 10 (hybrid score, no continuity
	// correction), to 4 decimals.
	tests := []struct {
		ka, na, kb, nb int
		lo, hi         float64
	}{
		{56, 70, 48, 80, 0.0524, 0.3339},
		{9, 10, 3, 10, 0.1705, 0.8090},
		{5, 56, 0, 29, -0.0381, 0.1926},
		{0, 10, 0, 20, -0.1611, 0.2775},
		{0, 10, 0, 10, -0.2775, 0.2775},
		{10, 10, 0, 20, 0.6791, 1},
		{10, 10, 0, 10, 0.6075, 1},
	}
	for _, tc := range tests {
		pa, pb := float64(tc.ka)/float64(tc.na), float64(tc.kb)/float64(tc.nb)
		lo, hi, ok := Newcombe(pa, tc.ka, tc.na, pb, tc.kb, tc.nb)
		if !ok || !near(lo, tc.lo, 5e-5) || !near(hi, tc.hi, 5e-5) {
			t.Errorf("%d/%d − %d/%d = [%.4f, %.4f] %v, want [%.4f, %.4f]", tc.ka, tc.na, tc.kb, tc.nb, lo, hi, ok, tc.lo, tc.hi)
		}
	}
	// 0/14 − 0/14: symmetric about 0, as wide as a Wilson interval.
	lo, hi, ok := Newcombe(0, 0, 14, 0, 0, 14)
	wlo, whi, _ := Wilson(0, 14)
	if !ok || math.Abs(hi-(whi-wlo)) > 1e-12 || math.Abs(lo+hi) > 1e-12 {
		t.Errorf("0/14 − 0/14 = [%v, %v], want ±%v", lo, hi, whi)
	}
	// A point outside its group's Wilson interval widens that interval.
	lo, hi, _ = Newcombe(0.5, 0, 10, 0, 0, 10)
	if !(lo <= 0.5 && 0.5 <= hi) {
		t.Errorf("point 0.5 of 0/10: [%v, %v] does not hold the difference 0.5", lo, hi)
	}
	for name, c := range map[string][6]float64{
		"empty first":  {0, 0, 0, 0, 0, 3},
		"empty second": {0, 0, 3, 0, 0, 0},
		"NaN point":    {math.NaN(), 1, 3, 0, 0, 3},
	} {
		if _, _, ok := Newcombe(c[0], int(c[1]), int(c[2]), c[3], int(c[4]), int(c[5])); ok {
			t.Errorf("%s: got an interval, want none", name)
		}
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	tests := []struct{ q, want float64 }{{0, 1}, {1, 5}, {0.5, 3}, {0.25, 2}, {0.1, 1.4}, {0.975, 4.9}}
	for _, tc := range tests {
		if got := Quantile(xs, tc.q); !near(got, tc.want, 1e-12) {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("Quantile of nothing is a number; want NaN")
	}
	reps := []float64{40, 10, 30, 20, 50}
	if lo, hi := PercentileInterval(reps); !near(lo, 11, 1e-12) || !near(hi, 49, 1e-12) {
		t.Errorf("PercentileInterval = [%v, %v], want [11, 49]", lo, hi)
	}
}
