package respcache

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

func f64(v float64) *float64 { return &v }

func msgs(text string, img *provider.Image) []provider.Message {
	m := []provider.Message{{Role: provider.RoleSystem, Text: "sys"}, {Role: provider.RoleUser, Text: text}}
	if img != nil {
		m[1].Images = []*provider.Image{img}
	}
	return m
}

func TestKeyDistinguishesEveryInput(t *testing.T) {
	a, b := provider.NewImage([]byte("png-a")), provider.NewImage([]byte("png-b"))
	greedy := runmodel.Sampling{Temperature: f64(0)}
	seed := int64(1)
	const ep = "http://127.0.0.1:8000/v1"
	base := Key(ep, "id1", "opensource", "m", msgs("q", a), greedy, "h")
	cases := []struct {
		name string
		key  string
	}{
		{"endpoint", Key("http://127.0.0.1:8001/v1", "id1", "opensource", "m", msgs("q", a), greedy, "h")},
		{"server identity", Key(ep, "id2", "opensource", "m", msgs("q", a), greedy, "h")},
		{"provider", Key(ep, "id1", "openai", "m", msgs("q", a), greedy, "h")},
		{"model", Key(ep, "id1", "opensource", "m2", msgs("q", a), greedy, "h")},
		{"text", Key(ep, "id1", "opensource", "m", msgs("q2", a), greedy, "h")},
		{"image", Key(ep, "id1", "opensource", "m", msgs("q", b), greedy, "h")},
		{"no image", Key(ep, "id1", "opensource", "m", msgs("q", nil), greedy, "h")},
		{"sampling", Key(ep, "id1", "opensource", "m", msgs("q", a), runmodel.Sampling{Temperature: f64(0), TopP: f64(1)}, "h")},
		{"profile", Key(ep, "id1", "opensource", "m", msgs("q", a), greedy, "h2")},
		{"temperature", Key(ep, "id1", "opensource", "m", msgs("q", a), runmodel.Sampling{Temperature: f64(0.2)}, "h")},
		{"seed", Key(ep, "id1", "opensource", "m", msgs("q", a), runmodel.Sampling{Temperature: f64(0), Seed: &seed}, "h")},
		{"extra body", Key(ep, "id1", "opensource", "m", msgs("q", a), runmodel.Sampling{Temperature: f64(0), ExtraBody: `{"top_k":20}`}, "h")},
		{"extra body value", Key(ep, "id1", "opensource", "m", msgs("q", a), runmodel.Sampling{Temperature: f64(0), ExtraBody: `{"top_k":21}`}, "h")},
		{"split", Key(ep, "id1", "opensource", "m", []provider.Message{{Role: provider.RoleSystem, Text: "sy"}, {Role: provider.RoleUser, Text: "sq", Images: []*provider.Image{a}}}, greedy, "h")},
		{"control", ControlKey(base, "text-only")},
	}
	for _, c := range cases {
		if c.key == base {
			t.Errorf("%s: key did not change", c.name)
		}
	}
	if k := Key(ep, "", "opensource", "m", msgs("q", a), greedy, "h"); k != "" {
		t.Errorf("a call to a server of unknown identity got key %s, want none", k)
	}
	if again := Key(ep, "id1", "opensource", "m", msgs("q", provider.NewImage([]byte("png-a"))), greedy, "h"); again != base {
		t.Errorf("same inputs gave a different key")
	}
}

// A control run's keys are its own, one per control, and a run without a
// control keeps its keys; a call that may not be cached stays uncached.
func TestControlKey(t *testing.T) {
	const key = "0123abcd"
	a, b := ControlKey(key, "text-only"), ControlKey(key, "blank-radiograph")
	if a == key || b == key || a == b || len(a) != 64 {
		t.Errorf("control keys %q and %q of %q: want two distinct new keys", a, b, key)
	}
	if ControlKey(key, "text-only") != a {
		t.Error("the same control key differs between calls")
	}
	if k := ControlKey(key, ""); k != key {
		t.Errorf("without a control the key became %q", k)
	}
	if k := ControlKey("", "text-only"); k != "" {
		t.Errorf("an uncacheable call got the control key %q", k)
	}
}

// Keys are stable across releases, so existing caches keep hitting. (The
// values changed twice, when the server identity and then the endpoint
// entered the key: entries keyed without them must never be replayed.)
func TestKeyStable(t *testing.T) {
	const ep = "http://127.0.0.1:8000/v1"
	vllm, _ := runmodel.DefaultSampling(runmodel.BackendVLLM)
	openai, _ := runmodel.DefaultSampling(runmodel.BackendOpenAI)
	for _, c := range []struct{ got, want string }{
		{Key(ep, "id1", "opensource", "m", msgs("q", provider.NewImage([]byte("png-a"))), vllm, "h"), "c743f6891e9650826aa9234217ebf58775fafa15b5f6fb9218090cf9af80edd2"}, // vLLM sampling sends max_completion_tokens
		{Key(ep, "id1", "openai", "m", msgs("q", nil), openai, "h"), "200e801d981d80d9dafa454d25875fd66bafde50c86464f9307f5cbede824fcb"},
	} {
		if c.got != c.want {
			t.Errorf("key %s, want %s", c.got, c.want)
		}
	}
}

func TestCacheRoundTripAndConcurrency(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, ok, err := c.Get(ctx, "missing"); ok || err != nil {
		t.Fatalf("miss: ok=%v err=%v", ok, err)
	}
	if err := c.Put(ctx, "k", Entry{Text: ""}); err == nil {
		t.Fatal("an empty answer was stored")
	}
	want := Entry{Text: "Answer: 2", FinishReason: "stop", Usage: &runmodel.Usage{Input: 10, Output: 2, Total: 12}}
	if err := c.Put(ctx, "k", want); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := c.Put(ctx, "k"+string(rune('a'+i)), want); err != nil {
				t.Error(err)
			}
			if _, ok, err := c.Get(ctx, "k"); !ok || err != nil {
				t.Errorf("concurrent get: ok=%v err=%v", ok, err)
			}
		}(i)
	}
	wg.Wait()
	c.Close()

	c2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	got, ok, err := c2.Get(ctx, "k")
	if !ok || err != nil || got.Text != want.Text || got.FinishReason != "stop" || got.Usage == nil || got.Usage.Total != 12 {
		t.Fatalf("reopened: %+v ok=%v err=%v", got, ok, err)
	}
	if n, _ := c2.Len(ctx); n != 9 {
		t.Fatalf("entries = %d, want 9", n)
	}
}

func TestCacheable(t *testing.T) {
	for _, c := range []struct {
		s    runmodel.Sampling
		want bool
	}{
		{runmodel.Sampling{Temperature: f64(0)}, true},
		{runmodel.Sampling{Temperature: f64(1)}, false},
		{runmodel.Sampling{}, false},
	} {
		if got := Cacheable(c.s); got != c.want {
			t.Errorf("Cacheable(%+v) = %v", c.s, got)
		}
	}
}

// TestOpenConcurrently: processes sharing a cache directory (a Slurm
// array's shards) open a new cache at the same moment; none may fail with
// "database is locked" while the first switches it to WAL.
func TestOpenConcurrently(t *testing.T) {
	for round := 0; round < 20; round++ {
		dir := filepath.Join(t.TempDir(), "cache?x#y") // escaped, not DSN parameters
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := Open(dir)
				if err == nil {
					err = c.Close()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, opener %d: %v", round, i, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, FileName)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenRefusesLinksAndFIFOs: responses.sqlite (or a
// file SQLite keeps beside it) that is a symbolic link or a FIFO is
// refused before SQLite opens it: another database it leads to gains no
// table, an empty outside file stays empty, a dangling link's target is
// not created, and a FIFO does not block.
func TestOpenRefusesLinksAndFIFOs(t *testing.T) {
	for _, tc := range []string{"link to a database", "link to an empty file", "dangling link", "fifo", "wal link"} {
		t.Run(tc, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "cache")
			outside := filepath.Join(root, "outside")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(outside, "review.sqlite")
			path := filepath.Join(dir, FileName)
			var err error
			switch tc {
			case "link to a database":
				db, openErr := sql.Open("sqlite", "file:"+filepath.ToSlash(target)+"?_pragma=journal_mode(WAL)")
				if openErr != nil {
					t.Fatal(openErr)
				}
				if _, err := db.Exec(`CREATE TABLE decisions (k TEXT)`); err != nil {
					t.Fatal(err)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				err = os.Symlink(target, path)
			case "link to an empty file":
				if err := os.WriteFile(target, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				err = os.Symlink(target, path)
			case "dangling link":
				err = os.Symlink(target, path)
			case "fifo":
				err = syscall.Mkfifo(path, 0o644)
			case "wal link":
				if err := os.WriteFile(target, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				err = os.Symlink(target, path+"-wal")
			}
			if err != nil {
				t.Fatal(err)
			}
			before := outdirtest.Snapshot(t, root)
			done := make(chan error, 1)
			go func() {
				c, err := Open(dir)
				if err == nil {
					c.Close()
				}
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Open blocked")
			}
			if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open = %v, want a refusal naming %s", err, path)
			}
			outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, root))
		})
	}
}

// TestEndpoint: spellings of one endpoint give one key part; other hosts,
// ports, schemes or paths give others; credentials never enter.
func TestEndpoint(t *testing.T) {
	const want = "http://127.0.0.1:8000/v1"
	for _, raw := range []string{"http://127.0.0.1:8000/v1", "HTTP://127.0.0.1:8000/v1/", "http://user:secret@127.0.0.1:8000/v1?key=abc#f", "http://127.0.0.1:8000//v1"} {
		if got := Endpoint(raw); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", raw, got, want)
		}
	}
	if got := Endpoint("https://API.example.com:443/v1"); got != "https://api.example.com/v1" {
		t.Errorf("default port kept: %q", got)
	}
	seen := map[string]string{}
	for _, raw := range []string{want, "http://127.0.0.1:8001/v1", "https://127.0.0.1:8000/v1", "http://127.0.0.2:8000/v1", "http://127.0.0.1:8000/v2", "http://[::1]:8000/v1"} {
		got := Endpoint(raw)
		if prev, ok := seen[got]; ok {
			t.Errorf("%q and %q both give %q", prev, raw, got)
		}
		seen[got] = raw
		if strings.Contains(got, "secret") {
			t.Errorf("%q keeps a credential", got)
		}
	}
}
