package build

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress reports case processing: a bar on a terminal, a log line every
// LogEvery otherwise. It counts targets filled (capped per list) so that it
// ends at 100 % whatever the failure rate.
type progress struct {
	opt       Options
	bar       *progressbar.ProgressBar
	total     int
	filled    map[*list]int
	sum       int
	processed int
	last      time.Time
	start     time.Time
}

func newProgress(opt Options, lists []*list) *progress {
	p := &progress{opt: opt, filled: map[*list]int{}, start: time.Now(), last: time.Now()}
	for _, l := range lists {
		p.total += min(l.target, len(l.items))
	}
	if opt.LogEvery <= 0 {
		p.opt.LogEvery = 10 * time.Second
	}
	if opt.Progress {
		p.bar = newBar(opt.Stderr, p.total, "cases")
	} else {
		fmt.Fprintf(opt.Stderr, "build: %d candidates, %d target cases, %d workers\n", countItems(lists), p.total, opt.Workers)
	}
	return p
}

func countItems(lists []*list) int {
	n := 0
	for _, l := range lists {
		n += len(l.items)
	}
	return n
}

// done is called by the scheduler after each candidate.
func (p *progress) done(l *list, it *item) {
	p.processed++
	f := min(l.doneSucc, l.target)
	if d := f - p.filled[l]; d > 0 {
		p.filled[l] = f
		p.sum += d
		if p.bar != nil {
			p.bar.Add(d)
		}
	}
	if p.bar == nil && time.Since(p.last) >= p.opt.LogEvery {
		p.last = time.Now()
		fmt.Fprintf(p.opt.Stderr, "build: %d candidates processed, %d/%d target cases filled, %s elapsed\n",
			p.processed, p.sum, p.total, time.Since(p.start).Round(time.Second))
	}
}

// finish ends the progress with its last line: "done", or "stopped"
// when the work did not go to its end (interrupted or failed).
func (p *progress) finish(stopped bool) {
	if p.bar != nil {
		p.bar.Finish() // clears the bar; the line below stays
	}
	fmt.Fprintf(p.opt.Stderr, "build: processing %s: %d candidates processed in %s\n",
		doneWord(stopped), p.processed, time.Since(p.start).Round(time.Millisecond))
}

// doneWord is how a last progress line says the work ended.
func doneWord(stopped bool) string {
	if stopped {
		return "stopped"
	}
	return "done"
}

// stageProgress reports a counted stage that follows case processing
// (assembly, the PNG floor), which on a full-size build takes longer than
// processing itself: a bar on a terminal, a log line every LogEvery
// otherwise. Safe for concurrent use.
type stageProgress struct {
	mu          sync.Mutex
	opt         Options
	what, unit  string
	bar         *progressbar.ProgressBar
	total, n    int
	start, last time.Time
}

func newStageProgress(opt Options, what, unit string, total int) *stageProgress {
	s := &stageProgress{opt: opt, what: what, unit: unit, total: total, start: time.Now(), last: time.Now()}
	if s.opt.LogEvery <= 0 {
		s.opt.LogEvery = 10 * time.Second
	}
	if opt.Progress {
		s.bar = newBar(opt.Stderr, total, what)
	} else {
		fmt.Fprintf(opt.Stderr, "build: %s (%d to do)…\n", what, total)
	}
	return s
}

// add counts k more units done.
func (s *stageProgress) add(k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += k
	if s.bar != nil {
		s.bar.Add(k)
		return
	}
	if time.Since(s.last) >= s.opt.LogEvery {
		s.last = time.Now()
		fmt.Fprintf(s.opt.Stderr, "build: %s: %d/%d %s, %s elapsed\n",
			s.what, s.n, s.total, s.unit, time.Since(s.start).Round(time.Second))
	}
}

// finish ends the stage with its last line, "done" or "stopped".
func (s *stageProgress) finish(stopped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bar != nil {
		s.bar.Finish() // clears the bar; the line below stays
	}
	fmt.Fprintf(s.opt.Stderr, "build: %s %s: %d/%d %s in %s\n",
		s.what, doneWord(stopped), s.n, s.total, s.unit, time.Since(s.start).Round(time.Millisecond))
}

// newBar is the terminal bar of every build stage; it is cleared when
// finished, and the stage prints its own done line.
func newBar(w io.Writer, total int, what string) *progressbar.ProgressBar {
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish())
}
