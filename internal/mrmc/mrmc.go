// Package mrmc is multi-reader multi-case (MRMC) analysis of a reader
// study: the Obuchowski–Rockette (OR) model of a figure of merit per
// (modality, reader), its error covariances estimated by the jackknife
// over cases (a whole case left out at a time), and the three analyses of
// the field — random readers and random cases with Hillis' denominator
// degrees of freedom, fixed readers (chi-square), fixed cases (F on the
// modality × reader mean square) — together with the one-modality
// interval of a reader panel (Hillis 2007) and the comparison of a
// standalone algorithm with a reader panel, the algorithm taken as a
// reader without reader variance. The constraints are those of the
// reference programs (OR-DBM MRMC 2.51, RJafroc): max(Cov2 − Cov3, 0)
// wherever Cov2 − Cov3 enters a variance, max(Cov2, 0) in one modality.
//
// Results carry their edges explicitly. A mean square or covariance
// difference that is 0 up to rounding is exactly 0 (rounding.go says how
// that is decided); a statistic whose denominator is 0, and an interval
// whose standard error is 0, is NaN with the Reason set, never a number
// made of rounding noise or an interval of zero width; degrees of
// freedom that are infinite, or above MaxFiniteDF, are +Inf and use the
// normal and χ² limits.
//
// The formulas, in words, with their sources, are in docs/mrmc.md.
package mrmc

import (
	"errors"
	"fmt"
	"math"
)

// DefaultAlpha is the level of the intervals and tests when none is given:
// 95 % intervals.
const DefaultAlpha = 0.05

// Data is a reader study. Fully crossed (Blocks nil): every reader scored
// every case in every modality. Split-plot (Blocks set): the readers and
// the cases are split into blocks, and every reader scored every case of
// its own block, and no other, in every modality; Scores of a reader for
// the cases of other blocks are not read (NaN by convention).
type Data struct {
	FOM        FOM
	Modalities []string
	Readers    []string
	Cases      []string
	Truth      []int         // per case (0/1); used by AUC, may be nil for accuracy
	Scores     [][][]float64 // [modality][reader][case]
	// Blocks names the blocks of a split-plot study (nil: fully crossed);
	// ReaderBlock and CaseBlock give each reader's and case's block, as
	// an index into Blocks.
	Blocks      []string
	ReaderBlock []int
	CaseBlock   []int
}

// Components are the OR model's estimates: the mean squares of the
// figures of merit and the jackknife error variance and covariances
// (Cov1: same reader, different modalities; Cov2: different readers, same
// modality; Cov3: different readers and modalities), and from them the
// reader and modality × reader variance components. A mean square that is
// 0 up to rounding is 0; Var and the covariances are as computed. With one
// modality MST, MSTR, VarR and VarTR are NaN (reader and modality × reader
// variance are not told apart).
type Components struct {
	MST, MSR, MSTR float64
	// MSTRG is the modality × reader-within-block mean square of a
	// split-plot study, on (t − 1)(r − B) degrees of freedom; in a fully
	// crossed study (one block) it is MS(T×R).
	MSTRG                 float64
	Var, Cov1, Cov2, Cov3 float64
	// VarR is the reader variance (MS(R) − VarTR − Var + Cov2 −
	// (t − 1)(Cov1 − Cov3))/t; VarTR the modality × reader variance
	// MS(T×R) − Var + Cov1 + max(Cov2 − Cov3, 0), as RJafroc computes
	// them (Hillis 2011; OR-DBM MRMC 2.51 leaves out the max). Either may
	// be negative: they are moment estimates.
	VarR, VarTR float64
}

// Reason says why a result is NA (its statistic, interval or p-value
// NaN); "" when it is not. Its value is a short code, written as such in
// the CSV and JSON files; Explain says it in a sentence.
type Reason string

// The reasons.
const (
	// NoVariance: the variance a test or interval rests on is 0 (up to
	// rounding): the figures of merit do not vary where the analysis
	// looks for variation (between readers, over cases, or both), so
	// there is nothing to scale a statistic by, and an interval would
	// have zero width, claiming a certainty no finite sample gives.
	NoVariance Reason = "no_variance"
	// OneModality: a test of equal modalities needs two.
	OneModality Reason = "one_modality"
)

// Explain is the reason in words.
func (r Reason) Explain() string {
	switch r {
	case NoVariance:
		return "no variance: the figures it rests on do not vary"
	case OneModality:
		return "one modality: no test of equal modalities"
	}
	return string(r)
}

// Test is an analysis' test of equal modalities: an F statistic on DF1
// and DF2 degrees of freedom, or (Chi2) a chi-square statistic on DF1.
// DF2 is +Inf when infinite (then F is referred to χ²(DF1)/DF1). Stat and
// P are NaN, and NA says why, when the test is undefined.
type Test struct {
	Chi2     bool
	Stat     float64
	DF1, DF2 float64
	P        float64
	NA       Reason
}

// Interval is an estimate with its standard error and a two-sided
// interval from Student's t on DF degrees of freedom (DF = +Inf: the
// normal). P is the two-sided p-value of estimate = 0 (NaN for a mean).
// When the standard error is 0, Lo, Hi and P are NaN and NA says why
// (SE stays 0, DF as computed, NaN when 0/0).
type Interval struct {
	Estimate, SE, DF float64
	Lo, Hi           float64
	P                float64
	NA               Reason
}

// Clip returns the interval's bounds limited to [min, max] — a figure's
// Range, or the range of a difference — for display, and whether each
// bound was clipped. The interval itself, its SE and P are not changed:
// a clipped bound is a display of the interval, not another interval.
// NaN bounds stay NaN.
func (iv Interval) Clip(min, max float64) (lo, hi float64, loClipped, hiClipped bool) {
	lo, hi = iv.Lo, iv.Hi
	if lo < min {
		lo, loClipped = min, true
	}
	if hi > max {
		hi, hiClipped = max, true
	}
	return lo, hi, loClipped, hiClipped
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
	Test  Test // NA (OneModality) with one modality
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
	// Blocks are the block names of a split-plot study (nil: fully
	// crossed), BlockReaders and BlockCases each block's numbers of
	// readers and cases.
	Blocks                   []string
	BlockReaders, BlockCases []int
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

// Options adjust AnalyzeWith.
type Options struct {
	// Alpha is the level of the tests and intervals (0: DefaultAlpha).
	Alpha float64
	// Progress, when set, is called as the work advances with the units
	// done and the total (each figure of merit's jackknife, then each
	// figure's covariances with the others), from the calling goroutine.
	Progress func(done, total int)
}

func (d *Data) check() error {
	_, err := d.layout()
	return err
}

// layout is a study's blocks: per block its readers and cases (indexes
// into Data), and per reader its block. A fully crossed study is one
// block of every reader and case.
type layout struct {
	readerBlock []int   // per reader
	readers     [][]int // per block
	cases       [][]int // per block
	crossed     bool    // one block of all the cases, in Data's order
}

// blocks is the number of blocks.
func (l *layout) blocks() int { return len(l.readers) }

// maxCases is the largest block's number of cases.
func (l *layout) maxCases() int {
	m := 0
	for _, cs := range l.cases {
		m = max(m, len(cs))
	}
	return m
}

// withinPairs is the number of ordered pairs of distinct readers in the
// same block: r(r − 1) when fully crossed.
func (l *layout) withinPairs() int {
	n := 0
	for _, rs := range l.readers {
		n += len(rs) * (len(rs) - 1)
	}
	return n
}

// block is reader j's scores and the truth of the cases of its block.
func (l *layout) block(j int, s []float64, truth []int) ([]float64, []int) {
	if l.crossed {
		return s, truth
	}
	ks := l.cases[l.readerBlock[j]]
	sub := make([]float64, len(ks))
	var tr []int
	if truth != nil {
		tr = make([]int, len(ks))
	}
	for n, k := range ks {
		sub[n] = s[k]
		if truth != nil {
			tr[n] = truth[k]
		}
	}
	return sub, tr
}

// layout checks the study and returns its blocks.
func (d *Data) layout() (*layout, error) {
	t, r, c := len(d.Modalities), len(d.Readers), len(d.Cases)
	if t < 1 {
		return nil, errors.New("no modality")
	}
	if r < 2 {
		return nil, fmt.Errorf("%d reader(s): at least 2 are needed", r)
	}
	if len(d.Scores) != t {
		return nil, fmt.Errorf("scores for %d modalities, want %d", len(d.Scores), t)
	}
	l := &layout{readerBlock: make([]int, r)}
	if d.Blocks == nil {
		l.crossed = true
		l.readers = [][]int{make([]int, r)}
		l.cases = [][]int{make([]int, c)}
		for j := range r {
			l.readers[0][j] = j
		}
		for k := range c {
			l.cases[0][k] = k
		}
	} else {
		nb := len(d.Blocks)
		if nb < 1 {
			return nil, errors.New("a split-plot study with no block")
		}
		if len(d.ReaderBlock) != r || len(d.CaseBlock) != c {
			return nil, fmt.Errorf("blocks for %d readers and %d cases, want %d and %d", len(d.ReaderBlock), len(d.CaseBlock), r, c)
		}
		l.readers, l.cases = make([][]int, nb), make([][]int, nb)
		for j, b := range d.ReaderBlock {
			if b < 0 || b >= nb {
				return nil, fmt.Errorf("reader %s: block %d, want 0 to %d", d.Readers[j], b, nb-1)
			}
			l.readerBlock[j] = b
			l.readers[b] = append(l.readers[b], j)
		}
		for k, b := range d.CaseBlock {
			if b < 0 || b >= nb {
				return nil, fmt.Errorf("case %s: block %d, want 0 to %d", d.Cases[k], b, nb-1)
			}
			l.cases[b] = append(l.cases[b], k)
		}
		for b := range nb {
			// Two readers a block at least: the covariance of two
			// readers' figures over shared cases (Cov2, Cov3) is
			// estimated within blocks.
			if len(l.readers[b]) < 2 {
				return nil, fmt.Errorf("block %s: %d reader(s): a split-plot study needs at least 2 readers in every block", d.Blocks[b], len(l.readers[b]))
			}
		}
		if d.Truth != nil && len(d.Truth) != c {
			return nil, fmt.Errorf("truth for %d cases, want %d", len(d.Truth), c)
		}
		// One block of every case in order is the fully crossed study.
		if nb == 1 {
			l.crossed = true
			for n, k := range l.cases[0] {
				if n != k {
					l.crossed = false
				}
			}
		}
	}
	for i := range d.Scores {
		if len(d.Scores[i]) != r {
			return nil, fmt.Errorf("modality %s: scores for %d readers, want %d", d.Modalities[i], len(d.Scores[i]), r)
		}
		for j, s := range d.Scores[i] {
			if len(s) != c {
				return nil, fmt.Errorf("modality %s, reader %s: %d scores, want %d", d.Modalities[i], d.Readers[j], len(s), c)
			}
			sub, truth := l.block(j, s, d.Truth)
			if err := d.FOM.check(sub, truth); err != nil {
				return nil, fmt.Errorf("modality %s, reader %s: %w", d.Modalities[i], d.Readers[j], err)
			}
		}
	}
	return l, nil
}

// Analyze runs the three OR analyses of a study at level alpha (0: the
// default 0.05).
func Analyze(d *Data, alpha float64) (*Analysis, error) {
	return AnalyzeWith(d, Options{Alpha: alpha})
}

// AnalyzeWith is Analyze with options.
func AnalyzeWith(d *Data, opt Options) (*Analysis, error) {
	alpha := opt.Alpha
	if alpha == 0 {
		alpha = DefaultAlpha
	}
	if !(alpha > 0 && alpha < 1) {
		return nil, fmt.Errorf("alpha %v: want a level between 0 and 1", alpha)
	}
	l, err := d.layout()
	if err != nil {
		return nil, err
	}
	t, r, c := len(d.Modalities), len(d.Readers), len(d.Cases)
	progress := func(int) {}
	if opt.Progress != nil {
		done, total := 0, 2*t*r
		progress = func(k int) { done += k; opt.Progress(done, total) }
	}
	figs := make([]figure, 0, t*r) // index i·r + j
	theta := make([][]float64, t)
	for i, byReader := range d.Scores {
		theta[i] = make([]float64, r)
		for j, s := range byReader {
			s, truth := l.block(j, s, d.Truth)
			f := figure{dev: make([]float64, len(s))}
			f.theta = d.FOM.value(s, truth, f.dev)
			theta[i][j] = f.theta
			figs = append(figs, f)
			progress(1)
		}
	}
	// Figures of readers of different blocks share no case: their
	// covariance is 0 by design, not estimated.
	var figBlock []int
	if !l.crossed {
		figBlock = make([]int, 0, t*r)
		for range t {
			figBlock = append(figBlock, l.readerBlock...)
		}
	}
	cov := covMatrix(figs, figBlock, progress)
	a := &Analysis{FOM: d.FOM, Alpha: alpha, Modalities: d.Modalities, Readers: d.Readers, NCases: c, Theta: theta}
	if d.Blocks != nil {
		a.Blocks = d.Blocks
		for b := range l.blocks() {
			a.BlockReaders = append(a.BlockReaders, len(l.readers[b]))
			a.BlockCases = append(a.BlockCases, len(l.cases[b]))
		}
	}
	a.ModalityMeans = make([]float64, t)
	for i := range theta {
		a.ModalityMeans[i] = meanOf(theta[i])
	}
	ft, fr := float64(t), float64(r)
	// The design's coefficients. pairs is the number of ordered pairs of
	// readers in the same block, r(r − 1) when fully crossed; then
	// pairsPerReader is r − 1, nEff r and w 1, exactly, so that one block
	// gives the fully crossed analysis to the last bit.
	pairs := float64(l.withinPairs())
	pairsPerReader := pairs / fr
	nEff := 1 + pairsPerReader
	w := pairs / (fr * (fr - 1))
	ms := meanSquares(theta, l)
	cs := covSums(cov, r, l.maxCases(), l.readerBlock, w)
	cv := Components{MST: ms.t, MSR: ms.r, MSTR: ms.tr, MSTRG: ms.trg, Var: cs.v, Cov1: cs.c1, Cov2: cs.c2, Cov3: cs.c3}
	// The constrained Cov2 − Cov3 of every analysis: as a variance part it
	// cannot be negative.
	c23 := math.Max(cs.c2MinusC3, 0)
	cv.VarTR = ms.trg - cs.vMinusC1 + c23
	cv.VarR = (ms.r - cv.VarTR - cs.vMinusC2 - float64(t-1)*cs.c1MinusC3) / float64(t)
	a.Components = cv
	dfTRG := (ft - 1) * (fr - float64(l.blocks()))

	// Random readers, random cases: the denominator MS(T×R(G)) +
	// nEff·max(Cov2−Cov3, 0) (fully crossed: MS(T×R) + r·max(Cov2−Cov3, 0)),
	// its degrees of freedom by Satterthwaite (Hillis 2008, 2014).
	den := ms.trg + nEff*c23
	ddf := satterthwaite(den, ms.trg, dfTRG)
	rrrc := Design{Name: RRRC, Test: fTest(ms.t, den, ft-1, ddf)}
	rrrc.Diffs = diffs(a, 2*den/fr, ddf)

	// Fixed readers, random cases: chi-square on t−1 degrees of freedom,
	// the denominator Var − Cov1 + pairsPerReader·max(Cov2 − Cov3, 0)
	// (fully crossed: (r − 1)·max(Cov2 − Cov3, 0)).
	denF := math.Max(cs.vMinusC1, 0) + pairsPerReader*c23
	frrc := Design{Name: FRRC, Test: chi2Test((ft-1)*ms.t, denF, ft-1)}
	frrc.Diffs = diffs(a, 2*denF/fr, math.Inf(1))

	// Random readers, fixed cases: F on MS(T×R(G)).
	rrfc := Design{Name: RRFC, Test: fTest(ms.t, ms.trg, ft-1, dfTRG)}
	rrfc.Diffs = diffs(a, 2*ms.trg/fr, dfTRG)

	for i, m := range d.Modalities {
		ps := modalityPanel(theta[i], cov, i, r, l.maxCases(), l.readerBlock)
		rrrc.Means = append(rrrc.Means, Mean{m, ps.rrrc(alpha)})
		frrc.Means = append(frrc.Means, Mean{m, ps.frrc(alpha)})
		rrfc.Means = append(rrfc.Means, Mean{m, ps.rrfc(alpha)})
	}
	if t < 2 {
		for _, ds := range []*Design{&rrrc, &frrc, &rrfc} {
			ds.Test = Test{Chi2: ds.Test.Chi2, Stat: math.NaN(), DF1: math.NaN(), DF2: math.NaN(), P: math.NaN(), NA: OneModality}
		}
	}
	a.Designs = []Design{rrrc, frrc, rrfc}
	return a, nil
}

// covMatrix is the jackknife covariance of every pair of figures,
// (c − 1)/c · Σ_k dev_a[k]·dev_b[k], in a symmetric matrix; progress
// counts one unit per row. With block (per figure; nil: one block), the
// figures of different blocks are left at covariance 0.
func covMatrix(figs []figure, block []int, progress func(int)) [][]float64 {
	n := len(figs)
	cov := make([][]float64, n)
	for a := range cov {
		cov[a] = make([]float64, n)
	}
	for a := range n {
		da := figs[a].dev
		c := float64(len(da))
		for b := a; b < n; b++ {
			if block != nil && block[a] != block[b] {
				continue
			}
			db := figs[b].dev[:len(da)]
			// Four running sums: shorter chains of rounding, and a loop
			// the processor pipelines.
			var s0, s1, s2, s3 float64
			k := 0
			for ; k+4 <= len(da); k += 4 {
				s0 += da[k] * db[k]
				s1 += da[k+1] * db[k+1]
				s2 += da[k+2] * db[k+2]
				s3 += da[k+3] * db[k+3]
			}
			for ; k < len(da); k++ {
				s0 += da[k] * db[k]
			}
			v := ((s0 + s1) + (s2 + s3)) * (c - 1) / c
			cov[a][b], cov[b][a] = v, v
		}
		progress(1)
	}
	return cov
}

// covariances are Var, Cov1, Cov2, Cov3 and their differences that
// enter the analyses, each difference 0 when within rounding of 0.
type covariances struct {
	v, c1, c2, c3                            float64
	c2MinusC3, vMinusC1, vMinusC2, c1MinusC3 float64
}

// covSums averages the covariance matrix of the t·r figures (index
// i·r + j) over the four kinds of pair; pairs of different readers count
// only within a block (readerBlock, per reader). c is the largest block's
// number of cases. w (1 when fully crossed) is the share of the pairs of
// distinct readers that share a block: Var − Cov2 and Cov1 − Cov3 enter
// MS(R) as Var − w·Cov2 and Cov1 − w·Cov3.
func covSums(cov [][]float64, r, c int, readerBlock []int, w float64) covariances {
	var s [4]float64
	var n [4]int
	maxVar := 0.0
	for a := range cov {
		maxVar = math.Max(maxVar, cov[a][a])
		for b := range cov {
			sameT, sameR := a/r == b/r, a%r == b%r
			if !sameR && readerBlock[a%r] != readerBlock[b%r] {
				continue
			}
			k := 3
			switch {
			case sameT && sameR:
				k = 0
			case sameR:
				k = 1
			case sameT:
				k = 2
			}
			s[k] += cov[a][b]
			n[k]++
		}
	}
	avg := func(k int) float64 {
		if n[k] == 0 {
			return math.NaN()
		}
		return s[k] / float64(n[k])
	}
	cs := covariances{v: avg(0), c1: avg(1), c2: avg(2), c3: avg(3)}
	tol := covTol(c, len(cov)*len(cov), maxVar)
	cs.c2MinusC3 = zeroWithin(cs.c2-cs.c3, tol)
	cs.vMinusC1 = zeroWithin(cs.v-cs.c1, tol)
	cs.vMinusC2 = zeroWithin(cs.v-w*cs.c2, tol)
	cs.c1MinusC3 = zeroWithin(cs.c1-w*cs.c3, tol)
	return cs
}

// mss are the mean squares of a t × r table of figures; trg is the
// modality × reader-within-block mean square (tr when one block).
type mss struct{ t, r, tr, trg float64 }

// meanSquares are MS(T), MS(R), MS(T×R) and MS(T×R(G)), each 0 when its
// deviations are rounding residue (figureTol); MS(T), MS(T×R) and
// MS(T×R(G)) are NaN with one modality.
func meanSquares(theta [][]float64, l *layout) mss {
	t, r := len(theta), len(theta[0])
	ft, fr := float64(t), float64(r)
	mi := make([]float64, t)
	mj := make([]float64, r)
	var grand, scale float64
	for i := range theta {
		for j, v := range theta[i] {
			mi[i] += v
			mj[j] += v
			grand += v
			scale = math.Max(scale, math.Abs(v))
		}
	}
	for i := range mi {
		mi[i] /= fr
	}
	for j := range mj {
		mj[j] /= ft
	}
	grand /= ft * fr
	tol := figureTol(t*r, t, r, scale)
	devT := make([]float64, t)
	for i := range mi {
		devT[i] = mi[i] - grand
	}
	devR := make([]float64, r)
	for j := range mj {
		devR[j] = mj[j] - grand
	}
	devTR := make([]float64, 0, t*r)
	for i := range theta {
		for j, v := range theta[i] {
			devTR = append(devTR, v-mi[i]-mj[j]+grand)
		}
	}
	ms := mss{t: math.NaN(), tr: math.NaN(), trg: math.NaN()}
	ms.r = ft / (fr - 1) * sumSquaresOrZero(devR, tol)
	if t > 1 {
		ms.t = fr / (ft - 1) * sumSquaresOrZero(devT, tol)
		ms.tr = sumSquaresOrZero(devTR, tol) / ((ft - 1) * (fr - 1))
		ms.trg = ms.tr
		if l.blocks() > 1 {
			ms.trg = trWithinBlocks(theta, mj, l, tol)
		}
	}
	return ms
}

// trWithinBlocks is MS(T×R(G)): the modality × reader interaction within
// each block (the figure less its modality's mean over the block's
// readers, less its reader's mean, plus the block's grand mean), summed
// over blocks, on (t − 1)(r − B) degrees of freedom.
func trWithinBlocks(theta [][]float64, readerMean []float64, l *layout, tol float64) float64 {
	t, r := len(theta), len(theta[0])
	devs := make([]float64, 0, t*r)
	for _, readers := range l.readers {
		fb := float64(len(readers))
		mib := make([]float64, t)
		var grand float64
		for i := range theta {
			for _, j := range readers {
				mib[i] += theta[i][j]
			}
			grand += mib[i]
			mib[i] /= fb
		}
		grand /= float64(t) * fb
		for i := range theta {
			for _, j := range readers {
				devs = append(devs, theta[i][j]-mib[i]-readerMean[j]+grand)
			}
		}
	}
	return sumSquaresOrZero(devs, tol) / (float64(t-1) * float64(r-l.blocks()))
}

func meanOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// panel are one modality's statistics over its r readers: the mean
// figure, MS(R), and the jackknife Var and Cov2 within the modality, each
// 0 when within rounding of 0, Cov2 averaged over the pairs of readers of
// the same block. w is the share of the r(r − 1) ordered pairs of readers
// that share a block and pj the number of such pairs per reader: 1 and
// r − 1 when fully crossed.
type panel struct {
	r                   float64
	mean, msr, vr, cov2 float64
	w, pj               float64
}

// modalityPanel is modality i's panel from the study's covariance matrix
// (readerBlock per reader; c the largest block's number of cases).
func modalityPanel(theta []float64, cov [][]float64, i, r, c int, readerBlock []int) panel {
	sub := make([][]float64, r)
	for j := range sub {
		sub[j] = cov[i*r+j][i*r : i*r+r]
	}
	return panelOf(theta, sub, c, 0, 0, readerBlock)
}

// panelOf is the panel of figures theta with covariance matrix cov over
// c cases. minScale and minVar raise the scales of the rounding bounds
// when the figures are differences of others (ModelVersusPanel): their
// rounding is that of the figures they came from. readerBlock (nil: one
// block) says which pairs of readers share cases.
func panelOf(theta []float64, cov [][]float64, c int, minScale, minVar float64, readerBlock []int) panel {
	r := len(theta)
	p := panel{r: float64(r), mean: meanOf(theta)}
	scale, maxVar := minScale, minVar
	devs := make([]float64, r)
	for j, v := range theta {
		devs[j] = v - p.mean
		scale = math.Max(scale, math.Abs(v))
		maxVar = math.Max(maxVar, cov[j][j])
	}
	p.msr = sumSquaresOrZero(devs, figureTol(r, 1, r, scale)) / (p.r - 1)
	var nc int
	for j := range cov {
		for j2 := range cov {
			switch {
			case j == j2:
				p.vr += cov[j][j]
			case readerBlock == nil || readerBlock[j] == readerBlock[j2]:
				p.cov2 += cov[j][j2]
				nc++
			}
		}
	}
	p.vr /= p.r
	p.cov2 = zeroWithin(p.cov2/float64(nc), covTol(c, r*r, maxVar))
	p.w = float64(nc) / (p.r * (p.r - 1))
	p.pj = float64(nc) / p.r
	return p
}

// rrrc is the one-modality random-readers random-cases interval of the
// panel's mean (Hillis 2007): variance MS(R)/r + w·max(Cov2, 0), degrees
// of freedom (MS(R) + r·w·max(Cov2, 0))² / (MS(R)²/(r−1)).
func (p panel) rrrc(alpha float64) Interval {
	c2 := p.w * math.Max(p.cov2, 0)
	df := satterthwaite(p.msr+p.r*c2, p.msr, p.r-1)
	return interval(p.mean, p.msr/p.r+c2, df, alpha, false)
}

// frrc is the one-modality fixed-readers interval: variance
// Var/r + pj/r·max(Cov2, 0) (pj = r − 1 fully crossed), the normal.
func (p panel) frrc(alpha float64) Interval {
	return interval(p.mean, p.vr/p.r+p.pj/p.r*math.Max(p.cov2, 0), math.Inf(1), alpha, false)
}

// rrfc is the one-modality fixed-cases interval: variance MS(R)/r on
// r − 1 degrees of freedom.
func (p panel) rrfc(alpha float64) Interval {
	return interval(p.mean, p.msr/p.r, p.r-1, alpha, false)
}

// satterthwaite is den²/(ms²/df) — Hillis' degrees of freedom of a
// denominator den whose one estimated mean square ms has df degrees of
// freedom — with the limits: +Inf when ms is 0 and den is not (only the
// case variance, estimated from every case, is left), NaN when den is 0.
// Above MaxFiniteDF it is +Inf.
func satterthwaite(den, ms, df float64) float64 {
	switch {
	case math.IsNaN(den) || math.IsNaN(ms):
		return math.NaN()
	case den == 0:
		return math.NaN()
	case ms == 0:
		return math.Inf(1)
	}
	return finiteDF(den * den / (ms * ms / df))
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

// interval is est ± t(1−α/2; df)·√se2, with the two-sided p of est = 0
// when withP. se2 is exactly 0 when the variance is (its parts are 0
// by scale): then there is no interval (NoVariance).
func interval(est, se2, df, alpha float64, withP bool) Interval {
	df = finiteDF(df)
	iv := Interval{Estimate: est, SE: math.NaN(), DF: df, Lo: math.NaN(), Hi: math.NaN(), P: math.NaN()}
	if se2 >= 0 {
		iv.SE = math.Sqrt(se2)
	}
	if iv.SE == 0 {
		iv.NA = NoVariance
		return iv
	}
	if !(iv.SE > 0) || math.IsNaN(df) || df <= 0 {
		return iv
	}
	q := tQuantile(1-alpha/2, df)
	iv.Lo, iv.Hi = est-q*iv.SE, est+q*iv.SE
	if withP {
		iv.P = 2 * tSurvival(math.Abs(est)/iv.SE, df)
	}
	return iv
}

func fTest(num, den, df1, df2 float64) Test {
	t := Test{Stat: math.NaN(), DF1: df1, DF2: finiteDF(df2), P: math.NaN()}
	if den == 0 {
		t.NA = NoVariance
		return t
	}
	if !(den > 0) || math.IsNaN(num) || !(t.DF2 > 0) {
		return t
	}
	t.Stat = num / den
	t.P = fSurvival(t.Stat, df1, t.DF2)
	return t
}

func chi2Test(num, den, df float64) Test {
	t := Test{Chi2: true, Stat: math.NaN(), DF1: df, DF2: math.NaN(), P: math.NaN()}
	if den == 0 {
		t.NA = NoVariance
		return t
	}
	if !(den > 0) || math.IsNaN(num) {
		return t
	}
	t.Stat = num / den
	t.P = chi2Survival(t.Stat, df)
	return t
}
