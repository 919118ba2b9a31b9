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
	theta, jack, err := panelFigures(fom, scores, truth)
	if err != nil {
		return Interval{}, err
	}
	return panelStats(theta, jack).rrrc(alpha), nil
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
	theta, jack, err := panelFigures(fom, scores, truth)
	if err != nil {
		return Standalone{}, err
	}
	if len(model) != len(scores[0]) {
		return Standalone{}, fmt.Errorf("the algorithm has %d scores, the readers %d", len(model), len(scores[0]))
	}
	if err := fom.check(model, truth); err != nil {
		return Standalone{}, fmt.Errorf("the algorithm: %w", err)
	}
	mj := make([]float64, len(model))
	m := fom.value(model, truth, mj)
	dTheta := make([]float64, len(theta))
	dJack := make([][]float64, len(theta))
	for j := range theta {
		dTheta[j] = m - theta[j]
		dJack[j] = make([]float64, len(mj))
		for k := range mj {
			dJack[j][k] = mj[k] - jack[j][k]
		}
	}
	p := panelStats(dTheta, dJack)
	iv := p.rrrc(alpha)
	// rrrc leaves P out (a mean); a difference has one.
	if !math.IsNaN(iv.Lo) {
		iv.P = 2 * tSurvival(math.Abs(iv.Estimate)/iv.SE, iv.DF)
	}
	s := Standalone{Interval: iv, Model: m, Readers: meanOf(theta), Margin: margin, PNonInferior: math.NaN()}
	if margin > 0 && !math.IsNaN(iv.Lo) {
		s.PNonInferior = tSurvival((iv.Estimate+margin)/iv.SE, iv.DF)
	}
	return s, nil
}

// panelFigures checks one modality's readers and computes their figures
// and jackknife values.
func panelFigures(fom FOM, scores [][]float64, truth []int) ([]float64, [][]float64, error) {
	if len(scores) < 2 {
		return nil, nil, fmt.Errorf("%d reader(s): at least 2 are needed", len(scores))
	}
	theta := make([]float64, len(scores))
	jack := make([][]float64, len(scores))
	for j, s := range scores {
		if len(s) != len(scores[0]) {
			return nil, nil, fmt.Errorf("reader %d has %d scores, reader 1 %d: the readers must score the same cases", j+1, len(s), len(scores[0]))
		}
		if err := fom.check(s, truth); err != nil {
			return nil, nil, fmt.Errorf("reader %d: %w", j+1, err)
		}
		jack[j] = make([]float64, len(s))
		theta[j] = fom.value(s, truth, jack[j])
	}
	return theta, jack, nil
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
