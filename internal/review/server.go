package review

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"image"
	"image/color"
	"io"
	"io/fs"
	"log"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/webapp"
)

//go:embed web/templates/*.html web/static/*
var webFS embed.FS

// Limits of the web app.
const (
	// MaxBodyBytes bounds every request body; decisions and comments are
	// small, so anything larger is refused with 413.
	MaxBodyBytes = webapp.MaxBodyBytes
	// MaxNoteBytes bounds a comment.
	MaxNoteBytes  = 4000
	sessionCookie = webapp.SessionCookie
	sessionTTL    = webapp.SessionTTL
	// imageCacheBytes bounds the encoded images kept (a radiograph is
	// about 1 MB, its mask and contour a few kB).
	imageCacheBytes = 96 << 20
	// imageBuilds bounds the images decoded and encoded at once: each
	// holds a decoded radiograph.
	imageBuilds = 2
)

// queuePageSize is the number of cases on one page of a reviewer's queue.
var queuePageSize = 500

// Server is the review web app: a reviewer's own queue and case
// views, the admin's progress, agreement and resolution views. Sign-in,
// sessions, CSRF, throttling, headers and static serving are the shared
// web layer's (package webapp): every route but the sign-in page and the
// static assets needs a session, every state-changing request the
// session's CSRF token.
type Server struct {
	store *Store
	web   *webapp.App
	// Secure marks the session cookie Secure (set when serving TLS).
	Secure bool
	Log    *log.Logger

	images *webapp.BlobCache // encoded PNGs by digest and kind
}

// NewServer returns the web app over an open store.
func NewServer(s *Store) (*Server, error) {
	funcs := template.FuncMap{
		"kappa": func(k float64) string {
			if math.IsNaN(k) {
				return "undefined"
			}
			return fmt.Sprintf("%.3f", k)
		},
		"inc":  func(i int) int { return i + 1 },
		"add":  func(a, b int) int { return a + b },
		"list": func(xs ...any) []any { return xs },
		"pct": func(a, b int) int {
			if b == 0 {
				return 0
			}
			return a * 100 / b
		},
	}
	t, err := webapp.ParseTemplates(funcs, webFS, "web/templates/*.html")
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(webFS, "web/static")
	if err != nil {
		return nil, err
	}
	srv := &Server{store: s, Log: log.New(io.Discard, "", 0), images: webapp.NewBlobCache(imageCacheBytes, imageBuilds)}
	srv.web = webapp.New(s.accounts(), sub, t)
	srv.web.Logf = func(format string, args ...any) { srv.Log.Printf(format, args...) }
	srv.web.Admit = func(a *webapp.Account) string {
		if s.ReadOnly() && !a.Admin {
			return "This server shows the admin's progress view of a read-only review database; reviewers cannot sign in to it."
		}
		return ""
	}
	return srv, nil
}

func userOf(r *http.Request) *Reviewer {
	a := webapp.UserOf(r)
	return &Reviewer{ID: a.ID, Name: a.Name, IsAdmin: a.Admin}
}
func csrfOf(r *http.Request) string { return webapp.CSRFOf(r) }

// Handler returns the app's routes wrapped in the common protections.
func (srv *Server) Handler() http.Handler {
	srv.web.Secure = srv.Secure
	auth := http.NewServeMux()
	auth.HandleFunc("GET /{$}", srv.home)
	auth.HandleFunc("GET /queue", srv.queue)
	auth.HandleFunc("GET /case/{key}", srv.casePage)
	auth.HandleFunc("GET /image/{key}/{kind}", srv.image)
	auth.HandleFunc("POST /api/decision", srv.writable(srv.decide))
	auth.HandleFunc("GET /api/queue", srv.queueJSON)
	auth.HandleFunc("GET /admin", srv.admin)
	auth.HandleFunc("POST /admin/resolve", srv.writable(srv.resolve))
	auth.HandleFunc("POST /admin/lock", srv.writable(srv.lock))
	return srv.web.Handler(auth)
}

// writable refuses a change with 403 when the store is read-only, before
// the handler reads the request.
func (srv *Server) writable(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if srv.store.ReadOnly() {
			srv.apiError(w, http.StatusForbidden, "the review database is open read-only: nothing can be changed on this server")
			return
		}
		h(w, r)
	}
}

func (srv *Server) render(w http.ResponseWriter, status int, name string, data any) {
	srv.web.Render(w, status, name, data)
}

func (srv *Server) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	srv.web.Fail(w, r, status, err)
}

func (srv *Server) apiError(w http.ResponseWriter, status int, msg string) {
	webapp.APIError(w, status, msg)
}

func (srv *Server) formError(w http.ResponseWriter, r *http.Request, err error) {
	webapp.FormError(w, err)
}

func (srv *Server) home(w http.ResponseWriter, r *http.Request) {
	if userOf(r).IsAdmin {
		http.Redirect(w, r, "/admin", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/queue", http.StatusSeeOther)
}

// page is the data every template gets.
type page struct {
	User     *Reviewer
	CSRF     string
	Locked   bool
	ReadOnly bool
	Title    string
}

func (srv *Server) pageData(r *http.Request, title string) (page, error) {
	locked, err := srv.store.Locked(r.Context())
	return page{User: userOf(r), CSRF: csrfOf(r), Locked: locked, ReadOnly: srv.store.ReadOnly(), Title: title}, err
}

func (srv *Server) queue(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	if u.IsAdmin {
		http.Redirect(w, r, "/admin", http.StatusSeeOther)
		return
	}
	items, err := srv.store.Queue(r.Context(), u.ID)
	if err != nil {
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	p, err := srv.pageData(r, "My queue")
	if err != nil {
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	done := 0
	next := ""
	for _, it := range items {
		if it.Decision != "" {
			done++
		} else if next == "" {
			next = it.Case.KeyID
		}
	}
	// One page of the queue at a time, so a queue of a million flagged
	// cases is not one page of tens of megabytes.
	pg, _ := strconv.Atoi(r.URL.Query().Get("page"))
	pages := max(1, (len(items)+queuePageSize-1)/queuePageSize)
	pg = min(max(pg, 1), pages)
	from := (pg - 1) * queuePageSize
	data := queueView{Page: p, Items: items[from:min(len(items), from+queuePageSize)], Offset: from,
		Done: done, Total: len(items), Next: next, PageNo: pg, Pages: pages}
	if pg > 1 {
		data.PrevPage = pg - 1
	}
	if pg < pages {
		data.NextPage = pg + 1
	}
	srv.render(w, http.StatusOK, "queue.html", data)
}

// queueView is one page of a reviewer's queue.
type queueView struct {
	Page   page
	Items  []QueueItem // this page's cases
	Offset int         // the number of cases on the pages before
	// Done and Total count the decided and all cases of the queue; Next
	// is the first undecided case ("": none).
	Done, Total int
	Next        string
	// PageNo and Pages are the page's number (from 1) and the count;
	// PrevPage and NextPage the neighbours' (0: none).
	PageNo, Pages, PrevPage, NextPage int
}

func (srv *Server) queueJSON(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	type item struct {
		KeyID    string `json:"key_id"`
		Lesion   string `json:"lesion"`
		Label    string `json:"label"`
		Decision string `json:"decision"`
		Time     string `json:"time"`
	}
	out := []item{}
	if !u.IsAdmin {
		items, err := srv.store.Queue(r.Context(), u.ID)
		if err != nil {
			srv.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		for _, it := range items {
			out = append(out, item{it.Case.KeyID, it.Case.Lesion, it.Case.Label, it.Decision, it.Time})
		}
	}
	webapp.JSON(w, map[string]any{"reviewer": u.Name, "cases": out})
}

// caseFor returns the case named in the request if the user may see it:
// the admin sees every case, a reviewer only the cases assigned to them.
// Anything else is 404, so a reviewer learns nothing about other queues.
func (srv *Server) caseFor(w http.ResponseWriter, r *http.Request, key string) *CaseInfo {
	c, err := srv.store.CaseByKey(r.Context(), key)
	if err != nil {
		srv.fail(w, r, http.StatusInternalServerError, err)
		return nil
	}
	u := userOf(r)
	if c != nil && !u.IsAdmin {
		ok, err := srv.store.IsAssigned(r.Context(), c.ID, u.ID)
		if err != nil {
			srv.fail(w, r, http.StatusInternalServerError, err)
			return nil
		}
		if !ok {
			c = nil
		}
	}
	if c == nil {
		srv.apiError(w, http.StatusNotFound, "no such case in your queue")
	}
	return c
}

type reviewerView struct {
	Name, Decision, Note, Time string
}

func (srv *Server) casePage(w http.ResponseWriter, r *http.Request) {
	c := srv.caseFor(w, r, r.PathValue("key"))
	if c == nil {
		return
	}
	u := userOf(r)
	p, err := srv.pageData(r, c.KeyID)
	if err != nil {
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	data := caseView{Page: p, Case: c, Lesion: c.Lesion, Hints: strings.Join(c.LocationHints, "; ")}
	flags, err := srv.store.ItemFlags(r.Context(), c.KeyID)
	if err != nil {
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if len(flags) > 0 {
		data.Flags = flags
	}
	// Only this case's state and its neighbours are read: a case page
	// stays small and cheap however long the review is.
	cs, err := srv.store.CaseStateOf(r.Context(), c.ID)
	if err != nil || cs == nil {
		srv.fail(w, r, http.StatusInternalServerError, fmt.Errorf("state of %s: %v", c.KeyID, err))
		return
	}
	if u.IsAdmin {
		var views []reviewerView
		for i, n := range cs.Assigned {
			v := reviewerView{Name: n}
			if a := cs.Latest[i]; a != nil {
				v.Decision, v.Note, v.Time = a.Decision, a.Note, a.Time
			}
			views = append(views, v)
		}
		data.Reviews = views
		data.Admin = cs.Admin
		if ln := cs.Resolved(); ln != nil {
			data.Resolved = ln.Decision
		}
	} else {
		for i, n := range cs.Assigned {
			if a := cs.Latest[i]; n == u.Name && a != nil {
				data.Decision, data.Note, data.Time = a.Decision, a.Note, a.Time
				if flags != nil { // an item-health round shows outcomes (itemhealth.go)
					data.Decision, data.Note = OutcomeOf(a.Decision, a.Note), strings.TrimPrefix(a.Note, FixPrefix)
				}
			}
		}
	}
	var who int64
	if !u.IsAdmin {
		who = u.ID
	}
	pos, total, prev, next, err := srv.store.Neighbours(r.Context(), c.ID, who)
	if err != nil {
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	data.Pos, data.Total, data.Prev, data.Next = pos, total, prev, next
	srv.render(w, http.StatusOK, "case.html", data)
}

// caseView is a case's page.
type caseView struct {
	Page   page
	Case   *CaseInfo
	Lesion string
	Hints  string     // the reported locations, joined
	Flags  []ItemFlag // an item-health round's flags of the case (nil: none)
	// The admin's view: every reviewer's latest decision, the admin's
	// resolution (nil: none) and the resolved decision ("": none yet).
	Reviews  []reviewerView
	Admin    *Action
	Resolved string
	// A reviewer's view: their own latest decision ("": none).
	Decision, Note, Time string
	// Pos of Total is the case's place in the list the user works
	// through; Prev and Next its neighbours' keys ("": none).
	Pos, Total int
	Prev, Next string
}

// decide saves a reviewer's decision (form or urlencoded body: key,
// decision, note) and answers JSON.
func (srv *Server) decide(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		srv.formError(w, r, err)
		return
	}
	u := userOf(r)
	if u.IsAdmin {
		srv.apiError(w, http.StatusForbidden, "the admin resolves cases in the admin view; decisions are the reviewers'")
		return
	}
	c := srv.caseFor(w, r, r.PostForm.Get("key"))
	if c == nil {
		return
	}
	note := strings.TrimSpace(r.PostForm.Get("note"))
	if len(note) > MaxNoteBytes {
		srv.apiError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("comment longer than %d bytes", MaxNoteBytes))
		return
	}
	dec := r.PostForm.Get("decision")
	shown := dec
	if srv.store.ItemHealthRound(r.Context()) { // keep / fix / drop (itemhealth.go)
		dec, note = OutcomeDecision(dec, note)
		shown = OutcomeOf(dec, note)
	}
	t, err := srv.store.Decide(r.Context(), u.ID, c, dec, note)
	switch {
	case errors.Is(err, ErrLocked):
		srv.apiError(w, http.StatusConflict, err.Error())
		return
	case err != nil && dec != reviewlog.DecisionAccept && dec != reviewlog.DecisionReject && dec != reviewlog.DecisionUnsure:
		srv.apiError(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	srv.Log.Printf("%s: %s %s", u.Name, c.KeyID, shown)
	webapp.JSON(w, map[string]string{"key_id": c.KeyID, "decision": shown, "note": note, "time": t})
}

func (srv *Server) adminOnly(w http.ResponseWriter, r *http.Request) bool {
	if !userOf(r).IsAdmin {
		srv.apiError(w, http.StatusForbidden, "admin only")
		return false
	}
	return true
}

func (srv *Server) resolve(w http.ResponseWriter, r *http.Request) {
	if !srv.adminOnly(w, r) {
		return
	}
	if err := r.ParseForm(); err != nil {
		srv.formError(w, r, err)
		return
	}
	c := srv.caseFor(w, r, r.PostForm.Get("key"))
	if c == nil {
		return
	}
	dec := r.PostForm.Get("decision")
	if dec == "clear" {
		dec = ""
	}
	note := strings.TrimSpace(r.PostForm.Get("note"))
	if len(note) > MaxNoteBytes {
		srv.apiError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("note longer than %d bytes", MaxNoteBytes))
		return
	}
	if dec != reviewlog.DecisionAccept && dec != reviewlog.DecisionReject && dec != "" {
		srv.apiError(w, http.StatusBadRequest, "decision must be accept, reject or clear")
		return
	}
	if _, err := srv.store.Resolve(r.Context(), c, dec, note); err != nil {
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	srv.Log.Printf("admin resolved %s: %q", c.KeyID, dec)
	back := "/admin#disagreements"
	if r.PostForm.Get("back") == "case" {
		back = "/case/" + url.PathEscape(c.KeyID)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

func (srv *Server) lock(w http.ResponseWriter, r *http.Request) {
	if !srv.adminOnly(w, r) {
		return
	}
	if err := r.ParseForm(); err != nil {
		srv.formError(w, r, err)
		return
	}
	locked := r.PostForm.Get("locked") == "1"
	if err := srv.store.SetLocked(r.Context(), locked); err != nil {
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	srv.Log.Printf("admin set locked=%v", locked)
	http.Redirect(w, r, "/admin", http.StatusSeeOther)
}

// progressCell counts one reviewer's decided and assigned cases of a lesion.
type progressCell struct{ Done, Assigned int }

type progressRow struct {
	Name  string
	Cells []progressCell
	Total progressCell
}

type statusRow struct {
	Lesion                                    string
	Cases, Accepted, Rejected, Disputed, Open int
	ResolvedByAdmin                           int
}

type disagreement struct {
	Case    *CaseInfo
	Reviews []reviewerView
	Admin   *Action
}

func (srv *Server) admin(w http.ResponseWriter, r *http.Request) {
	if !userOf(r).IsAdmin {
		http.Redirect(w, r, "/queue", http.StatusSeeOther)
		return
	}
	st, err := srv.store.Snapshot(r.Context())
	if err != nil {
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	revs, err := srv.store.Reviewers(r.Context())
	if err != nil {
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	var lesions []string
	lesIdx := map[string]int{}
	for _, cs := range st {
		if _, ok := lesIdx[cs.Case.Lesion]; !ok {
			lesIdx[cs.Case.Lesion] = len(lesions)
			lesions = append(lesions, cs.Case.Lesion)
		}
	}
	rows := make([]progressRow, len(revs))
	revIdx := map[string]int{}
	for i, rv := range revs {
		rows[i] = progressRow{Name: rv.Name, Cells: make([]progressCell, len(lesions))}
		revIdx[rv.Name] = i
	}
	status := make([]statusRow, len(lesions))
	for i, l := range lesions {
		status[i].Lesion = l
	}
	var disputed, resolved []disagreement
	for _, cs := range st {
		li := lesIdx[cs.Case.Lesion]
		views := make([]reviewerView, len(cs.Assigned))
		for i, n := range cs.Assigned {
			views[i].Name = n
			a := cs.Latest[i]
			if a != nil {
				views[i].Decision, views[i].Note, views[i].Time = a.Decision, a.Note, a.Time
			}
			if ri, ok := revIdx[n]; ok {
				rows[ri].Cells[li].Assigned++
				rows[ri].Total.Assigned++
				if a != nil {
					rows[ri].Cells[li].Done++
					rows[ri].Total.Done++
				}
			}
		}
		s := &status[li]
		s.Cases++
		dec := ""
		if ln := cs.Resolved(); ln != nil {
			dec = ln.Decision
		}
		switch dec {
		case reviewlog.DecisionAccept:
			s.Accepted++
		case reviewlog.DecisionReject:
			s.Rejected++
		case reviewlog.DecisionDisputed:
			s.Disputed++
		default:
			s.Open++
		}
		if cs.Admin != nil {
			s.ResolvedByAdmin++
			resolved = append(resolved, disagreement{cs.Case, views, cs.Admin})
		} else if dec == reviewlog.DecisionDisputed {
			disputed = append(disputed, disagreement{cs.Case, views, nil})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return naturalLess(rows[i].Name, rows[j].Name) })
	p, err := srv.pageData(r, "Admin")
	if err != nil {
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	srv.render(w, http.StatusOK, "admin.html", adminView{Page: p, Lesions: lesions, Progress: rows,
		Status: status, Agreement: ComputeAgreement(st), Disputed: disputed, Resolved: resolved})
}

// adminView is the admin's page: progress per reviewer and lesion, the
// status per lesion, the reviewers' agreement, and the disputed and
// admin-resolved cases.
type adminView struct {
	Page               page
	Lesions            []string
	Progress           []progressRow
	Status             []statusRow
	Agreement          Agreement
	Disputed, Resolved []disagreement
}

// image serves a case's pictures by case id only (never a path from the
// request): cxr.png (the canonical grey radiograph), mask.png (the
// candidate mask, red, transparent outside) and contour.png (its outline).
// The radiograph is checked against the digest recorded at init, so a
// reviewer never judges an image other than the one the decision records.
func (srv *Server) image(w http.ResponseWriter, r *http.Request) {
	kind := r.PathValue("kind")
	if kind != "cxr.png" && kind != "mask.png" && kind != "contour.png" {
		srv.apiError(w, http.StatusNotFound, "unknown image kind")
		return
	}
	c := srv.caseFor(w, r, r.PathValue("key"))
	if c == nil {
		return
	}
	if kind != "cxr.png" && !c.Positive() {
		srv.apiError(w, http.StatusNotFound, "a negative case has no candidate mask")
		return
	}
	ck := imageKey(c, kind)
	// The image is a function of the digests in its key, so the key's
	// tag names it: a browser that holds it gets 304 without a build.
	etag := webapp.ETag([]byte(imageVersion + ck))
	if r.Header.Get("If-None-Match") == etag {
		w.Header().Set("ETag", etag)
		w.Header().Set("Cache-Control", imageCacheControl)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body, err := srv.imageBytes(r.Context(), c, kind, ck)
	if err != nil {
		if errors.As(err, new(changedError)) {
			srv.apiError(w, http.StatusConflict, err.Error())
			return
		}
		srv.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	webapp.ServeBytes(w, r, kind, etag, imageCacheControl, body)
}

// imageKey names a case's image in the cache by the digests it is made of.
func imageKey(c *CaseInfo, kind string) string {
	ck := c.ImageSHA256 + "/" + kind
	if c.MaskSHA256 != nil {
		ck += "/" + *c.MaskSHA256
	}
	return ck
}

// imageBytes is a case's image as served, from the cache or built.
func (srv *Server) imageBytes(ctx context.Context, c *CaseInfo, kind, ck string) ([]byte, error) {
	body, _, err := srv.images.Get(ctx, ck, func() ([]byte, error) {
		b, st, err := srv.makeImage(ctx, c, kind)
		if st == http.StatusConflict {
			return nil, changedError{err}
		}
		return b, err
	})
	return body, err
}

// changedError is an image file that no longer matches its digest.
type changedError struct{ error }

// imageVersion changes the images' tags when their rendering changes.
const imageVersion = "review-image/1 "

// imageCacheControl lets a reviewer's browser keep an image (private: it
// needs the session) and revalidate it by its tag after an hour.
const imageCacheControl = "private, max-age=3600"

func (srv *Server) makeImage(ctx context.Context, c *CaseInfo, kind string) ([]byte, int, error) {
	var buf bytes.Buffer
	if kind == "cxr.png" {
		data, err := safefile.ReadFile(c.ImagePath, imagefile.MaxFileBytes, safefile.Follow)
		if err != nil {
			return nil, http.StatusInternalServerError, fmt.Errorf("image of %s: %w", c.KeyID, safefile.Reason(err))
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != c.ImageSHA256 {
			return nil, http.StatusConflict, fmt.Errorf("the image file of %s changed since the review was set up; ask the admin", c.KeyID)
		}
		g, err := frame.DecodeGray(data)
		if err != nil {
			return nil, http.StatusInternalServerError, fmt.Errorf("image of %s: %w", c.KeyID, err)
		}
		err = render.EncodeFastPNG(&buf, g)
		return buf.Bytes(), 200, err
	}
	data, err := srv.store.MaskPNG(ctx, c.ID)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	m, err := mask.DecodePNG(bytes.NewReader(data))
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("stored mask of %s: %w", c.KeyID, err)
	}
	if kind == "contour.png" {
		m = mask.AndNot(m, mask.Erode(m, mask.Square(7), 1))
	}
	img := image.NewNRGBA(image.Rect(0, 0, m.W, m.H))
	on := color.NRGBA{255, 0, 0, 255}
	if kind == "contour.png" {
		on = color.NRGBA{255, 230, 0, 255}
	}
	for i, v := range m.Pix {
		if v != 0 {
			img.Pix[4*i], img.Pix[4*i+1], img.Pix[4*i+2], img.Pix[4*i+3] = on.R, on.G, on.B, on.A
		}
	}
	err = render.EncodeFastPNG(&buf, img)
	return buf.Bytes(), 200, err
}
