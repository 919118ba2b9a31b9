package stats

import (
	"math"
	"testing"
)

func TestBinomialTail(t *testing.T) {
	tests := []struct {
		n    int
		p    float64
		k    int
		want float64
	}{
		{10, 0.5, 8, 56.0 / 1024}, // C(10,8) + C(10,9) + C(10,10) = 56
		{5, 0.25, 4, 5*math.Pow(0.25, 4)*0.75 + math.Pow(0.25, 5)},
		{5, 0.5, 0, 1},
		{5, 0.5, -3, 1},
		{5, 0.5, 6, 0},
		{6, 1.0 / 3, 6, math.Pow(1.0/3, 6)},
	}
	for _, tc := range tests {
		if got := BinomialTail(tc.n, tc.p, tc.k); !near(got, tc.want, 1e-15) {
			t.Errorf("P(Bin(%d, %v) ≥ %d) = %.17g, want %.17g", tc.n, tc.p, tc.k, got, tc.want)
		}
	}
	if got := binomial(50, 25); got != 126410606437752 {
		t.Errorf("C(50, 25) = %v", got)
	}
}

func TestMcNemarP(t *testing.T) {
	tests := []struct {
		b, c int
		want float64
	}{
		{0, 0, 1}, {1, 1, 1}, {5, 0, 2.0 / 32}, {0, 5, 2.0 / 32}, {10, 0, 2.0 / 1024},
		{8, 2, 2 * (1 + 10 + 45) / 1024.0},
		{600, 600, 1},
	}
	for _, tc := range tests {
		if got := McNemarP(tc.b, tc.c); !near(got, tc.want, 1e-9) {
			t.Errorf("McNemarP(%d, %d) = %v, want %v", tc.b, tc.c, got, tc.want)
		}
	}
}

func TestPearson(t *testing.T) {
	tests := []struct {
		name   string
		xs, ys []float64
		want   float64
	}{
		{"perfect", []float64{1, 2, 3, 4}, []float64{2, 4, 6, 8}, 1},
		{"reversed", []float64{1, 2, 3, 4}, []float64{8, 6, 4, 2}, -1},
		// Deviations (−1, 0, 1) and (−1, 1, 0): Σdxdy = 1, Σdx² = Σdy² = 2.
		{"hand", []float64{1, 2, 3}, []float64{1, 3, 2}, 0.5},
		{"constant", []float64{1, 1, 1}, []float64{1, 2, 3}, math.NaN()},
		{"two pairs", []float64{1, 2}, []float64{1, 2}, math.NaN()},
	}
	for _, tc := range tests {
		if got := Pearson(tc.xs, tc.ys); !sameOrBothNaN(got, tc.want, 1e-12) {
			t.Errorf("%s: r = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPValues(t *testing.T) {
	// t(0.95; 10) = 1.812461122811676, so the r it maps to over 12 pairs
	// has one-sided p 0.05.
	tq := 1.812461122811676
	r := -tq / math.Sqrt(tq*tq+10)
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"correlation at t(0.95; 10)", CorrelationLowerP(r, 12), 0.05},
		{"positive correlation", CorrelationLowerP(-r, 12), 0.95},
		{"no correlation", CorrelationLowerP(0, 8), 0.5},
		{"correlation −1", CorrelationLowerP(-1, 5), 0},
		{"correlation 1", CorrelationLowerP(1, 5), 1},
		{"correlation of 2 pairs", CorrelationLowerP(0.3, 2), math.NaN()},
		{"correlation NaN", CorrelationLowerP(math.NaN(), 10), math.NaN()},
		// Upper quantiles of the chi-square table: the 95th percentiles
		// at 1, 2 and 5 degrees of freedom, the 99.9th at 10; at df 2 the
		// tail is exp(−x/2).
		{"χ² 95th, df 1", ChiSquareP(3.841458820694124, 1), 0.05},
		{"χ² 95th, df 2", ChiSquareP(5.991464547107979, 2), 0.05},
		{"χ² 95th, df 5", ChiSquareP(11.070497693516351, 5), 0.05},
		{"χ² 99.9th, df 10", ChiSquareP(29.58829844507442, 10), 0.001},
		{"χ² at 0", ChiSquareP(0, 3), 1},
		{"χ² df 2", ChiSquareP(2, 2), math.Exp(-1)},
		{"χ² df 0", ChiSquareP(1, 0), math.NaN()},
		{"χ² NaN", ChiSquareP(math.NaN(), 3), math.NaN()},
	}
	for _, tc := range tests {
		if !sameOrBothNaN(tc.got, tc.want, 1e-9) {
			t.Errorf("%s: p = %.12g, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestHomogeneity(t *testing.T) {
	tests := []struct {
		name string
		a, b []int
		chi2 float64
		df   int
	}{
		// [[10 20] [20 10]]: every expected count 15, χ² = 4·25/15.
		{"2×2", []int{10, 20}, []int{20, 10}, 100.0 / 15, 1},
		{"empty column", []int{5, 0, 5}, []int{5, 0, 5}, 0, 1},
		{"same shares", []int{1, 2, 3}, []int{2, 4, 6}, 0, 2},
		{"empty row", []int{0, 0}, []int{3, 4}, math.NaN(), 0},
	}
	for _, tc := range tests {
		chi2, df := Homogeneity(tc.a, tc.b)
		if !sameOrBothNaN(chi2, tc.chi2, 1e-12) || df != tc.df {
			t.Errorf("%s: χ² = %v, df %d; want %v, %d", tc.name, chi2, df, tc.chi2, tc.df)
		}
	}
}
