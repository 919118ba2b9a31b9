package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/imagefile"
)

// Just-in-time image verification (spec protocol.md §1): a record's
// images are verified (imagefile.VerifyPNG: decoded in full without
// building the image) right before its first call, by the worker that
// runs it, so the first call leaves at once and verification overlaps
// other records' calls. At most `slots` records verify at a
// time (GOMAXPROCS by default): decoding is CPU-bound, and a bounded pool
// leaves the senders their share of the processors. An image whose
// bytes were decoded earlier in this run (by content hash) or by an
// earlier run (the memo) is not decoded again, nor is one the caller
// decoded itself (Options.Verified).

// testHookVerified, when set by a test, sees every path checked.
var testHookVerified func(rel string)

// verified is the outcome of verifying one image path.
type verified struct {
	sha string // content hash, "" when verification failed
	err error
}

// content is what is known about one content hash in this run.
type content struct {
	err        error // the decode error; nil when the bytes decode
	remembered bool  // known from the memo, not decoded in this run
	given      bool  // decoded by the caller (Options.Verified), not by this run
}

// VerifyStats counts the distinct image files checked by a run.
type VerifyStats struct {
	Verified   int64 // decoded in this run (or identical to a file that was)
	Remembered int64 // content verified by an earlier run (memo hit): only hashed
	Failed     int64 // unreadable or undecodable
	Decodes    int64 // PNG decodes performed (distinct contents not remembered)
	// Given counts the files whose content the caller decoded
	// (Options.Verified): only hashed, as a memo hit is.
	Given int64
}

func (s VerifyStats) String() string {
	txt := fmt.Sprintf("%d verified by decoding (%d decodes), %d remembered from earlier runs, %d failed",
		s.Verified, s.Decodes, s.Remembered, s.Failed)
	if s.Given > 0 {
		txt += fmt.Sprintf(", %d decoded by the caller before the run", s.Given)
	}
	return txt
}

type verifier struct {
	benchDir string
	memo     *memo
	sums     *benchdir.Sums             // when set, every file's hash must be the one listed
	keep     func(sha string, b []byte) // if set, receives the bytes of each path verified
	given    func(sha string) bool      // if set, contents the caller decoded (Options.Verified)
	slots    chan struct{}
	sf       singleflight.Group

	mu     sync.Mutex
	byPath map[string]verified
	byHash map[string]content

	verified, remembered, failed, decodes, givenN atomic.Int64
}

func newVerifier(benchDir string, m *memo, slots int) *verifier {
	return &verifier{benchDir: benchDir, memo: m, slots: make(chan struct{}, max(slots, 1)),
		byPath: map[string]verified{}, byHash: map[string]content{}}
}

// stats is a snapshot of the counters.
func (v *verifier) stats() VerifyStats {
	return VerifyStats{Verified: v.verified.Load(), Remembered: v.remembered.Load(),
		Failed: v.failed.Load(), Decodes: v.decodes.Load(), Given: v.givenN.Load()}
}

// record verifies one record's images (paths relative to the benchmark
// directory), in order, holding one slot. It returns every verified
// path's hash, or the first failure (an error naming the file). Ending
// ctx while the record waits for a slot returns ctx's error.
func (v *verifier) record(ctx context.Context, paths []string) (map[string]verified, error) {
	select {
	case v.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-v.slots }()
	out := make(map[string]verified, len(paths))
	for _, p := range paths {
		r := v.path(p)
		if r.err != nil {
			return nil, r.err
		}
		out[p] = r
	}
	return out, nil
}

// path verifies one image path once per run; records sharing it wait for
// the first.
func (v *verifier) path(rel string) verified {
	v.mu.Lock()
	r, ok := v.byPath[rel]
	v.mu.Unlock()
	if ok {
		return r
	}
	res, _, _ := v.sf.Do("path:"+rel, func() (any, error) {
		// A caller that missed byPath may arrive here just after the
		// first one left singleflight: look again, so a path is counted
		// (and read) once.
		v.mu.Lock()
		r, ok := v.byPath[rel]
		v.mu.Unlock()
		if ok {
			return r, nil
		}
		r, c := v.check(rel)
		if testHookVerified != nil {
			testHookVerified(rel)
		}
		switch {
		case r.err != nil:
			v.failed.Add(1)
		case c.given:
			v.givenN.Add(1)
		case c.remembered:
			v.remembered.Add(1)
		default:
			v.verified.Add(1)
		}
		v.mu.Lock()
		v.byPath[rel] = r
		v.mu.Unlock()
		return r, nil
	})
	return res.(verified)
}

// check reads and hashes one file, then decodes its content unless this
// run or the memo already knows it.
func (v *verifier) check(rel string) (verified, content) {
	b, err := readBenchFile(filepath.Join(v.benchDir, filepath.FromSlash(rel)))
	if err != nil {
		return verified{err: fmt.Errorf("image %s: %w", rel, err)}, content{err: err}
	}
	sum := sha256.Sum256(b)
	sha := hex.EncodeToString(sum[:])
	if v.sums != nil {
		// The hash is at hand: checking it against the build's costs
		// nothing, and a changed file is never decoded or sent.
		if err := v.sums.Check(rel, sha); err != nil {
			return verified{err: err}, content{err: err}
		}
	}
	c := v.content(sha, b)
	if c.err != nil {
		return verified{err: fmt.Errorf("image %s: %w", rel, c.err)}, c
	}
	if v.keep != nil {
		v.keep(sha, b)
	}
	return verified{sha: sha}, c
}

// content is the outcome for the bytes b whose hash is sha: decoded at
// most once per run, and not at all when the memo remembers them.
func (v *verifier) content(sha string, b []byte) content {
	v.mu.Lock()
	c, ok := v.byHash[sha]
	v.mu.Unlock()
	if ok {
		return c
	}
	res, _, _ := v.sf.Do("sha:"+sha, func() (any, error) {
		v.mu.Lock()
		c, ok := v.byHash[sha]
		v.mu.Unlock()
		if ok { // decoded by a caller that just left singleflight
			return c, nil
		}
		switch {
		case v.given != nil && v.given(sha):
			c.given = true
		case v.memo.known(sha):
			c.remembered = true
		default:
			v.decodes.Add(1)
			// The header is checked against imagefile's limits first, so
			// a decompression bomb is refused before any work; then the
			// image data is inflated and checked in full, accepting
			// exactly what image/png decodes, without building pixels.
			c.err = imagefile.VerifyPNG(b)
			if c.err == nil {
				v.memo.add(sha)
			}
		}
		v.mu.Lock()
		v.byHash[sha] = c
		v.mu.Unlock()
		return c, nil
	})
	return res.(content)
}
