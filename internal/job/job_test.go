package job

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestStopBeforeCommit(t *testing.T) {
	t.Parallel()
	j := New(context.Background(), Options{})
	removed := 0
	release, err := j.Track(func() { removed++ })
	if err != nil {
		t.Fatal(err)
	}
	kept, err := j.Track(func() { removed += 10 })
	if err != nil {
		t.Fatal(err)
	}
	kept() // renamed into place: not removed later
	if !j.Stop() {
		t.Fatal("Stop before Commit returned false")
	}
	if !IsStop(j.Context()) {
		t.Fatalf("context cause %v, want ErrStopped", context.Cause(j.Context()))
	}
	if _, err := j.Track(func() {}); !errors.Is(err, ErrStopped) {
		t.Fatalf("Track after Stop: %v, want ErrStopped", err)
	}
	if err := j.Commit(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Commit after Stop: %v, want ErrStopped", err)
	}
	j.RemoveTemps()
	j.RemoveTemps() // a second call finds nothing
	release()       // releasing after the removal is harmless
	if removed != 1 {
		t.Fatalf("removed %d, want the one unreleased temporary once", removed)
	}
}

func TestCommitBeforeStop(t *testing.T) {
	t.Parallel()
	j := New(context.Background(), Options{})
	if err := j.Commit(); err != nil {
		t.Fatal(err)
	}
	if j.Stop() {
		t.Fatal("Stop after Commit returned true")
	}
	if j.Context().Err() != nil {
		t.Fatal("Stop after Commit ended the context")
	}
	if _, err := j.Track(func() {}); err != nil {
		t.Fatalf("Track after Commit: %v", err)
	}
	if !j.Committed() || j.Stopped() {
		t.Fatal("state after Commit then Stop is not committed")
	}
}

func TestNilJob(t *testing.T) {
	t.Parallel()
	var j *Job
	release, err := j.Track(func() { t.Fatal("a nil job removed a temporary") })
	if err != nil {
		t.Fatal(err)
	}
	release()
	if err := j.Commit(); err != nil {
		t.Fatal(err)
	}
	if j.Stop() {
		t.Fatal("a nil job stopped")
	}
	j.RemoveTemps()
	j.Hook("rename", "x")
	if j.Context() == nil {
		t.Fatal("nil context")
	}
}

func TestHook(t *testing.T) {
	t.Parallel()
	var got []string
	j := New(context.Background(), Options{Hook: func(p, d string) { got = append(got, p+":"+d) }})
	j.Hook("rename", "a.json")
	j.Stop()
	if len(got) != 2 || got[0] != "rename:a.json" || got[1] != "stopped:" {
		t.Fatalf("hook calls %q", got)
	}
}

func TestTwoJobsAreIndependent(t *testing.T) {
	t.Parallel()
	a := New(context.Background(), Options{})
	b := New(context.Background(), Options{})
	a.Stop()
	if _, err := b.Track(func() {}); err != nil {
		t.Fatalf("stopping one job stopped another: %v", err)
	}
	if b.Context().Err() != nil {
		t.Fatal("stopping one job ended another's context")
	}
}

// sig returns a channel Run reads instead of the process's signals.
func sig() chan os.Signal { return make(chan os.Signal, 2) }

func TestRunReturnsWorkError(t *testing.T) {
	t.Parallel()
	want := errors.New("boom")
	err := Run(context.Background(), RunOptions{Signals: sig()}, func(*Job) error { return want })
	if err != want {
		t.Fatalf("Run = %v, want the work's error", err)
	}
}

func TestRunWaitsForStoppedWork(t *testing.T) {
	t.Parallel()
	s := sig()
	removed := make(chan struct{})
	stopping := make(chan struct{})
	err := Run(context.Background(), RunOptions{Signals: s, Stopping: func() { close(stopping) }}, func(j *Job) error {
		if _, err := j.Track(func() { close(removed) }); err != nil {
			return err
		}
		s <- syscall.SIGINT
		<-j.Context().Done()
		<-stopping
		select {
		case <-removed:
			t.Error("a temporary was removed before the work returned")
		default:
		}
		return j.Context().Err()
	})
	var in *Interrupted
	if !errors.As(err, &in) || in.Abandoned || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want *Interrupted wrapping the work's context error", err)
	}
	<-removed
}

func TestRunAfterCommitFinishes(t *testing.T) {
	t.Parallel()
	s := sig()
	stopped := make(chan struct{})
	opt := RunOptions{Signals: s, Options: Options{Hook: func(p, _ string) {
		if p == "stopped" {
			close(stopped)
		}
	}}}
	err := Run(context.Background(), opt, func(j *Job) error {
		if err := j.Commit(); err != nil {
			return err
		}
		s <- syscall.SIGTERM
		<-stopped
		return j.Context().Err() // nil: a committed job is not cancelled
	})
	if err != nil {
		t.Fatalf("Run after Commit = %v, want nil", err)
	}
}

func TestRunSecondSignalAbandons(t *testing.T) {
	t.Parallel()
	s := sig()
	release := make(chan struct{})
	defer close(release)
	removed := make(chan struct{})
	err := Run(context.Background(), RunOptions{Signals: s, Grace: time.Hour}, func(j *Job) error {
		if _, err := j.Track(func() { close(removed) }); err != nil {
			return err
		}
		s <- syscall.SIGINT
		<-j.Context().Done()
		s <- syscall.SIGINT
		<-release // never returns on its own while Run waits
		return nil
	})
	var in *Interrupted
	if !errors.As(err, &in) || !in.Abandoned {
		t.Fatalf("Run = %v, want an abandoned *Interrupted", err)
	}
	<-removed
}

func TestRunGraceRunsOut(t *testing.T) {
	t.Parallel()
	s := sig()
	release := make(chan struct{})
	defer close(release)
	err := Run(context.Background(), RunOptions{Signals: s, Grace: time.Millisecond}, func(j *Job) error {
		s <- syscall.SIGINT
		<-release
		return nil
	})
	var in *Interrupted
	if !errors.As(err, &in) || !in.Abandoned {
		t.Fatalf("Run = %v, want an abandoned *Interrupted", err)
	}
}

// TestRunWindDown: with WindDown the first signal ends the context only:
// the work still writes on its way out, its error is returned as an
// *Interrupted, and it is not abandoned.
func TestRunWindDown(t *testing.T) {
	t.Parallel()
	s := sig()
	err := Run(context.Background(), RunOptions{Signals: s, WindDown: true}, func(j *Job) error {
		s <- syscall.SIGINT
		<-j.Context().Done()
		if !IsStop(j.Context()) {
			return errors.New("the context ended for another reason")
		}
		release, err := j.Track(func() {})
		if err != nil {
			return err // the summary written on the way out
		}
		release()
		return j.Context().Err()
	})
	var in *Interrupted
	if !errors.As(err, &in) || in.Abandoned || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want a not abandoned *Interrupted wrapping context.Canceled", err)
	}
}

// TestRunWindDownAbandoned: a winding-down job given up (second signal)
// is stopped, so nothing registers a temporary after its removal.
func TestRunWindDownAbandoned(t *testing.T) {
	t.Parallel()
	s := sig()
	release := make(chan struct{})
	defer close(release)
	var j0 *Job
	err := Run(context.Background(), RunOptions{Signals: s, WindDown: true, Grace: time.Hour}, func(j *Job) error {
		j0 = j
		s <- syscall.SIGINT
		<-j.Context().Done()
		s <- syscall.SIGINT
		<-release
		return nil
	})
	var in *Interrupted
	if !errors.As(err, &in) || !in.Abandoned {
		t.Fatalf("Run = %v, want an abandoned *Interrupted", err)
	}
	if _, err := j0.Track(func() {}); !errors.Is(err, ErrStopped) {
		t.Fatalf("Track after giving up: %v, want ErrStopped", err)
	}
}
