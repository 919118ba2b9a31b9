package eval

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/version"
)

// A rehearsal of two servers in turn: the same command, with the same response
// cache, first against a random baseline and then against a first-option
// baseline on another port. The second run must ask the second server
// every question and record its answers, none replayed from the first.
func TestRehearsalSecondServerAnswersItself(t *testing.T) {
	url1, srv1 := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyRandom})
	url2, srv2 := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyFirst})
	cache := t.TempDir()
	m := model(t, "opensource", "qwen3.6-27b")
	o := baseOptions(sampleBench, t.TempDir(), m)
	o.Endpoints, o.NoCache, o.CacheDir, o.Oracle = []string{url1}, false, cache, protocol.OracleNone
	s1 := run(t, o)
	if srv1.Stats().OK == 0 || s1.Results.Counts.CacheHits != 0 {
		t.Fatalf("first run: %d answers from server 1, %d cache hits", srv1.Stats().OK, s1.Results.Counts.CacheHits)
	}

	o.Endpoints, o.OutDir = []string{url2}, t.TempDir()
	s2 := run(t, o)
	c := s2.Results.Counts
	if c.CacheHits != 0 || srv2.Stats().OK != int64(c.Calls) {
		t.Fatalf("second run: %d of %d calls from the cache, %d answered by the second server", c.CacheHits, c.Calls, srv2.Stats().OK)
	}
	recs, err := rundir.ReadResults(filepath.Join(s2.RunDir, rundir.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		for _, tn := range r.Turns {
			if tn.Status == results.TurnAsked && (tn.Cached || tn.Raw == nil || *tn.Raw != fakemodel.FirstAnswer()) {
				t.Fatalf("%s %s: cached %v, raw %v; want the first-option server's %q", r.KeyID, tn.Turn, tn.Cached, tn.Raw, fakemodel.FirstAnswer())
			}
		}
	}
	man, err := rundir.ReadManifest(s2.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	if id := man.ServerIdentity; id == nil || !id.Verified || id.Policy == nil || *id.Policy != runmodel.PolicyFirst ||
		id.OwnedBy == nil || *id.OwnedBy != provider.BaselineOwner {
		t.Errorf("manifest server_identity %+v, want the first-option baseline's", id)
	}

	// The first server again: its answers are the cache's.
	o.Endpoints, o.OutDir = []string{url1}, t.TempDir()
	before := srv1.Stats().Requests
	s3 := run(t, o)
	if c := s3.Results.Counts; c.CacheHits != c.Calls || srv1.Stats().Requests != before {
		t.Errorf("third run (first server again): %d of %d calls cached, %d requests", c.CacheHits, c.Calls, srv1.Stats().Requests-before)
	}
}

// closedPort is a loopback address on which nothing listens.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

// A closed port fails the preflight: no chat call, no retry, no run
// directory, one line naming the endpoint.
func TestClosedPortFailsPreflight(t *testing.T) {
	var calls atomic.Int64
	testHookCall = func(string, string) { calls.Add(1) }
	t.Cleanup(func() { testHookCall = nil })
	out := t.TempDir()
	o := baseOptions(sampleBench, out, model(t, "opensource", "qwen3.6-27b"))
	o.Endpoints = []string{closedPort(t)}
	o.RetryBase, o.RetryCap = 0, 0 // the defaults: 1 s doubling, as a user gets them
	o.NoCache, o.CacheDir = false, t.TempDir()
	_, err := Run(context.Background(), o)
	var pe *provider.PreflightError
	if !errors.As(err, &pe) || !pe.Unreachable {
		t.Fatalf("error %v, want an unreachable preflight", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, o.Endpoints[0]) || !strings.Contains(msg, "unreachable") {
		t.Errorf("error %q: want one line naming the endpoint", msg)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d call attempts after a failed preflight", n)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("a failed preflight left %d entries in the results folder", len(ents))
	}
}

// Endpoints of two different servers are refused.
func TestEndpointsOfDifferentServersRefused(t *testing.T) {
	url1, _ := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyRandom})
	url2, _ := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyRandom, PolicySeed: 7})
	url3, _ := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyRandom})
	out := t.TempDir()
	o := baseOptions(sampleBench, out, model(t, "opensource", "qwen3.6-27b"))
	o.Endpoints = []string{url1, url2}
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "different servers") || !strings.Contains(err.Error(), "policy_seed=7") {
		t.Fatalf("error %v, want the two servers refused", err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("a refused run left %d entries in the results folder", len(ents))
	}
	// Two endpoints of one server (same policy and seed) are one server.
	o.Endpoints = []string{url1, url3}
	run(t, o)
}

// --no-preflight keys the cache by the sorted endpoint list and records
// the identity as unverified; its entries are never replayed to a run
// with a verified identity, nor to one with other endpoints.
func TestNoPreflightKey(t *testing.T) {
	url1, srv1 := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyRandom})
	url2, srv2 := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyRandom})
	cache := t.TempDir()
	o := baseOptions(sampleBench, t.TempDir(), model(t, "opensource", "qwen3.6-27b"))
	o.Endpoints, o.NoCache, o.CacheDir, o.NoPreflight = []string{url1, url2}, false, cache, true
	s1 := run(t, o)
	if c := s1.Results.Counts; c.CacheHits != 0 {
		t.Fatalf("first run: %d cache hits", c.CacheHits)
	}
	man, err := rundir.ReadManifest(s1.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	id := man.ServerIdentity
	if id == nil || id.Verified || id.Source != runmodel.IdentityUnverified || len(id.Endpoints) != 2 || id.Endpoints[0] > id.Endpoints[1] {
		t.Fatalf("manifest server_identity %+v, want unverified with the sorted endpoints", id)
	}

	sent := func() int64 { return srv1.Stats().Requests + srv2.Stats().Requests }
	for _, c := range []struct {
		name        string
		endpoints   []string
		noPreflight bool
		cached      bool
	}{
		{"same endpoints in another order", []string{url2, url1}, true, true},
		{"one endpoint of the two", []string{url1}, true, false},
		{"same endpoints, preflight", []string{url1, url2}, false, false},
	} {
		o.Endpoints, o.NoPreflight, o.OutDir = c.endpoints, c.noPreflight, t.TempDir()
		before := sent()
		s := run(t, o)
		n := s.Results.Counts
		if c.cached && (n.CacheHits != n.Calls || sent() != before) {
			t.Errorf("%s: %d of %d calls cached, %d requests; want all cached", c.name, n.CacheHits, n.Calls, sent()-before)
		}
		if !c.cached && (n.CacheHits != 0 || sent()-before != int64(n.Calls)) {
			t.Errorf("%s: %d of %d calls cached, %d requests; want none cached", c.name, n.CacheHits, n.Calls, sent()-before)
		}
	}
}

// A run is not resumed against a server of another identity.
func TestResumeAgainstOtherServerRefused(t *testing.T) {
	url1, _ := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyRandom})
	url2, srv2 := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyFirst})
	out := t.TempDir()
	lim := 2
	o := baseOptions(sampleBench, out, model(t, "opensource", "qwen3.6-27b"))
	o.Endpoints = []string{url1}
	o.Selection.Limit = &lim
	s1 := run(t, o)
	before := readFile(t, filepath.Join(s1.RunDir, rundir.ResultsFile))
	manBefore := readFile(t, filepath.Join(s1.RunDir, rundir.ManifestFile))

	o.Endpoints = []string{url2}
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "refusing to mix answers of two servers") || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), `policy="first"`) || !strings.Contains(err.Error(), `policy="random"`) {
		t.Fatalf("error %v, want one line refusing the other server, naming both", err)
	}
	if srv2.Stats().Requests != 0 {
		t.Errorf("the other server got %d chat requests", srv2.Stats().Requests)
	}
	if string(readFile(t, filepath.Join(s1.RunDir, rundir.ResultsFile))) != string(before) ||
		string(readFile(t, filepath.Join(s1.RunDir, rundir.ManifestFile))) != string(manBefore) {
		t.Error("the refused resume changed the run directory")
	}
	// The first server again: the run resumes.
	o.Endpoints = []string{url1}
	run(t, o)
}

// The manifest records the build that wrote it and the server identity;
// an in-process baseline's identity is its policy and seed.
func TestManifestProvenance(t *testing.T) {
	o := baseOptions(sampleBench, t.TempDir(), model(t, "baseline", "random"))
	o.PolicySeed = 4
	s := run(t, o)
	raw := readFile(t, filepath.Join(s.RunDir, rundir.ManifestFile))
	man, err := results.ParseManifest(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, b := man.Provenance, version.Current()
	if p == nil || p.GoVersion != runtime.Version() || p.OS != runtime.GOOS || p.Arch != runtime.GOARCH {
		t.Fatalf("provenance %+v, want %s %s/%s", p, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	if !reflect.DeepEqual(p.Revision, b.Revision) || !reflect.DeepEqual(p.Modified, b.Modified) {
		t.Errorf("provenance revision %v modified %v, want the binary's %v %v", p.Revision, p.Modified, b.Revision, b.Modified)
	}
	// null, not absent, when the binary carries no VCS information
	for _, member := range []string{`"revision":`, `"modified":`, `"go_version":`, `"server_identity":`} {
		if !strings.Contains(string(raw), member) {
			t.Errorf("manifest lacks %s", member)
		}
	}
	id := man.ServerIdentity
	if id == nil || id.Source != runmodel.IdentityInProcess || id.PolicySeed == nil || *id.PolicySeed != 4 || id.SHA256 == "" {
		t.Errorf("server_identity %+v, want the in-process baseline with seed 4", id)
	}
}

// A run directory whose manifest has no server identity (an earlier
// version started it) is not resumed against a server, since nothing
// tells whose answers it holds; an in-process baseline run is (its policy
// and seed are in the manifest's model).
func TestResumeManifestWithoutIdentity(t *testing.T) {
	url, _ := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyRandom})
	lim := 2
	strip := func(dir string) {
		t.Helper()
		name := filepath.Join(dir, rundir.ManifestFile)
		m, err := results.ParseManifest(readFile(t, name))
		if err != nil {
			t.Fatal(err)
		}
		m.ServerIdentity = nil
		b, _ := m.Marshal()
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := baseOptions(sampleBench, t.TempDir(), model(t, "opensource", "qwen3.6-27b"))
	o.Endpoints, o.Selection.Limit = []string{url}, &lim
	s := run(t, o)
	strip(s.RunDir)
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "without a recorded server identity") {
		t.Errorf("HTTP run: error %v, want a refusal", err)
	}

	b := baseOptions(sampleBench, t.TempDir(), model(t, "baseline", "random"))
	b.Selection.Limit = &lim
	s = run(t, b)
	strip(s.RunDir)
	b.Selection.Limit = nil
	if _, err := Run(context.Background(), b); err == nil || !strings.Contains(err.Error(), "different settings") {
		t.Fatalf("baseline run with another selection: error %v, want the settings refused", err)
	}
	b.Selection.Limit = &lim
	run(t, b)
}

// TestCacheKeyedByEndpoint: a server that reports the identity of
// another (two serve-baseline processes with one policy and seed report
// the same) never fills entries replayed for the other's endpoint; a run
// over both endpoints replays the entries either one filled.
func TestCacheKeyedByEndpoint(t *testing.T) {
	url1, srv1 := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyFirst})
	url2, srv2 := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyFirst})
	cache := t.TempDir()
	o := baseOptions(sampleBench, t.TempDir(), model(t, "opensource", "qwen3.6-27b"))
	o.Endpoints, o.NoCache, o.CacheDir = []string{url1}, false, cache
	s1 := run(t, o)
	if s1.Results.Counts.Calls == 0 || srv1.Stats().Requests != int64(s1.Results.Counts.Calls) {
		t.Fatalf("first run: %d calls, %d requests", s1.Results.Counts.Calls, srv1.Stats().Requests)
	}
	o.Endpoints, o.OutDir = []string{url2}, t.TempDir()
	s2 := run(t, o)
	if n := s2.Results.Counts; n.CacheHits != 0 || srv2.Stats().Requests != int64(n.Calls) {
		t.Errorf("other endpoint, same reported identity: %d of %d calls from the cache, %d requests; want none cached", n.CacheHits, n.Calls, srv2.Stats().Requests)
	}
	before := srv1.Stats().Requests + srv2.Stats().Requests
	o.Endpoints, o.OutDir = []string{url2 + "/", url1}, t.TempDir()
	s3 := run(t, o)
	if n := s3.Results.Counts; n.CacheHits != n.Calls || srv1.Stats().Requests+srv2.Stats().Requests != before {
		t.Errorf("both endpoints: %d of %d calls from the cache; want all", n.CacheHits, n.Calls)
	}
}

// A run resumed against another endpoint of the same server names both
// in its manifest, the first session's first; a session against known
// endpoints, or one with no record left to ask, leaves the manifest's
// bytes as they were.
func TestResumeAgainstOtherEndpointRecordsIt(t *testing.T) {
	url1, _ := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyRandom})
	url2, srv2 := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyRandom})
	url3, _ := startServer(t, fakemodel.ServerConfig{Policy: runmodel.PolicyRandom})
	o := baseOptions(sampleBench, t.TempDir(), model(t, "opensource", "qwen3.6-27b"))
	o.Endpoints = []string{url1}
	s1 := run(t, o)
	// An interrupted first session: only its first record was written.
	resPath := filepath.Join(s1.RunDir, rundir.ResultsFile)
	lines := strings.SplitAfter(string(readFile(t, resPath)), "\n")
	if len(lines) < 3 {
		t.Fatalf("the first session wrote %d lines; the test needs at least two records", len(lines)-1)
	}
	if err := os.WriteFile(resPath, []byte(lines[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	endpoints := func() []string {
		man, err := rundir.ReadManifest(s1.RunDir)
		if err != nil {
			t.Fatal(err)
		}
		return man.Model.Endpoints
	}

	for _, c := range []struct {
		name      string
		endpoints []string
		want      []string
	}{
		{"resumed against another endpoint", []string{url2}, []string{url1, url2}},
		{"both again, in the other order", []string{url2, url1}, []string{url1, url2}},
		{"the first alone", []string{url1}, []string{url1, url2}},
		{"a third with nothing left to ask", []string{url3}, []string{url1, url2}},
	} {
		before := readFile(t, filepath.Join(s1.RunDir, rundir.ManifestFile))
		o.Endpoints = c.endpoints
		run(t, o)
		if got := endpoints(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: manifest endpoints %q, want %q", c.name, got, c.want)
		}
		after := readFile(t, filepath.Join(s1.RunDir, rundir.ManifestFile))
		if changed := string(before) != string(after); changed != (c.name == "resumed against another endpoint") {
			t.Errorf("%s: manifest rewritten %v", c.name, changed)
		}
	}
	if srv2.Stats().OK == 0 {
		t.Errorf("the second endpoint answered no call")
	}
}
