package eval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// TestJustInTimeVerification: a corrupt image makes exactly its record an
// error naming the file, with no call of that record reaching the server,
// while the others finish. Verification is per record, right before its
// first call: an image corrupted after the run's first call, in a record
// not yet started, is caught by decoding (not only noticed as changed
// when it is sent), so its record too makes no call.
func TestJustInTimeVerification(t *testing.T) {
	bench := t.TempDir()
	outdirtest.CopyTree(t, sampleBench, bench)
	const bad = "pneumonia_s57001234_positive_0" // corrupt from the start
	const late = "edema_s50414267_negative_3"    // LF: one turn, so asked last
	garbage := []byte("\x89PNG\r\n\x1a\nnot really")
	xray := func(key string) string { return filepath.Join(bench, "chexpercept", key, "detection_qa", "xray.png") }
	if err := os.WriteFile(xray(bad), garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := fakemodel.NewServer(fakemodel.ServerConfig{Policy: "random"})
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int64
	var once sync.Once
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { os.WriteFile(xray(late), garbage, 0o644) })
		requests.Add(1)
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); hs.Close() })
	var mu sync.Mutex
	calls := map[string]int{}
	testHookCall = func(key, _ string) { mu.Lock(); calls[key]++; mu.Unlock() }
	defer func() { testHookCall = nil }()

	o := baseOptions(bench, t.TempDir(), model(t, "opensource", "jit-test"))
	o.Endpoints, o.Concurrency, o.AllowInvalid, o.NoPreflight = []string{hs.URL + "/v1"}, 1, true, true // counts chat requests only
	s := run(t, o)
	recs, _ := rundir.ReadResults(filepath.Join(s.RunDir, rundir.ResultsFile))
	if len(recs) != 7 {
		t.Fatalf("%d records written, want 7", len(recs))
	}
	for _, r := range recs {
		if r.KeyID != bad && r.KeyID != late {
			if r.Status != results.StatusOK {
				t.Errorf("%s: %s %v", r.KeyID, r.Status, r.Error)
			}
			continue
		}
		want := "image chexpercept/" + r.KeyID + "/detection_qa/xray.png: not a decodable PNG"
		if r.Status != results.StatusError || r.Error == nil || !strings.Contains(*r.Error, want) {
			t.Errorf("%s: status %s error %v, want an error containing %q", r.KeyID, r.Status, deref(r.Error), want)
		}
		if calls[r.KeyID] != 0 {
			t.Errorf("%s: %d calls made for a record with an undecodable image", r.KeyID, calls[r.KeyID])
		}
	}
	if got, want := requests.Load(), int64(s.Results.Counts.Calls); got != want {
		t.Errorf("server saw %d requests, the ok records made %d calls", got, want)
	}
	if s.Images.Failed != 2 {
		t.Errorf("images: %+v, want 2 failed", s.Images)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestVerifyMemo: a second verification over the same bytes only hashes
// them (no decode); a file whose bytes changed is decoded again, and a
// corrupt one fails although a file of that name was remembered; a memo
// written under other limits (checker) is ignored.
func TestVerifyMemo(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	other, err := benchtest.PatternPNG(1)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.png", benchtest.FlatPNG(false))
	write("b.png", other)
	paths := []string{"a.png", "b.png"}
	pass := func(checkerOverride string) VerifyStats {
		t.Helper()
		var log bytes.Buffer
		m := openMemo(cache, &log)
		if m == nil {
			t.Fatalf("memo: %s", log.String())
		}
		if checkerOverride != "" {
			m.checker = checkerOverride
		}
		v := newVerifier(dir, m, 2)
		v.record(context.Background(), paths)
		m.close()
		if log.Len() > 0 {
			t.Errorf("memo warned: %s", log.String())
		}
		return v.stats()
	}
	if s := pass(""); s != (VerifyStats{Verified: 2, Decodes: 2}) {
		t.Errorf("first pass: %+v", s)
	}
	if s := pass(""); s != (VerifyStats{Remembered: 2}) {
		t.Errorf("second pass decoded what the memo knew: %+v", s)
	}
	if s := pass("v0 other limits"); s != (VerifyStats{Verified: 2, Decodes: 2}) {
		t.Errorf("memo of another checker was used: %+v", s)
	}
	// a.png changes to other valid bytes: decoded again; b.png remembered.
	changed := withText(benchtest.FlatPNG(false), "changed")
	write("a.png", changed)
	if s := pass(""); s != (VerifyStats{Verified: 1, Remembered: 1, Decodes: 1}) {
		t.Errorf("after a.png changed: %+v", s)
	}
	// A corrupt a.png fails whatever was remembered under its name.
	write("a.png", changed[:len(changed)/2])
	m := openMemo(cache, io.Discard)
	v := newVerifier(dir, m, 2)
	_, err = v.record(context.Background(), paths)
	m.close()
	if err == nil || !strings.Contains(err.Error(), "image a.png: not a decodable PNG") {
		t.Errorf("truncated a.png: %v", err)
	}
}

// TestVerifyMemoDegrades: a memo that cannot be opened or used is a
// warning, and every image is decoded; shards sharing one memo do not
// corrupt it.
func TestVerifyMemoDegrades(t *testing.T) {
	bad := t.TempDir()
	if err := os.Mkdir(filepath.Join(bad, MemoFile), 0o755); err != nil { // a directory where the file goes
		t.Fatal(err)
	}
	var log bytes.Buffer
	if m := openMemo(bad, &log); m != nil || !strings.Contains(log.String(), MemoFile+": not a regular file") {
		t.Errorf("memo over a directory: %v, log %q", m, log.String())
	}
	garbage := t.TempDir()
	os.WriteFile(filepath.Join(garbage, MemoFile), bytes.Repeat([]byte("not sqlite "), 1000), 0o644)
	log.Reset()
	m := openMemo(garbage, &log)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.png"), benchtest.FlatPNG(false), 0o644)
	v := newVerifier(dir, m, 1)
	if _, err := v.record(context.Background(), []string{"a.png"}); err != nil || v.stats().Decodes != 1 {
		t.Errorf("with a broken memo: %v, %+v", err, v.stats())
	}
	m.close()
	if !strings.Contains(log.String(), "warning: image verification memo") {
		t.Errorf("broken memo not reported: %q", log.String())
	}

	// Two "shards" write the same memo at once.
	shared := t.TempDir()
	var wg sync.WaitGroup
	logs := make([]bytes.Buffer, 2)
	for s := 0; s < 2; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := openMemo(shared, &logs[s])
			for i := 0; i < 1000; i++ {
				m.add(fmt.Sprintf("%064x", s*1000+i))
			}
			m.close()
		}()
	}
	wg.Wait()
	m = openMemo(shared, io.Discard)
	defer m.close()
	for i := 0; i < 2000; i++ {
		if !m.known(fmt.Sprintf("%064x", i)) {
			t.Fatalf("hash %d lost (logs %q %q)", i, logs[0].String(), logs[1].String())
		}
	}
}

// TestSharedImageDecodedOnce: images with identical bytes, shared by many
// records verified at once, are decoded once.
func TestSharedImageDecodedOnce(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := 0; i < 12; i++ {
		p := fmt.Sprintf("img%d.png", i)
		os.WriteFile(filepath.Join(dir, p), benchtest.FlatPNG(false), 0o644)
		paths = append(paths, p)
	}
	v := newVerifier(dir, nil, 8)
	var wg sync.WaitGroup
	for r := 0; r < 8; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := v.record(context.Background(), paths); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if s := v.stats(); s != (VerifyStats{Verified: 12, Decodes: 1}) {
		t.Errorf("8 records sharing 12 identical images: %+v, want 12 verified with 1 decode", s)
	}

	// Through a run: the generated benchmark's images are all one flat
	// PNG; a second run with the same cache directory decodes nothing.
	cache := t.TempDir()
	o := baseOptions(generatedBench(t), t.TempDir(), model(t, "baseline", "oracle"))
	o.AllowInvalid, o.CacheDir = true, cache
	s1 := run(t, o)
	if s1.Images.Decodes != 1 || s1.Images.Verified == 0 || s1.Images.Remembered != 0 || s1.Images.Failed != 0 {
		t.Errorf("first run: %+v", s1.Images)
	}
	o.OutDir = t.TempDir()
	s2 := run(t, o)
	if s2.Images != (VerifyStats{Remembered: s1.Images.Verified}) {
		t.Errorf("second run: %+v, want %d remembered and no decode", s2.Images, s1.Images.Verified)
	}
}

// TestVerifiedBytesCached: the bytes a record's verification read are the
// ones sent: its first use neither reads the file again nor sees a later
// change.
func TestVerifiedBytesCached(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.png"), benchtest.FlatPNG(false), 0o644)
	c := newImageCache(dir, 1<<30, false)
	v := newVerifier(dir, nil, 1)
	v.keep = c.put
	hashes, err := v.record(context.Background(), []string{"a.png"})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.png"), []byte("changed after verification"), 0o644)
	rec := &recordImages{cache: c, hashes: hashes, got: map[string]*provider.Image{}}
	im, err := rec.image("a.png")
	if err != nil || im.SHA256 != hashes["a.png"].sha || c.loads != 1 {
		t.Errorf("first use after verification: %v, loads %d", err, c.loads)
	}
}

// TestVerifyMemoOldChecker: images remembered by the checker that
// decoded them with imagefile.DecodePNG (checker version 1) are verified
// again by VerifyPNG, not taken on trust.
func TestVerifyMemoOldChecker(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.png"), benchtest.FlatPNG(false), 0o644); err != nil {
		t.Fatal(err)
	}
	v1 := fmt.Sprintf("v1 png maxfile=%d maxside=%d maxpixels=%d maxdecoded=%d %s",
		imagefile.MaxFileBytes, imagefile.MaxSide, imagefile.MaxPixels, imagefile.MaxDecodedBytes, runtime.Version())
	pass := func(checker string) VerifyStats {
		t.Helper()
		m := openMemo(cache, io.Discard)
		if m == nil {
			t.Fatal("memo did not open")
		}
		if checker != "" {
			m.checker = checker
		}
		v := newVerifier(dir, m, 1)
		if _, err := v.record(context.Background(), []string{"a.png"}); err != nil {
			t.Fatal(err)
		}
		m.close()
		return v.stats()
	}
	pass(v1) // the memo an earlier release wrote
	if s := pass(v1); s != (VerifyStats{Remembered: 1}) {
		t.Fatalf("the version 1 memo was not written: %+v", s)
	}
	if s := pass(""); s != (VerifyStats{Verified: 1, Decodes: 1}) {
		t.Errorf("an image remembered by checker version 1 was not verified again: %+v", s)
	}
}

// TestVerifyAhead: while a record's calls are in flight, the images of the
// records about to be handed out are verified, so a worker that takes one
// starts calling at once. With one worker whose first call waits, the only
// way another record's image gets checked is the look-ahead.
func TestVerifyAhead(t *testing.T) {
	o := baseOptions(sampleBench, t.TempDir(), model(t, "baseline", "first"))
	o.Concurrency, o.CacheDir = 1, t.TempDir()
	var mu sync.Mutex
	var checked []string
	more := make(chan struct{}, 1)
	testHookVerified = func(rel string) {
		mu.Lock()
		checked = append(checked, rel)
		mu.Unlock()
		select {
		case more <- struct{}{}:
		default:
		}
	}
	otherThan := func(key string) string {
		mu.Lock()
		defer mu.Unlock()
		for _, rel := range checked {
			if !strings.Contains(rel, "/"+key+"/") {
				return rel
			}
		}
		return ""
	}
	var once sync.Once
	testHookCall = func(key, _ string) {
		once.Do(func() {
			deadline := time.After(20 * time.Second)
			for {
				if rel := otherThan(key); rel != "" {
					t.Logf("while %s waits for its first reply, %s was verified", key, rel)
					return
				}
				select {
				case <-more:
				case <-deadline:
					t.Errorf("no image of another record was verified while %s's first call waited", key)
					return
				}
			}
		})
	}
	defer func() { testHookVerified, testHookCall = nil, nil }()
	run(t, o)
}

// TestMemoFlushesByAge: verified hashes reach the memo file within about
// a second even when fewer than a batch come, so a run killed with -9
// keeps what it verified before that.
func TestMemoFlushesByAge(t *testing.T) {
	cache := t.TempDir()
	m := openMemo(cache, io.Discard)
	if m == nil {
		t.Fatal("no memo")
	}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	m.now = func() time.Time { return clock }
	reader := openMemo(cache, io.Discard) // another process's view
	defer reader.close()
	h1, h2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
	m.add(h1)
	if reader.known(h1) {
		t.Fatal("a lone hash was written at once; want it batched")
	}
	clock = t0.Add(memoFlushAge)
	m.add(h2)
	if !reader.known(h1) || !reader.known(h2) {
		t.Errorf("hashes older than %v not written before close", memoFlushAge)
	}
	m.close()
}

// TestChangedBenchmarkRefused: eval checks every file it uses against the
// build's SHA256SUMS. Two swapped radiographs (every file still present
// and decodable) stop a fresh run and a resumed one, with an error naming
// a swapped file, and no record of theirs is written; a benchmark without
// SHA256SUMS runs with a warning.
func TestChangedBenchmarkRefused(t *testing.T) {
	const a, b = "effusion_ph0002_negative_0", "cardiomegaly_s55123456_positive_0"
	xray := func(key string) string { return "chexpercept/" + key + "/detection_qa/xray.png" }
	sealed := func(t *testing.T) string {
		bench := t.TempDir()
		outdirtest.CopyTree(t, sampleBench, bench)
		if err := benchtest.WriteSums(bench); err != nil {
			t.Fatal(err)
		}
		return bench
	}
	for _, tc := range []struct {
		name   string
		resume bool
	}{{"start", false}, {"resume", true}} {
		t.Run(tc.name, func(t *testing.T) {
			bench := sealed(t)
			o := baseOptions(bench, t.TempDir(), model(t, "baseline", "oracle"))
			if tc.resume {
				// A first run finishes; the records of a and b are then
				// dropped from results.jsonl, so a resume must ask them.
				s := run(t, o)
				name := filepath.Join(s.RunDir, rundir.ResultsFile)
				var kept []string
				for _, line := range strings.SplitAfter(string(readFile(t, name)), "\n") {
					if line != "" && !strings.Contains(line, a) && !strings.Contains(line, b) {
						kept = append(kept, line)
					}
				}
				if err := os.WriteFile(name, []byte(strings.Join(kept, "")), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := benchtest.Swap(bench, xray(a), xray(b)); err != nil {
				t.Fatal(err)
			}
			o.Concurrency = 1
			_, err := Run(context.Background(), o)
			if err == nil || !errors.Is(err, benchdir.ErrChanged) {
				t.Fatalf("eval over swapped images: %v, want an error wrapping ErrChanged", err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "SHA256SUMS") ||
				!strings.Contains(msg, xray(a)) && !strings.Contains(msg, xray(b)) {
				t.Errorf("error is not one line naming a swapped file and SHA256SUMS: %q", msg)
			}
			recs, _ := rundir.ReadResults(filepath.Join(rundir.Path(o.OutDir, results.RunName("baseline", "oracle", false, o.Parse == parse.ModeStrict), string(o.Oracle), nil), rundir.ResultsFile))
			for _, r := range recs {
				if r.KeyID == a || r.KeyID == b {
					t.Errorf("record %s written (%s) over a changed image", r.KeyID, r.Status)
				}
			}
		})
	}
	t.Run("no SHA256SUMS", func(t *testing.T) {
		bench := t.TempDir()
		outdirtest.CopyTree(t, sampleBench, bench)
		var log bytes.Buffer
		o := baseOptions(bench, t.TempDir(), model(t, "baseline", "oracle"))
		o.Log = &log
		s := run(t, o)
		if s.Results.Counts.RecordsOK != s.Selected {
			t.Errorf("%d of %d records ok", s.Results.Counts.RecordsOK, s.Selected)
		}
		if !strings.Contains(log.String(), "warning: benchmark "+bench+": no SHA256SUMS") {
			t.Errorf("no warning about the missing SHA256SUMS in the log:\n%s", log.String())
		}
	})
}

// TestCallerVerifiedAndSharedImages: contents the caller decoded
// (Options.Verified) are hashed, not decoded, and counted apart; a
// content it did not vouch for is still decoded; two runs sharing one
// ImageCache encode each image once between them; a shared cache of
// another benchmark is refused.
func TestCallerVerifiedAndSharedImages(t *testing.T) {
	bench := generatedBench(t)
	good := map[string]bool{}
	flat := sha256.Sum256(benchtest.FlatPNG(false))
	good[hex.EncodeToString(flat[:])] = true
	images := NewImageCache(bench, 0, false)

	o := baseOptions(bench, t.TempDir(), model(t, "baseline", "oracle"))
	// A memo of its own, empty: what it remembers is not what is tested.
	o.AllowInvalid, o.NoCache, o.Images, o.CacheDir = true, true, images, t.TempDir()
	o.Verified = func(sha string) bool { return good[sha] }
	s1 := run(t, o)
	if s1.Images.Given == 0 || s1.Images.Decodes != 0 || s1.Images.Verified != 0 || s1.Images.Failed != 0 {
		t.Errorf("run with every content vouched for: %+v, want only given", s1.Images)
	}
	if !strings.Contains(s1.Images.String(), "decoded by the caller") {
		t.Errorf("stats %q do not say the caller decoded", s1.Images)
	}
	loads := s1.ImageLoads
	if loads == 0 {
		t.Fatal("the first run loaded no image into the shared cache")
	}

	o.OutDir, o.Verified = t.TempDir(), func(string) bool { return false }
	s2 := run(t, o)
	if s2.Images.Given != 0 || s2.Images.Decodes != 1 {
		t.Errorf("run with nothing vouched for: %+v, want the one content decoded", s2.Images)
	}
	if s2.ImageLoads != loads || images.c.loadCount() != loads {
		t.Errorf("after a second run sharing the cache: %d loads (the run says %d), want the first run's %d", images.c.loadCount(), s2.ImageLoads, loads)
	}

	o.OutDir, o.Images = t.TempDir(), NewImageCache(t.TempDir(), 0, false)
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "shared image cache") {
		t.Errorf("a shared cache of another benchmark: error %v", err)
	}
}
