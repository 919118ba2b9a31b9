// Package protocol runs one benchmark record as a multi-turn conversation
// with a model and scores it (spec protocol.md §1–§8).
//
// The model is reached through a Caller that receives the whole message
// list of each call (system message, every earlier asked turn as a user
// message plus the assistant's fed-back text, then the current user
// message) and returns the reply; transport, retries, image bytes and
// caching belong to the caller. The engine decides which turns are asked
// (Plan), composes their texts, applies the oracle decisions D2/D3/D5/D6
// in explicit mode (a text prepended to the next question) or implicit
// mode (earlier assistant turns rewritten to "Answer: N"), parses every
// reply in the run's parse mode and produces a results.Record.
//
// Subpackages: parse (answer extraction) and profile (prompt texts).
package protocol

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/protocol/profile"
	"github.com/chexpercept/chexpercept/internal/results"
)

// OracleMode is --oracle: none, implicit or explicit.
type OracleMode string

const (
	OracleNone     OracleMode = "none"
	OracleImplicit OracleMode = "implicit"
	OracleExplicit OracleMode = "explicit"
)

// ParseOracleMode validates an --oracle value.
func ParseOracleMode(s string) (OracleMode, error) {
	switch OracleMode(s) {
	case OracleNone, OracleImplicit, OracleExplicit:
		return OracleMode(s), nil
	}
	return "", fmt.Errorf("unknown oracle mode %q (want none, implicit or explicit)", s)
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one chat message. In a user message the text comes first,
// then the images in order; ImagePaths are relative to the benchmark dir.
type Message struct {
	Role       string
	Text       string
	ImagePaths []string
}

// Reply is a successful call's outcome as the caller reports it.
type Reply struct {
	Text         string  // the content, with any inline reasoning
	Reasoning    *string // separately returned reasoning; never fed back
	FinishReason *string // stop, length, content_filter, other; nil if unknown
	Usage        *results.TokenUse
	CostUSD      *float64 // nil when the model is unpriced
	Cached       bool
	LatencyMS    int64
	TotalMS      int64
	Attempts     int
}

// Caller sends one request. An error means the call failed after the
// caller's own retries; the record then ends with status error.
type Caller func(ctx context.Context, msgs []Message) (Reply, error)

// Options are a run's settings for one record.
type Options struct {
	BenchDir     string // benchmark directory (holds chexpercept/<key_id>/…)
	Index        int    // the record's position in chexpercept.json
	Oracle       OracleMode
	Parse        parse.Mode
	Profile      *profile.Profile // nil means profile.Default()
	GLMBoxUnwrap bool             // the model's glm_box_unwrap quirk (rule A0)
	Now          func() time.Time // nil means time.Now
}

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func (o *Options) now() string {
	if o.Now != nil {
		return o.Now().UTC().Format(timeLayout)
	}
	return time.Now().UTC().Format(timeLayout)
}

func newRecord(rec *benchmark.Record, opts *Options) *results.Record {
	return &results.Record{
		KeyID: rec.KeyID, Lesion: rec.Lesion, QAPath: rec.Path(), Index: opts.Index,
		Status: results.StatusOK, OracleMode: string(opts.Oracle), ParseMode: string(opts.Parse),
		StartedAt: opts.now(), Turns: []results.Turn{}, OracleEvents: []results.Event{},
	}
}

// ErrorRecord is the record of a case that could not start (for example an
// image failed verification): status error, no turn asked.
func ErrorRecord(rec *benchmark.Record, opts Options, err error) *results.Record {
	r := newRecord(rec, &opts)
	fail(r, err.Error())
	r.FinishedAt = r.StartedAt
	finish(r, rec)
	return r
}

func fail(r *results.Record, msg string) {
	r.Status = results.StatusError
	r.Error = &msg
}

// conv is the state of one conversation.
type conv struct {
	opts    *Options
	prof    *profile.Profile
	rec     *benchmark.Record
	res     *results.Record
	plan    []PlannedTurn
	history []int // indexes into res.Turns of asked turns, in order
}

func (c *conv) turn(q benchmark.Question) (*results.Turn, *PlannedTurn) {
	for i := range c.res.Turns {
		if c.plan[i].Q == q {
			return &c.res.Turns[i], &c.plan[i]
		}
	}
	return nil, nil
}

// correct: asked, parsed and scored correct. "Not recorded" (an empty
// reference parse of T1/T2) is never correct because it parses to −1.
func (c *conv) correct(q benchmark.Question) bool {
	t, _ := c.turn(q)
	return t != nil && t.Status == results.TurnAsked && t.Correct != nil && *t.Correct
}

// Run asks rec's turns in order through call and returns its record.
func Run(ctx context.Context, rec *benchmark.Record, opts Options, call Caller) *results.Record {
	c := &conv{opts: &opts, prof: opts.Profile, rec: rec, res: newRecord(rec, &opts)}
	if c.prof == nil {
		c.prof = profile.Default()
	}
	plan, err := Plan(rec, opts.BenchDir)
	if err != nil {
		fail(c.res, err.Error())
		c.res.FinishedAt = opts.now()
		finish(c.res, rec)
		return c.res
	}
	c.plan = plan
	for i := range plan {
		p := &plan[i]
		t := results.Turn{Turn: p.ID, Step: p.Step, Images: []string{}}
		if p.GT != nil {
			gt := slices.Clone(p.GT)
			t.GT = &gt
		}
		c.res.Turns = append(c.res.Turns, t)
		prefix := c.decide(p)
		if !p.Asked() {
			reason := p.SkipReason
			c.res.Turns[i].Status = results.TurnSkipped
			c.res.Turns[i].SkipReason = &reason
			continue
		}
		if err := c.ask(ctx, i, prefix, call); err != nil {
			fail(c.res, fmt.Sprintf("%s (%s): %v", p.ID, p.Step, err))
			break
		}
	}
	c.res.FinishedAt = opts.now()
	finish(c.res, rec)
	return c.res
}

// ask sends turn i and records the reply.
func (c *conv) ask(ctx context.Context, i int, prefix string, call Caller) error {
	p := &c.plan[i]
	t := &c.res.Turns[i]
	text := p.Text
	if prefix != "" {
		text = prefix + "\n\n" + text
	}
	t.UserText = &text
	t.Images = slices.Clone(p.Images)
	if err := ctx.Err(); err != nil {
		t.Status = results.TurnError
		msg := err.Error()
		t.Error = &msg
		return err
	}
	msgs := []Message{{Role: RoleSystem, Text: c.prof.SystemText()}}
	for _, h := range c.history {
		ht := &c.res.Turns[h]
		msgs = append(msgs,
			Message{Role: RoleUser, Text: *ht.UserText, ImagePaths: slices.Clone(ht.Images)},
			Message{Role: RoleAssistant, Text: *ht.FedBack})
	}
	msgs = append(msgs, Message{Role: RoleUser, Text: text, ImagePaths: slices.Clone(p.Images)})
	reply, err := call(ctx, msgs)
	if err != nil {
		t.Status = results.TurnError
		msg := err.Error()
		t.Error = &msg
		return err
	}
	t.Status = results.TurnAsked
	raw := reply.Text
	t.Raw, t.FedBack = &raw, &raw
	t.Reasoning, t.FinishReason = reply.Reasoning, reply.FinishReason
	t.LatencyMS, t.TotalMS, t.Attempts, t.Cached = reply.LatencyMS, reply.TotalMS, reply.Attempts, reply.Cached
	t.Usage, t.CostUSD = reply.Usage, reply.CostUSD
	scoreTurn(t, p.NOptions, p.Multi, c.opts.Parse, c.opts.GLMBoxUnwrap)
	c.history = append(c.history, i)
	return nil
}

// scoreTurn parses t.Raw and fills the parse and score fields (§7, §8).
func scoreTurn(t *results.Turn, nOptions int, multi bool, mode parse.Mode, glm bool) {
	pr := parse.Parse(mode, *t.Raw, nOptions, multi, glm)
	text, rule, ok, inRange := pr.Text, pr.Rule, pr.OK, pr.InRange
	nums := slices.Clone(pr.Nums)
	if nums == nil {
		nums = []int{}
	}
	t.ParsedText, t.Parsed, t.ParseRule, t.ParseOK, t.InRange = &text, &nums, &rule, &ok, &inRange
	var gt []int
	if t.GT != nil {
		gt = *t.GT
	}
	usable := mode != parse.ModeStrict || pr.OK // strict failures are never guessed
	var correct bool
	if len(gt) > 0 && usable && len(nums) > 0 {
		if multi {
			correct = sameSet(nums, gt)
		} else {
			correct = nums[0] == gt[0]
		}
	}
	t.Correct = &correct
	t.Jaccard = nil
	if multi && len(gt) > 0 {
		var pset []int
		if usable {
			pset = nums
		}
		j := jaccard(pset, gt)
		t.Jaccard = &j
	}
}

func toSet(xs []int) map[int]bool {
	m := make(map[int]bool, len(xs))
	for _, x := range xs {
		if x != -1 {
			m[x] = true
		}
	}
	return m
}

func sameSet(a, b []int) bool {
	sa, sb := toSet(a), toSet(b)
	if len(sa) != len(sb) || len(sa) == 0 {
		return false
	}
	for k := range sa {
		if !sb[k] {
			return false
		}
	}
	return true
}

// jaccard is |P∩G|/|P∪G| with −1 left out of P.
func jaccard(p, g []int) float64 {
	sp, sg := toSet(p), toSet(g)
	inter := 0
	for k := range sp {
		if sg[k] {
			inter++
		}
	}
	union := len(sp) + len(sg) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// decide runs the oracle decision of plan turn p, if it has one that is
// reached, records the event, applies implicit patches and returns the
// explicit prefix for p's text ("" if none).
func (c *conv) decide(p *PlannedTurn) string {
	if !p.Decision {
		return ""
	}
	path := c.rec.Path()
	var point string
	var triggered bool
	var targets []benchmark.Question // implicit patch targets, in order
	var text func() (string, error)
	switch p.Q {
	case benchmark.QContourEval:
		point, triggered = "D2", !c.correct(benchmark.QDetection)
		targets = []benchmark.Question{benchmark.QDetection}
		text = func() (string, error) { return c.prof.O2(), nil }
	case benchmark.QExpansion:
		point, triggered = "D3", !c.correct(benchmark.QContourEval)
		targets = []benchmark.Question{benchmark.QContourEval}
		text = func() (string, error) { return c.prof.O3(), nil }
	case benchmark.QRevisionResult:
		point = "D5"
		expOK, conOK := c.correct(benchmark.QExpansion), c.correct(benchmark.QContraction)
		triggered = !expOK || !conOK
		if !expOK {
			targets = append(targets, benchmark.QExpansion)
		}
		if !conOK {
			targets = append(targets, benchmark.QContraction)
		}
		text = c.o5
	case benchmark.QDistribution:
		point = "D6"
		if path == benchmark.RevisionFree {
			triggered = !c.correct(benchmark.QContourEval)
			targets = []benchmark.Question{benchmark.QContourEval}
			text = func() (string, error) { return c.prof.O6RF(), nil }
		} else {
			triggered = !c.correct(benchmark.QRevisionResult)
			targets = []benchmark.Question{benchmark.QRevisionResult}
			text = func() (string, error) {
				_, rp := c.turn(benchmark.QRevisionResult)
				if rp == nil || len(rp.GT) == 0 {
					return "", fmt.Errorf("D6: revision_result has no ground truth for the selected-mask text")
				}
				return c.prof.O6RR(rp.GT[0]), nil
			}
		}
	default:
		return ""
	}
	ev := results.Event{Point: point, Triggered: triggered, Action: results.ActionNone, PatchedTurns: []string{}}
	var prefix string
	if triggered {
		switch c.opts.Oracle {
		case OracleExplicit:
			ev.Action = results.ActionInject
			// A text that cannot be composed (ground truth missing or
			// inconsistent, only possible with --allow-invalid) is not
			// sent; the event says why instead of failing the record.
			s, err := text()
			switch {
			case err != nil:
				reason := err.Error() + "; the oracle text was not sent"
				ev.NoopReason = &reason
			case p.Asked():
				prefix = s
			default:
				reason := p.ID + " skipped; the oracle text was not sent"
				ev.NoopReason = &reason
			}
		case OracleImplicit:
			ev.Action = results.ActionPatch
			var reasons []string
			for _, q := range targets {
				if why := c.patch(q, point); why != "" {
					reasons = append(reasons, why)
				} else {
					ev.PatchedTurns = append(ev.PatchedTurns, q.Turn())
				}
			}
			if len(reasons) > 0 {
				r := strings.Join(reasons, "; ")
				ev.NoopReason = &r
			}
		}
	}
	c.res.OracleEvents = append(c.res.OracleEvents, ev)
	return prefix
}

// patch overwrites the fed-back text of q's turn with its GT answer and
// returns "" or why it was a no-op (§4.1).
func (c *conv) patch(q benchmark.Question, point string) string {
	t, _ := c.turn(q)
	id := q.Turn()
	if t == nil || t.Status != results.TurnAsked {
		return id + " has no history index (not asked)"
	}
	ref := c.opts.Parse != parse.ModeStrict
	if ref && q == benchmark.QDetection && *t.ParsedText == "" {
		return id + " has no history index (empty reference parse)"
	}
	if ref && q == benchmark.QContourEval && *t.ParsedText == "" {
		return id + " ground truth not recorded (empty reference parse)"
	}
	if t.GT == nil || len(*t.GT) == 0 {
		return id + " ground truth is null or empty"
	}
	if t.OriginalRaw == nil {
		orig := *t.Raw
		t.OriginalRaw = &orig
	}
	fb := parse.FormatAnswer(*t.GT)
	pt := point
	t.FedBack, t.PatchedAt = &fb, &pt
	return ""
}

// o5 composes the D5 text from the expansion and contraction GT.
func (c *conv) o5() (string, error) {
	op := func(name string, q benchmark.PointQA) (profile.Operation, error) {
		o := profile.Operation{Name: name, None: q.Answer == "None"}
		if o.None {
			return o, nil
		}
		for _, i := range q.AnswerIndex {
			if i < 1 || i > len(q.AnswerOptions) {
				return o, fmt.Errorf("D5: %s answer_index %d is outside its %d options", name, i, len(q.AnswerOptions))
			}
			o.Colors = append(o.Colors, q.AnswerOptions[i-1].Color)
		}
		return o, nil
	}
	e, err := op("expansion", c.rec.Contour.Expansion)
	if err != nil {
		return "", err
	}
	k, err := op("contraction", c.rec.Contour.Contraction)
	if err != nil {
		return "", err
	}
	return c.prof.O5(e, k), nil
}
