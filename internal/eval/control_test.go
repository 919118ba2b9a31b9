package eval

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// imageSpy is serve-baseline (policy first) that counts the images of
// every chat request it answers.
type imageSpy struct {
	mu     sync.Mutex
	calls  int
	images int
}

func newImageSpy(t *testing.T) (*imageSpy, string) {
	t.Helper()
	srv, err := fakemodel.NewServer(fakemodel.ServerConfig{Policy: "first"})
	if err != nil {
		t.Fatal(err)
	}
	spy := &imageSpy{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			spy.mu.Lock()
			spy.calls++
			spy.images += bytes.Count(body, []byte(`"image_url"`))
			spy.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return spy, hs.URL + "/v1"
}

func (s *imageSpy) counts() (calls, images int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.images
}

// A control run is a run like any other: its own directory, named after
// the model's run with the control appended, a manifest that says the
// control and the kind control, resumable and shardable; the text-only
// control sends no image, the blank-radiograph control as many as the
// model's run; and it is refused when it would resume a run of another
// control (or none).
func TestControlRuns(t *testing.T) {
	t.Parallel()
	bench := generatedBench(t)
	limit := 6
	m := model(t, "openai", "control-test-model")
	out := t.TempDir()
	opts := func(url string, c results.Control) Options {
		o := baseOptions(bench, out, m)
		o.Endpoints, o.Control = []string{url}, c
		o.Selection.Limit = &limit
		o.CacheDir = t.TempDir()
		return o
	}
	realSpy, url := newImageSpy(t)
	real := run(t, opts(url, ""))
	realCalls, realImages := realSpy.counts()
	if realImages == 0 {
		t.Fatal("the model's run sent no image")
	}
	for _, c := range []results.Control{results.ControlTextOnly, results.ControlBlankRadiograph} {
		spy, url := newImageSpy(t)
		s := run(t, opts(url, c))
		want := filepath.Join(out, "openai_control-test-model_"+string(c), "oracle_implicit")
		if s.RunDir != want {
			t.Errorf("%s: run directory %s, want %s", c, s.RunDir, want)
		}
		man, err := rundir.ReadManifest(s.RunDir)
		if err != nil {
			t.Fatal(err)
		}
		if man.Control != c || man.Kind != results.KindControl || man.RunName != "openai_control-test-model_"+string(c) {
			t.Errorf("%s: manifest control %q kind %q run_name %q", c, man.Control, man.Kind, man.RunName)
		}
		calls, images := spy.counts()
		wantImages := realImages
		if c == results.ControlTextOnly {
			wantImages = 0
		}
		if calls != realCalls || images != wantImages {
			t.Errorf("%s: %d calls with %d images, want %d calls with %d images", c, calls, images, realCalls, wantImages)
		}
		if rc := s.Results.Counts; rc.RecordsOK != limit {
			t.Errorf("%s: %d records ok, want %d", c, rc.RecordsOK, limit)
		}
		// Resumed, it asks nothing again.
		again := run(t, opts(url, c))
		if n, _ := spy.counts(); again.AlreadyDone != limit || n != calls {
			t.Errorf("%s: resumed run re-asked (%d done, %d calls after %d)", c, again.AlreadyDone, n, calls)
		}
	}
	if real.RunDir != filepath.Join(out, "openai_control-test-model", "oracle_implicit") {
		t.Errorf("the model's run is in %s", real.RunDir)
	}

	// A run directory of no control is not resumed under one.
	o := opts(url, "")
	o.RunName = "named_text-only"
	run(t, o)
	o = opts(url, results.ControlTextOnly)
	o.RunName = "named"
	if _, err := Run(t.Context(), o); err == nil || !strings.Contains(err.Error(), `control: unset → "text-only"`) {
		t.Errorf("resuming a run of no control as text-only: %v", err)
	}

	// Shards of a control run sit in the control run's directory.
	o = opts(url, results.ControlTextOnly)
	o.Selection.Shard = &results.Shard{I: 1, N: 2}
	s := run(t, o)
	if want := filepath.Join(out, "openai_control-test-model_text-only", "oracle_implicit", "shard-1-of-2"); s.RunDir != want {
		t.Errorf("shard in %s, want %s", s.RunDir, want)
	}

	// The baselines are not controlled.
	bo := baseOptions(bench, t.TempDir(), model(t, "baseline", "random"))
	bo.Control = results.ControlTextOnly
	if _, err := Run(t.Context(), bo); err == nil || !strings.Contains(err.Error(), "baseline policies do not look at the image") {
		t.Errorf("a control of a baseline: %v", err)
	}
}

// A control run's replies are cached apart from the model run's: a
// deterministic model's control, asked after its run, replays nothing of
// the run's entries (it hits the cache exactly as often as when asked
// with an empty one: only where two of its own records send the same
// conversation), and it is replayed from the cache when asked again.
func TestControlCachedApart(t *testing.T) {
	t.Parallel()
	bench := generatedBench(t)
	limit := 8
	m := model(t, "opensource", "cache-control-model") // greedy: cached
	_, url := newImageSpy(t)
	ask := func(c results.Control, cache string) *Summary {
		o := baseOptions(bench, t.TempDir(), m)
		o.Endpoints, o.Control, o.NoCache, o.CacheDir = []string{url}, c, false, cache
		o.Selection.Limit = &limit
		o.Concurrency = 1 // a record's duplicate is asked after it: the hits do not depend on timing
		return run(t, o)
	}
	shared := t.TempDir()
	if first := ask("", shared); first.Results.Counts.Calls == first.Results.Counts.CacheHits {
		t.Fatalf("the model's run: %+v", first.Results.Counts)
	}
	for _, c := range []results.Control{results.ControlTextOnly, results.ControlBlankRadiograph} {
		after := ask(c, shared).Results.Counts
		alone := ask(c, t.TempDir()).Results.Counts
		if after.CacheHits != alone.CacheHits {
			t.Errorf("%s: %d cache hits after the model's run, %d with an empty cache: replies of the model's run were replayed", c, after.CacheHits, alone.CacheHits)
		}
		again := ask(c, shared).Results.Counts
		if again.CacheHits != again.Calls || again.CacheHits == 0 {
			t.Errorf("%s asked again: %d of %d calls from the cache, want all", c, again.CacheHits, again.Calls)
		}
	}
}
