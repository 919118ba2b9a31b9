package review

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// app is a running test server over a fresh database.
type app struct {
	t     *testing.T
	fx    *fixture
	store *Store
	srv   *httptest.Server
	tok   map[string]string
}

func newApp(t *testing.T, n, k int) *app {
	t.Helper()
	return newAppSized(t, n, k, 3, 2)
}

func newAppSized(t *testing.T, n, k, nPos, nNeg int) *app {
	t.Helper()
	fx := makeFixture(t, []string{"edema", "effusion"}, nPos, nNeg)
	s, tok := initStore(t, fx, n, k)
	h, err := NewServer(s)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h.Handler())
	t.Cleanup(ts.Close)
	return &app{t: t, fx: fx, store: s, srv: ts, tok: tok}
}

// client is a browser-like client with its own cookie jar.
type client struct {
	a    *app
	http *http.Client
	csrf string
}

func (a *app) anon() *client {
	jar, _ := cookiejar.New(nil)
	return &client{a: a, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn posts the named account's token and picks up the CSRF token.
func (a *app) signIn(name string) *client {
	a.t.Helper()
	c := a.anon()
	resp := c.post("/login", url.Values{"token": {a.tok[name]}}, nil)
	if resp.code != http.StatusSeeOther {
		a.t.Fatalf("sign-in as %s: %d %s", name, resp.code, resp.body)
	}
	page := c.get("/")
	if page.code != 303 {
		a.t.Fatalf("home: %d", page.code)
	}
	p := c.get(page.header.Get("Location"))
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		a.t.Fatalf("no csrf token on %s", page.header.Get("Location"))
	}
	c.csrf = m[1]
	return c
}

type response struct {
	code   int
	body   string
	header http.Header
}

func (c *client) do(req *http.Request) response {
	c.a.t.Helper()
	resp, err := c.http.Do(req)
	if err != nil {
		c.a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, string(b), resp.Header}
}

func (c *client) get(path string) response {
	req, _ := http.NewRequest("GET", c.a.srv.URL+path, nil)
	return c.do(req)
}

func (c *client) getRaw(rawPath string) response {
	req, _ := http.NewRequest("GET", c.a.srv.URL, nil)
	req.URL.Opaque = rawPath // sent as is, not cleaned by the client
	return c.do(req)
}

func (c *client) post(path string, form url.Values, hdr map[string]string) response {
	req, _ := http.NewRequest("POST", c.a.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return c.do(req)
}

// decide posts a decision with the client's CSRF header.
func (c *client) decide(key, decision, note string) response {
	return c.post("/api/decision", url.Values{"key": {key}, "decision": {decision}, "note": {note}}, map[string]string{"X-CSRF-Token": c.csrf})
}

// queueOf returns the key_ids assigned to the named reviewer.
func (a *app) queueOf(name string) []string {
	ctx := context.Background()
	revs, _ := a.store.Reviewers(ctx)
	for _, r := range revs {
		if r.Name == name {
			q, _ := a.store.Queue(ctx, r.ID)
			var keys []string
			for _, it := range q {
				keys = append(keys, it.Case.KeyID)
			}
			return keys
		}
	}
	return nil
}

// notIn returns a key assigned to other but not to name.
func (a *app) onlyIn(name, other string) string {
	mine := map[string]bool{}
	for _, k := range a.queueOf(other) {
		mine[k] = true
	}
	for _, k := range a.queueOf(name) {
		if !mine[k] {
			return k
		}
	}
	a.t.Fatalf("%s has no case that %s lacks", name, other)
	return ""
}

func TestUnauthenticatedGets401AndSignIn(t *testing.T) {
	a := newApp(t, 2, 1)
	c := a.anon()
	key := a.fx.Cases[0].KeyID()
	if r := c.get("/"); r.code != http.StatusSeeOther || r.header.Get("Location") != "/login" {
		t.Errorf("GET /: %d to %q, want 303 to /login", r.code, r.header.Get("Location"))
	}
	for _, p := range []string{"/queue", "/admin", "/case/" + key, "/image/" + key + "/cxr.png", "/image/" + key + "/mask.png", "/api/queue", "/nonexistent"} {
		r := c.get(p)
		if r.code != http.StatusUnauthorized || !strings.Contains(r.body, `action="/login"`) {
			t.Errorf("GET %s: %d, sign-in form shown: %v", p, r.code, strings.Contains(r.body, `action="/login"`))
		}
	}
	for _, p := range []string{"/api/decision", "/admin/resolve", "/admin/lock", "/logout"} {
		if r := c.post(p, url.Values{"key": {key}, "decision": {"accept"}}, nil); r.code != http.StatusUnauthorized {
			t.Errorf("POST %s: %d", p, r.code)
		}
	}
	// A forged or stale cookie is no session either.
	u, _ := url.Parse(a.srv.URL)
	c.http.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: "forged-session-id"}})
	if r := c.get("/queue"); r.code != http.StatusUnauthorized {
		t.Errorf("forged cookie: %d", r.code)
	}
	// The public sign-in page and assets need none.
	if r := c.get("/login"); r.code != 200 {
		t.Errorf("GET /login: %d", r.code)
	}
	if r := c.get("/static/app.js"); r.code != 200 || !strings.Contains(r.body, "X-CSRF-Token") {
		t.Errorf("GET /static/app.js: %d", r.code)
	}
}

func TestLoginAndCookie(t *testing.T) {
	a := newApp(t, 2, 1)
	c := a.anon()
	if r := c.post("/login", url.Values{"token": {"not-a-token"}}, nil); r.code != http.StatusUnauthorized || !strings.Contains(r.body, "not valid") {
		t.Errorf("wrong token: %d", r.code)
	}
	if r := c.post("/login", url.Values{"token": {a.tok["r1"][:20]}}, nil); r.code != http.StatusUnauthorized {
		t.Errorf("token prefix: %d", r.code)
	}
	req, _ := http.NewRequest("POST", a.srv.URL+"/login", strings.NewReader(url.Values{"token": {a.tok["r1"]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sc := resp.Header.Get("Set-Cookie")
	for _, want := range []string{sessionCookie + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(sc, want) {
			t.Errorf("Set-Cookie %q lacks %s", sc, want)
		}
	}
	if strings.Contains(sc, a.tok["r1"]) {
		t.Error("the cookie carries the token")
	}
	// Sign-out ends the session on the server.
	c = a.signIn("r1")
	if r := c.post("/logout", url.Values{"csrf": {c.csrf}}, nil); r.code != http.StatusSeeOther {
		t.Errorf("logout: %d", r.code)
	}
	if r := c.get("/queue"); r.code != http.StatusUnauthorized {
		t.Errorf("after logout: %d", r.code)
	}
}

func TestReviewerSeesOnlyOwnCases(t *testing.T) {
	a := newApp(t, 3, 2)
	r1, r2 := a.signIn("r1"), a.signIn("r2")
	foreign := a.onlyIn("r1", "r2") // assigned to r1, not to r2
	for _, p := range []string{"/case/" + foreign, "/image/" + foreign + "/cxr.png", "/image/" + foreign + "/mask.png", "/image/" + foreign + "/contour.png"} {
		if r := r2.get(p); r.code != http.StatusNotFound {
			t.Errorf("r2 GET %s: %d", p, r.code)
		}
		if r := r1.get(p); r.code != http.StatusOK && !strings.Contains(p, "mask") && !strings.Contains(p, "contour") {
			t.Errorf("r1 GET %s: %d", p, r.code)
		}
	}
	if r := r2.decide(foreign, "reject", ""); r.code != http.StatusNotFound {
		t.Errorf("r2 decides r1's case: %d", r.code)
	}
	// A shared case: r2 must not see r1's decision or comment.
	var shared string
	q2 := map[string]bool{}
	for _, k := range a.queueOf("r2") {
		q2[k] = true
	}
	for _, k := range a.queueOf("r1") {
		if q2[k] {
			shared = k
			break
		}
	}
	if shared == "" {
		t.Fatal("no shared case")
	}
	if r := r1.decide(shared, "accept", "secret-comment-of-r1"); r.code != 200 {
		t.Fatalf("r1 decides: %d %s", r.code, r.body)
	}
	for _, p := range []string{"/case/" + shared, "/queue", "/api/queue"} {
		r := r2.get(p)
		if r.code != 200 || strings.Contains(r.body, "secret-comment-of-r1") {
			t.Errorf("r2 GET %s: %d, leaks r1's comment: %v", p, r.code, strings.Contains(r.body, "secret-comment-of-r1"))
		}
	}
	var q struct {
		Reviewer string
		Cases    []struct{ KeyID, Decision string } `json:"cases"`
	}
	json.Unmarshal([]byte(r2.get("/api/queue").body), &q)
	for _, c := range q.Cases {
		if c.Decision != "" {
			t.Errorf("r2's queue shows a decision %+v", c)
		}
	}
	if len(q.Cases) != len(a.queueOf("r2")) {
		t.Errorf("api queue has %d cases, want %d", len(q.Cases), len(a.queueOf("r2")))
	}
	// Reviewers cannot use the admin's pages or actions.
	if r := r1.get("/admin"); r.code != http.StatusSeeOther {
		t.Errorf("r1 GET /admin: %d", r.code)
	}
	if r := r1.post("/admin/resolve", url.Values{"csrf": {r1.csrf}, "key": {shared}, "decision": {"accept"}}, nil); r.code != http.StatusForbidden {
		t.Errorf("r1 resolves: %d", r.code)
	}
	if r := r1.post("/admin/lock", url.Values{"csrf": {r1.csrf}, "locked": {"1"}}, nil); r.code != http.StatusForbidden {
		t.Errorf("r1 locks: %d", r.code)
	}
	// The admin sees every case and every decision.
	ad := a.signIn(AdminName)
	if r := ad.get("/case/" + shared); r.code != 200 || !strings.Contains(r.body, "secret-comment-of-r1") {
		t.Errorf("admin case view: %d", r.code)
	}
	if r := ad.decide(shared, "accept", ""); r.code != http.StatusForbidden {
		t.Errorf("admin posts a reviewer decision: %d", r.code)
	}
}

func TestCSRF(t *testing.T) {
	a := newApp(t, 2, 1)
	r1, r2 := a.signIn("r1"), a.signIn("r2")
	key := a.queueOf("r1")[0]
	form := url.Values{"key": {key}, "decision": {"accept"}}
	if r := r1.post("/api/decision", form, nil); r.code != http.StatusForbidden {
		t.Errorf("missing CSRF: %d", r.code)
	}
	if r := r1.post("/api/decision", form, map[string]string{"X-CSRF-Token": "wrong"}); r.code != http.StatusForbidden {
		t.Errorf("wrong CSRF header: %d", r.code)
	}
	if r := r1.post("/api/decision", form, map[string]string{"X-CSRF-Token": r2.csrf}); r.code != http.StatusForbidden {
		t.Errorf("another session's CSRF: %d", r.code)
	}
	bad := url.Values{"key": {key}, "decision": {"accept"}, "csrf": {"wrong"}}
	if r := r1.post("/api/decision", bad, nil); r.code != http.StatusForbidden {
		t.Errorf("wrong CSRF field: %d", r.code)
	}
	if r := r1.post("/logout", url.Values{}, nil); r.code != http.StatusForbidden {
		t.Errorf("logout without CSRF: %d", r.code)
	}
	ad := a.signIn(AdminName)
	for _, p := range []string{"/admin/resolve", "/admin/lock"} {
		if r := ad.post(p, url.Values{"key": {key}, "decision": {"accept"}, "locked": {"1"}}, nil); r.code != http.StatusForbidden {
			t.Errorf("admin %s without CSRF: %d", p, r.code)
		}
	}
	if r := r1.post("/api/decision", form, map[string]string{"X-CSRF-Token": r1.csrf, "Origin": "http://evil.example"}); r.code != http.StatusForbidden {
		t.Errorf("cross-origin POST: %d", r.code)
	}
	// Nothing above was stored.
	lines, _ := a.store.ResolvedLines(context.Background())
	if len(lines) != 0 {
		t.Fatalf("a refused request stored %+v", lines[0])
	}
	okForm := url.Values{"key": {key}, "decision": {"accept"}, "csrf": {r1.csrf}}
	if r := r1.post("/api/decision", okForm, nil); r.code != 200 {
		t.Errorf("right CSRF field: %d %s", r.code, r.body)
	}
	if r := r1.decide(key, "reject", ""); r.code != 200 {
		t.Errorf("right CSRF header: %d %s", r.code, r.body)
	}
	if r := r1.decide(key, "maybe", ""); r.code != http.StatusBadRequest {
		t.Errorf("bad decision value: %d", r.code)
	}
}

func TestPathTraversal(t *testing.T) {
	a := newApp(t, 1, 1)
	r1 := a.signIn("r1")
	secret := "TOP-SECRET-CONTENT"
	os.WriteFile(a.fx.Dir+"/secret.txt", []byte(secret), 0o644)
	key := a.fx.Cases[0].KeyID()
	for _, p := range []string{
		"/image/..%2f..%2f..%2fetc%2fpasswd/cxr.png",
		"/image/..%2fsecret.txt/cxr.png",
		"/image/" + key + "/..%2f..%2fsecret.txt",
		"/image/" + key + "/..%2fmanifest.jsonl",
		"/image/%2e%2e/%2e%2e/secret.txt",
		"/image/" + url.PathEscape(a.fx.Cases[0].Image) + "/cxr.png",
		"/image/" + key + "/cxr.png%00.txt",
		"/static/..%2f..%2fstore.go",
		"/static/../../secret.txt",
		"/case/..%2f..%2fsecret.txt",
		"/image/" + key + "/../../secret.txt",
	} {
		r := r1.getRaw(p)
		if r.code == 200 || strings.Contains(r.body, secret) || strings.Contains(r.body, "root:") || strings.Contains(r.body, `"case_id"`) {
			t.Errorf("GET %s: %d %.60q", p, r.code, r.body)
		}
	}
	if r := r1.get("/image/" + key + "/cxr.png"); r.code != 200 || r.header.Get("Content-Type") != "image/png" {
		t.Errorf("legitimate image: %d", r.code)
	}
}

func TestBodyLimits(t *testing.T) {
	t.Parallel()
	a := newApp(t, 1, 1)
	r1 := a.signIn("r1")
	key := a.queueOf("r1")[0]
	big := strings.Repeat("x", MaxBodyBytes+1)
	if r := r1.decide(key, "accept", big); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized decision body: %d", r.code)
	}
	if r := r1.post("/api/decision", url.Values{"key": {key}, "decision": {"accept"}, "csrf": {r1.csrf}, "note": {big}}, nil); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized form with CSRF field: %d", r.code)
	}
	if r := r1.decide(key, "accept", strings.Repeat("y", MaxNoteBytes+1)); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("over-long comment: %d", r.code)
	}
	if r := a.anon().post("/login", url.Values{"token": {big}}, nil); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized login: %d", r.code)
	}
	if lines, _ := a.store.ResolvedLines(context.Background()); len(lines) != 0 {
		t.Error("an oversized request was stored")
	}
}

func TestLockAndResolveViaHTTP(t *testing.T) {
	a := newApp(t, 2, 2)
	r1, r2, ad := a.signIn("r1"), a.signIn("r2"), a.signIn(AdminName)
	key := a.queueOf("r1")[0]
	r1.decide(key, "accept", "")
	r2.decide(key, "reject", "edge is off")
	page := ad.get("/admin")
	if !strings.Contains(page.body, `data-key="`+key+`"`) || !strings.Contains(page.body, "edge is off") {
		t.Errorf("disagreement not listed")
	}
	if !strings.Contains(page.body, `data-pair="r1-r2"`) {
		t.Errorf("pair r1–r2 missing from the agreement table")
	}
	if r := ad.post("/admin/lock", url.Values{"csrf": {ad.csrf}, "locked": {"1"}}, nil); r.code != http.StatusSeeOther {
		t.Fatalf("lock: %d", r.code)
	}
	if r := r1.decide(key, "reject", ""); r.code != http.StatusConflict {
		t.Errorf("decision while locked: %d", r.code)
	}
	if r := r1.get("/case/" + key); !strings.Contains(r.body, "locked") {
		t.Error("case page does not say the review is locked")
	}
	if r := ad.post("/admin/resolve", url.Values{"csrf": {ad.csrf}, "key": {key}, "decision": {"accept"}, "note": {"ok on review"}}, nil); r.code != http.StatusSeeOther {
		t.Fatalf("resolve: %d %s", r.code, r.body)
	}
	if r := ad.post("/admin/resolve", url.Values{"csrf": {ad.csrf}, "key": {key}, "decision": {"maybe"}}, nil); r.code != http.StatusBadRequest {
		t.Errorf("bad resolution: %d", r.code)
	}
	lines, _ := a.store.ResolvedLines(context.Background())
	if len(lines) != 1 || lines[0].Decision != "accept" || strings.Join(lines[0].Reviewers, ",") != "r1,r2,admin" {
		t.Errorf("resolved %+v", lines)
	}
	ad.post("/admin/lock", url.Values{"csrf": {ad.csrf}, "locked": {"0"}}, nil)
	if r := r1.decide(key, "reject", ""); r.code != 200 {
		t.Errorf("decision after unlock: %d", r.code)
	}
}

// TestImageDigestChecked: a radiograph changed after init is not shown.
func TestImageDigestChecked(t *testing.T) {
	a := newApp(t, 1, 1)
	r1 := a.signIn("r1")
	c := a.fx.Cases[1]
	os.WriteFile(c.Image, []byte("changed"), 0o644)
	if r := r1.get("/image/" + c.KeyID() + "/cxr.png"); r.code != http.StatusConflict || !strings.Contains(r.body, "changed") {
		t.Errorf("changed image: %d %s", r.code, r.body)
	}
}

// TestSessionSurvivesRestart: decisions and sessions live in the database.
func TestSessionSurvivesRestart(t *testing.T) {
	a := newApp(t, 1, 1)
	r1 := a.signIn("r1")
	key := a.queueOf("r1")[0]
	if r := r1.decide(key, "unsure", "hmm"); r.code != 200 {
		t.Fatal(r.code)
	}
	a.srv.Close()
	a.store.Close()
	s2, err := Open(a.store.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	fixedClock(s2) // the session was stamped by the test clock
	h, _ := NewServer(s2)
	ts := httptest.NewServer(h.Handler())
	defer ts.Close()
	// Move the cookie over to the new server's address.
	old, _ := url.Parse(a.srv.URL)
	nu, _ := url.Parse(ts.URL)
	r1.http.Jar.SetCookies(nu, r1.http.Jar.Cookies(old))
	a.srv = ts
	r := r1.get("/case/" + key)
	if r.code != 200 || !strings.Contains(r.body, "Saved: unsure") || !strings.Contains(r.body, "hmm") {
		t.Errorf("after restart: %d", r.code)
	}
}

// TestConcurrentHTTPDecisions: parallel reviewers over HTTP lose nothing.
func TestConcurrentHTTPDecisions(t *testing.T) {
	a := newApp(t, 3, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failures := 0
	want := map[string]string{}
	for _, name := range []string{"r1", "r2", "r3"} {
		c := a.signIn(name)
		keys := a.queueOf(name)
		for i, k := range keys {
			d := []string{"accept", "reject", "unsure"}[i%3]
			want[k] = d
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r := c.decide(k, d, ""); r.code != 200 {
					mu.Lock()
					failures++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if failures > 0 {
		t.Fatalf("%d decisions failed", failures)
	}
	lines, _ := a.store.ResolvedLines(context.Background())
	if len(lines) != len(want) {
		t.Fatalf("%d resolved, want %d", len(lines), len(want))
	}
	for _, ln := range lines {
		if w := want[ln.KeyID]; ln.Decision != w {
			t.Errorf("%s: %s, want %s", ln.KeyID, ln.Decision, w)
		}
	}
}

// TestSessionExpiryAndStorage: sessions end after their lifetime, and the
// database holds only a hash of the cookie value.
func TestSessionExpiryAndStorage(t *testing.T) {
	a := newApp(t, 1, 1)
	r1 := a.signIn("r1")
	u, _ := url.Parse(a.srv.URL)
	var cookie string
	for _, c := range r1.http.Jar.Cookies(u) {
		if c.Name == sessionCookie {
			cookie = c.Value
		}
	}
	if cookie == "" {
		t.Fatal("no session cookie")
	}
	var n int
	a.store.db.QueryRowContext(context.Background(), `SELECT count(*) FROM sessions WHERE id_sha256 = ? OR CAST(id_sha256 AS TEXT) = ?`, []byte(cookie), cookie).Scan(&n)
	if n != 0 {
		t.Error("the cookie value is stored in clear")
	}
	if r := r1.get("/queue"); r.code != 200 {
		t.Fatalf("fresh session: %d", r.code)
	}
	later := a.store.now().Add(sessionTTL + time.Minute)
	a.store.now = func() time.Time { return later }
	if r := r1.get("/queue"); r.code != http.StatusUnauthorized {
		t.Errorf("expired session: %d", r.code)
	}
}

// TestReportIsEscaped: report text and comments are shown as text, never
// as markup.
func TestReportIsEscaped(t *testing.T) {
	a := newApp(t, 1, 1)
	key := a.queueOf("r1")[0]
	a.store.db.ExecContext(context.Background(), `UPDATE cases SET report = ? WHERE key_id = ?`, `<script>alert(1)</script>`, key)
	r1 := a.signIn("r1")
	r1.decide(key, "unsure", `"><img src=x onerror=alert(2)>`)
	r := r1.get("/case/" + key)
	if strings.Contains(r.body, "<script>alert") || strings.Contains(r.body, "<img src=x") {
		t.Error("markup from data reached the page unescaped")
	}
	if !strings.Contains(r.body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("report text missing")
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
}

// TestImageCaching: an image carries an ETag and Cache-Control; asking
// again with its tag is answered 304 without a body; the static files
// carry them too; and many reviewers asking for the same images at once
// cause one build per image.
func TestImageCaching(t *testing.T) {
	t.Parallel()
	a := newApp(t, 1, 1)
	c := a.signIn("r1")
	var key string
	for _, k := range a.queueOf("r1") {
		if strings.Contains(k, "_positive_") {
			key = k
			break
		}
	}
	for _, p := range []string{"/image/" + key + "/cxr.png", "/image/" + key + "/mask.png", "/image/" + key + "/contour.png", "/static/app.js", "/static/common/common.css"} {
		r := c.get(p)
		etag := r.header.Get("ETag")
		if r.code != 200 || etag == "" || r.header.Get("Cache-Control") == "" || r.header.Get("Cache-Control") == "no-store" {
			t.Fatalf("%s: %d, ETag %q, Cache-Control %q", p, r.code, etag, r.header.Get("Cache-Control"))
		}
		req, _ := http.NewRequest("GET", a.srv.URL+p, nil)
		req.Header.Set("If-None-Match", etag)
		if r2 := c.do(req); r2.code != http.StatusNotModified || r2.body != "" {
			t.Errorf("%s with its ETag: %d, %d bytes", p, r2.code, len(r2.body))
		}
	}
	srv, err := NewServer(a.store)
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	cookies := c.http.Jar.Cookies(mustURL(t, a.srv.URL))
	var wg sync.WaitGroup
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, kind := range []string{"cxr.png", "mask.png"} {
				req := httptest.NewRequest("GET", "/image/"+key+"/"+kind, nil)
				for _, ck := range cookies {
					req.AddCookie(ck)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					t.Errorf("%s: %d", kind, rec.Code)
				}
			}
		}()
	}
	wg.Wait()
	if _, n, _, builds := srv.images.Stats(); n != 2 || builds != 2 {
		t.Errorf("%d images held after %d builds, want 2 and 2", n, builds)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
