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
	c := NewBlobCache(10, 2)
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
	size, entries, _, _ := c.Stats()
	if size > 10 || entries != 3 {
		t.Errorf("held %d bytes in %d entries, want at most 10 bytes in 3", size, entries)
	}
	if _, _, err := c.Get(ctx, "bad", func() ([]byte, error) { return nil, errors.New("broken") }); err == nil {
		t.Error("build error not returned")
	}
	if b, _, err := c.Get(ctx, "bad", func() ([]byte, error) { return []byte("ok"), nil }); err != nil || string(b) != "ok" {
		t.Errorf("error was kept: %q %v", b, err)
	}
}
