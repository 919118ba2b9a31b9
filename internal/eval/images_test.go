package eval

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/imagefile/imagefiletest"
	"github.com/chexpercept/chexpercept/internal/provider"
)

func TestImageCache(t *testing.T) {
	dir := t.TempDir()
	png := benchtest.FlatPNG(false)
	other, err := benchtest.PatternPNG(1)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"a.png": png, "same-as-a.png": png, "b.png": other, "bad.png": []byte("\x89PNG junk")} {
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	v := verifyAll(dir, []string{"a.png", "same-as-a.png", "b.png", "bad.png", "missing.png"})
	if v["a.png"].sha == "" || v["a.png"].sha != v["same-as-a.png"].sha || v["b.png"].sha == v["a.png"].sha {
		t.Fatalf("hashes: %+v", v)
	}
	for _, bad := range []string{"bad.png", "missing.png"} {
		if v[bad].err == nil || !strings.Contains(v[bad].err.Error(), bad) {
			t.Errorf("%s: error %v does not name the file", bad, v[bad].err)
		}
	}

	// Room for one image only: a and its twin share one entry, b evicts it.
	size := int64(len(png)*4/3 + 8)
	c := newImageCache(dir, max(size, int64(len(other)*4/3+8)), false)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ { // concurrent first uses load once
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.get("a.png", v["a.png"].sha); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if c.loads != 1 {
		t.Fatalf("8 concurrent gets loaded %d times", c.loads)
	}
	im, _ := c.get("same-as-a.png", v["same-as-a.png"].sha)
	if c.loads != 1 || im.PNG != nil || im.Base64 == "" {
		t.Fatalf("identical content re-encoded (loads %d) or PNG kept for an OpenAI backend", c.loads)
	}
	c.get("b.png", v["b.png"].sha)
	c.get("a.png", v["a.png"].sha)
	if c.loads != 3 || c.size > c.limit {
		t.Errorf("after eviction: loads %d, size %d of %d", c.loads, c.size, c.limit)
	}

	// A record fetches each of its images once, whatever the cache does.
	rec := &recordImages{cache: newImageCache(dir, 1, false), hashes: v, got: map[string]*provider.Image{}}
	for i := 0; i < 3; i++ {
		if _, err := rec.image("b.png"); err != nil {
			t.Fatal(err)
		}
	}
	if rec.cache.loads != 1 {
		t.Errorf("a record loaded its image %d times with an empty cache", rec.cache.loads)
	}
	if _, err := rec.image("bad.png"); err == nil {
		t.Error("an unverified image was sent")
	}
	// A file changed after verification is refused.
	os.WriteFile(filepath.Join(dir, "b.png"), png, 0o644)
	c2 := newImageCache(dir, 1<<20, false)
	if _, err := c2.get("b.png", v["b.png"].sha); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("changed file: %v", err)
	}
}

// TestVerifyImagesBounded: a decompression bomb, a FIFO and a symbolic link
// among the images each make a one-line error naming the file, without
// allocating the bomb's claimed pixels or blocking on the FIFO.
func TestVerifyImagesBounded(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bomb.png"), imagefiletest.BombPNG(100000, 100000), 0o644)
	os.WriteFile(filepath.Join(dir, "ok.png"), benchtest.FlatPNG(false), 0o644)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.png"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	os.Symlink("ok.png", filepath.Join(dir, "link.png"))
	v := verifyAll(dir, []string{"bomb.png", "fifo.png", "link.png", "ok.png"})
	for name, want := range map[string]string{
		"bomb.png": "image bomb.png: PNG size 100000×100000 outside 1…16384 per side",
		"fifo.png": "image fifo.png: not a regular file (named pipe)",
		"link.png": "image link.png: is a symbolic link",
	} {
		if v[name].err == nil || !strings.Contains(v[name].err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, v[name].err, want)
		}
	}
	if v["ok.png"].err != nil {
		t.Errorf("ok.png: %v", v["ok.png"].err)
	}
}

// verifyAll verifies each path on its own (no memo).
func verifyAll(dir string, paths []string) map[string]verified {
	v := newVerifier(dir, nil, 2)
	out := map[string]verified{}
	for _, p := range paths {
		out[p] = v.path(p)
	}
	return out
}
