package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
)

// untilInterrupted runs work and returns its error, unless SIGINT or
// SIGTERM stops it first: then the temporary files of the writes in flight
// are removed (atomicfile.Stop and, for a database being created on the
// work's job, job.Job.RemoveTemps, which also fail any later write), one line says that
// the same command resumes or redoes the work, and the exit status is 130.
// work gets a context that the signal ends, for the commands that can stop
// early; the process exits without waiting for it.
//
// A signal does not stop a command that has finished: when work has
// returned nil by then, or has passed its commit point (atomicfile.Finish,
// just before the write that makes its output finished, after which it no
// longer checks ctx), its output is whole, and untilInterrupted waits for
// it and returns its result, as without the signal. Otherwise the commit
// point is closed to it (Finish fails), so its output stays unfinished and
// the same command run again redoes it without --force. Outputs are
// written atomically and runs carry their unfinished marker until their
// last file, so nothing half-written is left under a final name.
func untilInterrupted(parent context.Context, name string, work func(ctx context.Context) error) error {
	return untilInterruptedNote(parent, name, "", work)
}

// untilInterruptedNote is untilInterrupted with note added to the end of
// the interrupted line.
func untilInterruptedNote(parent context.Context, name, note string, work func(ctx context.Context) error) error {
	return untilInterruptedJob(parent, name, note, func(j *job.Job) error { return work(j.Context()) })
}

// untilInterruptedJob is untilInterruptedNote for work that writes on a
// job (its context is the job's): the job's commit point counts as the
// work's, and its temporaries are removed with the others.
func untilInterruptedJob(parent context.Context, name, note string, work func(j *job.Job) error) error {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	j := job.New(ctx, job.Options{Hook: jobHook})
	defer j.End()
	done := make(chan error, 1)
	go func() { done <- work(j) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	if parent.Err() != nil {
		return <-done
	}
	if interruptSeen != nil {
		interruptSeen()
	}
	select {
	case err := <-done:
		if err == nil {
			return nil // it finished as the signal came
		}
	default:
	}
	if !j.Stop() || !atomicfile.Stop() {
		return <-done // past its commit point: it finishes
	}
	j.RemoveTemps()
	fmt.Fprintf(os.Stderr, "chexpercept %s: interrupted; its temporary files are removed, and the same command run again redoes what it had not finished%s\n", name, note)
	return silentExit(130)
}

// jobHook is nil except in tests: the job of untilInterruptedJob calls it
// at the named points of its writes (job.Options.Hook).
var jobHook func(point, detail string)

// interruptSeen is nil except in tests: untilInterrupted calls it once it
// has seen the signal, before it decides whether the work has finished.
var interruptSeen func()
