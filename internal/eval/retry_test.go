package eval

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// TestHonouredRetryAfter: the part of a Retry-After that is waited is at
// most the attempt timeout and at most MaxRetryAfter.
func TestHonouredRetryAfter(t *testing.T) {
	for _, tc := range []struct{ ra, timeout, want time.Duration }{
		{999999999 * time.Second, time.Second, time.Second},
		{999999999 * time.Second, time.Hour, MaxRetryAfter},
		{3 * time.Second, time.Hour, 3 * time.Second},
		{-time.Second, time.Hour, 0},
	} {
		if got := (retryPolicy{timeout: tc.timeout}).honoured(tc.ra); got != tc.want {
			t.Errorf("honoured(%v) with timeout %v = %v, want %v", tc.ra, tc.timeout, got, tc.want)
		}
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
			recs, err := rundir.ReadResults(filepath.Join(s.RunDir, rundir.ResultsFile))
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
			man, err := rundir.ReadManifest(s.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			if man.Retry.BackoffBaseS != o.RetryBase.Seconds() || man.Retry.BackoffCapS != o.RetryCap.Seconds() {
				t.Errorf("manifest retry %+v, want base %v cap %v", man.Retry, o.RetryBase.Seconds(), o.RetryCap.Seconds())
			}
		})
	}
}

// TestRetryAfterCapped: a 429 asking for
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

// TestStopEndsRetryWait: ending the run context (the
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
	defer cancel()
	// The run is stopped as soon as the call starts waiting the 50 s the
	// server asked for.
	waits := make(chan time.Duration, 8)
	testHookRetryWait = func(d time.Duration) { waits <- d }
	t.Cleanup(func() { testHookRetryWait = nil })
	go func() {
		if d := <-waits; d < 50*time.Second {
			t.Errorf("retry wait %v, want the server's 50 s", d)
		}
		cancel()
	}()
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
	case <-time.After(20 * time.Second): // well under the 50 s wait
		close(abandon)
		<-done
		t.Fatal("the retry wait did not end with the run context")
	}
	if s == nil || !s.Interrupted || s.Abandoned != 1 || s.Results.Counts.RecordsError != 0 {
		t.Errorf("summary %+v, want one abandoned record and no error record", s)
	}
}
