// The simulated model (Simulated) is a vision-language model for demos
// and tests: it answers a benchmark's questions with the ground truth at a set
// accuracy per stage, and otherwise with another valid option.
//
// The model sees only what a real model is sent. It knows the benchmark
// (as a model that memorised it would), and it finds the record and the
// question from the request alone: the SHA-256 of the first image's base64
// text (the radiograph, sent at T1 and resent on every later call) picks
// the records with that radiograph, and the last user message, which ends
// with the question's text, picks the question. Key ids, file names and
// the evaluator's ground truth never reach it. A request it cannot place
// (an image or a question the benchmark does not hold) is an error, as a
// question outside its training would be for a model that can only recite.
//
// Every draw is a pure function of a seed, the radiograph's hash and the
// question text, so answers do not depend on the order of calls, the
// concurrency, the oracle's rewrites of the history, or the process.
//
//   - Skill: the stage accuracy a_k is the probability that every question
//     of stage k in a record is answered correctly; each of the stage's n
//     questions in that record is right with probability a_k^(1/n),
//     independently.
//   - Wrong answers are plausible: single choice takes another option,
//     uniformly; multi-select toggles one non-None option of the ground
//     truth (an empty set becomes None alone).
//   - Shared errors: with probability MislabelRate per question, keyed on
//     MislabelSeed and not on the model's seed, the model gives a fixed
//     wrong answer. Models that share the mislabel seed and rate all give
//     the same wrong answer there, which is how an item whose ground truth
//     is wrong looks to the item-health analysis.
//   - Text prior: asked without a radiograph it knows (no image at all, or
//     an image that is not the benchmark's: an image control), a model
//     with a TextPrior answers from the question's text alone, as a
//     language model would: with the most frequent ground truth of that
//     question type and option count in the benchmark (TextPriorFrequent),
//     or with the option this model favours there (TextPriorFavoured,
//     drawn once from its seed). The prior is keyed on the question type
//     and its number of options, never on a record, so it cannot recite a
//     record's own answer. A model that IgnoresImage answers from its
//     prior whatever it is shown: a model that guesses, whose image
//     controls show no drop. Without a prior such a request is an error.

package fakemodel

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// AccuracyMeaning says what a simulated model's stage accuracy is. The
// demo, serve-baseline --help and docs/evaluation.md all use these words.
const AccuracyMeaning = "the probability that a record's stage is right as a whole; " +
	"each of the stage's n questions in the record is right with probability accuracy^(1/n)"

// SimConfig describes one simulated model.
type SimConfig struct {
	// Benchmark is the benchmark directory whose questions it answers.
	Benchmark string
	// Accuracy is the stage accuracy (AccuracyMeaning) of stage k+1:
	// detection, contour evaluation, contour revision and attribute
	// extraction; each in [0, 1].
	Accuracy [4]float64
	// Seed seeds the model's own draws: two seeds give two models of the
	// same skill that err on different questions.
	Seed int64
	// MislabelRate is the share of questions on which the model gives the
	// shared wrong answer of MislabelSeed, in [0, 1].
	MislabelRate float64
	MislabelSeed int64
	// TextPrior is how the model answers a question whose radiograph it
	// does not see: "" (it cannot: an error), TextPriorFrequent or
	// TextPriorFavoured.
	TextPrior string
	// IgnoresImage makes the model answer from its text prior even when
	// it is shown the radiograph (the shared errors of MislabelRate
	// aside); it needs a TextPrior.
	IgnoresImage bool
}

// Text priors of a simulated model (SimConfig.TextPrior).
const (
	// TextPriorFrequent answers the most frequent ground truth of the
	// question's type and option count in the benchmark.
	TextPriorFrequent = "frequent"
	// TextPriorFavoured answers the option the model favours for the
	// question's type and option count, drawn from its seed.
	TextPriorFavoured = "favoured"
)

// TextPriors lists the text priors a simulated model may take.
var TextPriors = []string{TextPriorFrequent, TextPriorFavoured}

// ErrUnknown is matched by Answer's error when the request's radiograph or
// question is not in the benchmark.
var ErrUnknown = errors.New("not in the benchmark")

// Simulated is a loaded simulated model; safe for concurrent use.
type Simulated struct {
	cfg    SimConfig
	byXray map[string][]*record // PayloadKey of the radiograph → records
	// texts are the benchmark's distinct question texts, longest first,
	// each with its question kind: what the text prior knows.
	texts []questionText
	prior map[questionKind][]int // the text prior's answer per kind
}

// questionKind is what the text prior is keyed on: a question type and
// its number of options.
type questionKind struct {
	q benchmark.Question
	n int
}

// questionText is one question text of the benchmark and its kind.
type questionText struct {
	text string
	kind questionKind
}

// record is what the model keeps of one benchmark record: its asked
// turns and, per stage, the per-question probability of a right answer.
type record struct {
	turns []protocol.PlannedTurn
	pq    [benchmark.StageAttributeExtraction + 1]float64
}

// LoadSimulated validates cfg and reads the benchmark: its chexpercept.json and
// each record's radiograph (bounded by imagefile.MaxFileBytes).
func LoadSimulated(cfg SimConfig) (*Simulated, error) {
	for i, a := range cfg.Accuracy {
		if math.IsNaN(a) || a < 0 || a > 1 {
			return nil, fmt.Errorf("simulated model: stage %d accuracy %v is not in [0, 1]", i+1, a)
		}
	}
	if r := cfg.MislabelRate; math.IsNaN(r) || r < 0 || r > 1 {
		return nil, fmt.Errorf("simulated model: mislabel rate %v is not in [0, 1]", r)
	}
	if cfg.TextPrior != "" && !slices.Contains(TextPriors, cfg.TextPrior) {
		return nil, fmt.Errorf("simulated model: text prior %q is not one of %s", textsafe.OneLine(cfg.TextPrior), strings.Join(TextPriors, ", "))
	}
	if cfg.IgnoresImage && cfg.TextPrior == "" {
		return nil, errors.New("simulated model: a model that ignores the image answers from a text prior, and none is set")
	}
	if cfg.Benchmark == "" {
		return nil, errors.New("simulated model: no benchmark directory")
	}
	b, err := benchdir.Load(cfg.Benchmark)
	if err != nil {
		return nil, fmt.Errorf("simulated model: %w", err)
	}
	m := &Simulated{cfg: cfg, byXray: map[string][]*record{}}
	answers := map[questionKind]map[string]int{}
	seen := map[string]bool{}
	for _, rec := range b.Records {
		plan, err := protocol.Plan(rec, cfg.Benchmark)
		if err != nil {
			return nil, fmt.Errorf("simulated model: %w", err)
		}
		r := &record{}
		var perStage [benchmark.StageAttributeExtraction + 1]int
		for _, t := range plan {
			if t.Asked() && len(t.GT) > 0 {
				r.turns = append(r.turns, t)
				perStage[t.Q.Stage()]++
				k := questionKind{t.Q, t.NOptions}
				if answers[k] == nil {
					answers[k] = map[string]int{}
				}
				answers[k][parse.Canonical(parse.OptionSet(t.GT))]++
				if !seen[t.Text] {
					seen[t.Text] = true
					m.texts = append(m.texts, questionText{t.Text, k})
				}
			}
		}
		if len(r.turns) == 0 || len(r.turns[0].Images) == 0 {
			continue // nothing a model could be asked about it
		}
		for s, n := range perStage {
			if n > 0 {
				r.pq[s] = math.Pow(cfg.Accuracy[s-1], 1/float64(n))
			}
		}
		p := filepath.Join(cfg.Benchmark, filepath.FromSlash(r.turns[0].Images[0]))
		png, err := safefile.ReadFile(p, imagefile.MaxFileBytes, safefile.Follow)
		if err != nil {
			return nil, fmt.Errorf("simulated model: record %s: %w", textsafe.OneLine(rec.KeyID), err)
		}
		key := provider.PayloadKey(base64.StdEncoding.EncodeToString(png))
		m.byXray[key] = append(m.byXray[key], r)
	}
	// Longest first, so the first text that ends a message is the
	// longest; ties in benchmark order.
	slices.SortStableFunc(m.texts, func(a, b questionText) int { return len(b.text) - len(a.text) })
	m.prior = priorAnswers(cfg, answers)
	return m, nil
}

// priorAnswers is the text prior's answer for each question kind: the
// most frequent ground truth (ties: the first in byte order of the
// answer text), or the favoured option drawn from the model's seed.
func priorAnswers(cfg SimConfig, answers map[questionKind]map[string]int) map[questionKind][]int {
	out := map[questionKind][]int{}
	for k, counts := range answers {
		switch cfg.TextPrior {
		case TextPriorFrequent:
			best, bestN := "", 0
			for _, a := range slices.Sorted(maps.Keys(counts)) {
				if counts[a] > bestN {
					best, bestN = a, counts[a]
				}
			}
			var nums []int
			for _, f := range strings.Split(best, ",") {
				if v, err := strconv.Atoi(f); err == nil {
					nums = append(nums, v)
				}
			}
			out[k] = nums
		case TextPriorFavoured:
			r := rng.New("chexpercept/simulated/favoured/" + strconv.FormatInt(cfg.Seed, 10) + "/" + k.q.Name() + "/" + strconv.Itoa(k.n))
			out[k] = []int{1 + r.IntN(max(k.n, 1))}
		}
	}
	return out
}

// Answer replies to a conversation: firstImage is provider.PayloadKey of
// the first image's base64 text, texts the message texts in order (the
// last one is the question). The reply is "Answer: " and option numbers.
func (m *Simulated) Answer(firstImage string, texts []string) (string, error) {
	if len(texts) == 0 {
		return "", errors.New("no messages")
	}
	last := texts[len(texts)-1]
	recs := m.byXray[firstImage]
	if len(recs) == 0 || m.cfg.IgnoresImage {
		if m.cfg.TextPrior == "" {
			if firstImage == "" {
				return "", fmt.Errorf("the conversation has no image, and the model has no text prior to answer from")
			}
			return "", fmt.Errorf("the first image of the conversation is %w", ErrUnknown)
		}
		return m.fromText(firstImage, last, recs)
	}
	// The longest question text that ends the message is the question; on
	// a tie (records sharing a radiograph) the first record in benchmark
	// order answers, so the reply still depends on the request alone.
	var turn *protocol.PlannedTurn
	var rec *record
	for _, r := range recs {
		for i := range r.turns {
			t := &r.turns[i]
			if strings.HasSuffix(last, t.Text) && (turn == nil || len(t.Text) > len(turn.Text)) {
				turn, rec = t, r
			}
		}
	}
	if turn == nil {
		return "", fmt.Errorf("the question is %w for this radiograph", ErrUnknown)
	}
	return parse.FormatAnswer(m.choose(firstImage, turn, rec.pq[turn.Q.Stage()])), nil
}

// fromText answers the question that ends last from the text prior; recs
// are the records of the radiograph the model was shown (a model that
// ignores the image still shares the items' errors of MislabelRate).
func (m *Simulated) fromText(xray, last string, recs []*record) (string, error) {
	for _, r := range recs {
		var turn *protocol.PlannedTurn
		for i := range r.turns {
			if t := &r.turns[i]; strings.HasSuffix(last, t.Text) && (turn == nil || len(t.Text) > len(turn.Text)) {
				turn = t
			}
		}
		if turn != nil && m.cfg.MislabelRate > 0 {
			if shared := rng.New(label("mislabel", m.cfg.MislabelSeed, xray, turn.Text)); shared.Float64() < m.cfg.MislabelRate {
				return parse.FormatAnswer(wrong(shared, turn)), nil
			}
		}
		if turn != nil {
			break
		}
	}
	for _, t := range m.texts {
		if strings.HasSuffix(last, t.text) {
			if a, ok := m.prior[t.kind]; ok {
				return parse.FormatAnswer(a), nil
			}
		}
	}
	return "", fmt.Errorf("the question is %w", ErrUnknown)
}

// choose draws the answer to one question.
func (m *Simulated) choose(xray string, t *protocol.PlannedTurn, pRight float64) []int {
	if m.cfg.MislabelRate > 0 {
		shared := rng.New(label("mislabel", m.cfg.MislabelSeed, xray, t.Text))
		if shared.Float64() < m.cfg.MislabelRate {
			return wrong(shared, t)
		}
	}
	own := rng.New(label("model", m.cfg.Seed, xray, t.Text))
	if own.Float64() < pRight {
		return t.GT
	}
	return wrong(own, t)
}

// label names a draw: its kind, seed, radiograph and question, the text
// framed by its length.
func label(kind string, seed int64, xray, text string) string {
	return "chexpercept/simulated/" + kind + "/" + strconv.FormatInt(seed, 10) + "/" + xray + "/" +
		strconv.Itoa(len(text)) + ":" + text
}

// wrong draws a valid answer other than the ground truth.
func wrong(r *rng.RNG, t *protocol.PlannedTurn) []int {
	n := t.NOptions
	if !t.Multi {
		if n < 2 {
			return t.GT
		}
		k := 1 + r.IntN(n-1) // 1..n-1, skipping the ground truth
		if k >= t.GT[0] {
			k++
		}
		return []int{k}
	}
	// Multi-select: options 1..n-1 are findings, n is None.
	set := map[int]bool{}
	for _, g := range t.GT {
		if g != n {
			set[g] = true
		}
	}
	flip := 1 + r.IntN(n-1)
	set[flip] = !set[flip]
	var out []int
	for k := 1; k < n; k++ {
		if set[k] {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return []int{n}
	}
	return out
}
