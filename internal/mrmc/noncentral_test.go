package mrmc

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// closeTo reports whether got is within 1e-12 of want, or within 1e-9 of
// it relatively (a small tail probability).
func closeTo(got, want float64) bool {
	d := math.Abs(got - want)
	return d <= 1e-12 || d <= 1e-9*math.Abs(want)
}

// The reference values were computed independently with mpmath at 50
// significant digits (testdata/noncentral_reference.py): χ² and F by the
// Poisson series of regularized incomplete gamma and beta functions summed
// to a Poisson mass of 1e-45, t and F on one df also by integration over
// the χ² of the denominator (the two agree to 20 digits).
func TestNoncentralChi2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ k, lambda, x, upper float64 }{
		{1, 0, 3.841458820694124, 0.050000000000000057435},
		{1, 7.8673, 3.84, 0.80102339664431380221},
		{1, 100, 80, 0.85445377007428330283},
		{3, 2.5, 4, 0.56853850081303682728},
		{10, 50, 30, 0.98979143931440396233},
		{10, 50, 90, 0.030915941983817280524},
		{2, 1000, 900, 0.94939451478033808216},
		{0.5, 3, 0.2, 0.84801633917740263613},
		{4, 0.001, 0.001, 0.99999987510411200103},
		{1, 10000, 10500, 0.0067649560997936064727},
		{7, 20, 0.001, 0.99999999999999998908},
		{2, 0.5, 60, 3.3174897277888873409e-12},
	} {
		d := noncentralChi2{tc.k, tc.lambda}
		lo, up := d.tails(tc.x)
		if !closeTo(up, tc.upper) {
			t.Errorf("χ²(%v, %v) P(X > %v) = %.17g, want %.17g", tc.k, tc.lambda, tc.x, up, tc.upper)
		}
		if !closeTo(lo, 1-tc.upper) {
			t.Errorf("χ²(%v, %v) P(X ≤ %v) = %.17g, want %.17g", tc.k, tc.lambda, tc.x, lo, 1-tc.upper)
		}
	}
}

// TestNoncentralChi2OneDF: on one df X = (Z + √λ)², so
// P(X ≤ x) = Φ(√x − √λ) − Φ(−√x − √λ) in closed form.
func TestNoncentralChi2OneDF(t *testing.T) {
	t.Parallel()
	for _, lambda := range []float64{0, 0.3, 1, 4, 7.8673, 25, 150, 900} {
		for _, x := range []float64{0.01, 0.5, 1, 3.84, 10, 30, 200, 1000} {
			r, s := math.Sqrt(x), math.Sqrt(lambda)
			upper := normalSurvival(r-s) + normalSurvival(r+s)
			if got := (noncentralChi2{1, lambda}).survival(x); !closeTo(got, upper) {
				t.Errorf("χ²(1, %v) P(X > %v) = %.17g, closed form %.17g", lambda, x, got, upper)
			}
		}
	}
}

func TestNoncentralF(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ d1, d2, lambda, x, upper float64 }{
		{1, 62.707, 8.2096, 3.99, 0.805700323677969591},
		{1, 9, 10.0487, 5.117, 0.8049862427505809833},
		{2, 15.26, 4, 3, 0.43947776341196560471},
		{1, 1e6, 10, 3.84, 0.88545106987530108115},
		{1, 1e4, 10, 3.84, 0.88543833533526843079},
		{1, 1e5, 10, 3.84, 0.88544991203083172076},
		{1, 1e7, 10, 3.84, 0.88545118566149726786},
		{1, 1e10, 10, 3.84, 0.88545119851378465557},
		{1, 1e12, 10, 3.84, 0.88545119852652115853},
		{3, 4, 25, 6, 0.76116626926027833707},
		{1, 1, 15, 161, 0.23909483876398952575},
		{1, 2000, 20, 3.85, 0.99394687548719966263},
		{5, 40, 0, 2.45, 0.049959152801361546498},
		{1, 4, 0.5, 30, 0.010564464104905697297},
		{2, 7.5, 30, 8, 0.88315785395967604096},
		{3, 20, 2, 15, 0.00030083485396298797495},
		{1, 9, 0.1, 50, 0.000082198648863437607119},
	} {
		d := noncentralF{tc.d1, tc.d2, tc.lambda}
		lo, up := d.tails(tc.x)
		if !closeTo(up, tc.upper) {
			t.Errorf("F(%v, %v, %v) P(F > %v) = %.17g, want %.17g", tc.d1, tc.d2, tc.lambda, tc.x, up, tc.upper)
		}
		if !closeTo(lo, 1-tc.upper) {
			t.Errorf("F(%v, %v, %v) P(F ≤ %v) = %.17g, want %.17g", tc.d1, tc.d2, tc.lambda, tc.x, lo, 1-tc.upper)
		}
	}
}

// TestNoncentralFLimits: no noncentrality is gonum's central F; an
// infinite denominator df is χ²(d1, λ)/d1.
func TestNoncentralFLimits(t *testing.T) {
	t.Parallel()
	for _, d2 := range []float64{1, 4.5, 30, 1000} {
		for _, x := range []float64{0.2, 1, 4} {
			want := distuv.F{D1: 2, D2: d2}.Survival(x)
			if got := (noncentralF{2, d2, 0}).survival(x); math.Abs(got-want) > 1e-13 {
				t.Errorf("F(2, %v, 0) P(F > %v) = %.17g, central %.17g", d2, x, got, want)
			}
		}
	}
	got := noncentralF{3, math.Inf(1), 6}.survival(2)
	if want := (noncentralChi2{3, 6}).survival(6); got != want {
		t.Errorf("F(3, inf, 6) P(F > 2) = %v, χ²(3, 6) P(X > 6) = %v", got, want)
	}
	for _, bad := range []noncentralF{{0, 5, 1}, {1, 0, 1}, {1, 5, -1}, {1, 5, math.NaN()}, {1, math.NaN(), 1}} {
		if got := bad.survival(1); !math.IsNaN(got) {
			t.Errorf("%+v: %v, want NaN", bad, got)
		}
	}
	if got := (noncentralF{1, 5, 3}).survival(0); got != 1 {
		t.Errorf("P(F > 0) = %v, want 1", got)
	}
}

func TestNoncentralT(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ nu, delta, x, upper float64 }{
		{10, 2, 1.8, 0.59056662522513580268},
		{15.26, 2.5, 2.13, 0.64770740406980915852},
		{4, -1, 0.5, 0.073611172046093271164},
		{30, 0, 2.04, 0.025119787369543438901},
		{5, 3, -1, 0.99992663161437172373},
		{100, 10, 8, 0.96043538297607125455},
		{2.5, 0.5, 3, 0.07638809122332989245},
		{9, 4.2, 2.262, 0.96092592842257185174},
	} {
		if got := (noncentralT{tc.nu, tc.delta}).survival(tc.x); !closeTo(got, tc.upper) {
			t.Errorf("t(%v, %v) P(T > %v) = %.17g, want %.17g", tc.nu, tc.delta, tc.x, got, tc.upper)
		}
	}
	// P(T > 0) = Φ(δ); the normal limit; the central t.
	for _, delta := range []float64{-2, 0, 0.7, 3} {
		if got, want := (noncentralT{7, delta}).survival(0), normalSurvival(-delta); !closeTo(got, want) {
			t.Errorf("t(7, %v) P(T > 0) = %v, want Φ(δ) = %v", delta, got, want)
		}
		if got, want := (noncentralT{math.Inf(1), delta}).survival(1.5), normalSurvival(1.5-delta); got != want {
			t.Errorf("t(inf, %v) P(T > 1.5) = %v, want %v", delta, got, want)
		}
	}
	if got, want := (noncentralT{6, 0}).survival(1.2), (distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 6}).Survival(1.2); math.Abs(got-want) > 1e-13 {
		t.Errorf("t(6, 0) P(T > 1.2) = %v, central %v", got, want)
	}
}

func TestCriticalValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ alpha, d1, d2, want float64 }{
		{0.05, 1, 62.707, 3.9940953562235429044},
		{0.05, 1, 9, 5.1173550291992268609},
		{0.01, 2, 15.26, 6.3223620053692558965},
		{0.05, 1, 1e4, 3.8423889008687484169},
		{0.05, 1, 1e5, 3.8415518136867743956},
		{0.05, 1, 1e6, 3.8414681198431634422},
		{0.05, 1, 1e7, 3.8414597506075273711},
		{0.05, 1, 1e8, 3.8414589136854509934},
		{0.05, 1, 1e10, 3.8414588216240391},
		{0.05, 1, 1e12, 3.8414588207034249976},
		{0.1, 3, 4, 4.1908604388722442854},
		{0.05, 1, 1, 161.4476387975884777},
		{0.05, 1, math.Inf(1), 3.8414588206941258653},
	} {
		if got := fUpper(tc.alpha, tc.d1, tc.d2); math.Abs(got-tc.want) > 1e-10*tc.want {
			t.Errorf("F(%v, %v) upper %v point %.17g, want %.17g", tc.d1, tc.d2, tc.alpha, got, tc.want)
		}
	}
	for _, tc := range []struct{ alpha, k, want float64 }{
		{0.05, 1, 3.8414588206941258653},
		{0.01, 3, 11.344866730144371886},
		{0.2, 10, 13.441957574973111474},
	} {
		if got := chi2Upper(tc.alpha, tc.k); math.Abs(got-tc.want) > 1e-10*tc.want {
			t.Errorf("χ²(%v) upper %v point %.17g, want %.17g", tc.k, tc.alpha, got, tc.want)
		}
	}
}
