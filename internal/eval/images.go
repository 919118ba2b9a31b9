package eval

import (
	"container/list"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// Image handling (spec protocol.md §1): every image a record will send is
// verified right before the record's first call (verify.go); a failure
// makes that record an error naming the file. During the run an image is
// read and base64-encoded at most once per in-flight record (the record
// keeps its own references) and shared between records through an LRU
// cache bounded in bytes and keyed by content hash.

// readBenchFile is readRegular; tests replace it to inject a failure.
var readBenchFile = readRegular

// readRegular reads a regular file of at most imagefile.MaxFileBytes,
// refusing symbolic links (a benchmark is self-contained).
func readRegular(name string) ([]byte, error) {
	b, err := safefile.ReadFile(name, imagefile.MaxFileBytes, safefile.NoFollow)
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("missing")
	case errors.As(err, &pe):
		return nil, pe.Err
	}
	return b, err
}

// imageCache is an LRU of encoded images bounded in bytes. Entries in use
// by an in-flight record may be evicted; the record keeps its pointer, so
// eviction only affects later records.
type imageCache struct {
	benchDir  string
	limit     int64
	keepPNG   bool // gemini needs the raw bytes; OpenAI-compatible backends only base64
	mu        sync.Mutex
	size      int64
	ll        *list.List // front = most recent; values are *cacheEntry
	byHash    map[string]*list.Element
	sf        singleflight.Group
	loads     int64 // files read and encoded (for tests and stats)
	peakBytes int64
}

type cacheEntry struct {
	sha string
	img *provider.Image
	n   int64
}

func newImageCache(benchDir string, limit int64, keepPNG bool) *imageCache {
	return &imageCache{benchDir: benchDir, limit: limit, keepPNG: keepPNG, ll: list.New(), byHash: map[string]*list.Element{}}
}

// ImageCache is a cache of encoded images that several runs of one
// benchmark in one process share (Options.Images): each image is read and
// base64-encoded once for all of them instead of once per run. Every run
// still reads, hashes and verifies each image itself before its record's
// first call; the cache is keyed by that content hash, so a run only ever
// sends the bytes it verified. It is safe for concurrent use.
type ImageCache struct{ c *imageCache }

// NewImageCache returns a cache of at most limit bytes (≤ 0: the default
// of Options.ImageCacheBytes) of the encoded images of the benchmark in
// benchDir; keepPNG keeps each image's PNG bytes beside its base64, as
// runs of the Gemini backend need.
func NewImageCache(benchDir string, limit int64, keepPNG bool) *ImageCache {
	if limit <= 0 {
		limit = DefaultImageCacheBytes
	}
	return &ImageCache{c: newImageCache(benchDir, limit, keepPNG)}
}

// loadCount is the number of images read and encoded so far.
func (c *imageCache) loadCount() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads
}

// get returns the encoded image for rel, whose verified content hash is
// sha, reading and encoding the file on a miss. The file must still have
// the verified content.
func (c *imageCache) get(rel, sha string) (*provider.Image, error) {
	c.mu.Lock()
	if e, ok := c.byHash[sha]; ok {
		c.ll.MoveToFront(e)
		img := e.Value.(*cacheEntry).img
		c.mu.Unlock()
		return img, nil
	}
	c.mu.Unlock()
	v, err, _ := c.sf.Do(sha, func() (any, error) {
		b, err := readBenchFile(filepath.Join(c.benchDir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", rel, err)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != sha {
			return nil, fmt.Errorf("image %s changed on disk after it was verified", rel)
		}
		return c.add(sha, b), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*provider.Image), nil
}

// put adds the bytes b, just verified with content hash sha, unless the
// cache has them: the record's first use then neither reads nor hashes
// the file again, and what is sent is exactly what was verified.
func (c *imageCache) put(sha string, b []byte) {
	n := int64(base64.StdEncoding.EncodedLen(len(b)))
	if c.keepPNG {
		n += int64(len(b))
	}
	if n > c.limit {
		return // it would not be kept: the record's first use encodes it
	}
	c.mu.Lock()
	_, ok := c.byHash[sha]
	c.mu.Unlock()
	if !ok {
		_, _, _ = c.sf.Do(sha, func() (any, error) { return c.add(sha, b), nil }) // add keeps the image in c and cannot fail
	}
}

// add encodes b and keeps it, evicting the least recently used entries
// beyond the limit.
func (c *imageCache) add(sha string, b []byte) *provider.Image {
	img := &provider.Image{SHA256: sha, Base64: base64.StdEncoding.EncodeToString(b)}
	n := int64(len(img.Base64))
	if c.keepPNG {
		img.PNG = b
		n += int64(len(b))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loads++
	if e, ok := c.byHash[sha]; ok {
		return e.Value.(*cacheEntry).img
	}
	if n <= c.limit {
		c.byHash[sha] = c.ll.PushFront(&cacheEntry{sha: sha, img: img, n: n})
		c.size += n
		for c.size > c.limit {
			back := c.ll.Back()
			ce := back.Value.(*cacheEntry)
			c.ll.Remove(back)
			delete(c.byHash, ce.sha)
			c.size -= ce.n
		}
		c.peakBytes = max(c.peakBytes, c.size)
	}
	return img
}

// recordImages is one in-flight record's images: each is fetched once
// for the record and reused by all of its calls.
type recordImages struct {
	cache  *imageCache
	hashes map[string]verified
	got    map[string]*provider.Image
}

func (r *recordImages) image(rel string) (*provider.Image, error) {
	if im, ok := r.got[rel]; ok {
		return im, nil
	}
	v, ok := r.hashes[rel]
	if !ok || v.sha == "" {
		return nil, fmt.Errorf("image %s was not verified before its record's first call", rel)
	}
	im, err := r.cache.get(rel, v.sha)
	if err != nil {
		return nil, err
	}
	r.got[rel] = im
	return im, nil
}

// statRel returns the size of a benchmark file.
func statRel(benchDir, rel string) (int64, error) {
	fi, err := os.Lstat(filepath.Join(benchDir, filepath.FromSlash(rel)))
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
