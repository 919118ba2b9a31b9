// Package protocoltest provides synthetic benchmark records (one per path,
// shaped like the examples of spec format.md §4), their image files, and a
// scripted fake model for tests of the protocol engine and the results
// export.
package protocoltest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
)

func q(instr string, opts ...string) string {
	var b strings.Builder
	b.WriteString(instr + "\n\nOptions:")
	for i, o := range opts {
		fmt.Fprintf(&b, "\n(%d) %s", i+1, o)
	}
	return b.String()
}

func det(lesion string, yes bool) benchmark.YesNoQA {
	a := benchmark.YesNoQA{Question: q("Does this chest X-ray show "+lesion+"?", "Yes", "No"), AnswerOptions: []string{"Yes", "No"}, Answer: "No", AnswerIndex: 2}
	if yes {
		a.Answer, a.AnswerIndex = "Yes", 1
	}
	return a
}

func ce(lesion string, needsRevision bool) benchmark.ContourEvalQA {
	a := benchmark.ContourEvalQA{YesNoQA: benchmark.YesNoQA{Question: q("Does the outlined "+lesion+" mask need revision?", "Yes", "No"), AnswerOptions: []string{"Yes", "No"}, Answer: "No", AnswerIndex: 2}, RelativePath: "contour_eval_qa/xray_with_mask.png"}
	if needsRevision {
		a.Answer, a.AnswerIndex = "Yes", 1
	}
	return a
}

func pt(x, y int, c string) benchmark.PointOption {
	p := [2]int{x, y}
	return benchmark.PointOption{Point: &p, Color: c}
}

func points(colors ...string) []benchmark.PointOption {
	var out []benchmark.PointOption
	for i, c := range colors {
		out = append(out, pt(100+i*10, 200+i*10, c))
	}
	return append(out, benchmark.PointOption{Color: "None"})
}

func pointQA(op string, opts []benchmark.PointOption, answer string, idx ...int) benchmark.PointQA {
	var texts []string
	for _, o := range opts {
		if o.Point == nil {
			texts = append(texts, "None")
		} else {
			texts = append(texts, o.Color+" point")
		}
	}
	return benchmark.PointQA{Question: q("Which points need "+op+"? Select all that apply.", texts...), AnswerOptions: opts, Answer: answer, AnswerIndex: idx}
}

func revision(trueAt int) benchmark.RevisionQA {
	var opts []benchmark.RevisionOption
	for k := 1; k <= 4; k++ {
		o := benchmark.RevisionOption{Type: "fake", Masks: []string{"default_keep"}, RelativePath: fmt.Sprintf("option_%d_mask_fake.png", k)}
		if k == trueAt {
			o = benchmark.RevisionOption{Type: "true", Masks: []string{"optimal_component_0"}, RelativePath: fmt.Sprintf("option_%d_mask_answer.png", k)}
		}
		opts = append(opts, o)
	}
	ords := []string{"1st mask", "2nd mask", "3rd mask", "4th mask"}
	return benchmark.RevisionQA{Question: q("Which mask reflects the modifications?", ords...), AnswerOptions: opts, Answer: ords[trueAt-1], AnswerIndex: trueAt}
}

func attrs(dist int, loc []int, sev, comp int) *benchmark.AttributeQA {
	dOpts := []string{"1 zone", "2 zones", "3 zones", "4 zones or more"}
	lOpts := []string{"the left costophrenic angle", "the right mid zone lung", "the left upper zone lung", "None of the above (options 1-3)"}
	sOpts := []string{"less than one third", "between one and two thirds", "more than two thirds"}
	cOpts := []string{"similar size", "left larger", "right larger", "only one lung"}
	return &benchmark.AttributeQA{
		Distribution: benchmark.DistributionQA{Question: q("How many zones are involved?", dOpts...), AnswerOptions: dOpts, Answer: dOpts[dist-1], AnswerIndex: dist},
		Location:     benchmark.LocationQA{Question: q("Where is the lesion? Select all that apply.", lOpts...), AnswerOptions: lOpts, Answer: lOpts[loc[0]-1], AnswerIndex: loc},
		Severity:     benchmark.SeverityQA{Question: q("How much of the lung is involved?", sOpts...), AnswerOptions: sOpts, Answer: sOpts[sev-1], AnswerIndex: sev, OverlapRatio: "0.184", SelectedLung: "right lung"},
		Comparison:   benchmark.ComparisonQA{Question: q("Compare the two lungs.", cOpts...), AnswerOptions: cOpts, Answer: cOpts[comp-1], AnswerIndex: comp},
	}
}

// Records returns four records: LF (edema), RF (pneumonia), RR
// (atelectasis) and cardiomegaly RR, in that order.
func Records() []*benchmark.Record {
	lf := &benchmark.Record{KeyID: "edema_s50414267_negative_3", Lesion: "edema", Detection: det("edema", false), PairID: "s50414267_negative_3"}

	rfPts := points("red", "orange")
	rf := &benchmark.Record{KeyID: "pneumonia_s57001234_positive_0", Lesion: "pneumonia", Detection: det("pneumonia", true), PairID: "s57001234_positive_0",
		Contour: &benchmark.ContourQA{NoDeformation: true, InitialContext: "Coloured points mark candidate places on the mask border.",
			ContourEval: ce("pneumonia", false), Expansion: pointQA("expansion", rfPts, "orange point", 2),
			Contraction: pointQA("contraction", rfPts, "None", 3), RevisionResult: revision(2)},
		Attributes: attrs(2, []int{2}, 1, 4)}

	rrPts := points("red", "orange", "yellow", "green")
	rr := &benchmark.Record{KeyID: "atelectasis_s56543210_positive_1", Lesion: "atelectasis", Detection: det("atelectasis", true), PairID: "s56543210_positive_1",
		Contour: &benchmark.ContourQA{InitialContext: "Coloured points mark candidate places on the mask border.",
			ContourEval: ce("atelectasis", true), Expansion: pointQA("expansion", rrPts, "yellow point", 3),
			Contraction: pointQA("contraction", rrPts, "red point", 1), RevisionResult: revision(4)},
		Attributes: attrs(1, []int{1}, 2, 2)}

	cmPts := points("red", "orange", "yellow")
	cm := &benchmark.Record{KeyID: "cardiomegaly_s55123456_positive_0", Lesion: "cardiomegaly", Detection: det("cardiomegaly", true), PairID: "s55123456_positive_0",
		Contour: &benchmark.ContourQA{InitialContext: "Coloured points mark candidate places on the heart border.",
			ContourEval: ce("cardiomegaly", true), Expansion: pointQA("expansion", cmPts, "None", 4),
			Contraction: pointQA("contraction", cmPts, "yellow point, orange point", 3, 2), RevisionResult: revision(1)},
		AttributesNull: true}
	return []*benchmark.Record{lf, rf, rr, cm}
}

// ImagePaths lists every image file a record can reference, relative to
// the benchmark dir.
func ImagePaths(rec *benchmark.Record) []string {
	base := "chexpercept/" + rec.KeyID + "/"
	out := []string{base + "detection_qa/xray.png"}
	if rec.Contour != nil {
		out = append(out, base+"contour_qa/"+rec.Contour.ContourEval.RelativePath)
		if !rec.Contour.NoDeformation {
			out = append(out, base+"contour_qa/contour_revision_qa/xray_with_mask_and_points.png")
			for _, o := range rec.Contour.RevisionResult.AnswerOptions {
				out = append(out, base+"contour_qa/contour_revision_qa/"+o.RelativePath)
			}
		}
	}
	return out
}

// WriteImages creates every image file of the records (placeholder bytes;
// the engine only checks existence) under dir, except those in omit.
func WriteImages(dir string, recs []*benchmark.Record, omit ...string) error {
	skip := map[string]bool{}
	for _, o := range omit {
		skip[o] = true
	}
	for _, r := range recs {
		for _, p := range ImagePaths(r) {
			if skip[p] {
				continue
			}
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(full, []byte("png"), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// Script is a fake model that returns its replies in order and records
// every request. Safe for use by one conversation at a time.
type Script struct {
	mu       sync.Mutex
	Replies  []protocol.Reply
	Errors   map[int]error // call number (0-based) → error to return
	Requests [][]protocol.Message
}

// Texts builds a Script whose replies have only text.
func Texts(texts ...string) *Script {
	s := &Script{}
	for _, t := range texts {
		s.Replies = append(s.Replies, protocol.Reply{Text: t, Attempts: 1})
	}
	return s
}

// Call implements protocol.Caller.
func (s *Script) Call(_ context.Context, msgs []protocol.Message) (protocol.Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.Requests)
	s.Requests = append(s.Requests, msgs)
	if err := s.Errors[n]; err != nil {
		return protocol.Reply{}, err
	}
	if n >= len(s.Replies) {
		return protocol.Reply{}, fmt.Errorf("script: unexpected call %d", n+1)
	}
	return s.Replies[n], nil
}

// GTReplies returns "Answer: <GT>" for every asked turn of rec's plan:
// the oracle policy.
func GTReplies(rec *benchmark.Record, benchDir string) ([]string, error) {
	plan, err := protocol.Plan(rec, benchDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range plan {
		if !p.Asked() {
			continue
		}
		parts := make([]string, len(p.GT))
		for i, v := range p.GT {
			parts[i] = strconv.Itoa(v)
		}
		out = append(out, "Answer: "+strings.Join(parts, ","))
	}
	return out, nil
}

// Transcript renders requests readably for golden files: one block per
// call, one line per message with its role, images and text.
func Transcript(reqs [][]protocol.Message) string {
	var b strings.Builder
	for i, msgs := range reqs {
		fmt.Fprintf(&b, "=== call %d (%d messages)\n", i+1, len(msgs))
		for _, m := range msgs {
			fmt.Fprintf(&b, "--- %s", m.Role)
			if len(m.ImagePaths) > 0 {
				fmt.Fprintf(&b, " images=%s", strings.Join(m.ImagePaths, ","))
			}
			fmt.Fprintf(&b, "\n%s\n", m.Text)
		}
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

// ScenarioReplies gives, per record of Records(), a fixed reply sequence
// mixing right and wrong answers in many formats, so that every oracle
// decision triggers somewhere and reference and strict parsing disagree
// on some turns:
//   - LF: an empty reply cut by the token limit.
//   - RF: T1 is only a think block (empty reference parse; strict
//     no_marker), T2 "The answer is 2" (reference right, strict fails),
//     attributes with a wrong location.
//   - RR: T2 wrong, T4 partly wrong, T5 wrong, usage reported.
//   - cardiomegaly RR: T4 wrong (D5 with an expansion "None" line).
func ScenarioReplies() map[string][]protocol.Reply {
	u := func(in, out int64) *protocol.Reply {
		return &protocol.Reply{Attempts: 1, LatencyMS: 120, TotalMS: 130, FinishReason: ptr("stop"),
			Usage: tokenUse(in, out)}
	}
	with := func(r *protocol.Reply, text string, cost *float64) protocol.Reply {
		r.Text, r.CostUSD = text, cost
		return *r
	}
	plain := func(text string) protocol.Reply {
		return protocol.Reply{Text: text, Attempts: 1, LatencyMS: 40, TotalMS: 40, FinishReason: ptr("stop")}
	}
	return map[string][]protocol.Reply{
		"edema_s50414267_negative_3": {
			{Text: "", Attempts: 1, LatencyMS: 900, TotalMS: 900, FinishReason: ptr("length"), Reasoning: ptr("Long deliberation about the hila…")},
		},
		"pneumonia_s57001234_positive_0": {
			plain("<think>\nThe right lower zone is hazy.\n</think>\n"),
			plain("The answer is 2"),
			plain("Answer: 2"),
			plain("Answer: 2, 4"),
			plain("**Answer:** 1"),
			plain("ANSWER: 4"),
		},
		"atelectasis_s56543210_positive_1": {
			with(u(1000, 20), "Answer: 1", ptr(0.0025)),
			with(u(2100, 25), "The mask fits well.\nAnswer: 2", ptr(0.0051)),
			with(u(3200, 30), "<think>yellow sits outside</think>Answer: 3", ptr(0.0077)),
			with(u(3300, 30), "Answer: 1, 4", nil),
			with(u(7000, 15), `\boxed{2}`, ptr(0.0172)),
			with(u(7100, 10), "Answer: 1", ptr(0.0178)),
			with(u(7150, 10), "Answer: 1", ptr(0.0179)),
			with(u(7200, 40), "Final answer: $2$", ptr(0.018)),
			with(u(7300, 10), "Answer: ٢", ptr(0.0183)),
		},
		"cardiomegaly_s55123456_positive_0": {
			with(u(900, 5), "Answer: 1", ptr(0.0023)),
			with(u(1900, 5), "Answer: 1", ptr(0.0048)),
			with(u(2900, 5), "Answer: 4", ptr(0.0073)),
			with(u(3000, 5), "Answer: 3", ptr(0.0075)),
			with(u(6000, 5), "Answer: 1", ptr(0.015)),
		},
	}
}

func tokenUse(in, out int64) *results.TokenUse {
	return &results.TokenUse{InputTokens: in, CachedInputTokens: in / 2, OutputTokens: out, ThinkingTokens: out / 5, TotalTokens: in + out}
}

// Bench writes the records of Records with placeholder images into a new
// directory under t's temporary directory and loads it.
func Bench(t testing.TB) *benchmark.Benchmark {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bench")
	recs := Records()
	if err := WriteImages(dir, recs); err != nil {
		t.Fatal(err)
	}
	if err := benchdir.WriteJSON(nil, dir, recs); err != nil {
		t.Fatal(err)
	}
	b, err := benchdir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
