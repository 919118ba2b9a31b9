package mrmc

import (
	"fmt"
	"math"
)

// FOM names a figure of merit: the number computed from one reader's
// scores of every case in one modality.
type FOM string

// The figures of merit.
const (
	// Accuracy is the mean score, each score 0 (wrong) or 1 (right);
	// truth is not used.
	Accuracy FOM = "accuracy"
	// AUC is the empirical (trapezoidal) area under the ROC curve, the
	// Wilcoxon–Mann–Whitney statistic: the share of (diseased, healthy)
	// case pairs in which the diseased case has the higher score, ties
	// counting one half. Truth is 1 (diseased) or 0; scores are ratings.
	AUC FOM = "auc"
)

// ParseFOM checks a figure-of-merit name.
func ParseFOM(s string) (FOM, error) {
	switch FOM(s) {
	case Accuracy, AUC:
		return FOM(s), nil
	}
	return "", fmt.Errorf("figure of merit %q: want %s or %s", s, Accuracy, AUC)
}

// check validates the scores and truth of one reader in one modality for
// the figure of merit.
func (f FOM) check(score []float64, truth []int) error {
	switch f {
	case Accuracy:
		if len(score) < 2 {
			return fmt.Errorf("accuracy needs at least 2 cases, have %d", len(score))
		}
		for _, s := range score {
			if s != 0 && s != 1 {
				return fmt.Errorf("accuracy score %v: want 0 or 1", s)
			}
		}
	case AUC:
		if len(truth) != len(score) {
			return fmt.Errorf("auc needs a truth for each of %d cases, have %d", len(score), len(truth))
		}
		var n0, n1 int
		for _, t := range truth {
			switch t {
			case 0:
				n0++
			case 1:
				n1++
			default:
				return fmt.Errorf("auc truth %d: want 0 or 1", t)
			}
		}
		if n0 < 2 || n1 < 2 {
			return fmt.Errorf("auc needs at least 2 diseased and 2 healthy cases, have %d and %d", n1, n0)
		}
		for _, s := range score {
			if math.IsNaN(s) || math.IsInf(s, 0) {
				return fmt.Errorf("auc score %v: want a finite number", s)
			}
		}
	default:
		return fmt.Errorf("figure of merit %q: want %s or %s", f, Accuracy, AUC)
	}
	return nil
}

// value is the figure of merit over all cases, and jack[k] the figure
// with case k left out (the jackknife values).
func (f FOM) value(score []float64, truth []int, jack []float64) float64 {
	if f == AUC {
		return aucJack(score, truth, jack)
	}
	c := float64(len(score))
	var sum float64
	for _, s := range score {
		sum += s
	}
	for k, s := range score {
		jack[k] = (sum - s) / (c - 1)
	}
	return sum / c
}

// psi is the Wilcoxon kernel of a (diseased, healthy) pair.
func psi(pos, neg float64) float64 {
	switch {
	case pos > neg:
		return 1
	case pos == neg:
		return 0.5
	}
	return 0
}

// aucJack is the empirical AUC and its jackknife values: leaving out a
// diseased case removes its row of the kernel sum, a healthy case its
// column.
func aucJack(score []float64, truth []int, jack []float64) float64 {
	var n0, n1 float64
	part := make([]float64, len(score)) // each case's kernel sum over the other class
	var total float64
	for i, ti := range truth {
		if ti != 1 {
			n0++
			continue
		}
		n1++
		for j, tj := range truth {
			if tj == 0 {
				p := psi(score[i], score[j])
				part[i] += p
				part[j] += p
				total += p
			}
		}
	}
	for k, t := range truth {
		if t == 1 {
			jack[k] = (total - part[k]) / ((n1 - 1) * n0)
		} else {
			jack[k] = (total - part[k]) / (n1 * (n0 - 1))
		}
	}
	return total / (n0 * n1)
}
