package job

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// DefaultGrace is how long Run waits, after the first signal, for the
// work to return before it gives up on it.
const DefaultGrace = 10 * time.Second

// RunOptions adjust Run.
type RunOptions struct {
	Options

	// Grace bounds the wait for the work after the first signal;
	// 0 means DefaultGrace.
	Grace time.Duration

	// Signals, when set, replaces the process's SIGINT and SIGTERM: a
	// test sends on it, and a command that gives some signals a meaning
	// of its own (eval's second abandons the calls in flight) relays the
	// others to it.
	Signals <-chan os.Signal

	// Stopping, when set, is called at the first signal that stops the
	// job (before its commit point), so the command can say that it is
	// stopping and that a second signal stops it at once.
	Stopping func()

	// WindDown makes the first signal end the job's context only: the
	// work winds down and still writes what it writes on its way out.
	// It is for a command without a commit point whose output is whole
	// and resumable at every step (eval's run, whose records are synced
	// one by one and whose summary is rewritten as it stops). The job is
	// stopped (Stop), and its temporaries removed, only when Run gives up
	// waiting for the work.
	WindDown bool
}

// Interrupted is Run's error when a signal stopped the work before its
// commit point.
type Interrupted struct {
	// Err is the work's own error (usually the context's), or nil when
	// the work did not return in time (Abandoned).
	Err error
	// Abandoned is true when Run stopped waiting for the work: at the
	// second signal, or when the grace ran out.
	Abandoned bool
}

func (e *Interrupted) Error() string {
	if e.Abandoned {
		return "interrupted (the work did not stop in time)"
	}
	if e.Err != nil {
		return fmt.Sprintf("interrupted: %v", e.Err)
	}
	return "interrupted"
}

func (e *Interrupted) Unwrap() error { return e.Err }

// Run runs work with a new job and returns its error. The first SIGINT or
// SIGTERM stops the job (Stop; with WindDown, only its context ends): the
// work's context ends, and Run waits up to the grace for the work to
// return; then it removes the temporaries still registered and returns
// *Interrupted. A second signal ends the wait at once. A signal that
// comes after the work's commit point changes nothing: Run waits for the
// work and returns its result. Work that returns nil although stopped had
// finished all it had to write; Run then returns nil.
func Run(parent context.Context, opt RunOptions, work func(*Job) error) error {
	j := New(parent, opt.Options)
	defer j.End()

	sigs := opt.Signals
	if sigs == nil {
		c := make(chan os.Signal, 2)
		signal.Notify(c, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(c)
		sigs = c
	}
	done := make(chan error, 1)
	go func() { done <- work(j) }()

	select {
	case err := <-done:
		return err
	case <-sigs:
	}
	if opt.WindDown {
		j.cancel(ErrStopped)
	} else if !j.Stop() {
		return <-done // past its commit point: it finishes
	}
	if opt.Stopping != nil {
		opt.Stopping()
	}
	grace := opt.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-done:
		if err == nil {
			return nil
		}
		j.RemoveTemps()
		return &Interrupted{Err: err}
	case <-sigs:
	case <-t.C:
	}
	j.Stop() // a winding-down job starts no temporary from here on
	j.RemoveTemps()
	return &Interrupted{Abandoned: true}
}

// IsStop reports whether ctx ended because its job was stopped.
func IsStop(ctx context.Context) bool {
	return context.Cause(ctx) == ErrStopped
}
