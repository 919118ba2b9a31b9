// Command benchload is the load driver of scripts/bench-read.sh: it signs
// N users of a running reading or review app in at once and has each work
// through the real HTTP flow a browser follows, then prints error counts
// and latency percentiles.
//
//	reading: GET /read (the page), GET every /image/… on it, POST /answer
//	         with the page's CSRF token, pos and seq (option 1), until done
//
// Images are kept as a browser keeps them (one cache per user): an image
// whose Cache-Control allows it is not asked again while fresh, and asked
// with its ETag (If-None-Match, 304 expected) once stale; no-store is
// never kept. The summary counts the images served from that cache.
//
//	review:  GET /queue, then per case GET /case/KEY, its images
//	         (cxr.png, and mask.png and contour.png for a positive case),
//	         POST /api/decision (accept) with the page's CSRF token
//
// The users' tokens are read from the output of `read init` or `review
// init` (lines "reader NAME TOKEN" or "reviewer NAME TOKEN"). The app must
// listen on a loopback address. Each run is bounded in time (-duration)
// and in requests per user (-max-steps).
//
// Usage: go run ./scripts/benchload -app read|review -url http://127.0.0.1:PORT/ -tokens FILE -users N
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	hiddenRE   = regexp.MustCompile(`name="(csrf|pos|seq)" value="([^"]*)"`)
	imageRE    = regexp.MustCompile(`src="(/image/[^"]+)"`)
	caseLinkRE = regexp.MustCompile(`href="/case/([^"]+)"`)
	dataCSRFRE = regexp.MustCompile(`data-csrf="([^"]+)"`)
)

// maxBody bounds a response read (a radiograph is about 1 MB).
const maxBody = 32 << 20

func main() {
	app := flag.String("app", "read", "read or review")
	base := flag.String("url", "", "the app's URL (loopback only)")
	tokens := flag.String("tokens", "", "output of read init or review init")
	users := flag.Int("users", 1, "users working at once")
	duration := flag.Duration("duration", 5*time.Minute, "stop after this long")
	maxSteps := flag.Int("max-steps", 400, "answers or decisions per user at most")
	flag.Parse()
	if err := run(*app, *base, *tokens, *users, *duration, *maxSteps); err != nil {
		fmt.Fprintln(os.Stderr, "benchload:", err)
		os.Exit(2)
	}
}

func run(app, base, tokenFile string, users int, duration time.Duration, maxSteps int) error {
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil || u.Host == "" {
		return fmt.Errorf("-url %q: not an http URL", base)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-url %q: only a loopback address (127.0.0.1, ::1) is driven", base)
	}
	if app != "read" && app != "review" {
		return fmt.Errorf("-app %q: read or review", app)
	}
	toks, err := readTokens(tokenFile)
	if err != nil {
		return err
	}
	if users < 1 || users > len(toks) {
		return fmt.Errorf("-users %d: the tokens file has %d users", users, len(toks))
	}
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	st := &stats{lat: map[string][]time.Duration{}, errs: map[string]int{}}
	tr := &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}
	var wg sync.WaitGroup
	start := make(chan struct{})
	t0 := time.Now()
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jar, _ := cookiejar.New(nil)
			c := &client{ctx: ctx, base: u.String(), st: st, http: &http.Client{Jar: jar, Transport: tr, Timeout: time.Minute,
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
			<-start // every user signs in at the same moment
			if code, _ := c.do("sign-in", "POST", "/login", url.Values{"token": {toks[i]}}, nil); code != http.StatusSeeOther {
				return
			}
			var done bool
			if app == "read" {
				done = c.reader(maxSteps)
			} else {
				done = c.reviewer(maxSteps)
			}
			if done {
				st.mu.Lock()
				st.finished++
				st.mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	st.print(os.Stdout, app, users, time.Since(t0), ctx.Err() != nil)
	return nil
}

// readTokens reads the users' tokens (not the admin's).
func readTokens(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-tokens: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	var toks []string
	sc := bufio.NewScanner(io.LimitReader(f, 16<<20))
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 && (fs[0] == "reader" || fs[0] == "reviewer") {
			toks = append(toks, fs[2])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("-tokens %s: %w", path, err)
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("-tokens %s: no \"reader NAME TOKEN\" or \"reviewer NAME TOKEN\" line", path)
	}
	return toks, nil
}

type stats struct {
	mu        sync.Mutex
	lat       map[string][]time.Duration // by kind of request
	errs      map[string]int             // "kind status" → count
	firstErr  string                     // the first transport error
	finished  int
	cacheHits int // images a browser would not have asked for again
}

func (s *stats) add(kind string, d time.Duration, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat[kind] = append(s.lat[kind], d)
	if code < 0 || code >= 400 {
		s.errs[fmt.Sprintf("%s %d", kind, code)]++
	}
}

// transport keeps the first transport error (status -1) for the summary.
func (s *stats) transport(err error) {
	s.mu.Lock()
	if s.firstErr == "" {
		s.firstErr = err.Error()
	}
	s.mu.Unlock()
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(p*float64(len(ds))+0.5) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func (s *stats) print(w io.Writer, app string, users int, took time.Duration, timedOut bool) {
	nerr := 0
	for _, n := range s.errs {
		nerr += n
	}
	fmt.Fprintf(w, "%s users=%d finished=%d errors=%d took=%.1fs", app, users, s.finished, nerr, took.Seconds())
	if timedOut {
		fmt.Fprint(w, " (stopped at -duration)")
	}
	fmt.Fprintln(w)
	if s.cacheHits > 0 {
		fmt.Fprintf(w, "  images from the users' caches (not asked again): %d\n", s.cacheHits)
	}
	kinds := make([]string, 0, len(s.lat))
	for k := range s.lat {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		ds := s.lat[k]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		fmt.Fprintf(w, "  %-9s n=%-6d p50=%-8s p95=%-8s p99=%-8s max=%s\n", k, len(ds),
			pct(ds, .50).Round(time.Millisecond), pct(ds, .95).Round(time.Millisecond), pct(ds, .99).Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	errs := make([]string, 0, len(s.errs))
	for k, n := range s.errs {
		errs = append(errs, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(errs)
	if len(errs) > 0 {
		fmt.Fprintf(w, "  errors: %s\n", strings.Join(errs, ", "))
	}
	if s.firstErr != "" {
		fmt.Fprintf(w, "  first transport error (status -1): %s\n", s.firstErr)
	}
}

type client struct {
	ctx   context.Context
	base  string
	st    *stats
	http  *http.Client
	cache map[string]cached // the user's browser cache, by path
}

// cached is a kept response: its tag and until when it is fresh.
type cached struct {
	etag  string
	fresh time.Time
}

// image asks for an image as a browser does: not at all while a kept
// copy is fresh, with its tag once stale.
func (c *client) image(path string) {
	e, ok := c.cache[path]
	if ok && time.Now().Before(e.fresh) {
		c.st.mu.Lock()
		c.st.cacheHits++
		c.st.mu.Unlock()
		return
	}
	var hdr map[string]string
	if ok && e.etag != "" {
		hdr = map[string]string{"If-None-Match": e.etag}
	}
	code, h, _ := c.doH("image", "GET", path, nil, hdr)
	if code != http.StatusOK && code != http.StatusNotModified {
		return
	}
	keep, age := cacheable(h.Get("Cache-Control"))
	if !keep {
		delete(c.cache, path)
		return
	}
	etag := h.Get("ETag")
	if etag == "" {
		etag = e.etag
	}
	if c.cache == nil {
		c.cache = map[string]cached{}
	}
	c.cache[path] = cached{etag: etag, fresh: time.Now().Add(age)}
}

// cacheable reads a Cache-Control header: whether the response may be
// kept, and for how long it is fresh.
func cacheable(cc string) (bool, time.Duration) {
	var age time.Duration
	for _, d := range strings.Split(cc, ",") {
		d = strings.ToLower(strings.TrimSpace(d))
		switch {
		case d == "no-store":
			return false, 0
		case d == "no-cache":
			age = 0
		case strings.HasPrefix(d, "max-age="):
			if n, err := strconv.Atoi(strings.TrimPrefix(d, "max-age=")); err == nil && n > 0 {
				age = time.Duration(n) * time.Second
			}
		}
	}
	return true, age
}

// do sends one request and records its latency under kind; status -1 is
// a transport error.
func (c *client) do(kind, method, path string, form url.Values, hdr map[string]string) (int, string) {
	code, _, body := c.doH(kind, method, path, form, hdr)
	return code, body
}

// doH is do with the response's headers.
func (c *client) doH(kind, method, path string, form url.Values, hdr map[string]string) (int, http.Header, string) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(c.ctx, method, c.base+path, body)
	if err != nil {
		c.st.add(kind, 0, -1)
		return -1, nil, ""
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	t := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		if !errors.Is(c.ctx.Err(), context.DeadlineExceeded) {
			c.st.add(kind, time.Since(t), -1)
			c.st.transport(err)
		}
		return -1, nil, ""
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	_ = resp.Body.Close() // read (or failed, below)
	d := time.Since(t)
	if err != nil {
		if !errors.Is(c.ctx.Err(), context.DeadlineExceeded) {
			c.st.add(kind, d, -1)
			c.st.transport(err)
		}
		return -1, nil, ""
	}
	c.st.add(kind, d, resp.StatusCode)
	return resp.StatusCode, resp.Header, string(b)
}

// reader answers option 1 at every turn until the end page; it reports
// whether it got there.
func (c *client) reader(maxSteps int) bool {
	for range maxSteps {
		code, page := c.do("page", "GET", "/read", nil, nil)
		if code != http.StatusOK {
			return false
		}
		if strings.Contains(page, "data-done") {
			return true
		}
		f := url.Values{"option": {"1"}}
		for _, m := range hiddenRE.FindAllStringSubmatch(page, -1) {
			f.Set(m[1], m[2])
		}
		for _, m := range imageRE.FindAllStringSubmatch(page, -1) {
			c.image(m[1])
		}
		if code, _ := c.do("answer", "POST", "/answer", f, nil); code != http.StatusSeeOther {
			return false
		}
	}
	return false
}

// reviewer accepts every case of its queue's first page.
func (c *client) reviewer(maxSteps int) bool {
	code, q := c.do("page", "GET", "/queue", nil, nil)
	if code != http.StatusOK {
		return false
	}
	seen := map[string]bool{}
	var keys []string
	for _, m := range caseLinkRE.FindAllStringSubmatch(q, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			keys = append(keys, m[1])
		}
	}
	for i, key := range keys {
		if i == maxSteps {
			return false
		}
		code, page := c.do("page", "GET", "/case/"+key, nil, nil)
		if code != http.StatusOK {
			return false
		}
		for _, m := range imageRE.FindAllStringSubmatch(page, -1) {
			c.image(m[1])
		}
		m := dataCSRFRE.FindStringSubmatch(page)
		if m == nil {
			return false
		}
		f := url.Values{"key": {key}, "decision": {"accept"}, "note": {""}}
		if code, _ := c.do("answer", "POST", "/api/decision", f, map[string]string{"X-CSRF-Token": m[1]}); code != http.StatusOK {
			return false
		}
	}
	return true
}
