package runs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// TestEndedContextWritesNothing: rescore and merge given a context that
// has ended stop with its error before they write, so the target run
// directory is never made.
func TestEndedContextWritesNothing(t *testing.T) {
	t.Parallel()
	bench := protocoltest.Bench(t)
	out := t.TempDir()
	src := scriptedRun(t, bench, out, glmModel())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Rescore(ctx, src, RescoreOptions{Mode: parse.ModeStrict, Bench: bench}); !errors.Is(err, context.Canceled) {
		t.Errorf("Rescore: %v, want context.Canceled", err)
	}
	if _, err := os.Lstat(filepath.Join(out, "opensource_glm-4v_strict")); err == nil {
		t.Error("the stopped rescore made its run directory")
	}
	shards := filepath.Join(t.TempDir(), "opensource_glm-4v", "oracle_none")
	copyAsShard(t, src, filepath.Join(shards, "shard-1-of-1"), 1, 1)
	mout := t.TempDir()
	if _, err := Merge(ctx, []string{shards}, MergeOptions{Out: mout}); !errors.Is(err, context.Canceled) {
		t.Errorf("Merge: %v, want context.Canceled", err)
	}
	if ents, _ := os.ReadDir(mout); len(ents) != 0 {
		t.Errorf("the stopped merge wrote %v", ents)
	}
}

// TestFinishIsTheCommitPoint: runs written whole but finished only after
// their job was stopped stay unfinished (Finish fails with
// job.ErrStopped), for the same command to replace; finished before the
// stop, they stay finished.
func TestFinishIsTheCommitPoint(t *testing.T) {
	t.Parallel()
	bench := protocoltest.Bench(t)
	src := scriptedRun(t, bench, t.TempDir(), glmModel())
	run, err := ReadRun(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, stopFirst := range []bool{true, false} {
		j := job.New(context.Background(), job.Options{})
		dir := filepath.Join(t.TempDir(), "human_r1", "oracle_none")
		unlock, err := WriteUnfinished(j, dir, run.Manifest, run.Records, len(run.Records), 1)
		if err != nil {
			t.Fatal(err)
		}
		if stopFirst {
			j.Stop()
		}
		err = Finish(j, dir)
		unlock()
		if !stopFirst {
			j.Stop()
		}
		if stopFirst != errors.Is(err, job.ErrStopped) || stopFirst != rundir.IsUnfinished(dir) {
			t.Errorf("stopped before Finish: %v; Finish = %v, unfinished %v", stopFirst, err, rundir.IsUnfinished(dir))
		}
	}
}
