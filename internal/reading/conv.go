package reading

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/results"
)

// errWaiting stops a replay at the first turn without an answer.
var errWaiting = errors.New("waiting for the reader's answer")

// Pending is the turn a reader has to answer next: what a model would be
// sent there.
type Pending struct {
	Seq      int    // 0-based among the record's asked turns
	Turn     string // "T1"…
	Text     string // the user text, with any explicit oracle prefix
	Prefix   string // that prefix alone ("" when none)
	Images   []string
	NOptions int
	Multi    bool
	// History is the conversation so far as the model sees it: each
	// earlier asked turn's text and the fed-back answer (an implicit
	// oracle patch replaces the reader's own).
	History []Exchange
}

// Exchange is one earlier turn of the conversation.
type Exchange struct {
	Turn, Text, Answer string
	Patched            bool // the protocol replaced the reader's answer (implicit oracle)
	Images             []string
}

// Replay runs rec's conversation with the reader's stored answers. When
// every asked turn is answered it returns the scored record (timed by the
// answers) and a nil Pending; otherwise the record is nil and Pending is
// the first unanswered turn. ctx is the protocol's (a request's, or an
// export's): a replay stops when it ends.
func Replay(ctx context.Context, rec *benchmark.Record, index int, benchDir string, oracle protocol.OracleMode, answers []Answer) (*results.Record, *Pending, error) {
	plan, err := protocol.Plan(rec, benchDir)
	if err != nil {
		return nil, nil, err
	}
	var asked []protocol.PlannedTurn
	for _, p := range plan {
		if p.Asked() {
			asked = append(asked, p)
		}
	}
	var done []Answer
	for _, a := range answers {
		if a.Text == "" {
			break
		}
		done = append(done, a)
	}
	// protocol.Run reads the clock twice: at the start and at the end.
	// The record's times are the first display and the last answer.
	calls := 0
	now := func() time.Time {
		calls++
		if calls == 1 && len(done) > 0 {
			return time.UnixMilli(done[0].ShownMS)
		}
		if len(done) > 0 {
			return time.UnixMilli(done[len(done)-1].AnsweredMS)
		}
		return time.Unix(0, 0)
	}
	var pend *Pending
	n := 0
	call := func(_ context.Context, msgs []protocol.Message) (protocol.Reply, error) {
		if n < len(done) {
			a := done[n]
			n++
			ms := max(a.AnsweredMS-a.ShownMS, 0)
			return protocol.Reply{Text: a.Text, LatencyMS: ms, TotalMS: ms, Attempts: 1}, nil
		}
		last := msgs[len(msgs)-1]
		p := asked[n]
		pend = &Pending{Seq: n, Turn: p.ID, Text: last.Text, Images: slices.Clone(last.ImagePaths), NOptions: p.NOptions, Multi: p.Multi}
		if last.Text != p.Text {
			pend.Prefix = strings.TrimSuffix(strings.TrimSuffix(last.Text, p.Text), "\n\n")
		}
		// msgs: system, then (user, assistant) pairs, then the current turn.
		for i := 1; i+1 < len(msgs)-1; i += 2 {
			k := (i - 1) / 2
			pend.History = append(pend.History, Exchange{Turn: asked[k].ID, Text: msgs[i].Text, Images: msgs[i].ImagePaths,
				Answer: msgs[i+1].Text, Patched: msgs[i+1].Text != done[k].Text})
		}
		return protocol.Reply{}, errWaiting
	}
	opts := protocol.Options{BenchDir: benchDir, Index: index, Oracle: oracle, Parse: parse.ModeReference, Now: now}
	res := protocol.Run(ctx, rec, opts, call)
	if pend != nil {
		return nil, pend, nil
	}
	if res.Status != results.StatusOK && res.Error != nil {
		return nil, nil, errors.New(*res.Error)
	}
	return res, nil, nil
}
