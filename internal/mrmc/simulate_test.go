package mrmc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// simModel is a probit model of a reader study's binary scores (right or
// wrong): reader j is right on case k in modality i when
//
//	μ_i + R_j + C_k + TR_ij + TC_ik + RC_jk + ε_ijk > 0,
//
// every term but μ_i an independent normal of mean 0: the reader's skill
// R, the case's ease C, their interactions with the modality (TR, TC) and
// with each other (RC), and the noise of one reading ε (variance 1). It has
// the structure the OR model assumes — a reader and a case effect on the
// figure of merit, readers sharing cases — without being that model, so
// the analysis and the plan are checked on data they did not generate.
type simModel struct {
	Mu                                 []float64 // per modality
	SDReader, SDCase, SDModalityReader float64
	SDModalityCase, SDReaderCase       float64
}

// expectedAccuracy is modality i's accuracy over readers and cases: the
// latent score is normal with mean μ_i and variance 1 + the sum of the
// effects' variances.
func (m simModel) expectedAccuracy(i int) float64 {
	v := 1 + m.SDReader*m.SDReader + m.SDCase*m.SDCase + m.SDModalityReader*m.SDModalityReader +
		m.SDModalityCase*m.SDModalityCase + m.SDReaderCase*m.SDReaderCase
	return 1 - normalSurvival(m.Mu[i]/math.Sqrt(v))
}

// simDesign is a study's layout. With Blocks B > 1 the readers and the
// cases are split into B equal blocks, and the readers of a block read
// that block's cases only (a split-plot design); B = 1 is fully crossed.
type simDesign struct {
	Readers, Cases, Blocks int
}

// draw simulates one study: one fully crossed Data per block.
func (m simModel) draw(d simDesign, r *rand.Rand) []*Data {
	t := len(m.Mu)
	rb, cb := d.Readers/d.Blocks, d.Cases/d.Blocks
	normals := func(n int, sd float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = sd * r.NormFloat64()
		}
		return xs
	}
	modalities := make([]string, t)
	for i := range modalities {
		modalities[i] = fmt.Sprint(i + 1)
	}
	var blocks []*Data
	for range d.Blocks {
		reader, ease := normals(rb, m.SDReader), normals(cb, m.SDCase)
		readerCase := normals(rb*cb, m.SDReaderCase)
		data := &Data{FOM: Accuracy, Modalities: modalities, Readers: make([]string, rb), Cases: make([]string, cb), Scores: make([][][]float64, t)}
		for j := range data.Readers {
			data.Readers[j] = fmt.Sprint(j + 1)
		}
		for k := range data.Cases {
			data.Cases[k] = fmt.Sprint(k + 1)
		}
		for i := range t {
			modReader, modCase := normals(rb, m.SDModalityReader), normals(cb, m.SDModalityCase)
			data.Scores[i] = make([][]float64, rb)
			for j := range rb {
				s := make([]float64, cb)
				for k := range cb {
					if m.Mu[i]+reader[j]+ease[k]+modReader[j]+modCase[k]+readerCase[j*cb+k]+r.NormFloat64() > 0 {
						s[k] = 1
					}
				}
				data.Scores[i][j] = s
			}
		}
		blocks = append(blocks, data)
	}
	return blocks
}

// simNull and simAlternative are the test's models: accuracy 0.735 in
// both modalities, then 0.735 against 0.809.
var (
	simNull = simModel{Mu: []float64{1, 1}, SDReader: 0.4, SDCase: 1, SDModalityReader: 0.2,
		SDModalityCase: 0.5, SDReaderCase: 0.5}
	simAlternative = simModel{Mu: []float64{1, 1.4}, SDReader: 0.4, SDCase: 1, SDModalityReader: 0.2,
		SDModalityCase: 0.5, SDReaderCase: 0.5}
)

// simDesigns are the studies simulated: a small, a middling and a large
// fully crossed study, and split-plot studies of 2 and 3 blocks.
var simDesigns = []simDesign{{Readers: 4, Cases: 60, Blocks: 1}, {Readers: 6, Cases: 120, Blocks: 1}, {Readers: 10, Cases: 200, Blocks: 1},
	{Readers: 8, Cases: 160, Blocks: 2}, {Readers: 6, Cases: 180, Blocks: 3}, {Readers: 12, Cases: 240, Blocks: 3}}

// simSize is the number of studies per check: 2,000 in the default run,
// 400 with -short, and CHEXPERCEPT_SIM_STUDIES when set (the figures in
// docs/performance.md come from 20,000).
func simSize(t *testing.T) int {
	if s := os.Getenv("CHEXPERCEPT_SIM_STUDIES"); s != "" {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n < 100 {
			t.Fatalf("CHEXPERCEPT_SIM_STUDIES %q: want a number of studies, 100 or more", s)
		}
		return n
	}
	if testing.Short() {
		return 400
	}
	return 2000
}

// typeIBand is the acceptance band of a type I error of 0.05 over n
// studies: 0.035–0.065 from 2,000 studies on; a smaller (-short) run
// widens it to ±3.5 binomial standard errors, so that it can still fail.
func typeIBand(n int) (lo, hi float64) {
	half := 0.015
	if n < 2000 {
		half = 3.5 * math.Sqrt(0.05*0.95/float64(n))
	}
	return 0.05 - half, 0.05 + half
}

// rejects runs the random-readers-and-cases analysis of each of n studies
// and counts p < alpha.
func rejects(t *testing.T, m simModel, d simDesign, n int, alpha float64, r *rand.Rand) int {
	t.Helper()
	count := 0
	for range n {
		parts := m.draw(d, r)
		study := parts[0]
		if d.Blocks > 1 {
			study = joinBlocks(t, parts)
		}
		a, err := Analyze(study, alpha)
		if err != nil {
			t.Fatal(err)
		}
		if p := a.Designs[0].Test.P; p < alpha {
			count++
		}
	}
	return count
}

// TestSimulatedTypeIError: under the null model, the random-readers,
// random-cases test rejects at its level.
func TestSimulatedTypeIError(t *testing.T) {
	t.Parallel()
	n := simSize(t)
	for _, d := range simDesigns {
		r := rand.New(rand.NewPCG(41, uint64(d.Readers*1000+d.Cases+(d.Blocks-1)*1_000_000)))
		rate := float64(rejects(t, simNull, d, n, 0.05, r)) / float64(n)
		lo, hi := typeIBand(n)
		t.Logf("%d readers, %d cases, %d block(s): type I error %.4f over %d null studies (band %.4f–%.4f)", d.Readers, d.Cases, d.Blocks, rate, n, lo, hi)
		if rate < lo || rate > hi {
			t.Errorf("%d readers, %d cases, %d block(s): type I error %.4f over %d null studies, want %.3f–%.3f", d.Readers, d.Cases, d.Blocks, rate, n, lo, hi)
		}
	}
}

// TestSimulatedPower: the power the plan predicts for a study is the power
// the study has. The plan is fed the model's own components rather than
// one pilot's: a pilot of a few readers estimates VarTR on a few degrees of
// freedom, so the power predicted from one pilot scatters widely around
// the truth, and a check against it would test that pilot's luck, not the
// formulas. The model's components have no closed form (each needs
// bivariate-normal integrals over the reader effects), so they are the
// mean of the components estimated on many pilots drawn from the model —
// of another size than the planned study, so that the scaling from the
// pilot's K* cases to the study's K and the dependence on J are what is
// checked. The effect is the model's exact difference of accuracies.
func TestSimulatedPower(t *testing.T) {
	t.Parallel()
	n := simSize(t)
	pilotDesign := simDesign{Readers: 4, Cases: 80, Blocks: 1}
	r := rand.New(rand.NewPCG(41, 1))
	var sum Components
	for range n {
		a, err := Analyze(simAlternative.draw(pilotDesign, r)[0], 0)
		if err != nil {
			t.Fatal(err)
		}
		sum.MSTR += a.MSTR / float64(n)
		sum.Var += a.Var / float64(n)
		sum.Cov1 += a.Cov1 / float64(n)
		sum.Cov2 += a.Cov2 / float64(n)
		sum.Cov3 += a.Cov3 / float64(n)
	}
	pilot := &Pilot{Cases: pilotDesign.Cases, Var: sum.Var, Cov1: sum.Cov1, Cov2: sum.Cov2, Cov3: sum.Cov3,
		VarTR: sum.MSTR - sum.Var + sum.Cov1 + math.Max(sum.Cov2-sum.Cov3, 0)}
	effect := simAlternative.expectedAccuracy(0) - simAlternative.expectedAccuracy(1)
	t.Logf("model components over %d cases: Var %.6g, Cov1 %.6g, Cov2 %.6g, Cov3 %.6g, VarTR %.6g; effect %.5f",
		pilot.Cases, pilot.Var, pilot.Cov1, pilot.Cov2, pilot.Cov3, pilot.VarTR, effect)
	for _, d := range simDesigns {
		pw, err := pilot.Power(RRRC, d.Readers, d.Cases, Hypothesis{Effect: effect, Blocks: d.Blocks})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(41, uint64(2+d.Readers*1000+d.Cases+(d.Blocks-1)*1_000_000)))
		simulated := float64(rejects(t, simAlternative, d, n, 0.05, r)) / float64(n)
		tol := 0.05
		if n < 2000 {
			tol = math.Max(tol, 3.5*math.Sqrt(0.25/float64(n)))
		}
		t.Logf("%d readers, %d cases, %d block(s): predicted power %.4f, simulated %.4f over %d studies (tolerance %.3f)", d.Readers, d.Cases, d.Blocks, pw.Power, simulated, n, tol)
		if math.Abs(pw.Power-simulated) > tol {
			t.Errorf("%d readers, %d cases, %d block(s): predicted power %.4f, simulated %.4f over %d studies: differ by more than %.3f", d.Readers, d.Cases, d.Blocks, pw.Power, simulated, n, tol)
		}
	}
}

// TestSimulatorBlocks: a split-plot draw gives each block its share of
// readers and cases, fully crossed within the block, and the simulated
// accuracies average to the model's.
func TestSimulatorBlocks(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(41, 3))
	for _, blocks := range []int{1, 2, 3} {
		d := simDesign{Readers: 6, Cases: 120, Blocks: blocks}
		var sum [2]float64
		const studies = 300
		for range studies {
			parts := simAlternative.draw(d, r)
			if len(parts) != blocks {
				t.Fatalf("%d blocks: %d parts", blocks, len(parts))
			}
			for _, p := range parts {
				if err := p.check(); err != nil {
					t.Fatal(err)
				}
				if len(p.Readers) != 6/blocks || len(p.Cases) != 120/blocks {
					t.Fatalf("%d blocks: a block of %d readers and %d cases", blocks, len(p.Readers), len(p.Cases))
				}
				for i := range sum {
					for _, s := range p.Scores[i] {
						sum[i] += meanOf(s) / float64(6*studies)
					}
				}
			}
		}
		for i := range sum {
			if want := simAlternative.expectedAccuracy(i); math.Abs(sum[i]-want) > 0.01 {
				t.Errorf("%d blocks, modality %d: mean accuracy %.4f, model %.4f", blocks, i+1, sum[i], want)
			}
		}
	}
}
