package eval

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/results"
)

// A run that cannot start (credentials, key file, endpoint, empty
// selection) fails before the run directory exists, so the corrected
// command is not blocked by a manifest of the failed one.
func TestStartFailureWritesNothing(t *testing.T) {
	bench := generatedBench(t)
	for _, k := range []string{"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT",
		"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_GENAI_USE_VERTEXAI"} {
		t.Setenv(k, "")
	}
	zero := 0
	tests := []struct {
		name, prov, model string
		edit              func(*Options)
		want              string
	}{
		{"azure no key", "azure", "gpt-5.4", nil, "azure: no API key"},
		{"gemini no credentials", "gemini", "gemini-3.1-flash", nil, "gemini: no credentials"},
		{"opensource no endpoint", "opensource", "some/model", nil, "no endpoint"},
		{"missing key file", "openai", "gpt-5.4", func(o *Options) { o.APIKeyFile = "nonexist.txt" }, "nonexist.txt"},
		{"limit 0", "baseline", "random", func(o *Options) { o.Selection.Limit = &zero }, "selection limit 0 selects no record"},
		{"sample 0", "baseline", "random", func(o *Options) { o.Selection.Sample = &zero }, "selection sample 0 selects no record"},
		// issue 21 item 15: a manifest that cannot be written (NaN) left
		// an empty run directory holding .lock.
		{"run name too long", "opensource", "org/" + strings.Repeat("m", 250), nil, "more than the 255 a folder name may hold"},
		{"NaN temperature", "baseline", "random", func(o *Options) { nan := math.NaN(); o.Model.Sampling.Temperature = &nan }, "NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "bad", "r")
			o := baseOptions(bench, out, model(t, tc.prov, tc.model))
			if tc.edit != nil {
				tc.edit(&o)
			}
			s, err := Run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if s != nil {
				t.Errorf("a failed start returned a summary naming %s", s.RunDir)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was created (stat: %v)", out, err)
			}
		})
	}
}

// missingDirs and removeNew undo exactly what a refused start made: the
// folders it created and its lock file, never a folder that was there.
func TestRemoveNew(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "res"), 0o755)
	runDir := filepath.Join(root, "res", "run", "oracle_none")
	created := missingDirs(runDir)
	if err := os.MkdirAll(runDir, 0o755); err != nil || len(created) != 2 || created[0] != filepath.Join(root, "res", "run") {
		t.Fatalf("created %v, %v", created, err)
	}
	os.WriteFile(filepath.Join(runDir, results.LockFile), nil, 0o644)
	removeNew(runDir, created, true)
	if _, err := os.Stat(filepath.Join(root, "res", "run")); !os.IsNotExist(err) {
		t.Errorf("run folder left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "res")); err != nil {
		t.Errorf("a folder that was there is gone: %v", err)
	}
	// A folder that holds something else stays.
	created = missingDirs(runDir)
	os.MkdirAll(runDir, 0o755)
	os.WriteFile(filepath.Join(runDir, "notes.txt"), nil, 0o644)
	removeNew(runDir, created, false)
	if _, err := os.Stat(filepath.Join(runDir, "notes.txt")); err != nil {
		t.Errorf("foreign file removed: %v", err)
	}
}

// Two runs of one run directory at once: the second is refused with the
// directory named, and the first's lock ends with it.
func TestRunDirLock(t *testing.T) {
	bench := generatedBench(t)
	for _, shard := range []string{"", "1/2"} {
		t.Run("shard="+shard, func(t *testing.T) {
			// The server holds every call until release is closed, so the
			// first run is still writing when the second starts.
			release := make(chan struct{})
			entered := make(chan struct{}, 64)
			srv, _ := fakemodel.NewServer(fakemodel.ServerConfig{Policy: "random"})
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet { // the preflight passes
					srv.ServeHTTP(w, r)
					return
				}
				entered <- struct{}{}
				<-release
				srv.ServeHTTP(w, r)
			}))
			defer hs.Close()
			out := t.TempDir()
			o := baseOptions(bench, out, model(t, "opensource", "lock-test"))
			o.Endpoints = []string{hs.URL + "/v1"}
			o.Oracle = protocol.OracleImplicit
			limit := 2
			o.Selection.Limit = &limit
			if shard != "" {
				sh, err := results.ParseShard(shard, os.Getenv)
				if err != nil {
					t.Fatal(err)
				}
				o.Selection.Shard = sh
			}
			first := make(chan error, 1)
			go func() { _, err := Run(context.Background(), o); first <- err }()
			<-entered // the first run holds the lock and is calling
			_, err := Run(context.Background(), o)
			dir := results.RunDir(out, results.RunName("opensource", o.Model.Label, false, o.Parse == parse.ModeStrict), string(o.Oracle), o.Selection.Shard)
			if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "in use") {
				t.Errorf("second run: err = %v, want a refusal naming %s", err, dir)
			}
			close(release)
			if err := <-first; err != nil {
				t.Fatalf("first run: %v", err)
			}
			// Released: the same command now runs (and has nothing to ask).
			s, err := Run(context.Background(), o)
			if err != nil {
				t.Fatalf("run after the lock was released: %v", err)
			}
			if s.Attempted != 0 || s.Results.Counts.RecordsOK != s.Selected {
				t.Errorf("rerun asked %d records; %+v", s.Attempted, s.Results.Counts)
			}
		})
	}
}

// The error text and the recorded attempts count the requests really
// sent, for a non-retryable status, an exhausted retryable one and a
// timeout; the manifest records the real backoff settings.
func TestAttemptsCounted(t *testing.T) {
	bench := generatedBench(t)
	tests := []struct {
		name    string
		status  int // 0: hang past the timeout
		retries int
		want    int
		text    string
	}{
		{"401 not retried", http.StatusUnauthorized, 3, 1, "(1 attempt via"},
		{"400 not retried", http.StatusBadRequest, 0, 1, "(1 attempt via"},
		{"500 exhausted", http.StatusInternalServerError, 2, 3, "(3 attempts via"},
		{"429 exhausted", http.StatusTooManyRequests, 1, 2, "(2 attempts via"},
		{"timeout exhausted", 0, 1, 2, "(2 attempts via"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int64
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				if tc.status == 0 {
					// Read the body so the server notices the client
					// giving up; the fallback bounds the test.
					io.Copy(io.Discard, r.Body)
					select {
					case <-r.Context().Done():
					case <-time.After(3 * time.Second):
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprint(w, `{"error":{"message":"no","type":"x"}}`)
			}))
			defer hs.Close()
			o := baseOptions(bench, t.TempDir(), model(t, "opensource", "attempts-test"))
			o.Endpoints, o.NoPreflight = []string{hs.URL + "/v1"}, true // the server answers chat calls only
			o.MaxRetries, o.NoRetries = tc.retries, tc.retries == 0
			o.Timeout = 200e6 // 200ms
			o.Concurrency = 1
			limit := 1
			o.Selection.Limit = &limit
			s := run(t, o)
			if got := requests.Load(); got != int64(tc.want) {
				t.Fatalf("server saw %d requests, want %d", got, tc.want)
			}
			recs, err := results.ReadResults(filepath.Join(s.RunDir, results.ResultsFile))
			if err != nil || len(recs) != 1 {
				t.Fatalf("results: %d records, %v", len(recs), err)
			}
			r := recs[0]
			if r.Error == nil || !strings.Contains(*r.Error, tc.text) {
				t.Errorf("record error %v, want it to contain %q", r.Error, tc.text)
			}
			failed := 0
			for _, tn := range r.Turns {
				if tn.Status == results.TurnError {
					failed++
					if tn.Attempts != tc.want {
						t.Errorf("turn %s: attempts %d, want %d", tn.Turn, tn.Attempts, tc.want)
					}
				}
			}
			if failed != 1 {
				t.Errorf("%d failed turns, want 1", failed)
			}
			man, err := results.ReadManifest(s.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			if man.Retry.BackoffBaseS != o.RetryBase.Seconds() || man.Retry.BackoffCapS != o.RetryCap.Seconds() {
				t.Errorf("manifest retry %+v, want base %v cap %v", man.Retry, o.RetryBase.Seconds(), o.RetryCap.Seconds())
			}
		})
	}
}

// TestRetryAfterCapped (issue 21 item 7): a 429 asking for
// Retry-After: 999999999 is honoured only up to the attempt timeout (and
// MaxRetryAfter), and the retry counts against max retries, so the call
// fails after about one timeout instead of waiting for 31 years.
func TestRetryAfterCapped(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "999999999")
		http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
	}))
	defer srv.Close()
	o := childOptions(t, sampleBench, t.TempDir(), srv.URL+"/v1")
	limit := 1
	o.Selection.Limit, o.Oracle = &limit, protocol.OracleNone
	o.Timeout, o.MaxRetries, o.RetryCap = time.Second, 1, 10*time.Millisecond
	o.NoPreflight = true // the server answers 429 to everything, its model list too
	abandon := make(chan struct{})
	o.Abandon = abandon
	type result struct {
		s   *Summary
		err error
	}
	done := make(chan result, 1)
	t0 := time.Now()
	go func() { s, err := Run(context.Background(), o); done <- result{s, err} }()
	var got result
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		close(abandon)
		got = <-done
		t.Fatalf("still waiting after 30 s (%d requests)", hits.Load())
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	if took := time.Since(t0); took > 15*time.Second {
		t.Errorf("took %v", took)
	}
	if c := got.s.Results.Counts; c.RecordsError != 1 || hits.Load() != 2 {
		t.Errorf("counts %+v after %d requests; want 1 error record after 2 requests", c, hits.Load())
	}
}

// TestStopEndsRetryWait (issue 21 item 7): ending the run context (the
// first interrupt) ends a Retry-After wait at once; the record is not
// written and is asked again on restart.
func TestStopEndsRetryWait(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "50")
		http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
	}))
	defer srv.Close()
	o := childOptions(t, sampleBench, t.TempDir(), srv.URL+"/v1")
	limit := 1
	o.Selection.Limit, o.Oracle = &limit, protocol.OracleNone
	o.Timeout, o.MaxRetries = time.Minute, 3
	o.NoPreflight = true // the server answers 429 to everything, its model list too
	abandon := make(chan struct{})
	o.Abandon = abandon
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for hits.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	t0 := time.Now()
	done := make(chan *Summary, 1)
	go func() {
		s, err := Run(ctx, o)
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	var s *Summary
	select {
	case s = <-done:
	case <-time.After(20 * time.Second):
		close(abandon)
		<-done
		t.Fatal("the retry wait did not end with the run context")
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
	if s == nil || !s.Interrupted || s.Abandoned != 1 || s.Results.Counts.RecordsError != 0 {
		t.Errorf("summary %+v, want one abandoned record and no error record", s)
	}
}
