// Package job carries one command's life: the context its work runs
// under, the temporary files and databases it is writing, and its commit
// point.
//
// A command that writes makes one Job and hands it to everything that
// writes on its behalf. A writer that makes a temporary file (atomicfile,
// appdb) registers it with Track and releases it once the file is renamed
// into place or removed; the Job knows, at any moment, what would be left
// behind if the command stopped now.
//
// A command's output becomes final at one write (the run that no longer
// says unfinished, the published database, the finished pack): the
// command calls Commit just before that write. Interruption and commit
// exclude each other. Stop, called on the first SIGINT or SIGTERM,
// cancels the context, refuses new temporaries and closes the commit
// point, unless the command has already passed it: then Stop changes
// nothing and the command ends as it would have without the signal.
// Once the work has returned (or the wait for it has ended),
// RemoveTemps removes what is still registered, so an interrupted
// command leaves no temporary of its own behind and its plain rerun
// redoes what was not finished.
//
// Run wires this to the process's signals. The package keeps no state of
// its own: two Jobs in one process (the demo's pipelines, parallel tests)
// never see each other.
package job

import (
	"context"
	"errors"
	"sync"
)

// ErrStopped is the error of a temporary started, or a commit attempted,
// after the job was stopped.
var ErrStopped = errors.New("the command is stopping (interrupted)")

// state is where a job is in its life.
type state int

const (
	running   state = iota
	stopped         // Stop ran before Commit
	committed       // Commit ran before Stop
)

// Job is one command's life. The zero value is not usable; make one with
// New. A nil *Job is valid everywhere and tracks nothing: a write
// given no job is not removed on interruption, and its Commit always
// succeeds (for tests and library callers outside a command).
type Job struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	hook   func(point, detail string)

	mu    sync.Mutex
	state state
	next  uint64
	temps map[uint64]func()
}

// Options adjust a job.
type Options struct {
	// Hook, when set, is called by the writers at named points of their
	// work ("rename" with the target's name just before a temporary
	// file is renamed over it; "db-created" and "db-schema" with a
	// temporary database's name; "stopped" once Stop has decided), so a
	// test can signal or hold the process exactly there.
	Hook func(point, detail string)
}

// New returns a running job whose context is derived from parent.
func New(parent context.Context, opt Options) *Job {
	ctx, cancel := context.WithCancelCause(parent)
	return &Job{ctx: ctx, cancel: cancel, hook: opt.Hook, temps: map[uint64]func(){}}
}

// Context is the job's context: ended by Stop (its cause ErrStopped),
// or by the parent's end.
func (j *Job) Context() context.Context {
	if j == nil {
		return context.Background()
	}
	return j.ctx
}

// Hook calls the job's hook, if any, at a named point of a write.
func (j *Job) Hook(point, detail string) {
	if j != nil && j.hook != nil {
		j.hook(point, detail)
	}
}

// Track registers remove, which removes a temporary the caller has just
// made, to be run by RemoveTemps if the job ends interrupted while the
// temporary is still registered. The caller calls release once the
// temporary is gone (renamed into place, or removed on a failure). Track
// fails with ErrStopped once the job is stopped; the caller then removes
// its temporary itself and gives up. release may be called more than once.
func (j *Job) Track(remove func()) (release func(), err error) {
	if j == nil {
		return func() {}, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state == stopped {
		return nil, ErrStopped
	}
	id := j.next
	j.next++
	j.temps[id] = remove
	return func() {
		j.mu.Lock()
		delete(j.temps, id)
		j.mu.Unlock()
	}, nil
}

// Commit marks the job's commit point: called just before the write that
// makes the command's output final. From then on Stop changes nothing. It
// fails with ErrStopped when Stop came first; the output then stays
// unfinished, and the same command run again redoes it. Calling it again
// after it succeeded succeeds.
func (j *Job) Commit() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state == stopped {
		return ErrStopped
	}
	j.state = committed
	return nil
}

// Committed reports whether the job has passed its commit point.
func (j *Job) Committed() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state == committed
}

// Stop stops a job that has not passed its commit point: it cancels the
// context (cause ErrStopped), makes later Track and Commit calls fail and
// returns true. After Commit it changes nothing and returns false: the
// caller lets the work finish. It removes nothing; RemoveTemps does, once
// the work has returned.
func (j *Job) Stop() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	ok := j.state != committed
	if ok {
		j.state = stopped
	}
	j.mu.Unlock()
	if ok {
		j.cancel(ErrStopped)
	}
	j.Hook("stopped", "")
	return ok
}

// Stopped reports whether Stop has stopped the job.
func (j *Job) Stopped() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state == stopped
}

// RemoveTemps runs the removal of every temporary still registered and
// forgets them. A stopped command calls it once its work has returned, or
// when it gives up waiting: a write that is renaming its file at that
// moment either lands whole or not at all.
func (j *Job) RemoveTemps() {
	if j == nil {
		return
	}
	j.mu.Lock()
	removes := make([]func(), 0, len(j.temps))
	for id, r := range j.temps {
		removes = append(removes, r)
		delete(j.temps, id)
	}
	j.mu.Unlock()
	for _, r := range removes {
		r()
	}
}

// Pending is the number of temporaries registered and not yet released.
func (j *Job) Pending() int {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.temps)
}

// End releases the job's context; call it when the command is done.
func (j *Job) End() {
	if j != nil {
		j.cancel(context.Canceled)
	}
}
