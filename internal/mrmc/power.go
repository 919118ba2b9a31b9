package mrmc

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Planning a study: the power of the three OR analyses of a two-modality
// study of J readers and K cases, and the smallest J or K that reaches a
// power, from the OR variance components of a pilot study (Hillis,
// Obuchowski & Berbaum 2011, Academic Radiology 18:129–142; the formulas
// in words are in docs/mrmc.md).
//
// The pilot's error variance and covariances (Var, Cov1, Cov2, Cov3) are
// variances of figures of merit over K* cases; over K cases of the same
// kind they are K*/K times as large. The modality-by-reader variance VarTR
// does not depend on the cases. Write x = K*/K, c = max(Cov2 − Cov3, 0)
// and σ²_TR = max(VarTR, 0), and d for the difference of the two
// modalities' figures to detect. Then, with the denominators
//
//	random readers and cases  D = σ²_TR + x·(Var − Cov1 + (J − 1)·c)
//	fixed readers             D = x·(Var − Cov1 + (J − 1)·c)
//	fixed cases               D = σ²_TR + x·(Var − Cov1 − c)
//
// the test of equal modalities has noncentrality λ = J·d²/(2D), and power
// P(F(1, ν, λ) > F_α(1, ν)) with ν = D²·(J − 1)/(σ²_TR + x·(Var − Cov1 − c))²
// (Hillis' df) for random readers and cases, P(χ²(1, λ) > χ²_α(1)) for
// fixed readers, and ν = J − 1 for fixed cases. A non-inferiority margin m
// replaces the F or χ² by the one-sided t or normal test of d > −m at
// level α/2, with noncentrality (d + m)/√(2D/J).

// Limits of the searches for the smallest study: beyond them a target
// power is reported as not reached.
const (
	MaxPlanCases   = 100_000
	MaxPlanReaders = 1_000
)

// minPlanSize is the fewest readers or cases a planned study may have:
// the analyses need two of each.
const minPlanSize = 2

// Analyses are the three analyses a plan sizes, in the order of
// Analysis.Designs.
var Analyses = []string{RRRC, FRRC, RRFC}

// Pilot holds the OR variance components a plan starts from, from a
// pilot study's analysis or given directly.
type Pilot struct {
	FOM        FOM      // the figure of merit (empty when unknown)
	Modalities []string // the pilot's modalities (nil when unknown)
	Readers    int      // J*, the pilot's readers (0 when unknown)
	Cases      int      // K*, the pilot's cases: the components' scale
	// Var, Cov1, Cov2 and Cov3 are the error variance and covariances of
	// the figures of merit over Cases cases; VarTR is the
	// modality-by-reader variance.
	Var, Cov1, Cov2, Cov3, VarTR float64
	// Difference is the pilot's observed difference of its first two
	// modalities' means (first − second); NaN when unknown.
	Difference float64
}

// PilotFromAnalysis takes an analysis of two or more modalities as a
// pilot. VarTR is MS(T×R) − Var + Cov1 + max(Cov2 − Cov3, 0) (Hillis et
// al. 2011, eq. 9; MS(T×R(G)) for a split-plot pilot, whose components
// are over a block's cases); the observed difference is known for two modalities
// only (with more, which pair a study compares is the user's choice).
func PilotFromAnalysis(a *Analysis) (*Pilot, error) {
	if len(a.Modalities) < 2 {
		return nil, fmt.Errorf("the pilot has %d modality: a plan needs two to compare (Cov1, Cov3 and VarTR come from them)", len(a.Modalities))
	}
	p := &Pilot{
		FOM: a.FOM, Modalities: a.Modalities, Readers: len(a.Readers), Cases: pilotCases(a.NCases, len(a.Blocks)),
		Var: a.Var, Cov1: a.Cov1, Cov2: a.Cov2, Cov3: a.Cov3,
		VarTR:      a.MSTRG - a.Var + a.Cov1 + math.Max(a.Cov2-a.Cov3, 0),
		Difference: math.NaN(),
	}
	if len(a.Modalities) == 2 {
		p.Difference = a.ModalityMeans[0] - a.ModalityMeans[1]
	}
	return p, p.Check()
}

// pilotCases is the number of cases a pilot's components are estimated
// over: all of them when fully crossed (blocks 0), a block's share in a
// split-plot pilot (the mean block, rounded), whose covariances are
// estimated within blocks.
func pilotCases(cases, blocks int) int {
	if blocks < 2 {
		return cases
	}
	return int(math.Round(float64(cases) / float64(blocks)))
}

// Check validates the components and the pilot's number of cases.
func (p *Pilot) Check() error {
	if p.Cases < minPlanSize {
		return fmt.Errorf("pilot cases %d: the components need the number of cases they were estimated on (at least %d)", p.Cases, minPlanSize)
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"Var", p.Var}, {"Cov1", p.Cov1}, {"Cov2", p.Cov2}, {"Cov3", p.Cov3}, {"VarTR", p.VarTR}} {
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) {
			return fmt.Errorf("pilot component %s is %s: want a finite number", c.name, fmtNum(c.v))
		}
	}
	if !(p.Var > 0) {
		return fmt.Errorf("pilot component Var %s: an error variance must be positive (a pilot whose figures do not vary over cases cannot size a study)", fmtNum(p.Var))
	}
	return nil
}

// Constraints says which components the plan takes as 0, and why: the
// OR method's constraints on estimates that came out negative.
func (p *Pilot) Constraints() []string {
	var notes []string
	if p.VarTR < 0 {
		notes = append(notes, fmt.Sprintf("VarTR %s is negative: taken as 0 (a variance; Hillis et al. 2011 and RJafroc do the same)", fmtNum(p.VarTR)))
	}
	if p.Cov2 < p.Cov3 {
		notes = append(notes, fmt.Sprintf("Cov2 − Cov3 = %s is negative: taken as 0 (the OR method's constraint max(Cov2 − Cov3, 0))", fmtNum(p.Cov2-p.Cov3)))
	}
	return notes
}

// Hypothesis is what a planned study tests, and its layout.
type Hypothesis struct {
	// Blocks > 1 plans a split-plot study: the readers and the cases
	// split evenly into Blocks blocks, the readers of a block reading its
	// cases only. 0 or 1: fully crossed.
	Blocks int
	// Effect is the difference of the two modalities' figures of merit
	// the study should detect (first − second).
	Effect float64
	// Alpha is the level of the test (0: DefaultAlpha).
	Alpha float64
	// Margin > 0 makes the test one of non-inferiority: the difference is
	// above −Margin, shown when the lower limit of the two-sided 1 − α
	// interval lies above −Margin (a one-sided test at α/2).
	Margin float64
}

func (h Hypothesis) alpha() float64 {
	if h.Alpha == 0 {
		return DefaultAlpha
	}
	return h.Alpha
}

func (h Hypothesis) check() error {
	if math.IsNaN(h.Effect) || math.IsInf(h.Effect, 0) {
		return fmt.Errorf("effect %s: want a finite difference of figures of merit", fmtNum(h.Effect))
	}
	if a := h.alpha(); !(a > 0 && a < 1) {
		return fmt.Errorf("alpha %v: want a level between 0 and 1", a)
	}
	if !(h.Margin >= 0) || math.IsInf(h.Margin, 1) {
		return fmt.Errorf("non-inferiority margin %v: want 0 (none) or more", h.Margin)
	}
	if h.Blocks < 0 {
		return fmt.Errorf("blocks %d: want 1 (fully crossed) or more", h.Blocks)
	}
	return nil
}

// blocks is the number of blocks: 1 when fully crossed.
func (h Hypothesis) blocks() int { return max(h.Blocks, 1) }

// checkSize checks a planned study's readers and cases against its
// blocks: two readers and two cases a block at least.
func (h Hypothesis) checkSize(readers, cases int) error {
	b := h.blocks()
	if readers < minPlanSize*b {
		if b == 1 {
			return fmt.Errorf("readers %d: a study needs at least %d", readers, minPlanSize)
		}
		return fmt.Errorf("readers %d: a study of %d blocks needs at least %d (2 a block)", readers, b, minPlanSize*b)
	}
	if cases < minPlanSize*b {
		if b == 1 {
			return fmt.Errorf("cases %d: a study needs at least %d", cases, minPlanSize)
		}
		return fmt.Errorf("cases %d: a study of %d blocks needs at least %d (2 a block)", cases, b, minPlanSize*b)
	}
	return nil
}

// Power is one analysis' power for a study of Readers readers and Cases
// cases: its test statistic (F, chi2; with a margin t, or z for fixed
// readers), noncentrality (λ of the F or χ², δ of the t or normal),
// degrees of freedom (DF2 +Inf for the normal, NaN for χ²), critical
// value and power.
type Power struct {
	Analysis       string
	Readers, Cases int
	Statistic      string
	Noncentrality  float64
	DF1, DF2       float64
	Critical       float64
	Power          float64
}

// ErrNoVariance is a study whose components leave an analysis no positive
// variance: its power is undefined.
var ErrNoVariance = errors.New("no positive variance")

// Power is the power of the analysis (RRRC, FRRC or RRFC) for a study of
// the given readers and cases.
func (p *Pilot) Power(analysis string, readers, cases int, h Hypothesis) (Power, error) {
	if err := p.Check(); err != nil {
		return Power{}, err
	}
	if err := h.check(); err != nil {
		return Power{}, err
	}
	if err := checkAnalysis(analysis); err != nil {
		return Power{}, err
	}
	if err := h.checkSize(readers, cases); err != nil {
		return Power{}, err
	}
	return p.power(analysis, readers, cases, h, newCriticals())
}

func checkAnalysis(analysis string) error {
	for _, a := range Analyses {
		if a == analysis {
			return nil
		}
	}
	return fmt.Errorf("analysis %q: want %q, %q or %q", analysis, RRRC, FRRC, RRFC)
}

// design is the planned study's share of the pilot's error terms. With
// B blocks each block's readers read its K/B cases, so the components,
// estimated over K* cases, scale by x = B·K*/K; the J readers' errors are
// correlated (Cov2, Cov3) only within a block, for P/J pairs of readers
// per reader, P = Σ_b J_b(J_b − 1) (J − 1 when fully crossed). It returns
// the case part of the variance of a difference (times J/2) and the case
// part of the expected MS(T×R(G)), both at K cases:
// x·(Var − Cov1 + (P/J)·c) and x·(Var − Cov1 − c).
func (p *Pilot) design(readers, cases int, blocks int) (caseVar, caseVarTR float64) {
	fr := float64(readers)
	x := float64(p.Cases) * float64(blocks) / float64(cases)
	pairs := 0
	for b := range blocks {
		jb := readers / blocks
		if b < readers%blocks {
			jb++
		}
		pairs += jb * (jb - 1)
	}
	c := math.Max(p.Cov2-p.Cov3, 0)
	return x * (p.Var - p.Cov1 + float64(pairs)/fr*c), x * (p.Var - p.Cov1 - c)
}

// criticals caches the critical values of a search, whose df repeat.
type criticals map[[3]float64]float64

func newCriticals() criticals { return criticals{} }

func (cs criticals) get(kind, alpha, df float64, f func() float64) float64 {
	k := [3]float64{kind, alpha, df}
	if v, ok := cs[k]; ok {
		return v
	}
	v := f()
	cs[k] = v
	return v
}

// power evaluates one analysis; the inputs are checked.
func (p *Pilot) power(analysis string, readers, cases int, h Hypothesis, cs criticals) (Power, error) {
	fr := float64(readers)
	caseVar, caseVarTR := p.design(readers, cases, h.blocks())
	varTR := math.Max(p.VarTR, 0)
	out := Power{Analysis: analysis, Readers: readers, Cases: cases, DF1: 1}
	// MS(T×R(G)) has J − B degrees of freedom (J − 1 fully crossed).
	dfTRG := float64(readers - h.blocks())
	var den, df float64
	switch analysis {
	case RRRC:
		den = varTR + caseVar
		df = ratio(den*den*dfTRG, (varTR+caseVarTR)*(varTR+caseVarTR))
	case FRRC:
		den = caseVar
		df = math.Inf(1)
	case RRFC:
		den = varTR + caseVarTR
		df = dfTRG
	}
	if !(den > 0) {
		return out, fmt.Errorf("%s with %d readers and %d cases: %w (the components give the difference a variance of %s)", analysis, readers, cases, ErrNoVariance, fmtNum(2*den/fr))
	}
	out.DF2 = df
	alpha := h.alpha()
	if h.Margin > 0 {
		// One-sided test of d > −m at α/2 on t(ν), or the normal.
		out.Statistic = "t"
		if math.IsInf(df, 1) {
			out.Statistic = "z"
		}
		out.Noncentrality = (h.Effect + h.Margin) / math.Sqrt(2*den/fr)
		out.Critical = cs.get(1, alpha, df, func() float64 { return math.Sqrt(fUpper(alpha, 1, df)) })
		out.Power = noncentralT{df, out.Noncentrality}.survival(out.Critical)
		return out, nil
	}
	out.Noncentrality = fr * h.Effect * h.Effect / (2 * den)
	if analysis == FRRC {
		out.Statistic, out.DF2 = "chi2", math.NaN()
		out.Critical = cs.get(2, alpha, 1, func() float64 { return chi2Upper(alpha, 1) })
		out.Power = noncentralChi2{1, out.Noncentrality}.survival(out.Critical)
		return out, nil
	}
	out.Statistic = "F"
	out.Critical = cs.get(3, alpha, df, func() float64 { return fUpper(alpha, 1, df) })
	out.Power = noncentralF{1, df, out.Noncentrality}.survival(out.Critical)
	return out, nil
}

// UnreachableError is a target power that no study within the search
// limits reaches.
type UnreachableError struct {
	Analysis string
	Target   float64
	// Fixed names the size held fixed ("10 readers"), Varied the one
	// searched ("cases") and Bound its limit.
	Fixed, Varied string
	Bound         int
	// Best is the highest power met (with its study); Limit the power as
	// the varied size grows without bound (NaN when not computed).
	Best  Power
	Limit float64
	Why   string // what limits it, when known
}

func (e *UnreachableError) Error() string {
	at := e.Best.Cases
	if e.Varied == "readers" {
		at = e.Best.Readers
	}
	msg := fmt.Sprintf("%s: power %s is not reached with %s and up to %d %s (at most %s, with %d %s",
		e.Analysis, fmtNum(e.Target), e.Fixed, e.Bound, e.Varied, strconv.FormatFloat(e.Best.Power, 'f', 6, 64), at, e.Varied)
	if !math.IsNaN(e.Limit) {
		msg += fmt.Sprintf("; it tends to %s however many %s", strconv.FormatFloat(e.Limit, 'f', 6, 64), e.Varied)
	}
	msg += ")"
	if e.Why != "" {
		msg += ": " + e.Why
	}
	return msg
}

// SmallestCases is the smallest number of cases with which the analysis
// of a study of the given readers has at least the target power.
func (p *Pilot) SmallestCases(analysis string, readers int, target float64, h Hypothesis) (Power, error) {
	if err := p.checkSearch(analysis, target, h); err != nil {
		return Power{}, err
	}
	if err := h.checkSize(readers, minPlanSize*h.blocks()); err != nil {
		return Power{}, err
	}
	found, best, err := p.search(MaxPlanCases, h.blocks(), target, func(k int, cs criticals) (Power, error) {
		return p.power(analysis, readers, k, h, cs)
	})
	if err != nil || found {
		return best, err
	}
	limit, why := p.manyCasesLimit(analysis, readers, h)
	return Power{}, &UnreachableError{Analysis: analysis, Target: target, Fixed: plural(readers, "reader"), Varied: "cases",
		Bound: MaxPlanCases, Best: best, Limit: limit, Why: why}
}

// SmallestReaders is the smallest number of readers with which the
// analysis of a study of the given cases has at least the target power.
func (p *Pilot) SmallestReaders(analysis string, cases int, target float64, h Hypothesis) (Power, error) {
	if err := p.checkSearch(analysis, target, h); err != nil {
		return Power{}, err
	}
	if err := h.checkSize(minPlanSize*h.blocks(), cases); err != nil {
		return Power{}, err
	}
	found, best, err := p.search(MaxPlanReaders, h.blocks(), target, func(j int, cs criticals) (Power, error) {
		return p.power(analysis, j, cases, h, cs)
	})
	if err != nil || found {
		return best, err
	}
	limit, why := p.manyReadersLimit(analysis, cases, h)
	return Power{}, &UnreachableError{Analysis: analysis, Target: target, Fixed: plural(cases, "case"), Varied: "readers",
		Bound: MaxPlanReaders, Best: best, Limit: limit, Why: why}
}

func (p *Pilot) checkSearch(analysis string, target float64, h Hypothesis) error {
	if err := p.Check(); err != nil {
		return err
	}
	if err := h.check(); err != nil {
		return err
	}
	if err := checkAnalysis(analysis); err != nil {
		return err
	}
	if !(target > 0 && target < 1) {
		return fmt.Errorf("target power %v: want a probability between 0 and 1", target)
	}
	switch {
	case h.Margin == 0 && h.Effect == 0:
		return errors.New("effect 0: a test of equal modalities then rejects with probability alpha whatever the study's size; give the difference to detect")
	case h.Margin > 0 && h.Effect+h.Margin <= 0:
		return fmt.Errorf("effect %s is at or below −margin %s: non-inferiority is then shown with probability at most alpha/2 whatever the study's size", fmtNum(h.Effect), fmtNum(h.Margin))
	}
	return nil
}

// search walks n = 2B, 3B, ..., bound (B = step, the blocks: a size that
// splits evenly) and stops at the first power at or above the target. It walks rather than bisects because the power of the
// random-readers analysis need not rise with the cases: more cases raise
// the noncentrality but can lower Hillis' df. Without a hit it returns the
// highest power met.
func (p *Pilot) search(bound, step int, target float64, at func(n int, cs criticals) (Power, error)) (bool, Power, error) {
	cs := newCriticals()
	var best Power
	best.Power = -1
	for n := minPlanSize * step; n <= bound; n += step {
		pw, err := at(n, cs)
		if err != nil {
			return false, Power{}, err
		}
		if pw.Power >= target {
			return true, pw, nil
		}
		if pw.Power > best.Power {
			best = pw
		}
		if len(cs) > 64 {
			clear(cs) // the random-readers df differ at every size
		}
	}
	return false, best, nil
}

// manyCasesLimit is the power as the cases grow without bound: then
// x → 0, and the random-reader analyses keep the reader term σ²_TR.
func (p *Pilot) manyCasesLimit(analysis string, readers int, h Hypothesis) (float64, string) {
	varTR := math.Max(p.VarTR, 0)
	if analysis == FRRC || varTR == 0 {
		return 1, ""
	}
	lim, err := p.limitPower(analysis, float64(readers), varTR, float64(readers-h.blocks()), h)
	if err != nil {
		return math.NaN(), ""
	}
	return lim, "the modality-by-reader variance VarTR bounds it; add readers"
}

// manyReadersLimit is the power as the readers grow without bound: the
// variance of the difference tends to 2·x·max(Cov2 − Cov3, 0) with random
// cases, and Hillis' df to infinity.
func (p *Pilot) manyReadersLimit(analysis string, cases int, h Hypothesis) (float64, string) {
	c := math.Max(p.Cov2-p.Cov3, 0)
	if analysis == RRFC || c == 0 {
		return 1, ""
	}
	// With J → ∞: J·d²/(2D) → d²/(2·x·c), x = K*/K, whatever the
	// blocks (each block's share of the readers grows with J).
	x := float64(p.Cases) / float64(cases)
	lim, err := p.limitPower(analysis, 1, x*c, math.Inf(1), h)
	if err != nil {
		return math.NaN(), ""
	}
	return lim, "the case covariance Cov2 − Cov3 bounds it; add cases"
}

// limitPower is the power of a test whose difference has variance
// 2·den/readers on df degrees of freedom.
func (p *Pilot) limitPower(analysis string, readers, den, df float64, h Hypothesis) (float64, error) {
	if !(den > 0) {
		return 1, nil
	}
	alpha := h.alpha()
	if h.Margin > 0 {
		delta := (h.Effect + h.Margin) / math.Sqrt(2*den/readers)
		return noncentralT{df, delta}.survival(math.Sqrt(fUpper(alpha, 1, df))), nil
	}
	lambda := readers * h.Effect * h.Effect / (2 * den)
	if analysis == FRRC || math.IsInf(df, 1) {
		return noncentralChi2{1, lambda}.survival(chi2Upper(alpha, 1)), nil
	}
	return noncentralF{1, df, lambda}.survival(fUpper(alpha, 1, df)), nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// fmtNum is a number in a message: NA when undefined, the shortest form
// otherwise.
func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NA"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// ratio is a/b, infinite when b is 0 and a positive (a denominator df
// whose variance of the variance estimate vanishes), NaN when both are.
func ratio(a, b float64) float64 {
	if b == 0 {
		if a > 0 {
			return math.Inf(1)
		}
		return math.NaN()
	}
	return a / b
}
