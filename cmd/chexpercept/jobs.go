package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/chexpercept/chexpercept/internal/job"
)

// Every command that writes runs its work as one job (job.Run): the job
// carries the work's context, tracks the temporary files of its writes
// and holds its commit point. The command tree carries the options of
// its commands' jobs (newRootCmd): none in the program; a hook that sees
// the writers' named points ("rename", "stopped", "tokens", …) in the
// tests that stop a command at one of them.

// runJob runs work as the command name's job and returns its error,
// unless SIGINT or SIGTERM stops it first. The first signal ends the
// job's context and closes its commit point; runJob waits (job.Run's
// grace, or until a second signal) for the work to return, removes the
// temporary files of the writes still in flight, says in one line that
// the same command resumes or redoes the work (and whether the work was
// given up before it stopped), and returns exit status 130. A work slow
// to return is announced after stoppingNotice, with how to stop at once.
//
// A signal does not stop a command that has finished: when work has
// returned nil by then, or has passed its commit point (job.Job.Commit,
// just before the write that makes its output finished), its output is
// whole, and runJob returns its result as without the signal. Otherwise
// the commit point is closed to it, so its output stays unfinished and
// the same command run again redoes it without --force. Outputs are
// written atomically and runs carry their unfinished marker until their
// last file, so nothing half-written is left under a final name.
func runJob(parent context.Context, jo job.Options, name string, work func(j *job.Job) error) error {
	return runJobNote(parent, jo, name, "", work)
}

// runJobNote is runJob with note added to the end of the interrupted line.
func runJobNote(parent context.Context, jo job.Options, name, note string, work func(j *job.Job) error) error {
	notice := newStoppingNotice(name)
	err := job.Run(parent, job.RunOptions{Options: jo, Stopping: notice.start}, work)
	notice.stop()
	var in *job.Interrupted
	if !errors.As(err, &in) {
		return err
	}
	gaveUp := ""
	if in.Abandoned {
		gaveUp = " (its work was given up before it stopped)"
	}
	fmt.Fprintf(os.Stderr, "chexpercept %s: interrupted%s; its temporary files are removed, and the same command run again redoes what it had not finished%s\n", name, gaveUp, note)
	return silentExit(130)
}

// stoppingNotice is how long a stopped command's work may take to return
// before the command says that it is stopping.
const stoppingNotice = 2 * time.Second

// noticeTimer prints, once the first signal's wait has lasted
// stoppingNotice, that the command is stopping and that a second signal
// stops it at once; a work that returns sooner prints nothing more than
// the interrupted line.
type noticeTimer struct {
	name string
	mu   sync.Mutex
	t    *time.Timer
	done bool
}

func newStoppingNotice(name string) *noticeTimer { return &noticeTimer{name: name} }

func (n *noticeTimer) start() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done {
		return
	}
	n.t = time.AfterFunc(stoppingNotice, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if !n.done {
			fmt.Fprintf(os.Stderr, "chexpercept %s: stopping (interrupt again to stop at once)\n", n.name)
		}
	})
}

// stop ends the notice: from here on it prints nothing.
func (n *noticeTimer) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.done = true
	if n.t != nil {
		n.t.Stop()
	}
}
