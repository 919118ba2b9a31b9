//go:build unix

package runs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// The offline tools refuse a source that an eval is still writing and a
// target that another process holds.
func TestToolsRespectRunLocks(t *testing.T) {
	b := protocoltest.Bench(t)
	out := t.TempDir()
	src := scriptedRun(t, b, out, glmModel())

	unlock, err := rundir.Lock(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Rescore(context.Background(), src, RescoreOptions{Mode: "strict", Bench: b}); err == nil || !strings.Contains(err.Error(), "being written") {
		t.Errorf("rescore of a run being written: %v", err)
	}
	unlock()

	shard := filepath.Join(out, "sharded", "opensource_glm-4v", "oracle_none", "shard-1-of-2")
	copyAsShard(t, src, shard, 1, 2)
	unlock, err = rundir.Lock(shard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(context.Background(), []string{shard}, MergeOptions{Out: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "being written") || !strings.Contains(err.Error(), shard) {
		t.Errorf("merge of a shard being written: %v", err)
	}
	unlock()

	dst := filepath.Join(out, "opensource_glm-4v_strict", "oracle_none")
	os.MkdirAll(dst, 0o755)
	unlock, err = rundir.Lock(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Rescore(context.Background(), src, RescoreOptions{Mode: "strict", Bench: b}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("rescore into a locked target: %v", err)
	}
	unlock()
	if _, err := Rescore(context.Background(), src, RescoreOptions{Mode: "strict", Bench: b}); err != nil {
		t.Errorf("rescore once the locks are gone: %v", err)
	}
}

// TestTargetsNeverWrittenThroughLinks: rescore,
// merge and import write no file through a link planted in their target,
// never replace a results.jsonl without a manifest (even with Force), and
// a FIFO as a source's lock does not block them.
func TestTargetsNeverWrittenThroughLinks(t *testing.T) {
	b := protocoltest.Bench(t)
	root := t.TempDir()
	out := filepath.Join(root, "results")
	src := scriptedRun(t, b, out, glmModel())
	outside := filepath.Join(root, "outside")
	os.MkdirAll(outside, 0o755)
	precious := filepath.Join(outside, "precious.txt")
	os.WriteFile(precious, []byte("precious"), 0o644)
	dst := filepath.Join(out, "opensource_glm-4v_strict", "oracle_none")
	if _, err := Rescore(context.Background(), src, RescoreOptions{Mode: "strict", Bench: b}); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, err error) {
		t.Helper()
		var r *outdir.Refused
		if !errors.As(err, &r) {
			t.Errorf("%s: %v, want a refusal", what, err)
		}
	}

	// A link in the target run directory, with --force.
	os.Remove(filepath.Join(dst, rundir.ResultsFile))
	os.Symlink(precious, filepath.Join(dst, rundir.ResultsFile))
	before := outdirtest.Snapshot(t, root)
	_, err := Rescore(context.Background(), src, RescoreOptions{Mode: "strict", Bench: b, Force: true})
	refused("rescore --force over a linked results.jsonl", err)
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, root))

	// results.jsonl without a manifest: not a run of ours, even with --force.
	os.Remove(filepath.Join(dst, rundir.ResultsFile))
	os.Remove(filepath.Join(dst, rundir.ManifestFile))
	os.WriteFile(filepath.Join(dst, rundir.ResultsFile), []byte(`{"key_id":"foreign"}`+"\n"), 0o644)
	before = outdirtest.Snapshot(t, root)
	_, err = Rescore(context.Background(), src, RescoreOptions{Mode: "strict", Bench: b, Force: true})
	refused("rescore --force over a results.jsonl without a manifest", err)
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, root))

	// <out>/<run> planted as a link to an outside directory.
	mout := filepath.Join(root, "merged")
	os.MkdirAll(mout, 0o755)
	os.Symlink(outside, filepath.Join(mout, "opensource_glm-4v"))
	shard := filepath.Join(root, "sharded", "opensource_glm-4v", "oracle_none", "shard-1-of-1")
	copyAsShard(t, src, shard, 1, 1)
	before = outdirtest.Snapshot(t, outside)
	_, err = Merge(context.Background(), []string{shard}, MergeOptions{Out: mout, BenchDir: b.Dir})
	refused("merge into a linked run folder", err)
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, outside))

	// A FIFO as the source's lock: refused at once, not waited on.
	os.Remove(filepath.Join(shard, rundir.LockFile))
	if err := syscall.Mkfifo(filepath.Join(src, rundir.LockFile), 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Rescore(context.Background(), src, RescoreOptions{Mode: "reference", Bench: b})
		done <- err
	}()
	select {
	case err = <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("rescore of a source whose lock is a FIFO: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("rescore blocked on a FIFO lock")
	}
}

// TestWriteRunFailureReleasesLock: a run whose write fails part-way (here
// results.jsonl is a folder, which is not replaced) reports the failure,
// stays unfinished and leaves its lock free for the rerun.
func TestWriteRunFailureReleasesLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "opensource_glm-4v", "oracle_none")
	if err := os.MkdirAll(filepath.Join(dir, rundir.ResultsFile), 0o755); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{RunName: "opensource_glm-4v", OracleMode: "none"}
	err := WriteRun(nil, dir, m, nil, 0, 0)
	if err == nil || !strings.Contains(err.Error(), rundir.ResultsFile) {
		t.Fatalf("WriteRun = %v, want the failure naming %s", err, rundir.ResultsFile)
	}
	if !rundir.IsUnfinished(dir) {
		t.Error("the failed run is not marked unfinished")
	}
	unlock, err := rundir.Lock(dir)
	if err != nil {
		t.Fatalf("the failed write kept its lock: %v", err)
	}
	unlock()
}
