// Package webapp is the web layer shared by chexpercept's browser apps
// (the review app and the reading app): sign-in by token (GET /login, a
// form with one token field posted to POST /login), sessions in a cookie
// that is only a random handle, the CSRF token of every state-changing
// request, sign-in throttling per client address, security headers, the
// request body limit, and static serving.
//
// An app supplies its accounts and sessions (a Backend over its own
// database, package accountdb: the web layer holds no SQL), its sign-in
// page and its routes; App wraps the routes so that every one of them
// needs a live session and every POST the session's CSRF token. The routes read the signed-in account with UserOf and the
// CSRF token to embed in pages with CSRFOf.
package webapp

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

//go:embed static/*
var commonFS embed.FS

//go:embed templates/*.html
var templateFS embed.FS

// ParseTemplates returns the shared page templates ("head" and "foot" of
// every page, "login.html") with the app's own, parsed from app by
// patterns. The app defines "app-name" (its name in the title and the
// header), "app-assets" (its stylesheet and script tags) and
// "login-intro" (the sign-in page's one line), and may define "app-nav"
// (links before the signed-in name) and "app-banners" (notices above the
// page); every page template starts with {{template "head" .Page}} and
// ends with {{template "foot"}}, where .Page has Title, User (nil on the
// sign-in page) and CSRF.
func ParseTemplates(funcs template.FuncMap, app fs.FS, patterns ...string) (*template.Template, error) {
	t, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	return t.ParseFS(app, patterns...)
}

// LoginData is what the sign-in page gets.
type LoginData struct {
	Page  LoginPageData
	Error string
}

// LoginPageData is the sign-in page's .Page: no account yet.
type LoginPageData struct {
	Title string
	User  *Account
	CSRF  string
}

// Limits and names of the web layer.
const (
	// MaxBodyBytes bounds every request body; the apps' requests are
	// small, so anything larger is refused with 413.
	MaxBodyBytes = 64 << 10
	// SessionCookie is the session cookie's name.
	SessionCookie = "chexpercept_session"
	// SessionTTL is how long a session lives.
	SessionTTL = 12 * time.Hour
	// maxCookieLen bounds a cookie value looked up in a store.
	maxCookieLen = 128
)

// Account is a signed-in user of an app.
type Account struct {
	ID    int64
	Name  string
	Admin bool
}

// Backend is what the web layer needs from an app's store.
type Backend interface {
	// Authenticate returns the account whose token this is, or nil.
	Authenticate(ctx context.Context, token string) (*Account, error)
	// CreateSession starts a session and returns the cookie value and
	// the session's CSRF token.
	CreateSession(ctx context.Context, accountID int64, ttl time.Duration) (cookie, csrf string, err error)
	// Session returns the account and CSRF token of a live session, or
	// a nil account.
	Session(ctx context.Context, cookie string) (*Account, string, error)
	// EndSession forgets a session.
	EndSession(ctx context.Context, cookie string) error
}

// App is one web app's shared layer. Set the fields, then call Handler.
type App struct {
	Backend Backend
	// Secure marks the session cookie Secure (set when serving TLS).
	Secure bool
	// Logf logs one line (sign-ins, refused sign-ins, server errors).
	Logf func(format string, args ...any)
	// LoginPage writes the app's sign-in page with the status and an
	// error message ("" for none).
	LoginPage func(w http.ResponseWriter, status int, msg string)
	// Admit, when set, returns why an account that gave a right token
	// may not sign in ("" lets it in).
	Admit func(a *Account) string
	// Static holds the app's own assets, served under /static/; the
	// shared ones are under /static/common/.
	Static fs.FS
	// Templates are the app's pages (ParseTemplates).
	Templates *template.Template

	throttle *signInThrottle
}

// New returns an App with its throttle over the app's static files and
// templates (ParseTemplates); its sign-in page is the shared one.
func New(b Backend, static fs.FS, tmpl *template.Template) *App {
	a := &App{Backend: b, Static: static, Templates: tmpl}
	a.LoginPage = func(w http.ResponseWriter, status int, msg string) {
		a.Render(w, status, "login.html", LoginData{Page: LoginPageData{Title: "Sign in"}, Error: msg})
	}
	a.throttle = newSignInThrottle(func(format string, args ...any) { a.logf(format, args...) })
	return a
}

func (a *App) logf(format string, args ...any) {
	if a.Logf != nil {
		a.Logf(format, args...)
	}
}

type ctxKey int

const (
	keyUser ctxKey = iota
	keyCSRF
)

// UserOf is the signed-in account of a request routed through Handler.
func UserOf(r *http.Request) *Account { u, _ := r.Context().Value(keyUser).(*Account); return u }

// CSRFOf is the CSRF token of the request's session.
func CSRFOf(r *http.Request) string { c, _ := r.Context().Value(keyCSRF).(string); return c }

// Handler returns the sign-in, sign-out and static routes and routes
// (behind a session), all wrapped in Protect.
func (a *App) Handler(routes http.Handler) http.Handler {
	common, err := fs.Sub(commonFS, "static")
	if err != nil {
		panic(err) // the embedded folder exists
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) { a.LoginPage(w, http.StatusOK, "") })
	mux.HandleFunc("POST /login", a.login)
	mux.HandleFunc("GET /favicon.ico", serveFavicon)
	mux.Handle("GET /static/common/", http.StripPrefix("/static/common/", StaticHandler(common)))
	if a.Static != nil {
		mux.Handle("GET /static/", http.StripPrefix("/static/", StaticHandler(a.Static)))
	}
	auth := http.NewServeMux()
	auth.HandleFunc("POST /logout", a.logout)
	auth.Handle("/", routes)
	mux.Handle("/", a.requireSession(auth))
	return Protect(mux)
}

// Protect adds the security headers, the body size limit and a
// same-origin check on state-changing requests.
func Protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if o := r.Header.Get("Origin"); o != "" && o != "null" {
				u, err := url.Parse(o)
				if err != nil || u.Host != r.Host {
					http.Error(w, "cross-origin request refused", http.StatusForbidden)
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// requireSession answers 401 with the sign-in page unless the request
// carries a live session; for POSTs it also checks the CSRF token (header
// X-CSRF-Token or form field csrf).
func (a *App) requireSession(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var u *Account
		var csrf string
		if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" && len(c.Value) <= maxCookieLen {
			var serr error
			u, csrf, serr = a.Backend.Session(r.Context(), c.Value)
			if serr != nil {
				a.Fail(w, r, http.StatusInternalServerError, serr)
				return
			}
		}
		if u == nil {
			w.Header().Set("Cache-Control", "no-store")
			if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			a.LoginPage(w, http.StatusUnauthorized, "")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			got := r.Header.Get("X-CSRF-Token")
			if got == "" {
				if err := r.ParseForm(); err != nil {
					FormError(w, err)
					return
				}
				got = r.PostForm.Get("csrf")
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(csrf)) != 1 {
				APIError(w, http.StatusForbidden, "missing or wrong CSRF token")
				return
			}
		}
		ctx := context.WithValue(context.WithValue(r.Context(), keyUser, u), keyCSRF, csrf)
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (a *App) login(w http.ResponseWriter, r *http.Request) {
	client := clientKey(r)
	if err := r.ParseForm(); err != nil {
		FormError(w, err)
		return
	}
	at, wait, err := a.throttle.allow(r.Context(), client)
	if err != nil {
		return // the client went away while its attempt waited for a try
	}
	if at == nil {
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		a.LoginPage(w, http.StatusTooManyRequests, fmt.Sprintf("Too many wrong tokens from your address: try again in %d seconds.", secs))
		return
	}
	u, err := a.Backend.Authenticate(r.Context(), strings.TrimSpace(r.PostForm.Get("token")))
	switch {
	case err != nil:
		a.throttle.done(client, at, tokenUnknown)
	case u == nil:
		a.throttle.done(client, at, tokenWrong)
	default:
		a.throttle.done(client, at, tokenRight)
	}
	if err != nil {
		a.Fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if u == nil {
		a.LoginPage(w, http.StatusUnauthorized, "This token is not valid.")
		return
	}
	if a.Admit != nil {
		if why := a.Admit(u); why != "" {
			a.LoginPage(w, http.StatusForbidden, why)
			return
		}
	}
	cookie, _, err := a.Backend.CreateSession(r.Context(), u.ID, SessionTTL)
	if err != nil {
		a.Fail(w, r, http.StatusInternalServerError, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: cookie, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: a.Secure || r.TLS != nil})
	a.logf("%s signed in", u.Name)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the session and clears the cookie. A session that could
// not be ended fails the request and keeps the cookie: the user must not
// read "signed out" while the session stays valid.
func (a *App) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		if err := a.Backend.EndSession(r.Context(), c.Value); err != nil {
			a.Fail(w, r, http.StatusInternalServerError, fmt.Errorf("sign-out: %w", err))
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// Fail logs err and answers a bare status page: the cause stays in the log.
func (a *App) Fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	a.logf("%s %s: %v", r.Method, r.URL.Path, err)
	http.Error(w, http.StatusText(status), status)
}

// APIError answers {"error": msg} with status.
func APIError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg}) // a reply: the client is gone when it fails
}

// JSON answers v as JSON, not cached.
func JSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v) // plain data: only a client that is gone makes it fail
}

// FormError answers a body that could not be parsed: 413 when it was too
// large, else 400.
func FormError(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		APIError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", mbe.Limit))
		return
	}
	APIError(w, http.StatusBadRequest, "malformed request body")
}

// Render answers the page template name executed on data; a template
// error is logged and answered 500.
func (a *App) Render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := a.Templates.ExecuteTemplate(&buf, name, data); err != nil {
		a.logf("template %s: %v", name, err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	WriteHTML(w, status, buf.Bytes())
}

// WriteHTML answers a rendered page, not cached unless the caller set
// Cache-Control.
func WriteHTML(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if w.Header().Get("Cache-Control") == "" {
		w.Header().Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	w.Write(body)
}

// NewToken is 256 random bits, URL-safe: sign-in tokens, session cookies
// and CSRF tokens.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// TokenHash is what a store keeps of a sign-in token.
func TokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// MatchToken returns the first of accounts whose stored hash is token's
// TokenHash. Every hash is compared, each in constant time, so the time
// taken reveals neither the token nor which account matched.
func MatchToken[T any](token string, accounts []T, hash func(T) []byte) (match T, ok bool) {
	want := TokenHash(token)
	for _, a := range accounts {
		if subtle.ConstantTimeCompare(hash(a), want) == 1 && !ok {
			match, ok = a, true
		}
	}
	return match, ok
}

// SessionHash is what a store keeps of a session cookie: a stolen
// database file then holds no usable cookie, and a lookup by hash reveals
// nothing about the cookie through timing.
func SessionHash(cookie string) []byte {
	h := sha256.Sum256([]byte("session\x00" + cookie))
	return h[:]
}

// ValidCookie reports whether a cookie value is worth looking up.
func ValidCookie(cookie string) bool { return cookie != "" && len(cookie) <= maxCookieLen }
