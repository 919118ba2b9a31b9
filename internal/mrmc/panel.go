package mrmc

import (
	"fmt"
	"math"
)

// PanelMean is the one-modality random-readers random-cases interval of
// a reader panel's mean figure of merit (Hillis 2007): scores[j] are
// reader j's scores of the same cases, truth the cases' truth (AUC only).
func PanelMean(fom FOM, scores [][]float64, truth []int, alpha float64) (Interval, error) {
	if alpha == 0 {
		alpha = DefaultAlpha
	}
	figs, err := panelFigures(fom, scores, truth)
	if err != nil {
		return Interval{}, err
	}
	theta := make([]float64, len(figs))
	for j, f := range figs {
		theta[j] = f.theta
	}
	return panelOf(theta, covMatrix(figs, nil, func(int) {}), len(scores[0]), 0, 0, nil).rrrc(alpha), nil
}

// Standalone is an algorithm's figure of merit minus a reader panel's
// mean, the algorithm taken as a reader without reader variance.
type Standalone struct {
	Interval
	Model, Readers float64 // the algorithm's figure and the panel's mean
	// Margin is the non-inferiority margin (0: none); PNonInferior is
	// then the one-sided p of "the algorithm is worse than the readers
	// by the margin or more" (NaN without a margin).
	Margin       float64
	PNonInferior float64
}

// ModelVersusPanel compares a standalone algorithm with a reader panel
// on the same cases: each reader's difference D_j = θ_model − θ_j is a
// figure of merit of one modality, and the one-modality random-readers
// random-cases analysis of the D_j (their mean square over readers and
// the jackknife covariance of two readers' differences) gives the
// estimate, its standard error and Hillis' degrees of freedom. The
// algorithm's own case variance enters through the covariances; it has no
// reader variance. A margin > 0 adds the non-inferiority test
// H0: difference ≤ −margin.
func ModelVersusPanel(fom FOM, model []float64, scores [][]float64, truth []int, margin, alpha float64) (Standalone, error) {
	if alpha == 0 {
		alpha = DefaultAlpha
	}
	if margin < 0 || math.IsNaN(margin) {
		return Standalone{}, fmt.Errorf("non-inferiority margin %v: want 0 or more", margin)
	}
	figs, err := panelFigures(fom, scores, truth)
	if err != nil {
		return Standalone{}, err
	}
	if len(model) != len(scores[0]) {
		return Standalone{}, fmt.Errorf("the algorithm has %d scores, the readers %d", len(model), len(scores[0]))
	}
	if err := fom.check(model, truth); err != nil {
		return Standalone{}, fmt.Errorf("the algorithm: %w", err)
	}
	m := figure{dev: make([]float64, len(model))}
	m.theta = fom.value(model, truth, m.dev)
	// Each reader's difference is a figure of merit of its own: the
	// algorithm's figure minus the reader's, its jackknife deviations the
	// difference of theirs. Its rounding is that of the figures it came
	// from, which set the scales of the zero rules.
	diff := make([]figure, len(figs))
	dTheta := make([]float64, len(figs))
	scale, maxVar := math.Abs(m.theta), dot(m.dev, m.dev)
	for j, f := range figs {
		d := figure{theta: m.theta - f.theta, dev: make([]float64, len(m.dev))}
		for k := range d.dev {
			d.dev[k] = m.dev[k] - f.dev[k]
		}
		diff[j], dTheta[j] = d, d.theta
		scale = math.Max(scale, math.Abs(f.theta))
		maxVar = math.Max(maxVar, dot(f.dev, f.dev))
	}
	c := len(model)
	maxVar *= float64(c-1) / float64(c)
	p := panelOf(dTheta, covMatrix(diff, nil, func(int) {}), c, scale, maxVar, nil)
	iv := p.rrrc(alpha)
	// rrrc leaves P out (a mean); a difference has one.
	if !math.IsNaN(iv.Lo) {
		iv.P = 2 * tSurvival(math.Abs(iv.Estimate)/iv.SE, iv.DF)
	}
	theta := make([]float64, len(figs))
	for j, f := range figs {
		theta[j] = f.theta
	}
	s := Standalone{Interval: iv, Model: m.theta, Readers: meanOf(theta), Margin: margin, PNonInferior: math.NaN()}
	if margin > 0 && !math.IsNaN(iv.Lo) {
		s.PNonInferior = tSurvival((iv.Estimate+margin)/iv.SE, iv.DF)
	}
	return s, nil
}

// panelFigures checks one modality's readers and computes their figures
// and jackknife deviations.
func panelFigures(fom FOM, scores [][]float64, truth []int) ([]figure, error) {
	if len(scores) < 2 {
		return nil, fmt.Errorf("%d reader(s): at least 2 are needed", len(scores))
	}
	figs := make([]figure, len(scores))
	for j, s := range scores {
		if len(s) != len(scores[0]) {
			return nil, fmt.Errorf("reader %d has %d scores, reader 1 %d: the readers must score the same cases", j+1, len(s), len(scores[0]))
		}
		if err := fom.check(s, truth); err != nil {
			return nil, fmt.Errorf("reader %d: %w", j+1, err)
		}
		figs[j] = figure{dev: make([]float64, len(s))}
		figs[j].theta = fom.value(s, truth, figs[j].dev)
	}
	return figs, nil
}

// dot is Σ a_k·b_k.
func dot(a, b []float64) float64 {
	var s float64
	for k := range a {
		s += a[k] * b[k]
	}
	return s
}

// StandaloneRow is one modality's algorithm − readers in a study where
// one "reader" is an algorithm.
type StandaloneRow struct {
	Modality, Algorithm string
	NReaders            int
	Standalone
}

// SplitAlgorithm takes the reader named algorithm out of a study: it
// returns the study of the other readers and, per modality, the
// algorithm against them (ModelVersusPanel with the margin).
func SplitAlgorithm(d *Data, algorithm string, margin, alpha float64) (*Data, []StandaloneRow, error) {
	if d.Blocks != nil {
		return nil, nil, fmt.Errorf("algorithm %q in a split-plot study: the algorithm against the readers is computed for fully crossed studies only", algorithm)
	}
	idx := -1
	for j, r := range d.Readers {
		if r == algorithm {
			idx = j
		}
	}
	if idx < 0 {
		return nil, nil, fmt.Errorf("algorithm %q is not a reader of the study", algorithm)
	}
	rest := &Data{FOM: d.FOM, Modalities: d.Modalities, Cases: d.Cases, Truth: d.Truth, Scores: make([][][]float64, len(d.Scores))}
	for j, r := range d.Readers {
		if j != idx {
			rest.Readers = append(rest.Readers, r)
		}
	}
	var rows []StandaloneRow
	for i, m := range d.Modalities {
		for j, s := range d.Scores[i] {
			if j != idx {
				rest.Scores[i] = append(rest.Scores[i], s)
			}
		}
		s, err := ModelVersusPanel(d.FOM, d.Scores[i][idx], rest.Scores[i], d.Truth, margin, alpha)
		if err != nil {
			return nil, nil, fmt.Errorf("modality %s: %w", m, err)
		}
		rows = append(rows, StandaloneRow{Modality: m, Algorithm: algorithm, NReaders: len(rest.Readers), Standalone: s})
	}
	return rest, rows, nil
}
