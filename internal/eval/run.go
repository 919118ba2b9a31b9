package eval

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/respcache"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// testHTTPClient, when set by a test, replaces the clients' HTTP client.
var testHTTPClient *http.Client

// testHookCall, when set by a test, sees every attempt's case and endpoint.
var testHookCall func(key, endpoint string)

// testHookWritten, when set by a test, sees the number of records of
// every batch appended to results.jsonl, after the append.
var testHookWritten func(n int)

// testHookRetryWait, when set by a test, is called as a call starts its
// wait before a retry, with the wait's length.
var testHookRetryWait func(time.Duration)

// task is one record to run with its plan.
type task struct {
	index int
	rec   *benchmark.Record

	planOnce sync.Once
	plan     []protocol.PlannedTurn // set by planned
	planErr  error
}

// planned plans the record once, for whichever comes first: the
// look-ahead verifier or the worker that runs it.
func (t *task) planned(benchDir string) ([]protocol.PlannedTurn, error) {
	t.planOnce.Do(func() { t.plan, t.planErr = protocol.Plan(t.rec, benchDir) })
	return t.plan, t.planErr
}

// run asks the records of todo. Ending ctx stops starting records; ending
// abandon drops the ones in flight.
func (r *runner) run(ctx, abandon context.Context, todo []int) error {
	o := r.o
	if len(todo) == 0 {
		fmt.Fprintf(o.Log, "%s: nothing to ask (%d of %d selected records already done)\n", r.sum.RunDir, r.sum.AlreadyDone, r.sum.Selected)
		return nil
	}
	r.stopped = ctx.Done()
	r.halted = make(chan struct{})
	tasks := r.planTasks(todo)
	r.prog = newProgress(o, len(tasks), r.sum.AlreadyDone, r.verify.stats)
	defer r.prog.stop()

	out := make(chan *results.Record, o.Concurrency)
	w := r.startWriter(out)
	callStart := time.Now()
	attempted, abandoned := r.dispatch(ctx, abandon, tasks, out, w.failed)
	close(out)
	w.done.Wait()
	r.sum.CallPhase = time.Since(callStart)
	r.sum.Attempted = attempted
	r.sum.Abandoned += abandoned
	r.sum.Interrupted = ctx.Err() != nil || r.sum.Abandoned > 0
	r.sum.ImageLoads = r.images.loadCount()
	r.sum.Images = r.verify.stats()
	if w.err != nil {
		return w.err
	}
	if r.haltErr != nil {
		return r.haltErr
	}
	switch {
	case r.sum.Interrupted && r.sum.Abandoned > 0:
		fmt.Fprintf(o.Log, "interrupted: %d records started, %d abandoned (they will be asked again on restart)\n", attempted, r.sum.Abandoned)
	case r.sum.Interrupted:
		fmt.Fprintf(o.Log, "interrupted: %d records started, all in flight finished; the rest are asked on restart\n", attempted)
	}
	return nil
}

// planTasks puts the records of todo in dispatch order, longest first
// (see longestFirst). Each is planned and its images verified by the
// look-ahead verifier or the worker that runs it (runTask), so the first
// call does not wait for a pass over every record.
func (r *runner) planTasks(todo []int) []*task {
	tasks := make([]*task, len(todo))
	for i, ix := range todo {
		tasks[i] = &task{index: ix, rec: r.bench.Records[ix]}
	}
	slices.SortStableFunc(tasks, func(a, b *task) int { return dispatchOrder(a.rec, b.rec) })
	return tasks
}

// dispatchOrder is longestFirst; a test sets it to compare with
// benchmark order.
var dispatchOrder = longestFirst

// longestFirst orders records by decreasing number of planned turns, the
// turns on the record's path (a stable sort keeps ties in benchmark
// order). With many records in flight this keeps the tail short: in
// benchmark order a few nine-turn records started late run alone at the
// end while the other workers idle. A plan's turns are known from the
// record alone, before any image is read; the turns actually asked can be
// fewer only for records with skipped turns, under --allow-invalid.
func longestFirst(a, b *benchmark.Record) int { return b.Questions() - a.Questions() }

// recordWriter is the single writer of results.jsonl.
type recordWriter struct {
	err    error          // the first failed append; read after done
	failed chan struct{}  // closed when err is set
	done   sync.WaitGroup // the writer has drained its channel
}

// startWriter appends the records sent on out to the store until out is
// closed. After a failed append it stops writing and closes failed.
func (r *runner) startWriter(out <-chan *results.Record) *recordWriter {
	w := &recordWriter{failed: make(chan struct{})}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		for rec := range out {
			batch := drainBatch(rec, out, 256)
			if w.err != nil {
				continue
			}
			if err := r.store.AppendBatch(batch); err != nil {
				w.err = err
				close(w.failed)
				continue
			}
			for _, b := range batch {
				r.prog.record(b)
			}
			if testHookWritten != nil {
				testHookWritten(len(batch))
			}
		}
	}()
	return w
}

// drainBatch is first and the records already waiting on out, up to limit.
// Group commit: the records that finished while the last sync ran are
// written together and synced once, so the writer keeps up with any
// number of workers.
func drainBatch(first *results.Record, out <-chan *results.Record, limit int) []*results.Record {
	batch := []*results.Record{first}
	for len(batch) < limit {
		select {
		case more, ok := <-out:
			if !ok {
				return batch
			}
			batch = append(batch, more)
		default:
			return batch
		}
	}
	return batch
}

// dispatch runs the tasks on o.Concurrency workers, sending each
// finished record to out. It stops starting tasks when ctx ends or the
// writer fails, and returns once every worker is done: how many tasks
// were started and how many of them were abandoned.
func (r *runner) dispatch(ctx, abandon context.Context, tasks []*task, out chan<- *results.Record, writeFailed <-chan struct{}) (attempted, abandonedN int) {
	work := make(chan *task)
	var wg sync.WaitGroup
	var abandoned sync.Map
	for w := 0; w < min(r.o.Concurrency, len(tasks)); w++ {
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
	fed := make(chan struct{}, len(tasks))
	lookCtx, stopLook := context.WithCancel(ctx)
	defer stopLook()
	go r.verifyAhead(lookCtx, tasks, fed)
feed:
	for _, t := range tasks {
		select {
		case work <- t:
			attempted++
			fed <- struct{}{}
		case <-ctx.Done():
			break feed
		case <-writeFailed:
			break feed
		case <-r.halted:
			break feed
		}
	}
	close(work)
	wg.Wait()
	abandoned.Range(func(_, _ any) bool { abandonedN++; return true })
	return attempted, abandonedN
}

// verifyAhead verifies, in dispatch order, the images of the records
// about to be handed out, at most Concurrency records beyond the last one
// handed out (fed receives one value per record handed out). A worker then
// finds its record's images verified and starts calling at once, so
// verification leaves the records' critical path. It is one goroutine, so
// it adds at most one processor's worth of decoding to the workers' own
// bounded pool, and it stops with ctx. The bytes it keeps go to the image
// cache, whose byte bound also bounds how far ahead it may usefully run.
func (r *runner) verifyAhead(ctx context.Context, tasks []*task, fed <-chan struct{}) {
	handed := 0
	for i, t := range tasks {
		for i >= handed+r.o.Concurrency {
			select {
			case <-fed:
				handed++
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		plan, err := t.planned(r.o.BenchDir)
		if err != nil {
			continue // the worker records the error
		}
		for _, p := range protocol.ImagesToSend(plan) {
			if r.verify.path(p).err != nil {
				break
			}
		}
	}
}

// setup builds the endpoints, the caches and the limiters.
func (r *runner) setup() error {
	o := r.o
	r.retry = retryPolicy{maxRetries: o.MaxRetries, timeout: o.Timeout, base: o.RetryBase, cap: o.RetryCap}
	r.limits = newLimiters(o.RPM, o.TPM)
	if o.Images != nil {
		r.images = o.Images.c
	} else {
		r.images = newImageCache(o.BenchDir, o.ImageCacheBytes, o.Model.Backend == runmodel.BackendGemini)
	}
	r.pool = &pool{}
	if o.Model.Backend == runmodel.BackendBaseline {
		c, err := fakemodel.NewClient(o.Model.ModelID, o.PolicySeed)
		if err != nil {
			return err
		}
		r.pool.eps = []*endpoint{newEndpoint("in-process", "in-process", c, o.Concurrency)}
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
			name, cacheID := "default endpoint", "default:"+string(o.Model.Backend)
			if ep != "" {
				name, cacheID = ScrubEndpoint(ep), respcache.Endpoint(ep)
			}
			r.pool.eps = append(r.pool.eps, newEndpoint(name, cacheID, c, o.Concurrency))
		}
	}
	dir := o.CacheDir
	if dir == "" {
		var err error
		if dir, err = respcache.DefaultDir(); err != nil && !o.NoCache {
			return err
		}
		// A --cache-dir is followed if it is a link (the user named it);
		// the default folder is refused if it is one.
		if dir != "" {
			if err := respcache.CheckDefaultDir(dir); err != nil {
				return err
			}
		}
	}
	// The default folder lies outside the run: the run that creates it
	// says so, once.
	newDefault := false
	if o.CacheDir == "" && dir != "" {
		_, err := os.Lstat(dir)
		newDefault = errors.Is(err, os.ErrNotExist)
	}
	if !o.NoCache && respcache.Cacheable(o.Model.Sampling) && o.Model.Backend != runmodel.BackendBaseline {
		c, err := respcache.Open(dir)
		if err != nil {
			return err
		}
		r.cache = c
	}
	// The memo is used with --no-cache too: it holds no model output and
	// cannot change a result, only skip a decode of bytes that decoded.
	if dir != "" {
		r.memo = openMemo(dir, o.Log)
	}
	if newDefault {
		var kept []string
		for _, f := range []struct{ name, what string }{{respcache.FileName, "the response cache"}, {MemoFile, "the images already verified"}} {
			if _, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
				kept = append(kept, f.name+" ("+f.what+")")
			}
		}
		if len(kept) > 0 {
			fmt.Fprintf(o.Log, "notice: created the cache folder %s, outside the run, for %s; "+
				"--cache-dir DIR keeps it elsewhere, e.g. beside the run\n", dir, strings.Join(kept, " and "))
		}
	}
	r.verify = newVerifier(o.BenchDir, r.memo, runtime.GOMAXPROCS(0))
	r.verify.given = o.Verified
	r.verify.keep = r.images.put
	return nil
}

// runTask runs one record. It returns nil when the record was abandoned
// by an interruption (it must be asked again, so nothing is written).
func (r *runner) runTask(ctx context.Context, t *task) *results.Record {
	o := r.o
	popts := protocol.Options{BenchDir: o.BenchDir, Index: t.index, Oracle: o.Oracle, Parse: o.Parse,
		Profile: o.Profile, GLMBoxUnwrap: o.Model.GLMBoxUnwrap, Now: o.Now}
	var err error
	if _, err = t.planned(o.BenchDir); err != nil {
		return protocol.ErrorRecord(t.rec, popts, err)
	}
	// Verified just in time: no call of a record is made before all of
	// its images decode (or are remembered as decoding).
	hashes, err := r.verify.record(ctx, protocol.ImagesToSend(t.plan))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if safefile.Transient(err) || errors.Is(err, benchdir.ErrChanged) {
			// Out of descriptors, an I/O error …: says nothing about the
			// image; a file that is not the build's is the benchmark's
			// fault, not the record's. Either way the record is not
			// written as an error; the run stops and a rerun asks it.
			r.halt(err)
			return nil
		}
		return protocol.ErrorRecord(t.rec, popts, err)
	}
	imgs := &recordImages{cache: r.images, hashes: hashes, got: map[string]*provider.Image{}}
	cs := &caseState{r: r, task: t, imgs: newImageSource(o.Control, t.rec, o.BenchDir, imgs)}
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
	imgs     imageSource
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

// call is the protocol.Caller of the case: the response cache's reply
// if it has one, else the model's.
func (cs *caseState) call(ctx context.Context, msgs []protocol.Message) (protocol.Reply, error) {
	r, o := cs.r, cs.r.o
	turn, req, gt, est, err := cs.request(msgs)
	if err != nil {
		if safefile.Transient(err) {
			r.halt(err)
			return protocol.Reply{}, cs.cancel(err)
		}
		return protocol.Reply{}, err
	}
	// The key of a call to one endpoint; "" when there is no cache or
	// the server's identity is unknown: then nothing is replayed or
	// stored. A reply is stored under the endpoint that gave it, and
	// replayed from the entry of any endpoint of this run.
	keyFor := func(ep *endpoint) string {
		if r.cache == nil {
			return ""
		}
		return respcache.ControlKey(respcache.Key(ep.cacheID, r.identity.SHA256, o.Model.Provider, o.Model.ModelID, req.Messages, o.Model.Sampling, o.Profile.Hash()), string(o.Control))
	}
	for _, ep := range r.pool.eps {
		if key := keyFor(ep); key != "" {
			if reply, ok := r.cached(ctx, key); ok {
				return reply, nil
			}
		}
	}
	return cs.send(ctx, turn, req, gt, est, keyFor)
}

// request is the provider request of the case's next asked turn (whose
// ID it returns) with the estimate of its input tokens; msgs must end
// with that turn's text. The turn's ground truth comes back apart, gt,
// for an in-process client that is handed it (fakemodel.AnswerKeyed):
// the request holds only what is sent.
func (cs *caseState) request(msgs []protocol.Message) (turn string, req *provider.Request, gt []int, est *runmodel.Usage, err error) {
	o := cs.r.o
	if cs.n >= len(cs.asked) {
		return "", nil, nil, nil, fmt.Errorf("internal: more calls than asked turns")
	}
	p := cs.asked[cs.n]
	cs.n++
	last := msgs[len(msgs)-1]
	if !strings.HasSuffix(last.Text, p.Text) {
		return "", nil, nil, nil, fmt.Errorf("internal: call %d does not match turn %s", cs.n, p.ID)
	}
	req = &provider.Request{Model: o.Model.ModelID, Sampling: o.Model.Sampling}
	texts := make([]string, 0, len(msgs))
	images := 0
	for _, m := range msgs {
		pm := provider.Message{Role: roleMap[m.Role], Text: m.Text}
		for _, rel := range m.ImagePaths {
			im, err := cs.imgs.image(rel)
			if err != nil {
				return "", nil, nil, nil, err
			}
			if im != nil { // nil: the run's image control sends nothing in its place
				pm.Images = append(pm.Images, im)
			}
		}
		images += len(pm.Images)
		texts = append(texts, m.Text)
		req.Messages = append(req.Messages, pm)
	}
	return p.ID, req, slices.Clone(p.GT), fakemodel.EstimateUsage(texts, images, ""), nil
}

// cached is the response cache's reply for key, if it has one. A cache
// that cannot be read is a warning, not a failed call.
func (r *runner) cached(ctx context.Context, key string) (protocol.Reply, bool) {
	e, ok, err := r.cache.Get(ctx, key)
	if err != nil {
		fmt.Fprintf(r.o.Log, "warning: %v\n", err)
		return protocol.Reply{}, false
	}
	if !ok {
		return protocol.Reply{}, false
	}
	r.prog.call(true)
	zero := 0.0
	return protocol.Reply{Text: e.Text, Reasoning: strPtr(e.Reasoning), FinishReason: strPtr(e.FinishReason),
		Usage: tokenUse(e.Usage), CostUSD: &zero, Cached: true}, true
}

// complete makes one call. Only an in-process client that answers from
// the ground truth (the oracle baseline) is handed gt, beside the
// request; a network client gets the request alone.
func complete(ctx context.Context, c provider.Client, req *provider.Request, gt []int) (*provider.Response, error) {
	if k, ok := c.(fakemodel.AnswerKeyed); ok {
		return k.CompleteWithAnswer(ctx, req, gt)
	}
	return c.Complete(ctx, req)
}

// send asks the model for turn's reply: within the rate limits, through
// the case's endpoint, retrying what may pass with backoff. A canceled
// call marks the case canceled; a failed one records its attempts.
func (cs *caseState) send(ctx context.Context, turn string, req *provider.Request, gt []int, est *runmodel.Usage, keyFor func(*endpoint) string) (protocol.Reply, error) {
	r := cs.r
	t0 := time.Now()
	attempts := 0
	wctx, endWaits := r.waitCtx(ctx)
	defer endWaits()
	for {
		if err := r.limits.wait(wctx, int(est.Input)); err != nil {
			return protocol.Reply{}, cs.cancel(err)
		}
		ep := cs.endpoint()
		if testHookCall != nil {
			testHookCall(cs.task.rec.KeyID, ep.name)
		}
		if err := ep.acquire(ctx); err != nil {
			return protocol.Reply{}, cs.cancel(err)
		}
		attempts++
		a0 := time.Now()
		cctx, cancel := context.WithTimeout(ctx, r.retry.timeout)
		resp, err := complete(cctx, ep.client, req, gt)
		cancel()
		ep.release(err)
		r.prog.call(false)
		if err == nil {
			return cs.reply(ctx, resp, est, keyFor(ep), time.Since(a0), t0, attempts), nil
		}
		var ce *provider.CallError
		switch {
		case !errors.As(err, &ce):
			return protocol.Reply{}, cs.fail(err, turn, attempts, ep)
		case ce.Kind == provider.KindCanceled || ctx.Err() != nil:
			return protocol.Reply{}, cs.cancel(ce)
		case !ce.Retryable() || attempts > r.retry.maxRetries:
			r.prog.failure()
			return protocol.Reply{}, cs.fail(err, turn, attempts, ep)
		}
		wait := r.retry.backoff(attempts, ce.RetryAfter)
		if testHookRetryWait != nil {
			testHookRetryWait(wait)
		}
		if err := sleep(wctx, wait); err != nil {
			return protocol.Reply{}, cs.cancel(err)
		}
	}
}

// waitCtx is ctx that also ends when the run is stopped (the first
// interrupt). Every wait of a call that is not the call itself — the
// backoff before a retry, however long a server's Retry-After, and the
// rate limits — uses it, so stopping never waits on them: the record is
// dropped unwritten and asked again on restart.
func (r *runner) waitCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(ctx)
	if r.stopped == nil {
		return wctx, cancel
	}
	go func() {
		select {
		case <-r.stopped:
			cancel()
		case <-wctx.Done():
		}
	}()
	return wctx, cancel
}

// endpoint is the case's endpoint for the next attempt: assigned at the
// first one, moved when it is unhealthy and the pool has another.
func (cs *caseState) endpoint() *endpoint {
	r := cs.r
	if cs.ep == nil || (!cs.ep.healthy(time.Now()) && len(r.pool.eps) > 1) {
		old := cs.ep
		if old != nil {
			r.pool.unassign(old)
		}
		cs.ep = r.pool.assign(cs.task.rec.KeyID, old)
	}
	return cs.ep
}

// reply is a successful call's reply with its timing and cost; the
// usage is charged to the token limit and the reply stored in the
// response cache (when key is set and the reply is not empty).
func (cs *caseState) reply(ctx context.Context, resp *provider.Response, est *runmodel.Usage, key string, lat time.Duration, t0 time.Time, attempts int) protocol.Reply {
	r, o := cs.r, cs.r.o
	reply := protocol.Reply{Text: resp.Text, Reasoning: strPtr(resp.Reasoning), FinishReason: strPtr(resp.FinishReason),
		Usage: tokenUse(resp.Usage), LatencyMS: lat.Milliseconds(), TotalMS: time.Since(t0).Milliseconds(), Attempts: attempts}
	switch {
	case o.Model.Backend == runmodel.BackendBaseline:
		zero := 0.0
		reply.CostUSD = &zero
	case o.Model.Price != nil && resp.Usage != nil:
		c := o.Model.Price.Cost(*resp.Usage)
		reply.CostUSD = &c
	}
	r.prog.cost(reply.CostUSD)
	if resp.Usage != nil {
		r.limits.charge(int(resp.Usage.Total - est.Input))
	}
	if r.cache != nil && key != "" && resp.Text != "" {
		e := respcache.Entry{Text: resp.Text, Reasoning: resp.Reasoning, FinishReason: resp.FinishReason, Usage: resp.Usage}
		if err := r.cache.Put(ctx, key, e); err != nil {
			fmt.Fprintf(o.Log, "warning: %v\n", err)
		}
	}
	return reply
}

// fail records that turn's call ended the case in error after attempts
// requests, and says so.
func (cs *caseState) fail(err error, turn string, attempts int, ep *endpoint) error {
	cs.failed = &failedCall{turn: turn, attempts: attempts}
	return fmt.Errorf("%s (%s via %s)", err, attemptsText(attempts), ep.name)
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

func tokenUse(u *runmodel.Usage) *results.TokenUse {
	if u == nil {
		return nil
	}
	return &results.TokenUse{InputTokens: u.Input, CachedInputTokens: u.CachedInput, OutputTokens: u.Output,
		ThinkingTokens: u.Thinking, TotalTokens: u.Total}
}
