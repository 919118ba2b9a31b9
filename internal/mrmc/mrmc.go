// Package mrmc is multi-reader multi-case (MRMC) analysis of a reader
// study: the Obuchowski–Rockette (OR) model of a figure of merit per
// (modality, reader), its error covariances estimated by the jackknife
// over cases (a whole case left out at a time), and the three analyses of
// the field — random readers and random cases with Hillis' denominator
// degrees of freedom, fixed readers (chi-square), fixed cases (F on the
// modality × reader mean square) — together with the one-modality
// interval of a reader panel (Hillis 2007) and the comparison of a
// standalone algorithm with a reader panel, the algorithm taken as a
// reader without reader variance.
//
// The formulas, in words, with their sources, are in docs/mrmc.md.
package mrmc

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultAlpha is the level of the intervals and tests when none is given:
// 95 % intervals.
const DefaultAlpha = 0.05

// Data is a fully crossed reader study: every reader scored every case in
// every modality.
type Data struct {
	FOM        FOM
	Modalities []string
	Readers    []string
	Cases      []string
	Truth      []int         // per case (0/1); used by AUC, may be nil for accuracy
	Scores     [][][]float64 // [modality][reader][case]
}

// Components are the OR model's estimates: the mean squares of the
// figures of merit and the jackknife error variance and covariances
// (Cov1: same reader, different modalities; Cov2: different readers, same
// modality; Cov3: different readers and modalities).
type Components struct {
	MST, MSR, MSTR        float64
	Var, Cov1, Cov2, Cov3 float64
}

// Test is an analysis' test of equal modalities: an F statistic on DF1
// and DF2 degrees of freedom, or (Chi2) a chi-square statistic on DF1.
type Test struct {
	Chi2     bool
	Stat     float64
	DF1, DF2 float64
	P        float64
}

// Interval is an estimate with its standard error and a two-sided
// interval from Student's t on DF degrees of freedom (DF = +Inf: the
// normal). P is the two-sided p-value of estimate = 0 (NaN for a mean).
// With a zero or undefined standard error, the interval and p are NaN.
type Interval struct {
	Estimate, SE, DF float64
	Lo, Hi           float64
	P                float64
}

// Difference is modality A − modality B.
type Difference struct {
	A, B string
	Interval
}

// Mean is one modality's reader-averaged figure of merit.
type Mean struct {
	Modality string
	Interval
}

// Design is one analysis: its test, the pairwise modality differences and
// each modality's mean.
type Design struct {
	Name  string
	Test  Test // NaN statistic with one modality
	Diffs []Difference
	Means []Mean
}

// The designs' names.
const (
	RRRC = "random readers, random cases"
	FRRC = "fixed readers, random cases"
	RRFC = "random readers, fixed cases"
)

// Analysis is the full OR analysis of a study.
type Analysis struct {
	FOM        FOM
	Alpha      float64
	Modalities []string
	Readers    []string
	NCases     int
	// Theta is the figure of merit per [modality][reader]; ModalityMeans
	// the reader average per modality.
	Theta         [][]float64
	ModalityMeans []float64
	Components
	Designs []Design // RRRC, FRRC, RRFC
	// Standalone is, when the study held an algorithm (SplitAlgorithm),
	// its difference from the readers per modality.
	Standalone []StandaloneRow
}

// estimates are the figures of merit and their jackknife values.
type estimates struct {
	theta [][]float64   // [t][r]
	jack  [][][]float64 // [t][r][c]
}

func (d *Data) check() error {
	t, r, c := len(d.Modalities), len(d.Readers), len(d.Cases)
	if t < 1 {
		return errors.New("no modality")
	}
	if r < 2 {
		return fmt.Errorf("%d reader(s): at least 2 are needed", r)
	}
	if len(d.Scores) != t {
		return fmt.Errorf("scores for %d modalities, want %d", len(d.Scores), t)
	}
	for i := range d.Scores {
		if len(d.Scores[i]) != r {
			return fmt.Errorf("modality %s: scores for %d readers, want %d", d.Modalities[i], len(d.Scores[i]), r)
		}
		for j, s := range d.Scores[i] {
			if len(s) != c {
				return fmt.Errorf("modality %s, reader %s: %d scores, want %d", d.Modalities[i], d.Readers[j], len(s), c)
			}
			if err := d.FOM.check(s, d.Truth); err != nil {
				return fmt.Errorf("modality %s, reader %s: %w", d.Modalities[i], d.Readers[j], err)
			}
		}
	}
	return nil
}

func (d *Data) estimate() estimates {
	e := estimates{theta: make([][]float64, len(d.Scores)), jack: make([][][]float64, len(d.Scores))}
	for i, byReader := range d.Scores {
		e.theta[i] = make([]float64, len(byReader))
		e.jack[i] = make([][]float64, len(byReader))
		for j, s := range byReader {
			e.jack[i][j] = make([]float64, len(s))
			e.theta[i][j] = d.FOM.value(s, d.Truth, e.jack[i][j])
		}
	}
	return e
}

// jackCov is the jackknife covariance of two figures from their
// leave-one-case-out values: (c−1)/c · Σ_k (a_k − ā)(b_k − b̄).
func jackCov(a, b []float64) float64 {
	c := float64(len(a))
	ma, mb := meanOf(a), meanOf(b)
	var s float64
	for k := range a {
		s += (a[k] - ma) * (b[k] - mb)
	}
	return s * (c - 1) / c
}

func meanOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Analyze runs the three OR analyses of a study at level alpha (0: the
// default 0.05).
func Analyze(d *Data, alpha float64) (*Analysis, error) {
	if alpha == 0 {
		alpha = DefaultAlpha
	}
	if !(alpha > 0 && alpha < 1) {
		return nil, fmt.Errorf("alpha %v: want a level between 0 and 1", alpha)
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	e := d.estimate()
	t, r := len(d.Modalities), len(d.Readers)
	a := &Analysis{FOM: d.FOM, Alpha: alpha, Modalities: d.Modalities, Readers: d.Readers, NCases: len(d.Cases), Theta: e.theta}
	a.Components = components(e)
	a.ModalityMeans = make([]float64, t)
	for i := range e.theta {
		a.ModalityMeans[i] = meanOf(e.theta[i])
	}
	ft, fr := float64(t), float64(r)
	cv := a.Components

	// Random readers, random cases: the denominator MS(T×R) + r·max(Cov2−Cov3, 0),
	// its degrees of freedom by Satterthwaite (Hillis 2008).
	den := cv.MSTR + fr*math.Max(cv.Cov2-cv.Cov3, 0)
	ddf := ratio(den*den, cv.MSTR*cv.MSTR/((ft-1)*(fr-1)))
	rrrc := Design{Name: RRRC, Test: fTest(cv.MST, den, ft-1, ddf)}
	rrrc.Diffs = diffs(a, 2*den/fr, ddf)

	// Fixed readers, random cases: chi-square on t−1 degrees of freedom.
	denF := cv.Var - cv.Cov1 + (fr-1)*(cv.Cov2-cv.Cov3)
	frrc := Design{Name: FRRC, Test: chi2Test((ft-1)*cv.MST, denF, ft-1)}
	frrc.Diffs = diffs(a, 2*denF/fr, math.Inf(1))

	// Random readers, fixed cases: F on MS(T×R).
	rrfc := Design{Name: RRFC, Test: fTest(cv.MST, cv.MSTR, ft-1, (ft-1)*(fr-1))}
	rrfc.Diffs = diffs(a, 2*cv.MSTR/fr, (ft-1)*(fr-1))

	for i, m := range d.Modalities {
		ps := panelStats(e.theta[i], e.jack[i])
		rrrc.Means = append(rrrc.Means, Mean{m, ps.rrrc(alpha)})
		se2 := ps.vr/fr + (fr-1)/fr*ps.cov2
		frrc.Means = append(frrc.Means, Mean{m, interval(ps.mean, se2, math.Inf(1), alpha, false)})
		rrfc.Means = append(rrfc.Means, Mean{m, interval(ps.mean, ps.msr/fr, fr-1, alpha, false)})
	}
	if t < 2 {
		for _, ds := range []*Design{&rrrc, &frrc, &rrfc} {
			ds.Test = Test{Chi2: ds.Test.Chi2, Stat: math.NaN(), DF1: math.NaN(), DF2: math.NaN(), P: math.NaN()}
		}
	}
	a.Designs = []Design{rrrc, frrc, rrfc}
	return a, nil
}

// components are the mean squares and the averaged jackknife covariances.
func components(e estimates) Components {
	t, r := len(e.theta), len(e.theta[0])
	ft, fr := float64(t), float64(r)
	var cv Components
	grand := 0.0
	mi := make([]float64, t)
	mj := make([]float64, r)
	for i := range e.theta {
		for j, v := range e.theta[i] {
			mi[i] += v / fr
			mj[j] += v / ft
			grand += v / (ft * fr)
		}
	}
	for i := range mi {
		cv.MST += (mi[i] - grand) * (mi[i] - grand)
	}
	if t > 1 {
		cv.MST *= fr / (ft - 1)
	} else {
		cv.MST = math.NaN()
	}
	for j := range mj {
		cv.MSR += (mj[j] - grand) * (mj[j] - grand)
	}
	cv.MSR *= ft / (fr - 1)
	for i := range e.theta {
		for j, v := range e.theta[i] {
			x := v - mi[i] - mj[j] + grand
			cv.MSTR += x * x
		}
	}
	if t > 1 {
		cv.MSTR /= (ft - 1) * (fr - 1)
	} else {
		cv.MSTR = math.NaN()
	}
	var n [4]int
	var s [4]float64
	for i := 0; i < t; i++ {
		for j := 0; j < r; j++ {
			for i2 := 0; i2 < t; i2++ {
				for j2 := 0; j2 < r; j2++ {
					k := 0
					switch {
					case i == i2 && j == j2:
						k = 0
					case j == j2:
						k = 1
					case i == i2:
						k = 2
					default:
						k = 3
					}
					s[k] += jackCov(e.jack[i][j], e.jack[i2][j2])
					n[k]++
				}
			}
		}
	}
	avg := func(k int) float64 {
		if n[k] == 0 {
			return math.NaN()
		}
		return s[k] / float64(n[k])
	}
	cv.Var, cv.Cov1, cv.Cov2, cv.Cov3 = avg(0), avg(1), avg(2), avg(3)
	return cv
}

// panel are one modality's statistics over its readers: the mean figure,
// MS(R), and the jackknife Var and Cov2 within the modality.
type panel struct {
	r                   float64
	mean, msr, vr, cov2 float64
}

func panelStats(theta []float64, jack [][]float64) panel {
	r := len(theta)
	p := panel{r: float64(r), mean: meanOf(theta)}
	for _, v := range theta {
		p.msr += (v - p.mean) * (v - p.mean)
	}
	p.msr /= p.r - 1
	var nv, nc int
	for j := range jack {
		for j2 := range jack {
			c := jackCov(jack[j], jack[j2])
			if j == j2 {
				p.vr += c
				nv++
			} else {
				p.cov2 += c
				nc++
			}
		}
	}
	p.vr /= float64(nv)
	p.cov2 /= float64(nc)
	return p
}

// rrrc is the one-modality random-readers random-cases interval of the
// panel's mean (Hillis 2007): variance MS(R)/r + max(Cov2, 0), degrees of
// freedom (MS(R) + r·max(Cov2, 0))² / (MS(R)²/(r−1)).
func (p panel) rrrc(alpha float64) Interval {
	c2 := math.Max(p.cov2, 0)
	df := ratio((p.msr+p.r*c2)*(p.msr+p.r*c2), p.msr*p.msr/(p.r-1))
	return interval(p.mean, p.msr/p.r+c2, df, alpha, false)
}

// ratio is a/b where b = 0 gives +Inf (a > 0) or NaN (a = 0).
func ratio(a, b float64) float64 {
	if b == 0 {
		if a > 0 {
			return math.Inf(1)
		}
		return math.NaN()
	}
	return a / b
}

// diffs are the pairwise modality differences, each with variance se2.
func diffs(a *Analysis, se2, df float64) []Difference {
	var out []Difference
	for i := range a.Modalities {
		for i2 := i + 1; i2 < len(a.Modalities); i2++ {
			est := a.ModalityMeans[i] - a.ModalityMeans[i2]
			out = append(out, Difference{A: a.Modalities[i], B: a.Modalities[i2], Interval: interval(est, se2, df, a.Alpha, true)})
		}
	}
	return out
}

// minSE is the smallest standard error taken as one: below it, what is
// left of the variance estimates is rounding of figures that do not vary
// (every reader and case the same), and a zero-width interval would claim
// a certainty the data do not have.
const minSE = 1e-12

// interval is est ± t(1−α/2; df)·√se2, with the two-sided p of est = 0
// when withP.
func interval(est, se2, df, alpha float64, withP bool) Interval {
	iv := Interval{Estimate: est, SE: math.NaN(), DF: df, Lo: math.NaN(), Hi: math.NaN(), P: math.NaN()}
	if se2 >= 0 {
		iv.SE = math.Sqrt(se2)
	}
	if iv.SE < minSE {
		iv.SE = 0 // rounding residue of figures that do not vary
	}
	if !(iv.SE > 0) || math.IsNaN(df) || df <= 0 {
		return iv
	}
	q := quantile(1-alpha/2, df)
	iv.Lo, iv.Hi = est-q*iv.SE, est+q*iv.SE
	if withP {
		iv.P = 2 * tSurvival(math.Abs(est)/iv.SE, df)
	}
	return iv
}

func quantile(p, df float64) float64 {
	if math.IsInf(df, 1) {
		return distuv.UnitNormal.Quantile(p)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

func tSurvival(x, df float64) float64 {
	if math.IsInf(df, 1) {
		return distuv.UnitNormal.Survival(x)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(x)
}

func fTest(num, den, df1, df2 float64) Test {
	t := Test{Stat: math.NaN(), DF1: df1, DF2: df2, P: math.NaN()}
	if !(den > 0) || math.IsNaN(num) {
		return t
	}
	t.Stat = num / den
	switch {
	case math.IsInf(df2, 1):
		t.P = distuv.ChiSquared{K: df1}.Survival(df1 * t.Stat)
	case df2 > 0:
		t.P = distuv.F{D1: df1, D2: df2}.Survival(t.Stat)
	}
	return t
}

func chi2Test(num, den, df float64) Test {
	t := Test{Chi2: true, Stat: math.NaN(), DF1: df, DF2: math.NaN(), P: math.NaN()}
	if !(den > 0) || math.IsNaN(num) {
		return t
	}
	t.Stat = num / den
	t.P = distuv.ChiSquared{K: df}.Survival(t.Stat)
	return t
}
