package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/validate"
)

// The oracle policy answers the ground truth, so every stage of every
// record must be correct in every oracle and parse mode: this exercises
// the whole chain (plan, calls, parse, scoring, export, reference CSVs).
func TestOracleScoresFull(t *testing.T) {
	t.Parallel()
	for _, bench := range []string{sampleBench, generatedBench(t)} {
		for _, oracle := range []protocol.OracleMode{protocol.OracleNone, protocol.OracleImplicit, protocol.OracleExplicit} {
			for _, pm := range []parse.Mode{parse.ModeReference, parse.ModeStrict} {
				t.Run(fmt.Sprintf("%s/%s/%s", filepath.Base(bench), oracle, pm), func(t *testing.T) {
					o := baseOptions(bench, t.TempDir(), model(t, "baseline", "oracle"))
					o.Oracle, o.Parse = oracle, pm
					s := run(t, o)
					c := s.Results.Counts
					if c.RecordsOK != s.Selected || c.RecordsError != 0 || c.ParseFailures != 0 {
						t.Fatalf("counts %+v, selected %d", c, s.Selected)
					}
					if want := expectedCalls(t, bench); c.Calls != want {
						t.Errorf("calls = %d, want %d (one per question)", c.Calls, want)
					}
					for _, a := range s.Results.Accuracy {
						if a.N > 0 && (*a.E2E != 1 || *a.OraclePassed != 1) {
							t.Errorf("%s stage %d: e2e %v op %v", a.Path, a.Stage, *a.E2E, *a.OraclePassed)
						}
					}
					csv := string(readFile(t, filepath.Join(s.RunDir, rundir.RefSummaryFile)))
					for _, line := range strings.Split(strings.TrimSuffix(csv, "\r\n"), "\r\n")[1:] {
						f := strings.Split(line, ",")
						path := f[0]
						want := map[string][]string{
							"revision_required": {"1.0", "1.0", "1.0", "1.0"},
							"revision_free":     {"1.0", "1.0", "0.0", "1.0"},
							"lesion_free":       {"1.0", "0.0", "0.0", "0.0"},
						}[path]
						if !slices.Equal(f[3:7], want) {
							t.Errorf("summary CSV row %q, want stage accuracies %v", line, want)
						}
					}
					all, err := ojson.Parse(readFile(t, filepath.Join(s.RunDir, rundir.AllResultsFile)))
					if err != nil {
						t.Fatal(err)
					}
					if len(all.O) != s.Selected {
						t.Errorf("all_results.json has %d records, want %d", len(all.O), s.Selected)
					}
					for _, ev := range oracleEvents(t, s.RunDir) {
						if ev.Triggered {
							t.Errorf("an oracle decision triggered on a perfect run: %+v", ev)
						}
					}
				})
			}
		}
	}
}

func oracleEvents(t *testing.T, dir string) []results.Event {
	recs, err := rundir.ReadResults(filepath.Join(dir, rundir.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []results.Event
	for _, r := range recs {
		out = append(out, r.OracleEvents...)
	}
	return out
}

// The random policy is a pure function of the seed and the request's
// texts, so concurrency must not change a single answer.
func TestRandomSameAtAnyConcurrency(t *testing.T) {
	bench := generatedBench(t)
	var runs [][]string
	var exports [][]byte
	for _, c := range []int{1, 32} {
		o := baseOptions(bench, t.TempDir(), model(t, "baseline", "random"))
		o.Concurrency, o.PolicySeed = c, 7
		s := run(t, o)
		runs = append(runs, stripTiming(t, filepath.Join(s.RunDir, rundir.ResultsFile)))
		exports = append(exports, readFile(t, filepath.Join(s.RunDir, rundir.AllResultsFile)))
		if s.Results.Counts.RecordsOK != s.Selected {
			t.Fatalf("concurrency %d: %+v", c, s.Results.Counts)
		}
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Fatal("results.jsonl differs between concurrency 1 and 32")
	}
	if string(exports[0]) == "" || string(exports[0]) != string(exports[1]) {
		t.Fatal("all_results.json differs between concurrency 1 and 32")
	}
	// and a different seed gives different answers
	o := baseOptions(bench, t.TempDir(), model(t, "baseline", "random"))
	o.PolicySeed = 8
	s := run(t, o)
	if slices.Equal(runs[0], stripTiming(t, filepath.Join(s.RunDir, rundir.ResultsFile))) {
		t.Fatal("policy seeds 7 and 8 gave identical runs")
	}
}

// The same random policy served over HTTP gives the in-process answers.
func TestServerMatchesInProcess(t *testing.T) {
	bench := generatedBench(t)
	url, _ := startServer(t, fakemodel.ServerConfig{Policy: "random", PolicySeed: 3})
	o := baseOptions(bench, t.TempDir(), model(t, "opensource", "test/served-random"))
	o.Endpoints, o.PolicySeed = []string{url}, 3
	net := run(t, o)
	o2 := baseOptions(bench, t.TempDir(), model(t, "baseline", "random"))
	o2.PolicySeed = 3
	local := run(t, o2)
	answers := func(dir string) []string {
		recs, _ := rundir.ReadResults(filepath.Join(dir, rundir.ResultsFile))
		var out []string
		for _, r := range results.Latest(recs) {
			for _, tn := range r.Turns {
				if tn.Raw != nil {
					out = append(out, r.KeyID+" "+tn.Turn+" "+*tn.Raw)
				}
			}
		}
		return out
	}
	a, b := answers(net.RunDir), answers(local.RunDir)
	if len(a) == 0 || !slices.Equal(a, b) {
		t.Fatalf("served and in-process random answers differ (%d vs %d answers)", len(a), len(b))
	}
	if !strings.HasSuffix(filepath.Dir(net.RunDir), "opensource_test--served-random") {
		t.Errorf("run dir %s does not use the directory-safe raw id", net.RunDir)
	}
}

// Faults of every kind: retryable ones are retried, empty answers are
// recorded as answers; every record ends ok.
func TestFaultInjection(t *testing.T) {
	t.Parallel()
	bench := generatedBench(t)
	for _, tc := range []struct {
		name       string
		rate       float64
		maxRetries int
	}{
		{"10pct-total", 0.02, 5},
		{"10pct-each", 0.10, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, srv := startServer(t, fakemodel.ServerConfig{Policy: "random", Fail429: tc.rate, Fail500: tc.rate,
				FailTimeout: tc.rate, FailMalformed: tc.rate, FailEmpty: tc.rate, RetryAfter: 20 * time.Millisecond, FaultSeed: 11})
			o := baseOptions(bench, t.TempDir(), model(t, "opensource", "fault-test"))
			o.Endpoints, o.MaxRetries, o.Timeout, o.Concurrency = []string{url}, tc.maxRetries, time.Second, 16
			s := run(t, o)
			c := s.Results.Counts
			st := srv.Stats()
			if c.RecordsOK != s.Selected || c.RecordsError != 0 {
				recs, _ := rundir.ReadResults(filepath.Join(s.RunDir, rundir.ResultsFile))
				for _, r := range recs {
					if r.Error != nil {
						t.Errorf("%s: %s", r.KeyID, *r.Error)
					}
				}
				t.Fatalf("counts %+v (server %+v)", c, st)
			}
			if st.Fail429 == 0 || st.Fail500 == 0 || st.FailTimeout == 0 || st.FailMalformed == 0 || st.Empty == 0 {
				t.Fatalf("not every fault kind was injected: %+v", st)
			}
			if c.EmptyAnswers != int(st.Empty) {
				t.Errorf("empty answers recorded %d, server sent %d", c.EmptyAnswers, st.Empty)
			}
			if c.Calls != expectedCalls(t, bench) {
				t.Errorf("calls %d, want %d", c.Calls, expectedCalls(t, bench))
			}
			recs, _ := rundir.ReadResults(filepath.Join(s.RunDir, rundir.ResultsFile))
			retried := 0
			for _, r := range recs {
				for _, tn := range r.Turns {
					if tn.Attempts > 1 {
						retried++
					}
				}
			}
			if retried == 0 {
				t.Error("no turn records more than one attempt")
			}
		})
	}
}

// A 4xx other than 429 is not retried and fails the record with its
// reason; --retry-errors re-asks exactly those records.
func TestClientErrorAndRetryErrors(t *testing.T) {
	t.Parallel()
	bench := generatedBench(t)
	srv, _ := fakemodel.NewServer(fakemodel.ServerConfig{Policy: "random"})
	var refuse atomic.Bool
	refuse.Store(true)
	var requests atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // the preflight: not a chat call
			srv.ServeHTTP(w, r)
			return
		}
		n := requests.Add(1)
		if refuse.Load() && n%7 == 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"image too large","type":"invalid_request_error"}}`)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	out := t.TempDir()
	o := baseOptions(bench, out, model(t, "opensource", "retry-errors-test"))
	o.Endpoints = []string{hs.URL + "/v1"}
	s := run(t, o)
	nerr := s.Results.Counts.RecordsError
	if nerr == 0 {
		t.Fatal("no record failed on HTTP 400")
	}
	recs, _ := rundir.ReadResults(filepath.Join(s.RunDir, rundir.ResultsFile))
	for _, r := range recs {
		if r.Status == results.StatusError {
			if r.Error == nil || !strings.Contains(*r.Error, "400") || !strings.Contains(*r.Error, "image too large") {
				t.Errorf("error record %s: reason %v", r.KeyID, r.Error)
			}
			for _, tn := range r.Turns {
				if tn.Attempts > 1 {
					t.Errorf("%s %s: a 400 was retried (%d attempts)", r.KeyID, tn.Turn, tn.Attempts)
				}
			}
		}
	}
	// A plain restart asks nothing; --retry-errors re-asks the errors.
	before := countLines(t, filepath.Join(s.RunDir, rundir.ResultsFile))
	s2 := run(t, o)
	if s2.Attempted != 0 || countLines(t, filepath.Join(s.RunDir, rundir.ResultsFile)) != before {
		t.Fatalf("plain restart asked %d records", s2.Attempted)
	}
	refuse.Store(false)
	o.RetryErrors = true
	s3 := run(t, o)
	if s3.Attempted != nerr {
		t.Errorf("--retry-errors asked %d records, want %d", s3.Attempted, nerr)
	}
	if c := s3.Results.Counts; c.RecordsOK != s.Selected || c.RecordsError != 0 {
		t.Errorf("after --retry-errors: %+v", c)
	}
	if got := countLines(t, filepath.Join(s.RunDir, rundir.ResultsFile)); got != before+nerr {
		t.Errorf("results.jsonl has %d lines, want %d (new lines appended, old kept)", got, before+nerr)
	}
}

// Resume refuses different settings and names every difference.
func TestResumeRefusesDifferentSettings(t *testing.T) {
	out := t.TempDir()
	lim := 3
	o := baseOptions(sampleBench, out, model(t, "baseline", "random"))
	o.Selection.Limit = &lim
	run(t, o)
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   []string
	}{
		{"limit", func(o *Options) { l := 4; o.Selection.Limit = &l }, []string{"selection.limit: 3 → 4", "keys_sha256", "selection_sha256"}},
		{"policy seed", func(o *Options) { o.PolicySeed = 9 }, []string{"model.policy_seed: 0 → 9"}},
		{"seed and lesions", func(o *Options) { o.Selection.Seed = 5; o.Selection.Lesions = []string{"edema"} }, []string{"selection.seed", "selection.lesions"}},
		{"profile", func(o *Options) { p := *o.Profile; p.System = "Other."; o.Profile = &p }, []string{"prompt_profile.sha256"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o2 := o
			o2.Profile = nil
			o2.defaults()
			tc.change(&o2)
			_, err := Run(context.Background(), o2)
			if err == nil {
				t.Fatal("restart with different settings was accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q:\n%v", w, err)
				}
			}
		})
	}
	// Changing what may change (concurrency) is a plain resume.
	o.Concurrency = 3
	if s := run(t, o); s.Attempted != 0 {
		t.Errorf("resume re-asked %d records", s.Attempted)
	}
}

// An image that fails verification makes its record an error naming the
// file, before any call; the other records run.
func TestImageVerificationFailure(t *testing.T) {
	bench := t.TempDir()
	outdirtest.CopyTree(t, sampleBench, bench)
	bad := filepath.Join(bench, "chexpercept", "pneumonia_s57001234_positive_0", "detection_qa", "xray.png")
	if err := os.WriteFile(bad, []byte("\x89PNG\r\n\x1a\nnot really"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := baseOptions(bench, t.TempDir(), model(t, "baseline", "oracle"))
	o.AllowInvalid = true
	s := run(t, o)
	recs, _ := rundir.ReadResults(filepath.Join(s.RunDir, rundir.ResultsFile))
	for _, r := range recs {
		if r.KeyID == "pneumonia_s57001234_positive_0" {
			if r.Status != results.StatusError || r.Error == nil || !strings.Contains(*r.Error, "detection_qa/xray.png") {
				t.Errorf("bad image record: status %s error %v", r.Status, r.Error)
			}
			for _, tn := range r.Turns {
				if tn.Status == results.TurnAsked {
					t.Errorf("turn %s was asked", tn.Turn)
				}
			}
		} else if r.Status != results.StatusOK {
			t.Errorf("%s: %s %v", r.KeyID, r.Status, r.Error)
		}
	}
	// Without --allow-invalid the benchmark is refused.
	o.AllowInvalid = false
	o.OutDir = t.TempDir()
	if _, err := Run(context.Background(), o); !errors.Is(err, validate.ErrInvalid) || !strings.Contains(err.Error(), "fails validation with") {
		t.Errorf("invalid benchmark accepted or unclear error: %v", err)
	}
}

// Deterministic calls are cached; a second run asks the server nothing,
// records cached: true, latency 0 and cost 0, and gives the same answers.
func TestResponseCache(t *testing.T) {
	bench := sampleBench
	url, srv := startServer(t, fakemodel.ServerConfig{Policy: "random"})
	cache := t.TempDir()
	o := baseOptions(bench, t.TempDir(), model(t, "opensource", "cache-test"))
	o.Endpoints, o.NoCache, o.CacheDir = []string{url}, false, cache
	s1 := run(t, o)
	first := srv.Stats().Requests
	if s1.Results.Counts.CacheHits != 0 || first == 0 {
		t.Fatalf("first run: %d hits, %d requests", s1.Results.Counts.CacheHits, first)
	}
	// The same settings again (another results folder): everything is
	// known.
	o.OutDir = t.TempDir()
	s2 := run(t, o)
	if got := srv.Stats().Requests; got != first {
		t.Errorf("second run sent %d requests", got-first)
	}
	c := s2.Results.Counts
	if c.CacheHits != c.Calls {
		t.Errorf("cache hits %d of %d calls", c.CacheHits, c.Calls)
	}
	recs, _ := rundir.ReadResults(filepath.Join(s2.RunDir, rundir.ResultsFile))
	for _, r := range recs {
		for _, tn := range r.Turns {
			if tn.Status == results.TurnAsked && (!tn.Cached || tn.LatencyMS != 0 || tn.Attempts != 0 || tn.CostUSD == nil || *tn.CostUSD != 0) {
				t.Fatalf("%s %s: cached %v latency %d attempts %d cost %v", r.KeyID, tn.Turn, tn.Cached, tn.LatencyMS, tn.Attempts, tn.CostUSD)
			}
		}
	}
	strip := func(lines []string) []string {
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = strings.ReplaceAll(strings.ReplaceAll(l, `"cached":true`, `"cached":false`), `"cost_usd":0.0`, `"cost_usd":null`)
		}
		return out
	}
	if !slices.Equal(strip(stripTiming(t, filepath.Join(s1.RunDir, rundir.ResultsFile))), strip(stripTiming(t, filepath.Join(s2.RunDir, rundir.ResultsFile)))) {
		t.Error("cached run differs from the first run")
	}
	// Another oracle mode: turns before the first triggered decision are
	// identical and come from the cache; only later ones are asked.
	o.OutDir, o.Oracle = t.TempDir(), protocol.OracleNone
	before := srv.Stats().Requests
	s4 := run(t, o)
	sent := int(srv.Stats().Requests - before)
	if c := s4.Results.Counts; c.CacheHits == 0 || sent == 0 || c.CacheHits+sent != c.Calls {
		t.Errorf("oracle none after implicit: %d hits + %d sent, %d calls", c.CacheHits, sent, c.Calls)
	}
	o.Oracle = ""

	// Non-deterministic sampling (temperature 1) is never cached.
	o.OutDir = t.TempDir()
	o.Model = model(t, "openai", "cache-test-t1")
	t.Setenv("OPENAI_API_KEY", "sk-test-not-used-0000")
	s3 := run(t, o)
	if s3.Results.Counts.CacheHits != 0 {
		t.Error("a temperature-1 call was served from the cache")
	}
}

// With several endpoints a failing one's cases move to the others.
func TestEndpointFailover(t *testing.T) {
	bench := generatedBench(t)
	good, goodSrv := startServer(t, fakemodel.ServerConfig{Policy: "random"})
	bad, badSrv := startServer(t, fakemodel.ServerConfig{Policy: "random", Fail500: 1})
	o := baseOptions(bench, t.TempDir(), model(t, "opensource", "failover-test"))
	o.Endpoints = []string{bad, good}
	s := run(t, o)
	if c := s.Results.Counts; c.RecordsOK != s.Selected {
		t.Fatalf("counts %+v", c)
	}
	if badSrv.Stats().Fail500 == 0 || goodSrv.Stats().OK < int64(expectedCalls(t, bench)) {
		t.Errorf("bad endpoint %+v, good endpoint %+v", badSrv.Stats(), goodSrv.Stats())
	}
}

// Two healthy endpoints share the load, and every case keeps its
// endpoint for all of its turns.
func TestEndpointsCaseAffinity(t *testing.T) {
	bench := generatedBench(t)
	hits := make(chan string, 10000)
	mk := func(name string) string {
		srv, _ := fakemodel.NewServer(fakemodel.ServerConfig{Policy: "first"})
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits <- name
			srv.ServeHTTP(w, r)
		}))
		t.Cleanup(hs.Close)
		return hs.URL + "/v1"
	}
	a, b := mk("a"), mk("b")
	o := baseOptions(bench, t.TempDir(), model(t, "opensource", "affinity-test"))
	o.Endpoints, o.Concurrency = []string{a, b}, 8
	// the runner reports each attempt's case and endpoint to the hook
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	perCase := map[string]map[string]bool{}
	testHookCall = func(key, ep string) {
		<-mu
		if perCase[key] == nil {
			perCase[key] = map[string]bool{}
		}
		perCase[key][ep] = true
		mu <- struct{}{}
	}
	defer func() { testHookCall = nil }()
	run(t, o)
	close(hits)
	counts := map[string]int{}
	for h := range hits {
		counts[h]++
	}
	if counts["a"] == 0 || counts["b"] == 0 {
		t.Errorf("load not shared: %v", counts)
	}
	for key, eps := range perCase {
		if len(eps) != 1 {
			t.Errorf("case %s used %d endpoints", key, len(eps))
		}
	}
}

// --dry-run counts without sending or writing anything.
func TestDryRun(t *testing.T) {
	out := t.TempDir()
	o := baseOptions(sampleBench, out, model(t, "azure", "gpt-5.4"))
	o.DryRun = true
	s := run(t, o)
	d := s.DryRun
	if d == nil || d.Records != 7 || d.Calls != expectedCalls(t, sampleBench) {
		t.Fatalf("dry run %+v", d)
	}
	// payloads: every call re-sends the earlier images (§1)
	if d.ImagePayloads <= d.DistinctImages || d.InputTokens <= 0 || d.CostLow == nil || *d.CostHigh <= *d.CostLow {
		t.Errorf("dry run figures %+v", d)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("dry run wrote %d entries into --out", len(entries))
	}
	// The text-only control counts the same calls and no image.
	o.Control = results.ControlTextOnly
	c := run(t, o).DryRun
	if c.Calls != d.Calls || c.ImagePayloads != 0 || c.DistinctImages != 0 || c.ImageBytes != 0 || c.InputTokens >= d.InputTokens {
		t.Errorf("text-only dry run %+v, want %d calls and no image", c, d.Calls)
	}
}

// Sharded runs write into shard folders and together cover the
// selection once.
func TestShards(t *testing.T) {
	out := t.TempDir()
	seen := map[string]int{}
	for i := 1; i <= 3; i++ {
		o := baseOptions(sampleBench, out, model(t, "baseline", "first"))
		o.Selection.Shard = &results.Shard{I: i, N: 3}
		s := run(t, o)
		if filepath.Base(s.RunDir) != fmt.Sprintf("shard-%d-of-3", i) {
			t.Errorf("shard dir %s", s.RunDir)
		}
		recs, _ := rundir.ReadResults(filepath.Join(s.RunDir, rundir.ResultsFile))
		for _, r := range recs {
			seen[r.KeyID]++
			if r.Index%3 != i-1 {
				t.Errorf("record index %d in shard %d", r.Index, i)
			}
		}
	}
	if len(seen) != 7 {
		t.Errorf("shards cover %d records, want 7", len(seen))
	}
}

// Records are handed out longest first, ties in benchmark order (at
// concurrency 1 the calls show the order), and the order changes no
// result: a run in benchmark order gives the same results.jsonl (timing
// aside) and all_results.json.
func TestDispatchLongestFirst(t *testing.T) {
	bench := generatedBench(t)
	b, err := benchdir.Load(bench)
	if err != nil {
		t.Fatal(err)
	}
	var want, inFile []string
	for q := benchmark.NumQuestions; q > 0; q-- {
		for _, r := range b.Records {
			if r.Questions() == q {
				want = append(want, r.KeyID)
			}
		}
	}
	for _, r := range b.Records {
		inFile = append(inFile, r.KeyID)
	}
	if slices.Equal(want, inFile) {
		t.Fatal("the fixture is already longest first: the test would not see the order")
	}
	defer func() { dispatchOrder, testHookCall = longestFirst, nil }()
	var started [][]string
	var runs [][]string
	var exports [][]byte
	for _, order := range []func(a, b *benchmark.Record) int{
		longestFirst,
		func(a, b *benchmark.Record) int { return 0 }, // benchmark order
	} {
		dispatchOrder = order
		var keys []string
		testHookCall = func(key, _ string) {
			if len(keys) == 0 || keys[len(keys)-1] != key {
				keys = append(keys, key)
			}
		}
		o := baseOptions(bench, t.TempDir(), model(t, "baseline", "random"))
		o.Concurrency, o.PolicySeed = 1, 7
		s := run(t, o)
		started = append(started, keys)
		runs = append(runs, stripTiming(t, filepath.Join(s.RunDir, rundir.ResultsFile)))
		exports = append(exports, readFile(t, filepath.Join(s.RunDir, rundir.AllResultsFile)))
	}
	if !slices.Equal(started[0], want) {
		t.Errorf("records started in the order\n%v\nwant longest first, ties in benchmark order:\n%v", started[0], want)
	}
	if !slices.Equal(started[1], inFile) {
		t.Errorf("the comparison run did not go in benchmark order: %v", started[1])
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Error("results.jsonl depends on the dispatch order")
	}
	if len(exports[0]) == 0 || !bytes.Equal(exports[0], exports[1]) {
		t.Error("all_results.json depends on the dispatch order")
	}
}
