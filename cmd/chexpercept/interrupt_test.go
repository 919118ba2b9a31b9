package main

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// TestEvalEndsSoonAfterSignal: the first SIGTERM or
// SIGINT ends eval promptly whatever the server does — a 429 asking for
// Retry-After: 999999999, or no answer at all — in a real process, with
// exit status 130, no record written for the calls cut short; the process
// waits for the run to return, which writes its summary, and a restart
// against a working server completes the run.
func TestEvalEndsSoonAfterSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and waits for them")
	}
	for _, server := range []string{"429", "hang"} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(server+"/"+sig.String(), func(t *testing.T) {
				// The four stops run side by side: each mostly waits, and
				// no other test runs meanwhile (this one is sequential).
				t.Parallel()
				// answered receives one value per chat call the server has
				// answered with a 429, or holds without an answer.
				answered := make(chan struct{}, 64)
				var mended atomic.Bool // the server answers, for the restart
				base, berr := fakemodel.NewServer(fakemodel.ServerConfig{Policy: "first"})
				if berr != nil {
					t.Fatal(berr)
				}
				done := make(chan struct{})
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
						// The preflight finds the model; only the chat calls misbehave.
						w.Header().Set("Content-Type", "application/json")
						w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model","owned_by":"test"}]}`))
						return
					}
					if mended.Load() {
						base.ServeHTTP(w, r)
						return
					}
					if server == "429" {
						w.Header().Set("Retry-After", "999999999")
						http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
						answered <- struct{}{}
						return
					}
					answered <- struct{}{}
					select {
					case <-r.Context().Done():
					case <-done:
					}
				}))
				t.Cleanup(func() { close(done); srv.Close() })
				out := t.TempDir()
				args := []string{"eval", "--benchmark", genBench, "--out", out, "--oracle", "none", "--limit", "2", "--no-cache",
					"--provider", "vllm", "--model", "m", "--endpoint", srv.URL + "/v1", "--timeout", "1000s", "--max-retries", "3"}
				cmd := exec.Command(os.Args[0], "-test.run=^TestRunToolsHelperProcess$")
				cmd.Env = append(os.Environ(), "CHX_TEST_MAIN=1", "CHX_TEST_ARGS="+strings.Join(args, argSep))
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				// Both records' calls answered with a 429 (their Retry-After
				// waits begin as the replies arrive) or held unanswered. A
				// signal that comes before a 429 reply is read ends the call
				// the same way: the run context ends and the call with it.
				giveUp := time.After(60 * time.Second)
				for n := 0; n < 2; n++ {
					select {
					case <-answered:
					case err := <-exited:
						t.Fatalf("eval ended (%v) before the server saw 2 calls\n%s", err, stderr.String())
					case <-giveUp:
						cmd.Process.Kill()
						t.Fatalf("the server saw %d calls in 60 s\n%s", n, stderr.String())
					}
				}
				t0 := time.Now()
				cmd.Process.Signal(sig)
				var err error
				select {
				case err = <-exited:
				case <-time.After(20 * time.Second):
					cmd.Process.Kill()
					<-exited
					t.Fatalf("still running 20 s after %v\n%s", sig, stderr.String())
				}
				took := time.Since(t0)
				// 2 s for the waits and calls to end, plus writing the
				// derived files; generous under a loaded machine.
				if took > 5*time.Second {
					t.Errorf("eval took %v to end after %v", took, sig)
				}
				t.Logf("%s: ended %v after %v", server, took.Round(time.Millisecond), sig)
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 130 {
					t.Errorf("exit %v, want 130\n%s", err, stderr.String())
				}
				runDir := filepath.Join(out, "opensource_m", "oracle_none")
				recs, rerr := rundir.ReadResults(filepath.Join(runDir, rundir.ResultsFile))
				if rerr != nil || len(recs) != 0 {
					t.Errorf("results after the interrupt: %d records, %v (want none: the calls were cut short)", len(recs), rerr)
				}
				// The run returned before the process ended: it said so and
				// wrote its derived files.
				if !strings.Contains(stderr.String(), "interrupted: 2 records started, 2 abandoned") {
					t.Errorf("stderr does not show the run's own end:\n%s", stderr.String())
				}
				// Its counts line says it stopped, not that it is done.
				if !strings.Contains(stderr.String(), "\nstopped: 0 ok") || strings.Contains(stderr.String(), "\ndone: ") {
					t.Errorf("stderr does not end with the stopped run's counts:\n%s", stderr.String())
				}
				if _, err := os.Stat(filepath.Join(runDir, rundir.SummaryFile)); err != nil {
					t.Errorf("the interrupted run wrote no summary: %v", err)
				}
				if tmp := temps(t, out); len(tmp) > 0 {
					t.Errorf("the interrupted run left %q", tmp)
				}

				// Resumable: the same command once the same server answers
				// (a server of another identity is refused on resume).
				mended.Store(true)
				defer base.Close()
				_, stderr2, code := runCLIEnv(t, nil, args...)
				if code != 0 {
					t.Fatalf("restart: exit %d\n%s", code, stderr2)
				}
				recs, rerr = rundir.ReadResults(filepath.Join(runDir, rundir.ResultsFile))
				if rerr != nil || len(recs) != 2 {
					t.Errorf("after the restart: %d records, %v; want 2", len(recs), rerr)
				}
			})
		}
	}
}

// TestEvalSignalDuringPreflight: SIGTERM or SIGINT while the preflight
// waits on a server that never answers ends eval with status 130 and a
// line saying it was interrupted, not status 2 and "context canceled".
func TestEvalSignalDuringPreflight(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			asked := make(chan struct{}, 1)
			done := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case asked <- struct{}{}:
				default:
				}
				select {
				case <-r.Context().Done():
				case <-done:
				}
			}))
			t.Cleanup(func() { close(done); srv.Close() })
			args := []string{"eval", "--benchmark", genBench, "--out", t.TempDir(), "--oracle", "none", "--limit", "1", "--no-cache",
				"--provider", "vllm", "--model", "m", "--endpoint", srv.URL + "/v1", "--timeout", "1000s"}
			cmd := exec.Command(os.Args[0], "-test.run=^TestRunToolsHelperProcess$")
			cmd.Env = append(os.Environ(), "CHX_TEST_MAIN=1", "CHX_TEST_ARGS="+strings.Join(args, argSep))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			<-asked
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Errorf("exit %v, want 130\n%s", err, stderr.String())
			}
			if msg := stderr.String(); !strings.Contains(msg, "interrupted") || strings.Contains(msg, "context canceled") {
				t.Errorf("stderr %q, want the interruption said once", msg)
			}
		})
	}
}

// TestEvalSecondSignalAbandons: eval gives its signals meanings of its
// own: the second abandons the calls in flight at once (the run still
// ends as a run, writing its summary, exit 130), not the wait for them.
func TestEvalSecondSignalAbandons(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	answered := make(chan struct{}, 64)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model","owned_by":"test"}]}`))
			return
		}
		answered <- struct{}{}
		select { // no answer
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	out := t.TempDir()
	args := []string{"eval", "--benchmark", genBench, "--out", out, "--oracle", "none", "--limit", "2", "--no-cache",
		"--provider", "vllm", "--model", "m", "--endpoint", srv.URL + "/v1", "--timeout", "1000s"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunToolsHelperProcess$")
	cmd.Env = append(os.Environ(), "CHX_TEST_MAIN=1", "CHX_TEST_ARGS="+strings.Join(args, argSep))
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		<-answered
	}
	cmd.Process.Signal(syscall.SIGINT)
	var stderr strings.Builder
	lines := bufio.NewScanner(stderrPipe)
	for lines.Scan() {
		stderr.WriteString(lines.Text() + "\n")
		if strings.HasPrefix(lines.Text(), "interrupt: stopping;") {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	for lines.Scan() {
		stderr.WriteString(lines.Text() + "\n")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130\n%s", err, stderr.String())
	}
	msg := stderr.String()
	for _, want := range []string{"interrupt: abandoning the records in flight", "interrupted: 2 records started, 2 abandoned"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "quitting now") {
		t.Errorf("the second signal quit instead of abandoning the calls:\n%s", msg)
	}
	if _, err := os.Stat(filepath.Join(out, "opensource_m", "oracle_none", rundir.SummaryFile)); err != nil {
		t.Errorf("the run wrote no summary: %v", err)
	}
}
