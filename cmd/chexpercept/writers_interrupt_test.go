package main

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/job"
)

// TestRenamePauseHelperProcess runs chexpercept (CHX_TEST_ARGS) with the
// first atomic write of a file named CHX_PAUSE_RENAME stopped just before
// its rename: it writes the name on descriptor 3 and waits there until the
// command's job has taken the signal (job.Job.Stop).
func TestRenamePauseHelperProcess(t *testing.T) {
	base := os.Getenv("CHX_PAUSE_RENAME")
	if base == "" {
		t.Skip("helper process for TestWritersInterrupted")
	}
	ready := os.NewFile(3, "ready")
	// The write goes on only once the job has taken the signal and closed
	// its commit point (or kept it open, past the commit point): going on
	// at the signal itself would race the signal's delivery.
	stopped := make(chan struct{})
	var stopOnce, pauseOnce sync.Once
	hook := func(point, name string) {
		switch {
		case point == "stopped":
			stopOnce.Do(func() { close(stopped) })
		case point == "rename" && filepath.Base(name) == base:
			pauseOnce.Do(func() {
				ready.WriteString(name + "\n")
				<-stopped
			})
		}
	}
	os.Args = append([]string{"chexpercept"}, strings.Split(os.Getenv("CHX_TEST_ARGS"), argSep)...)
	execute(newRootCmd(job.Options{Hook: hook}))
	os.Exit(0)
}

// TestWritersInterrupted: every command that writes files catches SIGINT
// and SIGTERM that come while a file is being written: it waits for its
// work to stop (the write under way lands; the next is refused), the
// temporary files are removed, one line says it was interrupted, the exit
// status is 130, and the same command run again completes, leaving no
// temporary file. A signal that comes while the last file of a review
// export --reviews is written, past its commit point, lets the export end
// as without it (exit 0): its rerun would refuse the file without --force.
func TestWritersInterrupted(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	man := reviewManifest(t)
	dbDir := t.TempDir()
	db := filepath.Join(dbDir, "review.db")
	if _, stderr, code := runCLI(t, "review", "init", "--source", man, "--review-db", db, "--reviewers", "1"); code != 0 {
		t.Fatalf("review init: exit %d\n%s", code, stderr)
	}
	cand := fixtureCandidates(t)
	results := reportInputs(t)
	// The phantom of one lesion: the writes the signal comes between are
	// those of seven, at a seventh of the drawing.
	oneLesion := filepath.Join(t.TempDir(), "edema.yaml")
	if err := os.WriteFile(oneLesion, []byte("lesions: [edema]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  func(out string) []string
		pause string // the file whose rename the signal comes before
		sig   syscall.Signal
		code  int // 130, or 0 past the commit point
	}{
		{"review pack", func(out string) []string {
			return []string{"review", "pack", "--source", man, "--out", out, "--reviewers", "2", "--workers", "1"}
		}, "review_sheet.csv", syscall.SIGINT, 130},
		{"review export --csv", func(out string) []string {
			return []string{"review", "export", "--review-db", db, "--csv", out}
		}, "positive.csv", syscall.SIGINT, 130},
		{"review export --reviews", func(out string) []string {
			return []string{"review", "export", "--review-db", db, "--reviews", filepath.Join(out, "r.jsonl")}
		}, "r.jsonl", syscall.SIGTERM, 0},
		{"mrmc", func(out string) []string {
			return []string{"mrmc", "--scores", vanDykeScores, "--fom", "auc", "--out", out}
		}, "mrmc.json", syscall.SIGINT, 130},
		{"phantom", func(out string) []string {
			return []string{"phantom", "--config", oneLesion, "--out", out, "--cases-per-lesion", "1", "--phantom-seed", "1", "--workers", "1"}
		}, "manifest.jsonl", syscall.SIGTERM, 130},
		{"build", func(out string) []string {
			return []string{"build", "--source", cand, "--out", out, "--per-lesion", "1,0,0", "--workers", "2", "--accept-all"}
		}, "chexpercept.json", syscall.SIGINT, 130},
		{"report", func(out string) []string {
			return []string{"report", results, "--out", out, "--bootstrap", "20"}
		}, "report.md", syscall.SIGTERM, 130},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			if strings.Contains(tc.name, "--reviews") {
				if err := os.Mkdir(out, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			args := tc.args(out)
			code, stderr := stopAtRename(t, args, tc.pause, tc.sig)
			lines := strings.Split(withoutStoppingNotice(stderr), "\n")
			if tc.name == "build" {
				lines = lines[len(lines)-1:] // after build's progress lines
			}
			switch {
			case tc.code == 130 && (code != 130 || len(lines) != 1 || !strings.Contains(lines[0], "interrupted;")):
				t.Errorf("after %v: exit %d, want 130 and one line saying so; stderr:\n%s", tc.sig, code, stderr)
			case tc.code == 130 && strings.Contains(stderr, "given up"):
				t.Errorf("after %v the work was given up, not waited for; stderr:\n%s", tc.sig, stderr)
			case tc.code == 0 && (code != 0 || strings.Contains(stderr, "interrupted")):
				t.Errorf("after %v past the commit point: exit %d, want 0, not a word of an interruption; stderr:\n%s", tc.sig, code, stderr)
			}
			// The command waited for its work: the write the signal came
			// in lands whole.
			if !treeHasFile(t, out, tc.pause) {
				t.Errorf("after %v: no %s below %s; the write under way at the signal did not land", tc.sig, tc.pause, out)
			}
			if tmp := temps(t, out); len(tmp) > 0 {
				t.Errorf("the interrupted command left %q", tmp)
			}
			if tc.code != 0 {
				if _, stderr, code := runCLI(t, args...); code != 0 {
					t.Fatalf("plain rerun: exit %d\n%s", code, stderr)
				}
			}
			if tmp := temps(t, out); len(tmp) > 0 {
				t.Errorf("the rerun left %q", tmp)
			}
		})
	}
}

// fixtureCandidates writes the candidates of the MIMIC-layout fixture
// (sample's output) and returns their file.
func fixtureCandidates(t *testing.T) string {
	t.Helper()
	fx := "../../internal/source/testdata/mimic"
	cand := filepath.Join(t.TempDir(), "candidates.jsonl")
	if _, stderr, code := runCLI(t, "sample", "--mimic-cxr", fx, "--mimic-ils", fx+"/mimic_ils_instruction_answer.json",
		"--ils-masks", fx+"/lesion_mask", "--chexmask-csv", fx+"/chexmask_mimic.csv", "--out", cand); code != 0 {
		t.Fatalf("sample: exit %d\n%s", code, stderr)
	}
	return cand
}

// reportInputs writes two baseline runs of the sample benchmark and
// returns their results folder.
func reportInputs(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	b, _ := sampleBench.get(t)
	results := filepath.Join(tmp, "results")
	for _, r := range []*analysistest.Run{
		{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle},
		{Provider: "baseline", Label: "first", Oracle: "none", Policy: analysistest.First},
	} {
		if _, err := r.Write(results, b); err != nil {
			t.Fatal(err)
		}
	}
	return results
}

// stopAtRename runs chexpercept args in a child process stopped before
// the rename of the file named base, sends it sig and returns its exit
// status (-1: ended by the signal) and stderr.
func stopAtRename(t *testing.T, args []string, base string, sig syscall.Signal) (int, string) {
	t.Helper()
	return stopChild(t, "TestRenamePauseHelperProcess", "CHX_PAUSE_RENAME="+base, args, sig)
}

// stopChild runs chexpercept args in a child process, the test function
// named child with the variable env set, which writes a line on
// descriptor 3 once it has stopped where the test wants the signal; then
// it sends the child sig and returns its exit status (-1: ended by the
// signal) and stderr.
func stopChild(t *testing.T, child, env string, args []string, sig syscall.Signal) (int, string) {
	t.Helper()
	code, _, stderr := stopChildOut(t, child, env, args, sig)
	return code, stderr
}

// stopChildOut is stopChild that also returns the child's stdout.
func stopChildOut(t *testing.T, child, env string, args []string, sig syscall.Signal) (int, string, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$")
	cmd.Env = append(os.Environ(), "CHX_TEST_MAIN=1", env, "CHX_TEST_ARGS="+strings.Join(args, argSep))
	cmd.ExtraFiles = []*os.File{w}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		cmd.Wait()
		t.Fatalf("%v did not reach the point to stop (%s): %v\n%s", args[:2], env, err, stderr.String())
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// temps lists the "*.tmp-*" files below root.
func temps(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(d.Name(), ".tmp-") {
			found = append(found, p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return found
}

// treeHasFile reports whether a regular file named base is below root.
func treeHasFile(t *testing.T, root, base string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == base && d.Type().IsRegular() {
			found = true
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return found
}

// withoutStoppingNotice is a stopped command's stderr without the line
// that says it is stopping, which a work slow to return (a loaded
// machine) adds before the interrupted line.
func withoutStoppingNotice(stderr string) string {
	var keep []string
	for _, ln := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.Contains(ln, ": stopping (interrupt again to stop at once)") {
			keep = append(keep, ln)
		}
	}
	return strings.Join(keep, "\n")
}
