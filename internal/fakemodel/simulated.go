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

package fakemodel

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"path/filepath"
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

// SimConfig describes one simulated model.
type SimConfig struct {
	// Benchmark is the benchmark directory whose questions it answers.
	Benchmark string
	// Accuracy is the probability that a record's stage k+1 is answered
	// correctly as a whole, for detection, contour evaluation, contour
	// revision and attribute extraction; each in [0, 1].
	Accuracy [4]float64
	// Seed seeds the model's own draws: two seeds give two models of the
	// same skill that err on different questions.
	Seed int64
	// MislabelRate is the share of questions on which the model gives the
	// shared wrong answer of MislabelSeed, in [0, 1].
	MislabelRate float64
	MislabelSeed int64
}

// ErrUnknown is matched by Answer's error when the request's radiograph or
// question is not in the benchmark.
var ErrUnknown = errors.New("not in the benchmark")

// Simulated is a loaded simulated model; safe for concurrent use.
type Simulated struct {
	cfg    SimConfig
	byXray map[string][]*record // PayloadKey of the radiograph → records
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
	if cfg.Benchmark == "" {
		return nil, errors.New("simulated model: no benchmark directory")
	}
	b, err := benchdir.Load(cfg.Benchmark)
	if err != nil {
		return nil, fmt.Errorf("simulated model: %w", err)
	}
	m := &Simulated{cfg: cfg, byXray: map[string][]*record{}}
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
	return m, nil
}

// Answer replies to a conversation: firstImage is provider.PayloadKey of
// the first image's base64 text, texts the message texts in order (the
// last one is the question). The reply is "Answer: " and option numbers.
func (m *Simulated) Answer(firstImage string, texts []string) (string, error) {
	recs := m.byXray[firstImage]
	if len(recs) == 0 {
		return "", fmt.Errorf("the first image of the conversation is %w", ErrUnknown)
	}
	if len(texts) == 0 {
		return "", errors.New("no messages")
	}
	last := texts[len(texts)-1]
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
