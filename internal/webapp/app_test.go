package webapp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// fakeBackend is a Backend in memory: accounts by name with one token each.
type fakeBackend struct {
	tokens   map[string]string // name → token
	names    []string
	sessions MemSessions
	endErr   error // EndSession's error, after which the session stays
}

func newFakeBackend(names ...string) *fakeBackend {
	b := &fakeBackend{tokens: map[string]string{}, names: names}
	for i, n := range names {
		b.tokens[n] = fmt.Sprintf("token-%d-%s", i, n)
	}
	return b
}

func (b *fakeBackend) Authenticate(_ context.Context, token string) (*Account, error) {
	for i, n := range b.names {
		if token != "" && b.tokens[n] == token {
			return &Account{ID: int64(i + 1), Name: n}, nil
		}
	}
	return nil, nil
}

func (b *fakeBackend) CreateSession(_ context.Context, id int64, ttl time.Duration) (string, string, error) {
	c, _ := NewToken()
	csrf, _ := NewToken()
	b.sessions.Create(c, id, csrf, time.Now().Add(ttl).Unix(), time.Now().Unix())
	return c, csrf, nil
}

func (b *fakeBackend) Session(_ context.Context, cookie string) (*Account, string, error) {
	id, csrf, ok := b.sessions.Lookup(cookie, time.Now().Unix())
	if !ok {
		return nil, "", nil
	}
	return &Account{ID: id, Name: b.names[id-1]}, csrf, nil
}

func (b *fakeBackend) EndSession(_ context.Context, cookie string) error {
	if b.endErr != nil {
		return b.endErr
	}
	b.sessions.End(cookie)
	return nil
}

// TestLayer: the login page, a session-only route, CSRF on POST, the
// security headers and the common static files.
func TestLayer(t *testing.T) {
	b := newFakeBackend("r1")
	app := newTestApp(b, func(w http.ResponseWriter, status int, msg string) {
		w.WriteHeader(status)
		io.WriteString(w, "LOGIN "+msg)
	})
	routes := http.NewServeMux()
	routes.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello "+UserOf(r).Name+" "+CSRFOf(r)) })
	routes.HandleFunc("POST /do", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "done") })
	h := app.Handler(routes)
	do := func(method, path, cookie, body string, hdr map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: SessionCookie, Value: cookie})
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, tc := range []struct {
		path     string
		code     int
		location string
	}{
		{"/", http.StatusSeeOther, "/login"},
		{"/queue", http.StatusUnauthorized, ""},
	} {
		rec := do("GET", tc.path, "", "", nil)
		if rec.Code != tc.code || rec.Header().Get("Location") != tc.location || tc.location == "" && !strings.HasPrefix(rec.Body.String(), "LOGIN") {
			t.Fatalf("anonymous %s: %d %v %s, want %d to %q", tc.path, rec.Code, rec.Header(), rec.Body, tc.code, tc.location)
		}
	}
	rec := do("POST", "/login", "", url.Values{"token": {b.tokens["r1"]}}.Encode(), nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", rec.Code)
	}
	var cookie string
	for _, c := range rec.Result().Cookies() {
		if c.Name == SessionCookie {
			cookie = c.Value
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				t.Errorf("cookie flags: %+v", c)
			}
		}
	}
	home := do("GET", "/", cookie, "", nil)
	if home.Code != 200 || !strings.HasPrefix(home.Body.String(), "hello r1 ") {
		t.Fatalf("home: %d %s", home.Code, home.Body)
	}
	csrf := strings.TrimPrefix(home.Body.String(), "hello r1 ")
	for _, hd := range []string{"Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy"} {
		if home.Header().Get(hd) == "" {
			t.Errorf("missing header %s", hd)
		}
	}
	if rec := do("POST", "/do", cookie, "x=1", nil); rec.Code != 403 {
		t.Errorf("POST without CSRF: %d", rec.Code)
	}
	if rec := do("POST", "/do", cookie, "x=1", map[string]string{"X-CSRF-Token": csrf}); rec.Code != 200 {
		t.Errorf("POST with CSRF: %d", rec.Code)
	}
	if rec := do("POST", "/do", cookie, "x=1", map[string]string{"X-CSRF-Token": csrf, "Origin": "http://evil.example"}); rec.Code != 403 {
		t.Errorf("cross-origin POST: %d", rec.Code)
	}
	if rec := do("POST", "/do", cookie, strings.Repeat("x", MaxBodyBytes+1), nil); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", rec.Code)
	}
	zoom := do("GET", "/static/common/zoom.js", "", "", nil)
	if zoom.Code != 200 || !strings.Contains(zoom.Body.String(), "chexZoom") || zoom.Header().Get("ETag") == "" || zoom.Header().Get("Cache-Control") != StaticMaxAge {
		t.Errorf("common static: %d %v", zoom.Code, zoom.Header())
	}
	if rec := do("GET", "/static/common/zoom.js", "", "", map[string]string{"If-None-Match": zoom.Header().Get("ETag")}); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("static revalidation: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	for _, p := range []string{"/static/common/", "/static/common/nope.js"} {
		if rec := do("GET", p, "", "", nil); rec.Code != http.StatusNotFound {
			t.Errorf("%s: %d", p, rec.Code)
		}
	}
	ico := do("GET", "/favicon.ico", "", "", nil)
	if ico.Code != 200 || ico.Header().Get("Content-Type") != "image/x-icon" || !bytes.HasPrefix(ico.Body.Bytes(), []byte{0, 0, 1, 0, 1, 0}) {
		t.Errorf("favicon without a session: %d %v", ico.Code, ico.Header())
	}
	if rec := do("POST", "/logout", cookie, url.Values{"csrf": {csrf}}.Encode(), nil); rec.Code != http.StatusSeeOther {
		t.Errorf("logout: %d", rec.Code)
	}
	if rec := do("GET", "/", cookie, "", nil); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login" {
		t.Errorf("after logout: %d %v", rec.Code, rec.Header())
	}
}

func TestMatchToken(t *testing.T) {
	type account struct {
		name string
		hash []byte
	}
	accounts := []account{{"a", TokenHash("tok-a")}, {"b", TokenHash("tok-b")}, {"b-again", TokenHash("tok-b")}, {"no hash", nil}}
	hash := func(a account) []byte { return a.hash }
	for _, tc := range []struct {
		token, want string
		ok          bool
	}{
		{"tok-a", "a", true},
		{"tok-b", "b", true}, // the first of two with the same hash
		{"tok-c", "", false},
		{"", "", false},
	} {
		got, ok := MatchToken(tc.token, accounts, hash)
		if ok != tc.ok || got.name != tc.want {
			t.Errorf("MatchToken(%q) = %q, %v; want %q, %v", tc.token, got.name, ok, tc.want, tc.ok)
		}
	}
	if _, ok := MatchToken("tok-a", []account(nil), hash); ok {
		t.Error("a match among no accounts")
	}
}

// newTestApp is an App whose sign-in page is login.
func newTestApp(b Backend, login func(w http.ResponseWriter, status int, msg string)) *App {
	a := New(b, nil, nil)
	a.LoginPage = login
	return a
}

// TestLogoutFailureIsVisible: a sign-out whose session could not be ended
// (the database refused the write) answers an error and keeps the cookie,
// not "signed out" while the session stays valid; the error is logged.
func TestLogoutFailureIsVisible(t *testing.T) {
	b := newFakeBackend("r1")
	b.endErr = errors.New("disk I/O error")
	var logged strings.Builder
	app := newTestApp(b, func(w http.ResponseWriter, status int, msg string) { w.WriteHeader(status) })
	app.Logf = func(format string, args ...any) { fmt.Fprintf(&logged, format+"\n", args...) }
	routes := http.NewServeMux()
	routes.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, CSRFOf(r)) })
	h := app.Handler(routes)
	cookie, csrf := signIn(t, h, b.tokens["r1"])
	req := httptest.NewRequest("POST", "/logout", strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: cookie})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Location") != "" {
		t.Errorf("a failed sign-out: %d to %q, want 500", rec.Code, rec.Header().Get("Location"))
	}
	for _, c := range rec.Result().Cookies() {
		if c.Name == SessionCookie {
			t.Errorf("a failed sign-out cleared the cookie: %+v", c)
		}
	}
	if !strings.Contains(logged.String(), "POST /logout: sign-out: disk I/O error") {
		t.Errorf("log %q", logged.String())
	}
}

// signIn posts token to h's sign-in and returns the session cookie and
// the CSRF token the home route ("GET /", answering CSRFOf) shows.
func signIn(t *testing.T, h http.Handler, token string) (cookie, csrf string) {
	t.Helper()
	req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.Name == SessionCookie {
			cookie = c.Value
		}
	}
	if cookie == "" {
		t.Fatalf("sign-in: %d, no cookie", rec.Code)
	}
	req = httptest.NewRequest("GET", "/", nil)
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: cookie})
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return cookie, rec.Body.String()
}
