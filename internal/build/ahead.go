package build

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/chexpercept/chexpercept/internal/safefile"
)

// renderAhead renders the bundle folders of the lists decided while case
// processing goes on, so that assembly, most of a build's time, overlaps
// processing instead of following it. A list is decided once its
// 1-worker walk is known; from then on its cases, and whether each is
// revision-free or revision-required, never change, so its folders are
// the ones assembly would write. It has workers of its own beside the
// processing workers: the cores are shared between the two, and neither
// waits on the other. What it renders is recorded as the build's
// (pending in the marker) before it is written, as assembly does.
type renderAhead struct {
	a    *assembly
	ctx  context.Context
	jobs chan *included
	wg   sync.WaitGroup

	queued map[string]bool // key_ids handed to the workers (scheduler's goroutine, then read by assembly)

	mu     sync.Mutex
	done   map[string]bool // key_ids rendered
	prog   *stageProgress  // assembly's progress, once assembly has started
	err    error           // the first failure
	dirs   bool            // chexpercept/ and masks/ exist
	closed bool
}

// newRenderAhead starts workers renderers; capacity bounds the cases
// that can be queued (every candidate at most), so queueing never blocks
// the scheduler.
func newRenderAhead(ctx context.Context, a *assembly, workers, capacity int) *renderAhead {
	r := &renderAhead{a: a, ctx: ctx, jobs: make(chan *included, max(1, capacity)),
		queued: map[string]bool{}, done: map[string]bool{}}
	for range max(1, workers) {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for inc := range r.jobs {
				if ctx.Err() != nil || r.failed() {
					continue
				}
				if err := a.renderCase(inc); err != nil {
					r.fail(err)
					continue
				}
				r.mu.Lock()
				r.done[inc.it.c.KeyID()] = true
				prog := r.prog
				r.mu.Unlock()
				if prog != nil {
					prog.add(1)
				}
				if a.opt.testAhead != nil {
					a.opt.testAhead(inc.it.c.KeyID())
				}
			}
		}()
	}
	return r
}

// listDecided queues the cases of a list that has just been decided. It
// runs on the scheduler's goroutine, which is the only one to touch the
// ownership marker during processing.
func (r *renderAhead) listDecided(l *list) {
	if l.ahead || r.closed || r.failed() || r.ctx.Err() != nil {
		return
	}
	l.ahead = true
	incs := r.a.listRecords(l)
	if len(incs) == 0 {
		return
	}
	out := r.a.opt.Out
	if !r.dirs {
		for _, d := range []string{imagesDir, masksDir} {
			if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
				r.fail(global("%s: %w", d, safefile.Reason(err)))
				return
			}
		}
		r.dirs = true
	}
	for _, inc := range incs {
		r.a.own.pending[inc.it.c.KeyID()] = true
	}
	if err := r.a.own.save(r.a.opt.Job, out); err != nil {
		r.fail(global("writing the build marker: %w", err))
		return
	}
	for _, inc := range incs {
		r.queued[inc.it.c.KeyID()] = true
		r.jobs <- inc
	}
}

// attach makes the cases rendered from now on count in assembly's
// progress and returns how many were rendered before.
func (r *renderAhead) attach(prog *stageProgress) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prog = prog
	return len(r.done)
}

func (r *renderAhead) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *renderAhead) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err != nil
}

// finish waits for the queued cases and returns the first failure. It
// may be called more than once.
func (r *renderAhead) finish() error {
	if !r.closed {
		r.closed = true
		close(r.jobs)
	}
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// abandon drops the cases not started yet and waits for the others: the
// build stops (interrupted, or a global error).
func (r *renderAhead) abandon() {
	r.fail(errAbandoned)
	_ = r.finish() // errAbandoned, or the first failure: the build already stops for its own error
}

var errAbandoned = errors.New("rendering ahead abandoned")

// has reports whether the case was handed to the renderer ahead, which
// renders it unless the build fails or stops (finish then says so).
func (r *renderAhead) has(key string) bool { return r.queued[key] }
