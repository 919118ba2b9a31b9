package fakemodel

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/provider"
)

// fixture writes a benchmark of n records per lesion and path whose
// radiographs all differ, and returns its directory and records.
func fixture(t *testing.T, n int) (string, []*benchmark.Record) {
	t.Helper()
	dir := t.TempDir()
	recs := benchtest.Full(n)
	if err := benchtest.Write(dir, recs, false); err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		p := filepath.Join(dir, benchmark.ImagesDir, r.KeyID, filepath.FromSlash(benchmark.XrayRel))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("radiograph %d", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, recs
}

// asked is one question as a model receives it.
type asked struct {
	key   string // the radiograph as sent
	turn  protocol.PlannedTurn
	stage benchmark.Stage
}

func questions(t *testing.T, dir string, recs []*benchmark.Record) [][]asked {
	t.Helper()
	var out [][]asked
	for _, r := range recs {
		plan, err := protocol.Plan(r, dir)
		if err != nil {
			t.Fatal(err)
		}
		png, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(plan[0].Images[0])))
		if err != nil {
			t.Fatal(err)
		}
		key := provider.PayloadKey(base64.StdEncoding.EncodeToString(png))
		var qs []asked
		for _, p := range plan {
			if p.Asked() {
				qs = append(qs, asked{key, p, p.Q.Stage()})
			}
		}
		out = append(out, qs)
	}
	return out
}

func load(t *testing.T, cfg SimConfig) *Simulated {
	t.Helper()
	m, err := LoadSimulated(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// answer asks q with an oracle-style prefix before the question, as
// explicit mode sends it, and returns the parsed option numbers.
func answer(t *testing.T, m *Simulated, q asked) []int {
	t.Helper()
	reply, err := m.Answer(q.key, []string{"system text", "Answer: 1", "A verified finding.\n\n" + q.turn.Text})
	if err != nil {
		t.Fatalf("%s: %v", q.turn.ID, err)
	}
	res := parse.Strict(reply, q.turn.NOptions, q.turn.Multi)
	if len(res.Nums) == 0 {
		t.Fatalf("%s: reply %q does not parse: %s", q.turn.ID, reply, res.Rule)
	}
	return res.Nums
}

func sameSet(a, b []int) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// TestStageAccuracy: the share of records whose stage k is right as a
// whole is the set accuracy, within four standard deviations.
func TestStageAccuracy(t *testing.T) {
	dir, recs := fixture(t, 40)
	acc := [4]float64{0.9, 0.6, 0.5, 0.3}
	m := load(t, SimConfig{Benchmark: dir, Accuracy: acc, Seed: 3})
	var right, total [5]int
	for _, qs := range questions(t, dir, recs) {
		ok := map[benchmark.Stage]bool{}
		for _, q := range qs {
			if _, seen := ok[q.stage]; !seen {
				ok[q.stage] = true
			}
			ok[q.stage] = ok[q.stage] && sameSet(answer(t, m, q), q.turn.GT)
		}
		for s, v := range ok {
			total[s]++
			if v {
				right[s]++
			}
		}
	}
	for s := benchmark.StageDetection; s <= benchmark.StageAttributeExtraction; s++ {
		a := acc[s-1]
		got := float64(right[s]) / float64(total[s])
		sd := math.Sqrt(a * (1 - a) / float64(total[s]))
		if math.Abs(got-a) > 4*sd {
			t.Errorf("stage %d: %d of %d right (%.3f), want %.2f ± %.3f", s, right[s], total[s], got, a, 4*sd)
		}
	}
}

// TestWrongAnswersAreValid: at accuracy 0 every answer is another valid
// option: in range, not the ground truth, None never mixed with others.
func TestWrongAnswersAreValid(t *testing.T) {
	dir, recs := fixture(t, 3)
	m := load(t, SimConfig{Benchmark: dir, Seed: 1})
	for _, qs := range questions(t, dir, recs) {
		for _, q := range qs {
			got := answer(t, m, q)
			if sameSet(got, q.turn.GT) {
				t.Fatalf("%s: answered the ground truth %v at accuracy 0", q.turn.ID, got)
			}
			n := q.turn.NOptions
			for _, k := range got {
				if k < 1 || k > n {
					t.Fatalf("%s: option %d out of 1..%d", q.turn.ID, k, n)
				}
			}
			if !q.turn.Multi && len(got) != 1 {
				t.Fatalf("%s: %v for a single-choice question", q.turn.ID, got)
			}
			if q.turn.Multi && len(got) > 1 && slices.Contains(got, n) {
				t.Fatalf("%s: None mixed with findings: %v", q.turn.ID, got)
			}
		}
	}
}

// TestSeeds: a model's answers are a function of its seed: the same seed
// answers the same in a second load, another seed differs somewhere.
func TestSeeds(t *testing.T) {
	dir, recs := fixture(t, 3)
	acc := [4]float64{0.5, 0.5, 0.5, 0.5}
	a := load(t, SimConfig{Benchmark: dir, Accuracy: acc, Seed: 7})
	again := load(t, SimConfig{Benchmark: dir, Accuracy: acc, Seed: 7})
	other := load(t, SimConfig{Benchmark: dir, Accuracy: acc, Seed: 8})
	differ := 0
	for _, qs := range questions(t, dir, recs) {
		for _, q := range qs {
			x := answer(t, a, q)
			if !slices.Equal(x, answer(t, again, q)) {
				t.Fatalf("%s: seed 7 answered %v and then %v", q.turn.ID, x, answer(t, again, q))
			}
			if !slices.Equal(x, answer(t, other, q)) {
				differ++
			}
		}
	}
	if differ == 0 {
		t.Error("seeds 7 and 8 gave the same answers everywhere")
	}
}

// TestMislabelShared: models of any skill and seed that share a mislabel
// seed give the same wrong answer on the same questions; the share is the
// set rate.
func TestMislabelShared(t *testing.T) {
	dir, recs := fixture(t, 10)
	strong := load(t, SimConfig{Benchmark: dir, Accuracy: [4]float64{1, 1, 1, 1}, Seed: 1, MislabelRate: 0.1, MislabelSeed: 5})
	weak := load(t, SimConfig{Benchmark: dir, Accuracy: [4]float64{0.2, 0.2, 0.2, 0.2}, Seed: 2, MislabelRate: 0.1, MislabelSeed: 5})
	n, wrong := 0, 0
	for _, qs := range questions(t, dir, recs) {
		for _, q := range qs {
			n++
			s := answer(t, strong, q)
			if sameSet(s, q.turn.GT) {
				continue
			}
			wrong++
			if w := answer(t, weak, q); !slices.Equal(w, s) {
				t.Fatalf("%s: shared error %v, the weak model answered %v", q.turn.ID, s, w)
			}
		}
	}
	got, sd := float64(wrong)/float64(n), math.Sqrt(0.1*0.9/float64(n))
	if math.Abs(got-0.1) > 4*sd {
		t.Errorf("%d of %d questions mislabeled (%.3f), want 0.1 ± %.3f", wrong, n, got, 4*sd)
	}
}

// TestUnknownRequests: an image or a question the benchmark does not hold
// is an error, never a guess.
func TestUnknownRequests(t *testing.T) {
	dir, recs := fixture(t, 1)
	m := load(t, SimConfig{Benchmark: dir, Accuracy: [4]float64{1, 1, 1, 1}})
	qs := questions(t, dir, recs)
	q := qs[0][0]
	if _, err := m.Answer(provider.PayloadKey("another image"), []string{q.turn.Text}); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown image: %v, want ErrUnknown", err)
	}
	if _, err := m.Answer(q.key, []string{"What is this?\n\nOptions:\n(1) Yes\n(2) No"}); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown question: %v, want ErrUnknown", err)
	}
}

func TestConfigErrors(t *testing.T) {
	dir, _ := fixture(t, 1)
	for _, c := range []struct {
		cfg  SimConfig
		want string
	}{
		{SimConfig{Benchmark: dir, Accuracy: [4]float64{1.5}}, "stage 1 accuracy 1.5 is not in [0, 1]"},
		{SimConfig{Benchmark: dir, Accuracy: [4]float64{0, 0, math.NaN()}}, "stage 3 accuracy NaN"},
		{SimConfig{Benchmark: dir, MislabelRate: -0.1}, "mislabel rate -0.1"},
		{SimConfig{}, "no benchmark directory"},
		{SimConfig{Benchmark: filepath.Join(dir, "missing")}, "missing"},
	} {
		_, err := LoadSimulated(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.cfg, err, c.want)
		}
	}
}

// TestTextPrior: without a radiograph it knows (no image, or an image
// that is not the benchmark's), a model with a text prior answers the
// most frequent ground truth of the question's type and option count,
// or its favoured option, whatever the record; without a prior it
// refuses. A model that ignores the image answers so even when shown it.
func TestTextPrior(t *testing.T) {
	dir, recs := fixture(t, 3)
	all := questions(t, dir, recs)
	// The frequent answers, counted here from the plans.
	counts := map[questionKind]map[string]int{}
	for _, qs := range all {
		for _, q := range qs {
			k := questionKind{q.turn.Q, q.turn.NOptions}
			if counts[k] == nil {
				counts[k] = map[string]int{}
			}
			counts[k][parse.Canonical(parse.OptionSet(q.turn.GT))]++
		}
	}
	frequent := func(k questionKind) string {
		best, n := "", 0
		for a, c := range counts[k] {
			if c > n || (c == n && a < best) {
				best, n = a, c
			}
		}
		return best
	}
	acc := [4]float64{1, 1, 1, 1}
	looks := load(t, SimConfig{Benchmark: dir, Accuracy: acc, Seed: 1, TextPrior: TextPriorFrequent})
	guesses := load(t, SimConfig{Benchmark: dir, Accuracy: acc, Seed: 1, TextPrior: TextPriorFrequent, IgnoresImage: true})
	favours := load(t, SimConfig{Benchmark: dir, Accuracy: acc, Seed: 7, TextPrior: TextPriorFavoured})
	recites := load(t, SimConfig{Benchmark: dir, Accuracy: acc, Seed: 1})
	favoured := map[questionKind]string{}
	blank := provider.PayloadKey(base64.StdEncoding.EncodeToString([]byte("a blank image")))
	for _, qs := range all {
		for _, q := range qs {
			k := questionKind{q.turn.Q, q.turn.NOptions}
			texts := []string{"system text", q.turn.Text}
			for _, img := range []string{"", blank} {
				got, err := looks.Answer(img, texts)
				if want := "Answer: " + frequent(k); err != nil || got != want {
					t.Fatalf("%s %s, image %q: %q (%v), want the frequent answer %q", q.turn.ID, q.key[:8], img, got, err, want)
				}
				if _, err := recites.Answer(img, texts); err == nil {
					t.Fatalf("%s: a model without a text prior answered without the radiograph", q.turn.ID)
				}
				f, err := favours.Answer(img, texts)
				if err != nil {
					t.Fatal(err)
				}
				if prev, ok := favoured[k]; ok && prev != f {
					t.Fatalf("%s: favoured answer %q, earlier %q for the same kind of question", q.turn.ID, f, prev)
				}
				favoured[k] = f
			}
			// Shown its radiograph, the model that looks is right (accuracy
			// 1); the one that guesses gives its prior.
			if got := answer(t, looks, q); !sameSet(got, q.turn.GT) {
				t.Fatalf("%s: shown the radiograph, answered %v, want %v", q.turn.ID, got, q.turn.GT)
			}
			if got, _ := guesses.Answer(q.key, []string{"system text", q.turn.Text}); got != "Answer: "+frequent(k) {
				t.Fatalf("%s: the guesser shown the radiograph answered %q, want its prior %q", q.turn.ID, got, frequent(k))
			}
		}
	}
	if _, err := LoadSimulated(SimConfig{Benchmark: dir, TextPrior: "often"}); err == nil || !strings.Contains(err.Error(), `text prior "often"`) {
		t.Errorf("unknown prior: %v", err)
	}
	if _, err := LoadSimulated(SimConfig{Benchmark: dir, IgnoresImage: true}); err == nil {
		t.Error("a model that ignores the image without a prior was accepted")
	}
}
