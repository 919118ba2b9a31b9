package eval

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

const childEnv = "CHX_EVAL_TEST_CHILD"

// childOptions are the settings shared by the killed child and the
// parent that resumes its run.
func childOptions(t testing.TB, bench, out, endpoint string) Options {
	o := baseOptions(bench, out, model(t, "opensource", "resume-test"))
	o.Endpoints, o.Concurrency = []string{endpoint}, 4
	return o
}

// childMain runs an evaluation in a child process (re-executed test
// binary) until the parent kills it. It prints "written N" on stdout
// each time results.jsonl holds N more records of this run.
func childMain() int {
	o := childOptions(fakeTB{}, os.Getenv("CHX_BENCH"), os.Getenv("CHX_OUT"), os.Getenv("CHX_ENDPOINT"))
	written := 0
	testHookWritten = func(n int) {
		written += n
		fmt.Fprintf(os.Stdout, "written %d\n", written)
	}
	if _, err := Run(context.Background(), o); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 2
	}
	return 0
}

// fakeTB lets the test fixtures run outside a test (in the child).
type fakeTB struct{ testing.TB }

func (fakeTB) Helper()               {}
func (fakeTB) Fatal(args ...any)     { panic(args) }
func (fakeTB) Fatalf(string, ...any) { panic("fatal") }

// A run killed with SIGKILL mid-write and restarted with the same
// settings loses nothing, duplicates nothing and ends identical to an
// uninterrupted run (timing fields aside).
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	bench := generatedBench(t)
	url, _ := startServer(t, fakemodel.ServerConfig{Policy: "random", Latency: 20 * time.Millisecond})

	ref := run(t, childOptions(t, bench, t.TempDir(), url))
	want := stripTiming(t, filepath.Join(ref.RunDir, rundir.ResultsFile))

	out := t.TempDir()
	for kill := 0; kill < 2; kill++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", "CHX_BENCH="+bench, "CHX_OUT="+out, "CHX_ENDPOINT="+url)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The child reports each append; it is killed as soon as it has
		// written target records (5, then 10 more).
		target := 5 + 5*kill
		reached, drained := make(chan bool, 1), make(chan struct{})
		go func() {
			defer close(drained)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var n int
				if _, err := fmt.Sscanf(sc.Text(), "written %d", &n); err == nil && n >= target {
					reached <- true
					io.Copy(io.Discard, stdout)
					return
				}
			}
			reached <- false // the child ended first
		}()
		var ok bool
		select {
		case ok = <-reached:
		case <-time.After(time.Minute):
		}
		cmd.Process.Kill()
		<-drained // the pipe is read to its end before Wait closes it
		cmd.Wait()
		if !ok {
			t.Fatalf("the child did not report %d records written before it ended or a minute passed; stderr:\n%s", target, stderr.String())
		}
		resPath := filepath.Join(rundir.Path(out, ref.RunName, "implicit", nil), rundir.ResultsFile)
		data, err := os.ReadFile(resPath)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			continue // the kill tore the last line itself
		}
		// Simulate the torn last line a kill during a write leaves
		// (appended only to whole lines: after a torn one it would
		// make a line no write of the tool could leave).
		f, err := os.OpenFile(resPath, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(`{"key_id":"edema_s50000000_negative_0","lesion":"ede`)
		f.Close()
	}
	s := run(t, childOptions(t, bench, out, url))
	if s.AlreadyDone == 0 || s.AlreadyDone+s.Attempted != s.Selected {
		t.Errorf("resume: %d done before, %d asked, %d selected", s.AlreadyDone, s.Attempted, s.Selected)
	}
	recs, err := rundir.ReadResults(filepath.Join(s.RunDir, rundir.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.KeyID] {
			t.Errorf("record %s written twice", r.KeyID)
		}
		seen[r.KeyID] = true
	}
	got := stripTiming(t, filepath.Join(s.RunDir, rundir.ResultsFile))
	if !slices.Equal(got, want) {
		t.Fatalf("resumed run differs from the uninterrupted run (%d vs %d records)", len(got), len(want))
	}
	if a, b := readFile(t, filepath.Join(s.RunDir, rundir.AllResultsFile)), readFile(t, filepath.Join(ref.RunDir, rundir.AllResultsFile)); string(a) != string(b) {
		t.Error("all_results.json differs from the uninterrupted run")
	}
	if s.Results.WallTimeS <= 0 {
		t.Error("no wall time")
	}
}

// Ending the run context stops starting records; in-flight records
// finish, the derived files are written, and a restart completes the run.
func TestGracefulInterrupt(t *testing.T) {
	bench := generatedBench(t)
	url, _ := startServer(t, fakemodel.ServerConfig{Policy: "random", Latency: 10 * time.Millisecond})
	out := t.TempDir()
	o := childOptions(t, bench, out, url)
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int64
	testHookCall = func(string, string) {
		if n.Add(1) == 20 {
			cancel()
		}
	}
	s, err := Run(ctx, o)
	testHookCall = nil
	if err != nil {
		t.Fatal(err)
	}
	if !s.Interrupted || s.Attempted >= s.Selected {
		t.Fatalf("interrupt: %+v", s)
	}
	if _, err := os.Stat(filepath.Join(s.RunDir, rundir.SummaryFile)); err != nil {
		t.Fatal("no summary.json after an interrupt")
	}
	if c := s.Results.Counts; c.RecordsOK != s.Attempted || c.RecordsError != 0 {
		t.Errorf("in-flight records did not finish cleanly: %+v, attempted %d", c, s.Attempted)
	}
	s2 := run(t, o)
	if s2.Results.Counts.RecordsOK != s2.Selected {
		t.Errorf("after restart: %+v", s2.Results.Counts)
	}
}

// A second interrupt abandons the records in flight: nothing is written
// for them (no error lines), and a restart asks them again.
func TestAbandonInFlight(t *testing.T) {
	bench := generatedBench(t)
	url, _ := startServer(t, fakemodel.ServerConfig{Policy: "random", Latency: 10 * time.Millisecond})
	o := childOptions(t, bench, t.TempDir(), url)
	ctx, cancel := context.WithCancel(context.Background())
	abandon := make(chan struct{})
	o.Abandon = abandon
	var n atomic.Int64
	testHookCall = func(string, string) {
		if n.Add(1) == 20 {
			cancel()
			close(abandon)
		}
	}
	s, err := Run(ctx, o)
	testHookCall = nil
	if err != nil {
		t.Fatal(err)
	}
	if !s.Interrupted || s.Abandoned == 0 {
		t.Fatalf("nothing abandoned: %+v", s)
	}
	if c := s.Results.Counts; c.RecordsError != 0 || c.RecordsOK != s.Attempted-s.Abandoned {
		t.Errorf("after abandoning: %+v (attempted %d, abandoned %d)", c, s.Attempted, s.Abandoned)
	}
	o.Abandon = nil
	s2 := run(t, o)
	if s2.Results.Counts.RecordsOK != s2.Selected || s2.Attempted != s2.Selected-s2.AlreadyDone {
		t.Errorf("restart: %+v", s2.Results.Counts)
	}
}
