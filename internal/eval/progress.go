package eval

import (
	"fmt"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

// progress reports items done, calls per second, errors, the estimated
// time left and the cost so far: as a bar on a terminal, as a log line
// every LogInterval otherwise.
type progress struct {
	o     *Options
	start time.Time
	total int

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

func newProgress(o *Options, total, already int) *progress {
	p := &progress{o: o, start: time.Now(), total: total, quit: make(chan struct{})}
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
	s := fmt.Sprintf("%d/%d records, %d errors, %.1f calls/s (%d cached), ETA %s, cost %s", p.done, p.total, p.errs, rate, p.hits, eta, cost)
	if p.bar != nil {
		s = fmt.Sprintf("%d err, %.1f calls/s, %s", p.errs, rate, cost)
	}
	return s
}

func (p *progress) record(r *results.Record) {
	p.mu.Lock()
	p.done++
	if r.Status != results.StatusOK {
		p.errs++
		if r.Error != nil && p.bar == nil {
			fmt.Fprintf(p.o.Log, "error: %s: %s\n", benchmark.OneLine(r.KeyID), benchmark.OneLine(*r.Error))
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

// verifyProgress reports the image check before the first call, which on
// a full-size benchmark (7,000 PNGs) takes a minute or more: a bar on a
// terminal, a log line every LogInterval otherwise.
type verifyProgress struct {
	o     *Options
	start time.Time
	total int

	mu   sync.Mutex
	n    int
	last time.Time
	bar  *progressbar.ProgressBar
}

func newVerifyProgress(o *Options, images, records int) *verifyProgress {
	fmt.Fprintf(o.Log, "verifying %d images of %d records…\n", images, records)
	v := &verifyProgress{o: o, start: time.Now(), last: time.Now(), total: images}
	if o.TTY && images > 0 {
		v.bar = newBar(o, images, "images", progressbar.OptionClearOnFinish())
	}
	return v
}

func (v *verifyProgress) add() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.n++
	if v.bar != nil {
		v.bar.Add(1)
		return
	}
	if every := v.o.LogInterval; every > 0 && time.Since(v.last) >= every {
		v.last = time.Now()
		fmt.Fprintf(v.o.Log, "verifying: %d/%d images, %s elapsed\n", v.n, v.total, time.Since(v.start).Round(time.Second))
	}
}

func (v *verifyProgress) finish() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.bar != nil {
		v.bar.Finish()
	}
	fmt.Fprintf(v.o.Log, "verified %d images in %s\n", v.n, time.Since(v.start).Round(time.Millisecond))
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
