//go:build unix

package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/results"
)

// The offline tools refuse a source that an eval is still writing and a
// target that another process holds.
func TestToolsRespectRunLocks(t *testing.T) {
	b := protocoltest.Bench(t)
	out := t.TempDir()
	src := scriptedRun(t, b, out, glmModel())

	unlock, err := results.LockRun(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Rescore(src, RescoreOptions{Mode: "strict", Bench: b}); err == nil || !strings.Contains(err.Error(), "being written") {
		t.Errorf("rescore of a run being written: %v", err)
	}
	unlock()

	shard := filepath.Join(out, "sharded", "opensource_glm-4v", "oracle_none", "shard-1-of-2")
	copyAsShard(t, src, shard, 1, 2)
	unlock, err = results.LockRun(shard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Merge([]string{shard}, MergeOptions{Out: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "being written") || !strings.Contains(err.Error(), shard) {
		t.Errorf("merge of a shard being written: %v", err)
	}
	unlock()

	dst := filepath.Join(out, "opensource_glm-4v_strict", "oracle_none")
	os.MkdirAll(dst, 0o755)
	unlock, err = results.LockRun(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Rescore(src, RescoreOptions{Mode: "strict", Bench: b}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("rescore into a locked target: %v", err)
	}
	unlock()
	if _, err := Rescore(src, RescoreOptions{Mode: "strict", Bench: b}); err != nil {
		t.Errorf("rescore once the locks are gone: %v", err)
	}
}
