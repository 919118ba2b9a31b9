package webapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestBlobCache: concurrent requests for one key share one build, the
// cache stays within its bytes (least recently used out), errors are not
// kept, and no more builds than allowed run at once.
func TestBlobCache(t *testing.T) {
	ctx := context.Background()
	c := NewBlobCache(100, 2)
	var builds, running, peak atomic.Int64
	release := make(chan struct{})
	started := make(chan struct{}, 100)
	build := func(v string) func() ([]byte, error) {
		return func() ([]byte, error) {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			started <- struct{}{}
			<-release
			running.Add(-1)
			builds.Add(1)
			return []byte(v), nil
		}
	}
	var wg sync.WaitGroup
	got := make([]string, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprint("k", i%4) // 4 keys, 5 requests each
			b, etag, err := c.Get(ctx, key, build(strings.Repeat("x", 3)))
			if err != nil || etag == "" {
				t.Errorf("%s: %v", key, err)
			}
			got[i] = string(b)
		}()
	}
	<-started
	<-started // two builds run: the limit
	close(release)
	wg.Wait()
	if b := builds.Load(); b != 4 {
		t.Errorf("%d builds for 4 keys", b)
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("%d builds at once, limit 2", p)
	}
	// A smaller cache drops the least recently used: k0, then k1.
	small := NewBlobCache(10, 1)
	for _, k := range []string{"k0", "k1", "k2", "k0", "k3"} {
		if _, _, err := small.Get(ctx, k, func() ([]byte, error) { return []byte("xxx"), nil }); err != nil {
			t.Fatal(err)
		}
	}
	size, entries, hits, built := small.Stats()
	if size != 9 || entries != 3 || hits != 1 || built != 4 {
		t.Errorf("held %d bytes in %d entries after %d hits and %d builds, want 9, 3, 1, 4", size, entries, hits, built)
	}
	if _, _, err := small.Get(ctx, "k1", func() ([]byte, error) { return []byte("new"), nil }); err != nil {
		t.Fatal(err)
	}
	if _, _, _, built := small.Stats(); built != 5 {
		t.Error("k1 was kept although least recently used")
	}
	if _, _, err := c.Get(ctx, "bad", func() ([]byte, error) { return nil, errors.New("broken") }); err == nil {
		t.Error("build error not returned")
	}
	if b, _, err := c.Get(ctx, "bad", func() ([]byte, error) { return []byte("ok"), nil }); err != nil || string(b) != "ok" {
		t.Errorf("error was kept: %q %v", b, err)
	}
}

// TestBlobCacheGetBytes: GetBytes shares Get's entries and builds, and the
// ETag of an entry GetBytes built is the one of its bytes.
func TestBlobCacheGetBytes(t *testing.T) {
	ctx := context.Background()
	c := NewBlobCache(100, 1)
	b, err := c.GetBytes(ctx, "k", func() ([]byte, error) { return []byte("abc"), nil })
	if err != nil || string(b) != "abc" {
		t.Fatalf("GetBytes: %q %v", b, err)
	}
	b, etag, err := c.Get(ctx, "k", func() ([]byte, error) { return []byte("other"), nil })
	if err != nil || string(b) != "abc" || etag != ETag([]byte("abc")) {
		t.Errorf("Get after GetBytes: %q %s %v, want the held bytes and their ETag", b, etag, err)
	}
	if _, _, hits, built := c.Stats(); hits != 1 || built != 1 {
		t.Errorf("%d hits and %d builds, want 1 and 1", hits, built)
	}
	if _, err := c.GetBytes(ctx, "bad", func() ([]byte, error) { return nil, errors.New("broken") }); err == nil {
		t.Error("build error not returned")
	}
}
