package mrmc

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

// This file is an independent computation of everything Analyze,
// ModelVersusPanel and PanelMean print, built another way: each figure's
// leave-one-out values recomputed from the definition, the
// Dorfman–Berbaum–Metz pseudovalues c·θ − (c − 1)·θ(k), the
// pseudovalues' modality × reader × case analysis of variance, and the OR
// covariances from its mean squares (Hillis 2005: Var, Cov1, Cov2 and
// Cov3 are linear in MS(C), MS(T×C), MS(R×C) and MS(T×R×C)), all in
// exact rational arithmetic, so that a quantity that is 0 is exactly 0
// and the edges (NA, infinite degrees of freedom) are decided without
// rounding. Only the last step, square roots and the distributions, is
// float64, through gonum's special functions rather than its
// distributions.

// exact is a rational.
type exact = *big.Rat

func ratInt(n int64) exact { return new(big.Rat).SetInt64(n) }
func ratFrac(a, b int64) exact {
	return new(big.Rat).SetFrac(big.NewInt(a), big.NewInt(b))
}
func add(a, b exact) exact { return new(big.Rat).Add(a, b) }
func sub(a, b exact) exact { return new(big.Rat).Sub(a, b) }
func mul(a, b exact) exact { return new(big.Rat).Mul(a, b) }
func quo(a, b exact) exact { return new(big.Rat).Quo(a, b) }
func maxZero(a exact) exact {
	if a.Sign() < 0 {
		return ratInt(0)
	}
	return a
}
func toFloat(a exact) float64 { f, _ := a.Float64(); return f }

// refFigure is θ over all cases and θ(k) without case k, by definition.
func refFigure(fom FOM, score []float64, truth []int) (exact, []exact) {
	value := func(skip int) exact {
		if fom == Accuracy {
			var m, n int64
			for k, s := range score {
				if k != skip {
					n++
					if s == 1 {
						m++
					}
				}
			}
			return ratFrac(m, n)
		}
		var twice, pairs int64
		for i := range score {
			for j := range score {
				if i == skip || j == skip || truth[i] != 1 || truth[j] != 0 {
					continue
				}
				pairs++
				switch {
				case score[i] > score[j]:
					twice += 2
				case score[i] == score[j]:
					twice++
				}
			}
		}
		return ratFrac(twice, 2*pairs)
	}
	loo := make([]exact, len(score))
	for k := range score {
		loo[k] = value(k)
	}
	return value(-1), loo
}

// pseudo are the pseudovalues c·θ − (c − 1)·θ(k).
func pseudo(theta exact, loo []exact) []exact {
	c := int64(len(loo))
	out := make([]exact, len(loo))
	for k, l := range loo {
		out[k] = sub(mul(ratInt(c), theta), mul(ratInt(c-1), l))
	}
	return out
}

func ratMean(xs []exact) exact {
	s := ratInt(0)
	for _, x := range xs {
		s = add(s, x)
	}
	return quo(s, ratInt(int64(len(xs))))
}

// refComponents are the OR quantities of a t × r study in exact
// arithmetic.
type refComponents struct {
	t, r, c                 int
	theta                   [][]exact
	mst, msr, mstr          exact // mst, mstr nil with one modality
	v, cov1, cov2, cov3     exact
	msrI, varI, cov2I, mean []exact // per modality
}

// refAnalyze computes the OR components from pseudovalues y[i][j][k].
func refAnalyze(theta [][]exact, y [][][]exact) refComponents {
	t, r, c := len(theta), len(theta[0]), len(y[0][0])
	rc := refComponents{t: t, r: r, c: c, theta: theta}
	ft, fr, fc := ratInt(int64(t)), ratInt(int64(r)), ratInt(int64(c))
	// Figure means.
	mi := make([]exact, t)
	mj := make([]exact, r)
	var all []exact
	for i := range theta {
		mi[i] = ratMean(theta[i])
		all = append(all, theta[i]...)
	}
	for j := range r {
		var col []exact
		for i := range t {
			col = append(col, theta[i][j])
		}
		mj[j] = ratMean(col)
	}
	grand := ratMean(all)
	sq := func(a exact) exact { return mul(a, a) }
	ss := ratInt(0)
	for j := range r {
		ss = add(ss, sq(sub(mj[j], grand)))
	}
	rc.msr = quo(mul(ft, ss), ratInt(int64(r-1)))
	if t > 1 {
		ss = ratInt(0)
		for i := range t {
			ss = add(ss, sq(sub(mi[i], grand)))
		}
		rc.mst = quo(mul(fr, ss), ratInt(int64(t-1)))
		ss = ratInt(0)
		for i := range t {
			for j := range r {
				ss = add(ss, sq(add(sub(sub(theta[i][j], mi[i]), mj[j]), grand)))
			}
		}
		rc.mstr = quo(ss, ratInt(int64((t-1)*(r-1))))
	}
	// The pseudovalues' ANOVA: the case terms.
	ms := dbmCaseMS(y)
	// MS(C) = V + (t−1)C1 + (r−1)C2 + (t−1)(r−1)C3, MS(T×C) = V − C1 +
	// (r−1)(C2 − C3), MS(R×C) = V − C2 + (t−1)(C1 − C3), MS(T×R×C) =
	// V − C1 − C2 + C3, V… being the pseudovalues' averaged covariances,
	// c times the OR ones.
	trc := mul(mul(ft, fr), fc)
	t1, r1 := ratInt(int64(t-1)), ratInt(int64(r-1))
	if t > 1 {
		rc.v = quo(add(add(ms.c, mul(t1, ms.tc)), add(mul(r1, ms.rc), mul(mul(t1, r1), ms.trc))), trc)
		rc.cov1 = quo(add(sub(ms.c, ms.tc), mul(r1, sub(ms.rc, ms.trc))), trc)
		rc.cov2 = quo(add(sub(ms.c, ms.rc), mul(t1, sub(ms.tc, ms.trc))), trc)
		rc.cov3 = quo(add(sub(sub(ms.c, ms.tc), ms.rc), ms.trc), trc)
	} else {
		rc.v = quo(add(ms.c, mul(r1, ms.rc)), trc)
		rc.cov2 = quo(sub(ms.c, ms.rc), trc)
	}
	for i := range t {
		ms := dbmCaseMS([][][]exact{y[i]})
		rcI := mul(fr, fc)
		rc.varI = append(rc.varI, quo(add(ms.c, mul(r1, ms.rc)), rcI))
		rc.cov2I = append(rc.cov2I, quo(sub(ms.c, ms.rc), rcI))
		ss := ratInt(0)
		for j := range r {
			ss = add(ss, sq(sub(theta[i][j], mi[i])))
		}
		rc.msrI = append(rc.msrI, quo(ss, r1))
		rc.mean = append(rc.mean, mi[i])
	}
	return rc
}

// dbmMS are the case mean squares of a pseudovalue ANOVA.
type dbmMS struct{ c, tc, rc, trc exact }

func dbmCaseMS(y [][][]exact) dbmMS {
	t, r, c := len(y), len(y[0]), len(y[0][0])
	yk := make([]exact, c)    // Ȳ··k
	yik := make([][]exact, t) // Ȳi·k
	yjk := make([][]exact, r) // Ȳ·jk
	yi := make([]exact, t)    // Ȳi··
	yj := make([]exact, r)    // Ȳ·j·
	yij := make([][]exact, t) // Ȳij·
	var all []exact
	for i := range t {
		yik[i] = make([]exact, c)
		yij[i] = make([]exact, r)
		var row []exact
		for j := range r {
			yij[i][j] = ratMean(y[i][j])
			row = append(row, y[i][j]...)
		}
		yi[i] = ratMean(row)
		all = append(all, row...)
		for k := range c {
			var col []exact
			for j := range r {
				col = append(col, y[i][j][k])
			}
			yik[i][k] = ratMean(col)
		}
	}
	for j := range r {
		yjk[j] = make([]exact, c)
		var row []exact
		for i := range t {
			row = append(row, y[i][j]...)
		}
		yj[j] = ratMean(row)
		for k := range c {
			var col []exact
			for i := range t {
				col = append(col, y[i][j][k])
			}
			yjk[j][k] = ratMean(col)
		}
	}
	for k := range c {
		var col []exact
		for i := range t {
			for j := range r {
				col = append(col, y[i][j][k])
			}
		}
		yk[k] = ratMean(col)
	}
	g := ratMean(all)
	sq := func(a exact) exact { return mul(a, a) }
	ssC, ssTC, ssRC, ssTRC := ratInt(0), ratInt(0), ratInt(0), ratInt(0)
	for k := range c {
		ssC = add(ssC, sq(sub(yk[k], g)))
		for i := range t {
			ssTC = add(ssTC, sq(add(sub(sub(yik[i][k], yi[i]), yk[k]), g)))
		}
		for j := range r {
			ssRC = add(ssRC, sq(add(sub(sub(yjk[j][k], yj[j]), yk[k]), g)))
		}
		for i := range t {
			for j := range r {
				// y − ȳij· − ȳi·k − ȳ·jk + ȳi·· + ȳ·j· + ȳ··k − ȳ···
				x := sub(y[i][j][k], yij[i][j])
				x = sub(sub(x, yik[i][k]), yjk[j][k])
				x = add(add(add(x, yi[i]), yj[j]), yk[k])
				ssTRC = add(ssTRC, sq(sub(x, g)))
			}
		}
	}
	ft, fr, fc1 := ratInt(int64(t)), ratInt(int64(r)), ratInt(int64(c-1))
	ms := dbmMS{c: quo(mul(mul(ft, fr), ssC), fc1)}
	ms.tc = quo(mul(fr, ssTC), fc1)
	if t > 1 {
		ms.tc = quo(ms.tc, ratInt(int64(t-1)))
	}
	ms.rc = quo(mul(ft, ssRC), mul(fc1, ratInt(int64(r-1))))
	ms.trc = ssTRC
	if t > 1 {
		ms.trc = quo(ssTRC, mul(fc1, ratInt(int64((t-1)*(r-1)))))
	}
	return ms
}

// refInterval is the reference's interval: exact variance and degrees of
// freedom (nil df: infinite), float64 from there.
type refInterval struct {
	est, se, df, lo, hi, p float64
	na                     bool
}

// refDF is an exact df, nil for infinite, mapped past MaxFiniteDF to
// infinite.
func refDF(df exact) float64 {
	if df == nil {
		return math.Inf(1)
	}
	f := toFloat(df)
	if f > MaxFiniteDF {
		return math.Inf(1)
	}
	return f
}

// refSatterthwaite is den²/(ms²/df), nil (infinite) when ms is 0; ok is
// false when den is 0.
func refSatterthwaite(den, ms exact, df int) (exact, bool) {
	if den.Sign() == 0 {
		return nil, false
	}
	if ms.Sign() == 0 {
		return nil, true
	}
	return quo(mul(den, den), quo(mul(ms, ms), ratInt(int64(df)))), true
}

// tQuantileRef is Student's t quantile from the inverse regularized
// incomplete beta function (p > 0.5), the normal's from the inverse
// error function for infinite df.
func tQuantileRef(p, df float64) float64 {
	if math.IsInf(df, 1) {
		return math.Sqrt2 * math.Erfinv(2*p-1)
	}
	x := mathext.InvRegIncBeta(df/2, 0.5, 2*(1-p))
	return math.Sqrt(df * (1 - x) / x)
}

// tSurvivalRef is P(T > x) for x ≥ 0.
func tSurvivalRef(x, df float64) float64 {
	if math.IsInf(df, 1) {
		return 0.5 * math.Erfc(x/math.Sqrt2)
	}
	return 0.5 * mathext.RegIncBeta(df/2, 0.5, df/(df+x*x))
}

func fSurvivalRef(x, d1, d2 float64) float64 {
	if math.IsInf(d2, 1) {
		return mathext.GammaIncRegComp(d1/2, d1*x/2)
	}
	return mathext.RegIncBeta(d2/2, d1/2, d2/(d2+d1*x))
}

func refIv(est, se2 exact, df float64, withP bool) refInterval {
	iv := refInterval{est: toFloat(est), se: math.Sqrt(toFloat(se2)), df: df, lo: math.NaN(), hi: math.NaN(), p: math.NaN()}
	if se2.Sign() == 0 {
		iv.na = true
		return iv
	}
	q := tQuantileRef(1-DefaultAlpha/2, df)
	iv.lo, iv.hi = iv.est-q*iv.se, iv.est+q*iv.se
	if withP {
		iv.p = 2 * tSurvivalRef(math.Abs(iv.est)/iv.se, df)
	}
	return iv
}

// refTest is a test: stat NaN and na when the denominator is 0.
type refTest struct {
	stat, df2, p float64
	na           bool
}

// refDesigns are the three analyses as the reference computes them.
type refDesign struct {
	test  refTest
	diffs []refInterval
	means []refInterval
}

func refDesignsOf(rc refComponents) []refDesign {
	t, r := rc.t, rc.r
	fr := ratInt(int64(r))
	two := ratInt(2)
	out := make([]refDesign, 3)
	var c23, vMinusC1 exact
	if t > 1 {
		c23 = maxZero(sub(rc.cov2, rc.cov3))
		vMinusC1 = sub(rc.v, rc.cov1)
	}
	diffs := func(se2 exact, df float64) []refInterval {
		var ivs []refInterval
		for i := range t {
			for i2 := i + 1; i2 < t; i2++ {
				ivs = append(ivs, refIv(sub(rc.mean[i], rc.mean[i2]), quo(mul(two, se2), fr), df, true))
			}
		}
		return ivs
	}
	if t > 1 {
		dfTR := (t - 1) * (r - 1)
		// RRRC.
		den := add(rc.mstr, mul(fr, c23))
		ddfE, ok := refSatterthwaite(den, rc.mstr, dfTR)
		ddf := refDF(ddfE)
		if !ok {
			ddf = math.NaN()
			out[0].test = refTest{stat: math.NaN(), df2: ddf, p: math.NaN(), na: true}
		} else {
			f := toFloat(quo(rc.mst, den))
			out[0].test = refTest{stat: f, df2: ddf, p: fSurvivalRef(f, float64(t-1), ddf)}
		}
		out[0].diffs = diffs(den, ddf)
		// FRRC.
		denF := add(vMinusC1, mul(ratInt(int64(r-1)), c23))
		if denF.Sign() == 0 {
			out[1].test = refTest{stat: math.NaN(), df2: math.NaN(), p: math.NaN(), na: true}
		} else {
			x := toFloat(quo(mul(ratInt(int64(t-1)), rc.mst), denF))
			out[1].test = refTest{stat: x, df2: math.NaN(), p: mathext.GammaIncRegComp(float64(t-1)/2, x/2)}
		}
		out[1].diffs = diffs(denF, math.Inf(1))
		// RRFC.
		if rc.mstr.Sign() == 0 {
			out[2].test = refTest{stat: math.NaN(), df2: float64(dfTR), p: math.NaN(), na: true}
		} else {
			f := toFloat(quo(rc.mst, rc.mstr))
			out[2].test = refTest{stat: f, df2: float64(dfTR), p: fSurvivalRef(f, float64(t-1), float64(dfTR))}
		}
		out[2].diffs = diffs(rc.mstr, float64(dfTR))
	}
	for i := range t {
		for d, iv := range refMeans(rc.mean[i], rc.msrI[i], rc.varI[i], rc.cov2I[i], r) {
			out[d].means = append(out[d].means, iv)
		}
	}
	return out
}

// refMeans are one modality's three mean intervals (Hillis 2007; fixed
// readers; fixed cases).
func refMeans(mean, msr, varI, cov2 exact, r int) [3]refInterval {
	fr := ratInt(int64(r))
	c2 := maxZero(cov2)
	var out [3]refInterval
	den := add(msr, mul(fr, c2))
	dfE, ok := refSatterthwaite(den, msr, r-1)
	df := refDF(dfE)
	if !ok {
		df = math.NaN()
	}
	out[0] = refIv(mean, quo(den, fr), df, false)
	out[1] = refIv(mean, add(quo(varI, fr), mul(ratFrac(int64(r-1), int64(r)), c2)), math.Inf(1), false)
	out[2] = refIv(mean, quo(msr, fr), float64(r-1), false)
	return out
}

// refStandalone is the algorithm (scores model) against the panel: the
// one-modality random-readers analysis of the differences, from the
// differences' pseudovalues.
func refStandalone(fom FOM, model []float64, readers [][]float64, truth []int) refInterval {
	mTheta, mLoo := refFigure(fom, model, truth)
	mY := pseudo(mTheta, mLoo)
	r := len(readers)
	d := make([]exact, r)
	y := make([][]exact, r)
	for j, s := range readers {
		th, loo := refFigure(fom, s, truth)
		d[j] = sub(mTheta, th)
		py := pseudo(th, loo)
		y[j] = make([]exact, len(py))
		for k := range py {
			y[j][k] = sub(mY[k], py[k])
		}
	}
	rc := refAnalyze([][]exact{d}, [][][]exact{y})
	fr := ratInt(int64(r))
	den := add(rc.msrI[0], mul(fr, maxZero(rc.cov2I[0])))
	dfE, ok := refSatterthwaite(den, rc.msrI[0], r-1)
	df := refDF(dfE)
	if !ok {
		df = math.NaN()
	}
	return refIv(rc.mean[0], quo(den, fr), df, true)
}

// refStudy runs the reference on a study.
func refStudy(d *Data) (refComponents, []refDesign) {
	t, r := len(d.Modalities), len(d.Readers)
	theta := make([][]exact, t)
	y := make([][][]exact, t)
	for i := range t {
		theta[i] = make([]exact, r)
		y[i] = make([][]exact, r)
		for j := range r {
			th, loo := refFigure(d.FOM, d.Scores[i][j], d.Truth)
			theta[i][j] = th
			y[i][j] = pseudo(th, loo)
		}
	}
	rc := refAnalyze(theta, y)
	return rc, refDesignsOf(rc)
}

// randomStudy draws a study of one of several kinds, degenerate ones
// included.
func randomStudy(rng *rand.Rand, n int) (*Data, string) {
	kinds := []string{"random", "random", "random", "identical readers", "identical modalities", "all right", "all wrong",
		"two readers", "one modality", "auc minimal classes", "auc all tied", "auc separated", "one case differs", "readers identical per modality"}
	kind := kinds[n%len(kinds)]
	fom := Accuracy
	if rng.IntN(2) == 0 || kind == "auc minimal classes" || kind == "auc all tied" || kind == "auc separated" {
		fom = AUC
	}
	if kind == "all right" || kind == "all wrong" || kind == "one case differs" {
		fom = Accuracy
	}
	t := 1 + rng.IntN(4)
	r := 2 + rng.IntN(5)
	switch kind {
	case "two readers":
		r = 2
	case "one modality":
		t = 1
	case "identical modalities":
		t = 2 + rng.IntN(3)
	}
	var truth []int
	var c int
	if fom == AUC {
		n1, n0 := 2+rng.IntN(10), 2+rng.IntN(10)
		if kind == "auc minimal classes" {
			n1, n0 = 2, 2+rng.IntN(3)
		}
		for range n1 {
			truth = append(truth, 1)
		}
		for range n0 {
			truth = append(truth, 0)
		}
		rng.Shuffle(len(truth), func(a, b int) { truth[a], truth[b] = truth[b], truth[a] })
		c = len(truth)
	} else {
		c = 2 + rng.IntN(28)
	}
	d := &Data{FOM: fom, Truth: truth}
	for i := range t {
		d.Modalities = append(d.Modalities, fmt.Sprint("m", i+1))
	}
	for j := range r {
		d.Readers = append(d.Readers, fmt.Sprint("r", j+1))
	}
	for k := range c {
		d.Cases = append(d.Cases, fmt.Sprint("c", k+1))
	}
	ease := make([]float64, c)
	for k := range ease {
		ease[k] = rng.NormFloat64()
	}
	score := func(i, j, k int) float64 {
		skill := 0.3*float64(i) + 0.2*float64(j%3)
		switch kind {
		case "all right":
			return 1
		case "all wrong":
			return 0
		case "one case differs":
			if k == 0 && j == 0 {
				return 0
			}
			return 1
		case "auc all tied":
			return 3
		case "auc separated":
			return float64(truth[k]*5 + rng.IntN(3))
		}
		if fom == AUC {
			x := float64(truth[k])*(1+skill) + 0.8*ease[k] + rng.NormFloat64()
			return math.Round(math.Max(1, math.Min(5, 3+x))) // five ratings: ties
		}
		if ease[k]+skill+0.7*rng.NormFloat64() > -0.3 {
			return 1
		}
		return 0
	}
	d.Scores = make([][][]float64, t)
	for i := range t {
		d.Scores[i] = make([][]float64, r)
		for j := range r {
			d.Scores[i][j] = make([]float64, c)
			for k := range c {
				switch {
				case kind == "identical readers" && j > 0:
					d.Scores[i][j][k] = d.Scores[i][0][k]
				case kind == "identical modalities" && i > 0:
					d.Scores[i][j][k] = d.Scores[0][j][k]
				case kind == "readers identical per modality" && j > 0:
					d.Scores[i][j][k] = d.Scores[i][0][k]
				default:
					d.Scores[i][j][k] = score(i, j, k)
				}
			}
		}
	}
	return d, fmt.Sprintf("%s (%s, %d×%d×%d)", kind, fom, t, r, c)
}

// same reports whether got agrees with the reference want: both NaN,
// both +Inf, or within 1e-9 relative (1e-12 absolute near 0).
func same(got, want float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return got == want
	}
	return math.Abs(got-want) <= 1e-9*math.Max(math.Abs(want), 1e-3)
}

func compareInterval(t *testing.T, where string, got Interval, want refInterval, withP bool) {
	t.Helper()
	if (got.NA != "") != want.na {
		t.Errorf("%s: NA %q, reference NA %v (got %+v, reference %+v)", where, got.NA, want.na, got, want)
		return
	}
	checks := []struct {
		name      string
		got, want float64
	}{{"estimate", got.Estimate, want.est}, {"se", got.SE, want.se}, {"df", got.DF, want.df}, {"low", got.Lo, want.lo}, {"high", got.Hi, want.hi}}
	if withP {
		checks = append(checks, struct {
			name      string
			got, want float64
		}{"p", got.P, want.p})
	}
	for _, c := range checks {
		// SE and df of an NA interval: its SE is 0 either way.
		if want.na && c.name == "df" {
			continue
		}
		if !same(c.got, c.want) {
			t.Errorf("%s: %s %v, reference %v", where, c.name, c.got, c.want)
		}
	}
}

// TestDifferential checks Analyze, ModelVersusPanel and PanelMean against
// the reference on 280 random studies, a third of them degenerate: every
// printed number agrees to 1e-9, and NA and infinite degrees of freedom
// agree exactly.
func TestDifferential(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(2024, 40))
	counts := map[string]int{}
	for n := range 280 {
		d, name := randomStudy(rng, n)
		where := fmt.Sprintf("study %d, %s", n, name)
		a, err := Analyze(d, 0)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		rc, want := refStudy(d)
		for i := range a.Theta {
			for j := range a.Theta[i] {
				if !same(a.Theta[i][j], toFloat(rc.theta[i][j])) {
					t.Errorf("%s: figure %d,%d %v, reference %v", where, i, j, a.Theta[i][j], toFloat(rc.theta[i][j]))
				}
			}
		}
		comp := []struct {
			name      string
			got, want float64
			scale     float64
		}{
			{"Var", a.Var, toFloat(rc.v), toFloat(rc.v)},
			{"Cov2", a.Cov2, toFloat(rc.cov2), toFloat(rc.v)},
			{"MS(R)", a.MSR, toFloat(rc.msr), 1},
		}
		if len(d.Modalities) > 1 {
			comp = append(comp, []struct {
				name      string
				got, want float64
				scale     float64
			}{
				{"Cov1", a.Cov1, toFloat(rc.cov1), toFloat(rc.v)}, {"Cov3", a.Cov3, toFloat(rc.cov3), toFloat(rc.v)},
				{"MS(T)", a.MST, toFloat(rc.mst), 1}, {"MS(T×R)", a.MSTR, toFloat(rc.mstr), 1},
			}...)
			// A mean square that is exactly 0 is exactly 0 here too.
			for _, ms := range []struct {
				name string
				got  float64
				want exact
			}{{"MS(T)", a.MST, rc.mst}, {"MS(R)", a.MSR, rc.msr}, {"MS(T×R)", a.MSTR, rc.mstr}} {
				if (ms.got == 0) != (ms.want.Sign() == 0) {
					t.Errorf("%s: %s %v, reference %v", where, ms.name, ms.got, ms.want.FloatString(20))
				}
			}
		}
		for _, c := range comp {
			if math.Abs(c.got-c.want) > 1e-10*math.Max(c.scale, 1e-12) {
				t.Errorf("%s: %s %v, reference %v", where, c.name, c.got, c.want)
			}
		}
		for di, ds := range a.Designs {
			w := want[di]
			dw := where + ", " + ds.Name
			if len(d.Modalities) > 1 {
				if (ds.Test.NA != "") != w.test.na {
					t.Errorf("%s: test %+v, reference %+v", dw, ds.Test, w.test)
				} else if !same(ds.Test.Stat, w.test.stat) || !same(ds.Test.P, w.test.p) || !same(ds.Test.DF2, w.test.df2) {
					t.Errorf("%s: test %+v, reference %+v", dw, ds.Test, w.test)
				}
				if ds.Test.NA != "" {
					counts["NA test"]++
				}
			}
			for x := range ds.Diffs {
				compareInterval(t, fmt.Sprintf("%s, difference %d", dw, x), ds.Diffs[x].Interval, w.diffs[x], true)
				if ds.Diffs[x].NA != "" {
					counts["NA difference"]++
				}
			}
			for x := range ds.Means {
				compareInterval(t, fmt.Sprintf("%s, mean %d", dw, x), ds.Means[x].Interval, w.means[x], false)
				if math.IsInf(ds.Means[x].DF, 1) && di == 0 {
					counts["infinite df (random readers)"]++
				}
			}
		}
		// The panel functions, on modality 1.
		pm, err := PanelMean(d.FOM, d.Scores[0], d.Truth, 0)
		if err != nil {
			t.Fatalf("%s: PanelMean: %v", where, err)
		}
		compareInterval(t, where+", PanelMean", pm, want[0].means[0], false)
		if len(d.Readers) >= 3 {
			s, err := ModelVersusPanel(d.FOM, d.Scores[0][0], d.Scores[0][1:], d.Truth, 0, 0)
			if err != nil {
				t.Fatalf("%s: ModelVersusPanel: %v", where, err)
			}
			compareInterval(t, where+", ModelVersusPanel", s.Interval, refStandalone(d.FOM, d.Scores[0][0], d.Scores[0][1:], d.Truth), true)
			counts["algorithm against panel"]++
			if s.NA != "" {
				counts["NA algorithm against panel"]++
			}
		}
		counts[name[:len(name)-len(fmt.Sprintf(" (%s, %d×%d×%d)", d.FOM, len(d.Modalities), len(d.Readers), len(d.Cases)))]]++
	}
	// The edges were met, not only the ordinary case.
	for _, k := range []string{"NA test", "NA difference", "infinite df (random readers)", "NA algorithm against panel"} {
		if counts[k] == 0 {
			t.Errorf("no study met %q", k)
		}
	}
	t.Logf("%v", counts)
}

// TestReferenceVanDyke checks the reference itself against the published
// Van Dyke figures, so that the two implementations agreeing means
// something.
func TestReferenceVanDyke(t *testing.T) {
	t.Parallel()
	d := loadVanDyke(t)
	rc, want := refStudy(d)
	for _, c := range []struct {
		name string
		got  float64
		want string
	}{
		{"MS(T)", toFloat(rc.mst), "0.00479617"}, {"MS(T×R)", toFloat(rc.mstr), "0.00055103"},
		{"Var", toFloat(rc.v), "0.00080229"}, {"Cov1", toFloat(rc.cov1), "0.00034661"},
		{"Cov2", toFloat(rc.cov2), "0.00034407"}, {"Cov3", toFloat(rc.cov3), "0.00023903"},
		{"RRRC F", want[0].test.stat, "4.46"}, {"RRRC ddf", want[0].test.df2, "15.26"}, {"RRRC p", want[0].test.p, "0.0517"},
		{"RRRC CI low", want[0].diffs[0].lo, "-0.08796"}, {"modality 1 SE", want[0].means[0].se, "0.03317360"},
		{"FRRC chi-square", want[1].test.stat, "5.47595"}, {"RRFC p", want[2].test.p, "0.0420"},
	} {
		if !near(c.got, c.want) {
			t.Errorf("reference %s = %.8f, want %s", c.name, c.got, c.want)
		}
	}
}
