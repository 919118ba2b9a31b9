package eval

import (
	"fmt"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// progress reports items done, calls per second, errors, the estimated
// time left and the cost so far: as a bar on a terminal, as a log line
// every LogInterval otherwise.
type progress struct {
	o      *Options
	start  time.Time
	total  int
	images func() VerifyStats // the just-in-time image check so far

	mu        sync.Mutex
	done      int
	errs      int
	calls     int
	hits      int
	callFails int
	costSum   float64
	unpriced  bool

	bar  *progressbar.ProgressBar
	quit chan struct{}
	wg   sync.WaitGroup
}

func newProgress(o *Options, total, already int, images func() VerifyStats) *progress {
	p := &progress{o: o, start: time.Now(), total: total, images: images, quit: make(chan struct{})}
	if o.TTY {
		p.bar = newBar(o, total, "records",
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(o.Log) }))
	}
	fmt.Fprintf(o.Log, "asking %d records (%d already done), concurrency %d\n", total, already, o.Concurrency)
	p.wg.Add(1)
	go p.tick()
	return p
}

func (p *progress) tick() {
	defer p.wg.Done()
	every := p.o.LogInterval
	if p.bar != nil {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
			p.mu.Lock()
			line := p.line()
			p.mu.Unlock()
			if p.bar != nil {
				p.bar.Describe(line)
			} else {
				fmt.Fprintf(p.o.Log, "progress: %s\n", line)
			}
		}
	}
}

// line formats the counters; p.mu is held.
func (p *progress) line() string {
	el := time.Since(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(p.calls) / el
	}
	eta := "?"
	if p.done > 0 && p.done < p.total {
		eta = (time.Duration(el/float64(p.done)*float64(p.total-p.done)) * time.Second).Round(time.Second).String()
	}
	cost := fmt.Sprintf("$%.4f", p.costSum)
	if p.unpriced {
		cost += "+unpriced"
	}
	im := p.images()
	s := fmt.Sprintf("%d/%d records, %d errors, %.1f calls/s (%d cached), ETA %s, cost %s; images %d verified, %d remembered, %d failed",
		p.done, p.total, p.errs, rate, p.hits, eta, cost, im.Verified, im.Remembered, im.Failed)
	if im.Given > 0 {
		s += fmt.Sprintf(", %d decoded by the caller", im.Given)
	}
	if p.bar != nil {
		s = fmt.Sprintf("%d err, %.1f calls/s, %s, img %d+%d ok %d bad", p.errs, rate, cost, im.Verified, im.Remembered, im.Failed)
	}
	return s
}

func (p *progress) record(r *results.Record) {
	p.mu.Lock()
	p.done++
	if r.Status != results.StatusOK {
		p.errs++
		if r.Error != nil && p.bar == nil {
			fmt.Fprintf(p.o.Log, "error: %s: %s\n", textsafe.OneLine(r.KeyID), textsafe.OneLine(*r.Error))
		}
	}
	p.mu.Unlock()
	if p.bar != nil {
		p.bar.Add(1)
	}
}

func (p *progress) call(cached bool) {
	p.mu.Lock()
	p.calls++
	if cached {
		p.hits++
	}
	p.mu.Unlock()
}

func (p *progress) failure() {
	p.mu.Lock()
	p.callFails++
	p.mu.Unlock()
}

func (p *progress) cost(c *float64) {
	p.mu.Lock()
	if c == nil {
		p.unpriced = true
	} else {
		p.costSum += *c
	}
	p.mu.Unlock()
}

func (p *progress) stop() {
	close(p.quit)
	p.wg.Wait()
	if p.bar != nil {
		p.bar.Finish()
	}
	p.mu.Lock()
	fmt.Fprintf(p.o.Log, "progress: %s\n", p.line())
	p.mu.Unlock()
}

// newBar is the terminal bar of the evaluator's stages, with their own
// options added.
func newBar(o *Options, total int, what string, extra ...progressbar.Option) *progressbar.ProgressBar {
	opts := append([]progressbar.Option{
		progressbar.OptionSetWriter(o.Log),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(200 * time.Millisecond),
		progressbar.OptionSetWidth(24),
	}, extra...)
	return progressbar.NewOptions(total, opts...)
}
