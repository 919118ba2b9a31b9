package webapp

import (
	"container/list"
	"context"
	"sync"

	"golang.org/x/sync/singleflight"
)

// BlobCache keeps built responses (encoded images) by key, bounded in
// bytes, least recently used first out. Concurrent requests for one key
// share one build, and at most Builds builds run at once, so a burst of
// requests for images not yet built costs neither a build each nor the
// memory of many decoded images at the same time.
type BlobCache struct {
	max    int64
	sem    chan struct{}
	group  singleflight.Group
	mu     sync.Mutex
	size   int64
	ll     *list.List // front: most recent
	byKey  map[string]*list.Element
	hits   int64
	builds int64
}

type blobEntry struct {
	key      string
	data     []byte
	etagOnce sync.Once
	etag     string
}

// tag is the entry's ETag, hashed on first use: a caller that never
// sends one (GetBytes) never pays for hashing the blob.
func (e *blobEntry) tag() string {
	e.etagOnce.Do(func() { e.etag = ETag(e.data) })
	return e.etag
}

// NewBlobCache holds up to maxBytes, with at most builds builds at once.
func NewBlobCache(maxBytes int64, builds int) *BlobCache {
	return &BlobCache{max: maxBytes, sem: make(chan struct{}, max(1, builds)), ll: list.New(), byKey: map[string]*list.Element{}}
}

// Get returns the bytes of key and their ETag, building them with build
// when they are not held. A build error is returned to every request that
// waited for it and is not kept.
func (c *BlobCache) Get(ctx context.Context, key string, build func() ([]byte, error)) ([]byte, string, error) {
	e, err := c.entry(ctx, key, build)
	if err != nil {
		return nil, "", err
	}
	return e.data, e.tag(), nil
}

// GetBytes is Get without the ETag, for a caller that sends none of its
// own: the bytes are not hashed.
func (c *BlobCache) GetBytes(ctx context.Context, key string, build func() ([]byte, error)) ([]byte, error) {
	e, err := c.entry(ctx, key, build)
	if err != nil {
		return nil, err
	}
	return e.data, nil
}

// entry is the held entry of key, built when it is not held.
func (c *BlobCache) entry(ctx context.Context, key string, build func() ([]byte, error)) (*blobEntry, error) {
	if e := c.lookup(key); e != nil {
		return e, nil
	}
	v, err, _ := c.group.Do(key, func() (any, error) {
		if e := c.lookup(key); e != nil {
			return e, nil
		}
		select {
		case c.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		data, err := build()
		<-c.sem
		if err != nil {
			return nil, err
		}
		e := &blobEntry{key: key, data: data}
		c.add(e)
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*blobEntry), nil
}

func (c *BlobCache) lookup(key string) *blobEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.ll.MoveToFront(el)
		c.hits++
		return el.Value.(*blobEntry)
	}
	return nil
}

func (c *BlobCache) add(e *blobEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.builds++
	if int64(len(e.data)) > c.max {
		return // larger than the whole cache: served, not kept
	}
	if _, ok := c.byKey[e.key]; ok {
		return
	}
	c.byKey[e.key] = c.ll.PushFront(e)
	c.size += int64(len(e.data))
	for c.size > c.max {
		old := c.ll.Back()
		oe := old.Value.(*blobEntry)
		c.ll.Remove(old)
		delete(c.byKey, oe.key)
		c.size -= int64(len(oe.data))
	}
}

// Stats returns the bytes held, the entries, the hits and the builds.
func (c *BlobCache) Stats() (bytes int64, entries int, hits, builds int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size, c.ll.Len(), c.hits, c.builds
}
