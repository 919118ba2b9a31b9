package main

import (
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
	"github.com/chexpercept/chexpercept/internal/results"
)

// TestEvalEndsSoonAfterSignal (issue 21 item 7): the first SIGTERM or
// SIGINT ends eval promptly whatever the server does — a 429 asking for
// Retry-After: 999999999, or no answer at all — in a real process, with
// exit status 130, no record written for the calls cut short, and a
// restart against a working server completes the run.
func TestEvalEndsSoonAfterSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and waits for them")
	}
	for _, server := range []string{"429", "hang"} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(server+"/"+sig.String(), func(t *testing.T) {
				var hits atomic.Int64
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
					hits.Add(1)
					if server == "429" {
						w.Header().Set("Retry-After", "999999999")
						http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
						return
					}
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
				for deadline := time.Now().Add(60 * time.Second); hits.Load() < 2; time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						cmd.Process.Kill()
						t.Fatalf("the server saw %d requests in 60 s\n%s", hits.Load(), stderr.String())
					}
				}
				time.Sleep(300 * time.Millisecond) // inside the wait
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
				recs, rerr := results.ReadResults(filepath.Join(runDir, results.ResultsFile))
				if rerr != nil || len(recs) != 0 {
					t.Errorf("results after the interrupt: %d records, %v (want none: the calls were cut short)", len(recs), rerr)
				}

				// Resumable: the same command once the same server answers
				// (a server of another identity is refused on resume).
				mended.Store(true)
				defer base.Close()
				_, stderr2, code := runCLIEnv(t, nil, args...)
				if code != 0 {
					t.Fatalf("restart: exit %d\n%s", code, stderr2)
				}
				recs, rerr = results.ReadResults(filepath.Join(runDir, results.ResultsFile))
				if rerr != nil || len(recs) != 2 {
					t.Errorf("after the restart: %d records, %v; want 2", len(recs), rerr)
				}
			})
		}
	}
}
