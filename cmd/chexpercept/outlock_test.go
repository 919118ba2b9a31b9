//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/outdir"
)

// TestOutDirLocked: every command that writes an output folder refuses,
// at once and before writing anything, a folder another chexpercept
// process is writing (here the test process holds the folder's lock, as a
// running build or phantom would), with exit status 2 and one line naming
// the folder and the holder's pid.
func TestOutDirLocked(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	man := reviewManifest(t)
	db := filepath.Join(t.TempDir(), "review.db")
	if _, stderr, code := runCLI(t, "review", "init", "--source", man, "--review-db", db, "--reviewers", "1"); code != 0 {
		t.Fatalf("review init: exit %d\n%s", code, stderr)
	}
	tests := []struct {
		name string
		args func(out string) []string
	}{
		{"build", func(out string) []string {
			return []string{"build", "--source", man, "--accept-all", "--out", out, "--workers", "1"}
		}},
		{"phantom", func(out string) []string {
			return []string{"phantom", "--out", out, "--cases-per-lesion", "1", "--phantom-seed", "2", "--workers", "1"}
		}},
		{"demo", func(out string) []string { return []string{"demo", "--out", out, "--workers", "1"} }},
		{"report", func(out string) []string { return []string{"report", "--out", out, filepath.Join(out, "..", "runs")} }},
		{"review pack", func(out string) []string {
			return []string{"review", "pack", "--source", man, "--out", out, "--reviewers", "1", "--workers", "1"}
		}},
		{"review export --csv", func(out string) []string {
			return []string{"review", "export", "--review-db", db, "--csv", out}
		}},
		{"mrmc", func(out string) []string {
			return []string{"mrmc", "--scores", vanDykeScores, "--fom", "auc", "--out", out}
		}},
		{"inspect", func(out string) []string { return []string{"inspect", out, "--key", "edema_x_positive_0"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			unlock, err := outdir.Lock(out)
			if err != nil {
				t.Fatal(err)
			}
			defer unlock()
			_, stderr, code := runCLI(t, tc.args(out)...)
			want := fmt.Sprintf("output directory %s is being written by another chexpercept process (pid %d)", out, os.Getpid())
			if code != 2 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
				t.Errorf("exit %d, want 2 and a line saying %q; stderr:\n%s", code, want, stderr)
			}
			if ents, _ := os.ReadDir(out); len(ents) > 0 {
				t.Errorf("the refused command wrote into the locked folder: %v", ents)
			}
		})
	}
}
