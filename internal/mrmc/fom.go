package mrmc

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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

// Range is the interval of values the figure of merit can take: [0, 1]
// for both. A difference of two figures lies in [lo − hi, hi − lo]. An
// interval of a figure may reach past its range (a t interval knows no
// bounds); Interval.Clip limits it for display.
func (f FOM) Range() (lo, hi float64) { return 0, 1 }

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
		// With one case of a class, leaving it out leaves no pair: the
		// jackknife has nothing to recompute.
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

// figure is one reader's figure of merit in one modality with its
// jackknife over cases. dev[k] is the figure recomputed without case k
// minus the mean of the c recomputed figures. For both figures of merit
// that mean equals the figure itself, so the leave-one-out value is
// theta + dev[k]; the deviations are computed directly, each as an exact
// integer over an integer, so that a figure no case changes has
// deviations exactly 0, not rounding residue.
type figure struct {
	theta float64
	dev   []float64
}

// value computes the figure of merit and its jackknife deviations into
// dev (len(score) long).
func (f FOM) value(score []float64, truth []int, dev []float64) float64 {
	if f == AUC {
		return aucJack(score, truth, dev)
	}
	return accuracyJack(score, dev)
}

// accuracyJack: with m right of c, the leave-one-out accuracy is
// (m − s_k)/(c − 1), whose mean over k is m/c, so its deviation is
// (m − c·s_k)/(c(c − 1)): an integer (exact in float64 below 2^53) over
// an integer.
func accuracyJack(score, dev []float64) float64 {
	c := float64(len(score))
	var m float64
	for _, s := range score {
		m += s // 0 or 1: the count is exact
	}
	den := c * (c - 1)
	for k, s := range score {
		dev[k] = (m - c*s) / den
	}
	return m / c
}

// aucJack is the empirical AUC and its jackknife deviations in
// O(c log c), from placement counts. With n1 diseased and n0 healthy
// cases, P_k is the kernel sum of diseased case k over the healthy cases
// (1 per healthy case scored lower, 1/2 per tie) and Q_j that of healthy
// case j over the diseased cases; T = Σ P_k = Σ Q_j. Leaving out diseased
// case k gives (T − P_k)/((n1 − 1)·n0), healthy case j
// (T − Q_j)/(n1·(n0 − 1)); those c values average to T/(n1·n0), the AUC,
// so the deviations are (T − n1·P_k)/(n1(n1 − 1)n0) and
// (T − n0·Q_j)/(n0(n0 − 1)n1). One sort of the scores gives every P_k and
// Q_j: walking the distinct scores upwards, a diseased case's P counts
// the healthy cases below its score and half those at it, a healthy
// case's Q the diseased cases above and half those at it. Counts are kept
// doubled, as integers, so numerators are exact.
func aucJack(score []float64, truth []int, dev []float64) float64 {
	type rated struct {
		s float64
		k int
	}
	order := make([]rated, len(score))
	var n1, n0 int64
	for k, s := range score {
		order[k] = rated{s, k}
		if truth[k] == 1 {
			n1++
		} else {
			n0++
		}
	}
	slices.SortFunc(order, func(a, b rated) int { return cmp.Compare(a.s, b.s) })
	place2 := make([]int64, len(score)) // 2·P_k or 2·Q_j
	var t2 int64                        // 2·T
	var healthyBelow, diseasedBelow int64
	for i := 0; i < len(order); {
		j := i
		var h, d int64
		for ; j < len(order) && order[j].s == order[i].s; j++ {
			if truth[order[j].k] == 1 {
				d++
			} else {
				h++
			}
		}
		for _, o := range order[i:j] {
			if truth[o.k] == 1 {
				place2[o.k] = 2*healthyBelow + h
				t2 += place2[o.k]
			} else {
				place2[o.k] = 2*(n1-diseasedBelow-d) + d
			}
		}
		healthyBelow += h
		diseasedBelow += d
		i = j
	}
	f1, f0 := float64(n1), float64(n0)
	den1 := 2 * f1 * (f1 - 1) * f0
	den0 := 2 * f0 * (f0 - 1) * f1
	for k := range score {
		if truth[k] == 1 {
			dev[k] = float64(t2-n1*place2[k]) / den1
		} else {
			dev[k] = float64(t2-n0*place2[k]) / den0
		}
	}
	return float64(t2) / (2 * f1 * f0)
}
