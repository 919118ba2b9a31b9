package build

import (
	"context"
	"sync"

	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/source"
)

// Item states in the scheduler.
const (
	statePending = iota
	stateRunning
	stateDone
)

// item is one candidate of a list and, once done, its result.
type item struct {
	c     *source.Case
	state int
	// Done items:
	res     reviewlog.Resolution // review resolution (Status Accepted when processed)
	outcome *Outcome             // nil when not accepted
}

func (it *item) success() bool { return it.outcome != nil && it.outcome.OK }

// list is one lesion's candidates of one label, in candidate order.
type list struct {
	lesion   string
	positive bool
	target   int
	items    []*item

	next     int // first item never dispatched
	running  int
	doneSucc int
	decided  bool
	decideAt int // index of the deciding position (last walked item), -1 for none

	records *[]*included // its cases in the benchmark, once decided (assembly.listRecords)
	ahead   bool         // handed to the renderer ahead
}

// walkLen is the number of items of the 1-worker walk (§14).
func (l *list) walkLen() int { return l.decideAt + 1 }

// refresh decides the list when the 1-worker walk is known: the first
// target successes in candidate order, or the end of the list.
func (l *list) refresh() {
	if l.decided {
		return
	}
	if l.target == 0 {
		l.decided, l.decideAt = true, -1
		return
	}
	succ := 0
	for i, it := range l.items {
		if it.state != stateDone {
			return
		}
		if it.success() {
			succ++
			if succ == l.target {
				l.decided, l.decideAt = true, i
				return
			}
		}
	}
	l.decided, l.decideAt = true, len(l.items)-1
}

// eligible reports whether another item of l may be dispatched: the list
// is undecided, has items left, and the successes already known plus the
// items in flight do not exceed the target by more than the speculative
// window.
func (l *list) eligible(window int) bool {
	return !l.decided && l.next < len(l.items) && l.doneSucc+l.running < l.target+window
}

// task is one dispatched item.
type task struct {
	l  *list
	it *item
}

// schedule processes items over workers goroutines until every list is
// decided. work runs one item (it must set it.res and it.outcome) and
// returns a global error that stops the build. onDone is called by the
// coordinator after each item (progress).
func schedule(ctx context.Context, lists []*list, workers, window int, work func(*item) error, onDone func(l *list, it *item)) error {
	if workers < 1 {
		workers = 1
	}
	tasks := make(chan task)
	type result struct {
		t   task
		err error
	}
	results := make(chan result)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				results <- result{t, work(t.it)}
			}
		}()
	}
	defer func() {
		close(tasks)
		wg.Wait()
	}()
	for _, l := range lists {
		l.refresh()
	}
	// pick takes work within a list's target first, from any list, and
	// speculates beyond a target only when no list has such work left: a
	// speculative item is wasted whenever the items before it succeed, so
	// it only ever takes a worker that would otherwise wait.
	pick := func() *list {
		for _, w := range [2]int{0, window} {
			for _, l := range lists {
				if l.eligible(w) {
					return l
				}
			}
		}
		return nil
	}
	running := 0
	var firstErr error
	for {
		for firstErr == nil && ctx.Err() == nil && running < workers {
			l := pick()
			if l == nil {
				break
			}
			it := l.items[l.next]
			l.next++
			l.running++
			it.state = stateRunning
			running++
			tasks <- task{l, it}
		}
		if running == 0 {
			break
		}
		r := <-results
		running--
		l := r.t.l
		l.running--
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
			}
			r.t.it.state = statePending
			continue
		}
		r.t.it.state = stateDone
		if r.t.it.success() {
			l.doneSucc++
		}
		l.refresh()
		if onDone != nil {
			onDone(l, r.t.it)
		}
	}
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
