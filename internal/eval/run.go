package eval

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/respcache"
	"github.com/chexpercept/chexpercept/internal/results"
)

// testHTTPClient, when set by a test, replaces the clients' HTTP client.
var testHTTPClient *http.Client

// testHookCall, when set by a test, sees every attempt's case and endpoint.
var testHookCall func(key, endpoint string)

// task is one record to run with its plan.
type task struct {
	index int
	rec   *benchmark.Record
	plan  []protocol.PlannedTurn
	err   error // a failure before the first call (plan or image verification)
}

// run asks the records of todo. Ending ctx stops starting records; ending
// abandon drops the ones in flight.
func (r *runner) run(ctx, abandon context.Context, todo []int) error {
	o := r.o
	if len(todo) == 0 {
		fmt.Fprintf(o.Log, "%s: nothing to ask (%d of %d selected records already done)\n", r.sum.RunDir, r.sum.AlreadyDone, r.sum.Selected)
		return nil
	}
	// Plans and image verification, outside all timing.
	tasks := make([]*task, len(todo))
	var paths []string
	seen := map[string]bool{}
	for i, ix := range todo {
		t := &task{index: ix, rec: r.bench.Records[ix]}
		t.plan, t.err = protocol.Plan(t.rec, o.BenchDir)
		if t.err == nil {
			for _, p := range protocol.ImagesToSend(t.plan) {
				if !seen[p] {
					seen[p] = true
					paths = append(paths, p)
				}
			}
		}
		tasks[i] = t
	}
	// Longest records first (ties in file order): with many records in
	// flight this keeps the tail short, where file order would leave a
	// few nine-turn records running alone at the end.
	slices.SortStableFunc(tasks, func(a, b *task) int { return askedTurns(b.plan) - askedTurns(a.plan) })
	vp := newVerifyProgress(o, len(paths), len(tasks))
	r.verified = verifyImages(o.BenchDir, paths, vp.add)
	vp.finish()
	for _, t := range tasks {
		if t.err != nil {
			continue
		}
		for _, p := range protocol.ImagesToSend(t.plan) {
			if v := r.verified[p]; v.err != nil {
				t.err = v.err
				break
			}
		}
	}

	r.prog = newProgress(o, len(tasks), r.sum.AlreadyDone)
	defer r.prog.stop()

	work := make(chan *task)
	out := make(chan *results.Record, o.Concurrency)
	var writeErr error
	writeFailed := make(chan struct{})
	var wdone sync.WaitGroup
	wdone.Add(1)
	go func() { // the single writer
		defer wdone.Done()
		for rec := range out {
			// Group commit: the records that finished while the last
			// sync ran are written together and synced once, so the
			// writer keeps up with any number of workers.
			batch := []*results.Record{rec}
		drain:
			for len(batch) < 256 {
				select {
				case more, ok := <-out:
					if !ok {
						break drain
					}
					batch = append(batch, more)
				default:
					break drain
				}
			}
			if writeErr != nil {
				continue
			}
			if err := r.store.AppendBatch(batch); err != nil {
				writeErr = err
				close(writeFailed)
				continue
			}
			for _, b := range batch {
				r.prog.record(b)
			}
		}
	}()

	callStart := time.Now()
	var wg sync.WaitGroup
	var abandoned sync.Map
	for w := 0; w < min(o.Concurrency, len(tasks)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				rec := r.runTask(abandon, t)
				if rec == nil {
					abandoned.Store(t.index, true)
					continue
				}
				out <- rec
			}
		}()
	}
	attempted := 0
feed:
	for _, t := range tasks {
		select {
		case work <- t:
			attempted++
		case <-ctx.Done():
			break feed
		case <-writeFailed:
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(out)
	wdone.Wait()
	r.sum.CallPhase = time.Since(callStart)
	r.sum.Attempted = attempted
	abandoned.Range(func(_, _ any) bool { r.sum.Abandoned++; return true })
	r.sum.Interrupted = ctx.Err() != nil || r.sum.Abandoned > 0
	r.sum.ImageLoads = r.images.loads
	if writeErr != nil {
		return writeErr
	}
	switch {
	case r.sum.Interrupted && r.sum.Abandoned > 0:
		fmt.Fprintf(o.Log, "interrupted: %d records started, %d abandoned (they will be asked again on restart)\n", attempted, r.sum.Abandoned)
	case r.sum.Interrupted:
		fmt.Fprintf(o.Log, "interrupted: %d records started, all in flight finished; the rest are asked on restart\n", attempted)
	}
	return nil
}

func askedTurns(plan []protocol.PlannedTurn) int {
	n := 0
	for i := range plan {
		if plan[i].Asked() {
			n++
		}
	}
	return n
}

// setup builds the endpoints, the caches and the limiters.
func (r *runner) setup() error {
	o := r.o
	r.retry = retryPolicy{maxRetries: o.MaxRetries, timeout: o.Timeout, base: o.RetryBase, cap: o.RetryCap}
	r.limits = newLimiters(o.RPM, o.TPM)
	r.images = newImageCache(o.BenchDir, o.ImageCacheBytes, o.Model.Backend == provider.BackendGemini)
	r.pool = &pool{}
	if o.Model.Backend == provider.BackendBaseline {
		c, err := provider.NewBaseline(o.Model.ModelID, o.PolicySeed)
		if err != nil {
			return err
		}
		r.pool.eps = []*endpoint{newEndpoint("in-process", c, o.Concurrency)}
	} else {
		eps := o.Endpoints
		if len(eps) == 0 {
			eps = []string{""}
		}
		for _, ep := range eps {
			c, err := provider.New(provider.Config{Backend: o.Model.Backend, Endpoint: ep, APIKeyFile: o.APIKeyFile,
				GeminiImageFormat: o.GeminiImageFormat, HTTPClient: testHTTPClient, MaxReplyBytes: o.MaxReplyBytes})
			if err != nil {
				return err
			}
			name := "default endpoint"
			if ep != "" {
				name = ScrubEndpoint(ep)
			}
			r.pool.eps = append(r.pool.eps, newEndpoint(name, c, o.Concurrency))
		}
	}
	if !o.NoCache && respcache.Cacheable(o.Model.Sampling) && o.Model.Backend != provider.BackendBaseline {
		dir := o.CacheDir
		if dir == "" {
			var err error
			if dir, err = respcache.DefaultDir(); err != nil {
				return err
			}
		}
		c, err := respcache.Open(dir)
		if err != nil {
			return err
		}
		r.cache = c
	}
	return nil
}

// runTask runs one record. It returns nil when the record was abandoned
// by an interruption (it must be asked again, so nothing is written).
func (r *runner) runTask(ctx context.Context, t *task) *results.Record {
	o := r.o
	popts := protocol.Options{BenchDir: o.BenchDir, Index: t.index, Oracle: o.Oracle, Parse: o.Parse,
		Profile: o.Profile, GLMBoxUnwrap: o.Model.GLMBoxUnwrap, Now: o.Now}
	if t.err != nil {
		return protocol.ErrorRecord(t.rec, popts, t.err)
	}
	cs := &caseState{r: r, task: t, imgs: &recordImages{cache: r.images, hashes: r.verified, got: map[string]*provider.Image{}}}
	for _, p := range t.plan {
		if p.Asked() {
			cs.asked = append(cs.asked, p)
		}
	}
	defer cs.done()
	rec := protocol.Run(ctx, t.rec, popts, cs.call)
	if rec.Status == results.StatusError && (ctx.Err() != nil || cs.canceled) {
		return nil
	}
	if cs.failed != nil {
		// The protocol engine records no reply for a failed turn; the
		// requests it cost are known only here.
		for i := range rec.Turns {
			if tn := &rec.Turns[i]; tn.Status == results.TurnError && tn.Turn == cs.failed.turn {
				tn.Attempts = cs.failed.attempts
			}
		}
	}
	return rec
}

// caseState is one record's conversation: its endpoint, its images and
// the position in its plan.
type caseState struct {
	r        *runner
	task     *task
	imgs     *recordImages
	asked    []protocol.PlannedTurn
	n        int
	ep       *endpoint
	canceled bool
	failed   *failedCall // the call that ended the case in error, if any
}

// failedCall is the turn whose call failed and the requests it sent.
type failedCall struct {
	turn     string
	attempts int
}

func (cs *caseState) done() {
	if cs.ep != nil {
		cs.r.pool.unassign(cs.ep)
	}
}

var roleMap = map[string]provider.Role{protocol.RoleSystem: provider.RoleSystem, protocol.RoleUser: provider.RoleUser, protocol.RoleAssistant: provider.RoleAssistant}

// call is the protocol.Caller of the case.
func (cs *caseState) call(ctx context.Context, msgs []protocol.Message) (protocol.Reply, error) {
	r, o := cs.r, cs.r.o
	if cs.n >= len(cs.asked) {
		return protocol.Reply{}, fmt.Errorf("internal: more calls than asked turns")
	}
	p := cs.asked[cs.n]
	cs.n++
	last := msgs[len(msgs)-1]
	if !strings.HasSuffix(last.Text, p.Text) {
		return protocol.Reply{}, fmt.Errorf("internal: call %d does not match turn %s", cs.n, p.ID)
	}
	req := &provider.Request{Model: o.Model.ModelID, Sampling: o.Model.Sampling,
		Meta: &provider.Meta{NumOptions: p.NOptions, MultiSelect: p.Multi, GT: slices.Clone(p.GT)}}
	texts := make([]string, 0, len(msgs))
	images := 0
	for _, m := range msgs {
		pm := provider.Message{Role: roleMap[m.Role], Text: m.Text}
		for _, rel := range m.ImagePaths {
			im, err := cs.imgs.image(rel)
			if err != nil {
				return protocol.Reply{}, err
			}
			pm.Images = append(pm.Images, im)
		}
		images += len(pm.Images)
		texts = append(texts, m.Text)
		req.Messages = append(req.Messages, pm)
	}

	var key string
	if r.cache != nil {
		key = respcache.Key(o.Model.Provider, o.Model.ModelID, req.Messages, o.Model.Sampling, o.Profile.Hash())
		e, ok, err := r.cache.Get(ctx, key)
		if err != nil {
			fmt.Fprintf(o.Log, "warning: %v\n", err)
		} else if ok {
			r.prog.call(true)
			zero := 0.0
			return protocol.Reply{Text: e.Text, Reasoning: strPtr(e.Reasoning), FinishReason: strPtr(e.FinishReason),
				Usage: tokenUse(e.Usage), CostUSD: &zero, Cached: true}, nil
		}
	}

	est := provider.EstimateUsage(texts, images, "")
	t0 := time.Now()
	attempts := 0
	var lastErr error
	for {
		if err := r.limits.wait(ctx, int(est.Input)); err != nil {
			return protocol.Reply{}, cs.cancel(err)
		}
		if cs.ep == nil || (!cs.ep.healthy(time.Now()) && len(r.pool.eps) > 1) {
			old := cs.ep
			if old != nil {
				r.pool.unassign(old)
			}
			cs.ep = r.pool.assign(cs.task.rec.KeyID, old)
		}
		ep := cs.ep
		if testHookCall != nil {
			testHookCall(cs.task.rec.KeyID, ep.name)
		}
		if err := ep.acquire(ctx); err != nil {
			return protocol.Reply{}, cs.cancel(err)
		}
		attempts++
		a0 := time.Now()
		cctx, cancel := context.WithTimeout(ctx, r.retry.timeout)
		resp, err := ep.client.Complete(cctx, req)
		cancel()
		ep.release(err)
		r.prog.call(false)
		if err == nil {
			lat := time.Since(a0)
			reply := protocol.Reply{Text: resp.Text, Reasoning: strPtr(resp.Reasoning), FinishReason: strPtr(resp.FinishReason),
				Usage: tokenUse(resp.Usage), LatencyMS: lat.Milliseconds(), TotalMS: time.Since(t0).Milliseconds(), Attempts: attempts}
			switch {
			case o.Model.Backend == provider.BackendBaseline:
				zero := 0.0
				reply.CostUSD = &zero
			case o.Model.Price != nil && resp.Usage != nil:
				c := o.Model.Price.Cost(resp.Usage)
				reply.CostUSD = &c
			}
			r.prog.cost(reply.CostUSD)
			if resp.Usage != nil {
				r.limits.charge(int(resp.Usage.Total - est.Input))
			}
			if r.cache != nil && resp.Text != "" {
				e := respcache.Entry{Text: resp.Text, Reasoning: resp.Reasoning, FinishReason: resp.FinishReason, Usage: resp.Usage}
				if err := r.cache.Put(ctx, key, e); err != nil {
					fmt.Fprintf(o.Log, "warning: %v\n", err)
				}
			}
			return reply, nil
		}
		lastErr = err
		var ce *provider.CallError
		if !errors.As(err, &ce) {
			cs.failed = &failedCall{turn: p.ID, attempts: attempts}
			return protocol.Reply{}, fmt.Errorf("%s (%s via %s)", lastErr, attemptsText(attempts), ep.name)
		}
		if ce.Kind == provider.KindCanceled || ctx.Err() != nil {
			return protocol.Reply{}, cs.cancel(ce)
		}
		if !ce.Retryable() || attempts > r.retry.maxRetries {
			r.prog.failure()
			cs.failed = &failedCall{turn: p.ID, attempts: attempts}
			return protocol.Reply{}, fmt.Errorf("%s (%s via %s)", lastErr, attemptsText(attempts), ep.name)
		}
		if err := sleep(ctx, r.retry.backoff(attempts, ce.RetryAfter)); err != nil {
			return protocol.Reply{}, cs.cancel(err)
		}
	}
}

// attemptsText is the number of requests a failed call sent.
func attemptsText(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func (cs *caseState) cancel(err error) error {
	cs.canceled = true
	return err
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func tokenUse(u *provider.Usage) *results.TokenUse {
	if u == nil {
		return nil
	}
	return &results.TokenUse{InputTokens: u.Input, CachedInputTokens: u.CachedInput, OutputTokens: u.Output,
		ThinkingTokens: u.Thinking, TotalTokens: u.Total}
}
