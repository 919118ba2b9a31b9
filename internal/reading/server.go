package reading

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/protocol/profile"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
	"github.com/chexpercept/chexpercept/internal/webapp"
)

//go:embed web/templates/*.html web/static/*
var webFS embed.FS

// Server is the reading app. Routes (all behind the shared sign-in):
//
//	GET  /            → /read (a reader) or /admin
//	GET  /read        the reader's next turn, or the end page (data-done)
//	POST /answer      form: pos, seq, option (1-based; repeated for multi-select)
//	GET  /image/{pos}/{seq}/{i}  the i-th image of a turn already shown
//	GET  /admin       progress per reader
//
// Image URLs are positions, never file names: the bundle's option file
// names (option_N_mask_answer.png) would give the answer away.
type Server struct {
	store  *Store
	study  *Study
	bench  *benchmark.Benchmark
	oracle protocol.OracleMode
	system string
	web    *webapp.App
	// images holds the questions' images as served (encodeTurn), by
	// the SHA-256 of their files.
	images *webapp.BlobCache
	// encode turns the files of a question's images into the bytes
	// served: encodeTurn. Tests replace it to show what a reader would
	// learn from the files as stored.
	encode func(names []string, files [][]byte) ([][]byte, error)
	// sums is the build's SHA256SUMS: every image is checked against it
	// as it is read, and a changed one is not served. Nil when the
	// benchmark has none; Warning then says so.
	sums *benchdir.Sums
	// Warning is "" or one line for the operator (a benchmark without
	// SHA256SUMS, whose images cannot be checked).
	Warning string
	// Secure marks the session cookie Secure (set when serving TLS).
	Secure bool
	Log    *log.Logger
	// positions keeps each reader's place (position.go), by reader id.
	positions sync.Map
}

// NewServer opens the study's benchmark (checked against the identity
// and the digest recorded at init: LoadBenchmark) and returns the app.
func NewServer(ctx context.Context, s *Store) (*Server, error) {
	st, err := s.Study(ctx)
	if err != nil {
		return nil, err
	}
	bench, sums, warning, err := LoadBenchmark(st)
	if err != nil {
		return nil, err
	}
	oracle, err := protocol.ParseOracleMode(st.Oracle)
	if err != nil {
		return nil, fmt.Errorf("reading db %s: %w", s.Path, err)
	}
	t, err := webapp.ParseTemplates(template.FuncMap{"inc": func(i int) int { return i + 1 }}, webFS, "web/templates/*.html")
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(webFS, "web/static")
	if err != nil {
		return nil, err
	}
	srv := &Server{store: s, study: st, bench: bench, sums: sums, Warning: warning, oracle: oracle, system: profile.Default().SystemText(), Log: log.New(io.Discard, "", 0),
		images: webapp.NewBlobCache(imageCacheBytes, imageBuilds), encode: encodeTurn}
	srv.web = webapp.New(s.accounts(), sub, t)
	srv.web.Logf = func(format string, args ...any) { srv.Log.Printf(format, args...) }
	return srv, nil
}

// Handler returns the app's routes behind the shared web layer.
func (srv *Server) Handler() http.Handler {
	srv.web.Secure = srv.Secure
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", srv.home)
	mux.HandleFunc("GET /read", srv.read)
	mux.HandleFunc("POST /answer", srv.answer)
	mux.HandleFunc("GET /image/{pos}/{seq}/{i}", srv.image)
	mux.HandleFunc("GET /admin", srv.admin)
	return srv.web.Handler(mux)
}

type page struct {
	User  *webapp.Account
	CSRF  string
	Title string
}

func (srv *Server) render(w http.ResponseWriter, status int, name string, data any) {
	srv.web.Render(w, status, name, data)
}

func (srv *Server) home(w http.ResponseWriter, r *http.Request) {
	if webapp.UserOf(r).Admin {
		http.Redirect(w, r, "/admin", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/read", http.StatusSeeOther)
}

// current is a reader's place: the record at pos (of total) and its
// pending turn; pending is nil when every record is done.
type current struct {
	pos, total int
	item       Item
	rec        *benchmark.Record
	pending    *Pending
}

// locate finds the reader's current record. Records are read in order,
// so every record before the last one with an answer is finished: only
// that one (and, when it is finished, the next) is replayed.
func (srv *Server) locate(ctx context.Context, readerID int64) (*current, error) {
	items, err := srv.store.Items(ctx, readerID)
	if err != nil {
		return nil, err
	}
	cur, _, err := srv.locateIn(ctx, readerID, items)
	return cur, err
}

// locateIn is locate over the reader's items, with the stored turns of
// the current record.
func (srv *Server) locateIn(ctx context.Context, readerID int64, items []Item) (*current, []Answer, error) {
	last, err := srv.store.lastStarted(ctx, readerID)
	if err != nil {
		return nil, nil, err
	}
	for pos := last; pos < len(items); pos++ {
		it := items[pos]
		rec, err := itemRecord(srv.bench, it)
		if err != nil {
			return nil, nil, err
		}
		ans, err := srv.store.Answers(ctx, readerID, it.Pos)
		if err != nil {
			return nil, nil, err
		}
		_, pend, err := Replay(ctx, rec, it.BenchIndex, srv.bench.Dir, srv.oracle, ans)
		if err != nil {
			return nil, nil, fmt.Errorf("record %s: %w", textsafe.OneLine(rec.KeyID), err)
		}
		if pend != nil {
			return &current{pos: pos, total: len(items), item: it, rec: rec, pending: pend}, ans, nil
		}
	}
	return &current{pos: len(items), total: len(items)}, nil, nil
}

// place is the reader's current place: the kept one (position.go) in an
// unaided study, on a page view marked shown at its first display; read
// from the database (and marked shown there on a page view) in an aided
// one.
func (srv *Server) place(ctx context.Context, readerID int64, view bool) (*current, error) {
	if !srv.cached() {
		cur, err := srv.locate(ctx, readerID)
		if err == nil && view && cur.pending != nil {
			err = srv.store.markShown(ctx, readerID, cur.pos, cur.pending.Seq)
		}
		return cur, err
	}
	p := srv.positionOf(readerID)
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, err := p.load(ctx, srv, readerID)
	if err == nil && view && cur.pending != nil && p.shownMS == 0 {
		p.shownMS = srv.store.now().UnixMilli()
	}
	return cur, err
}

// optionView is one answer control.
type optionView struct {
	N       int
	Label   string
	Checked bool
}

// figureView is one viewer: an image with its zoom buttons. The
// reference viewer (ID "ref") shows an earlier question's image, chosen
// by the thumbnails.
type figureView struct {
	ID, Label, URL, Alt string
	Hidden              bool
}

// thumbView is a thumbnail of an earlier question's image.
type thumbView struct {
	URL, Label, Alt string
	Open            bool // shown in the reference viewer on load
}

type exchangeView struct {
	Turn, Text, Answer string
	Patched            bool
}

var optionLine = regexp.MustCompile(`(?m)^\((\d+)\)\s*(.*)$`)

// options labels the controls with the "(N) text" lines of the question
// text (what the model reads), else "Option N".
func options(text string, n int) []optionView {
	labels := map[int]string{}
	for _, m := range optionLine.FindAllStringSubmatch(text, -1) {
		if k, err := strconv.Atoi(m[1]); err == nil {
			labels[k] = strings.TrimSpace(m[2])
		}
	}
	out := make([]optionView, n)
	for i := range out {
		out[i] = optionView{N: i + 1, Label: labels[i+1]}
		if out[i].Label == "" {
			out[i].Label = "Option " + strconv.Itoa(i+1)
		}
	}
	return out
}

func (srv *Server) read(w http.ResponseWriter, r *http.Request) {
	srv.readPage(w, r, http.StatusOK, "")
}

func (srv *Server) readPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	u := webapp.UserOf(r)
	if u.Admin {
		http.Redirect(w, r, "/admin", http.StatusSeeOther)
		return
	}
	cur, err := srv.place(r.Context(), u.ID, true)
	if err != nil {
		srv.web.Fail(w, r, http.StatusInternalServerError, err)
		return
	}
	p := page{User: u, CSRF: webapp.CSRFOf(r), Title: "Reading"}
	if cur.pending == nil {
		// A refused answer (409) after the last turn keeps its status.
		srv.render(w, status, "done.html", doneView{Page: p, Total: cur.total})
		return
	}
	pd := cur.pending
	opts := options(pd.Text, pd.NOptions)
	fb, err := srv.feedback(r.Context(), u.ID, r.URL.Query().Get("feedback"))
	if err != nil {
		srv.web.Fail(w, r, http.StatusInternalServerError, err)
		return
	}
	var aid *aidView
	if srv.study.Aid != nil {
		if aid, err = srv.aidStep(r.Context(), u.ID, cur, opts); err != nil {
			srv.web.Fail(w, r, http.StatusInternalServerError, err)
			return
		}
	}
	imgs, ref, earlier := figures(cur.pos, pd)
	var hist []exchangeView
	for _, e := range pd.History {
		hist = append(hist, exchangeView{Turn: e.Turn, Text: e.Text, Answer: e.Answer, Patched: e.Patched})
	}
	srv.render(w, status, "read.html", readView{
		Page: p, Pos: cur.pos, Record: cur.pos + 1, Total: cur.total, Seq: pd.Seq, Question: pd.Seq + 1,
		System: srv.system, Prefix: pd.Prefix, Text: strings.TrimPrefix(strings.TrimPrefix(pd.Text, pd.Prefix), "\n\n"),
		Images: imgs, Rows: (len(imgs) + 1) / 2, Ref: ref, Earlier: earlier, Options: opts, Multi: pd.Multi, Aid: aid,
		History: hist, Patched: patchedView(pd.History), Error: msg, Feedback: fb, Training: cur.pos < srv.study.Training, NTraining: srv.study.Training,
	})
}

// doneView is the page of a reader who has answered every record.
type doneView struct {
	Page  page
	Total int // records
}

// readView is the page of a reader's current turn.
type readView struct {
	Page page
	// Pos is the record's 0-based position in the reader's order,
	// Record the same 1-based; Seq is the turn's 0-based index among the
	// record's asked turns, Question the same 1-based.
	Pos, Record, Total, Seq, Question int
	// System is the protocol's system text; Prefix the oracle's text
	// before the question, Text the question itself.
	System, Prefix, Text string
	Images               []figureView
	Rows                 int         // of the question's images, two to a row when there are several
	Ref                  *figureView // the reference viewer (nil: no earlier image)
	Earlier              []thumbView
	Options              []optionView
	Multi                bool     // several options may be chosen
	Aid                  *aidView // nil: an unaided study
	History              []exchangeView
	Patched              *patchView // the answers the implicit oracle replaced (nil: none)
	Error                string     // why the last answer was refused ("": none)
	// Feedback is the right answer of the training turn just answered
	// (nil: none); Training marks a training record, NTraining counts
	// them.
	Feedback  *feedbackView
	Training  bool
	NTraining int
}

// aidView is the aided part of a turn's page: the step the form posts
// ("unaided", then "final") and, once the unaided answer is stored, that
// answer and the model's.
type aidView struct {
	Stage                       string
	Shown                       bool
	Unaided, Model, ModelAnswer string
}

// aidStep is the aided state of the reader's current turn. Once the
// unaided answer is stored, the page shows the model's answer (the time
// it is first shown is stored) and the options start ticked as the
// reader answered.
func (srv *Server) aidStep(ctx context.Context, readerID int64, cur *current, opts []optionView) (*aidView, error) {
	ans, err := srv.store.Answers(ctx, readerID, cur.pos)
	if err != nil {
		return nil, err
	}
	var unaided string
	for _, a := range ans {
		if a.Seq == cur.pending.Seq {
			unaided = a.Unaided
		}
	}
	if unaided == "" {
		return &aidView{Stage: "unaided"}, nil
	}
	if err := srv.store.markAidShown(ctx, readerID, cur.pos, cur.pending.Seq); err != nil {
		return nil, err
	}
	m, err := srv.store.modelAnswerFor(ctx, cur.rec.KeyID, cur.pending.Turn)
	if err != nil {
		return nil, err
	}
	v := &aidView{Stage: "final", Shown: true, Unaided: optionText(unaided, opts), Model: srv.study.Aid.Model, ModelAnswer: "no answer: " + m.Note}
	if m.Text != "" {
		v.ModelAnswer = optionText(m.Text, opts)
	}
	for i := range opts {
		for _, f := range strings.Split(strings.TrimPrefix(unaided, "Answer: "), ",") {
			if f == strconv.Itoa(opts[i].N) {
				opts[i].Checked = true
			}
		}
	}
	return v, nil
}

// aidedAnswer stores an answer of an aided study: the form's stage says
// which. An unaided answer is taken once; a final answer only after the
// page showed the model's answer.
func (srv *Server) aidedAnswer(w http.ResponseWriter, r *http.Request, cur *current, text string) {
	u := webapp.UserOf(r)
	pos, seq := cur.pos, cur.pending.Seq
	var err error
	switch r.PostForm.Get("stage") {
	case "unaided":
		err = srv.store.saveUnaided(r.Context(), u.ID, pos, seq, text)
	case "final":
		ans, aerr := srv.store.Answers(r.Context(), u.ID, pos)
		if aerr != nil {
			srv.web.Fail(w, r, http.StatusInternalServerError, aerr)
			return
		}
		shown := false
		for _, a := range ans {
			shown = shown || a.Seq == seq && a.Unaided != "" && a.AidShownMS != 0
		}
		if !shown {
			srv.readPage(w, r, http.StatusConflict, "Your own answer and then the model's answer come first; this is the current step.")
			return
		}
		err = srv.store.saveFinal(r.Context(), u.ID, pos, seq, text)
	default:
		webapp.APIError(w, http.StatusBadRequest, "stage must be unaided or final in an aided study")
		return
	}
	if errors.Is(err, ErrAnswered) {
		srv.readPage(w, r, http.StatusConflict, "That answer was already given (answers cannot be changed); this is the current step.")
		return
	}
	if err != nil {
		srv.web.Fail(w, r, http.StatusInternalServerError, err)
		return
	}
	srv.Log.Printf("%s answered record %d question %d (%s)", u.Name, pos+1, seq+1, r.PostForm.Get("stage"))
	http.Redirect(w, r, "/read", http.StatusSeeOther)
}

// figures lays out the viewer of a turn: one figure per image of the
// question; the reference viewer for the images of the record's earlier
// questions, open on the first of them (the detection radiograph) when the
// question has no image of its own and hidden until a thumbnail is chosen
// otherwise; and a thumbnail per earlier image. Labels and URLs name
// questions by their number on the page, never by turn or file; the
// images of a question that has one image per option (the candidates of
// the revision result) are named by their options' words, "(1) 1st
// mask".
func figures(pos int, pd *Pending) (imgs []figureView, ref *figureView, earlier []thumbView) {
	own := imageLabels(pd.Text, len(pd.Images))
	for i := range pd.Images {
		imgs = append(imgs, figureView{Label: own[i], URL: fmt.Sprintf("/image/%d/%d/%d", pos, pd.Seq, i),
			Alt: fmt.Sprintf("%s of this question", lowerImage(own[i]))})
	}
	for k, e := range pd.History {
		labels := imageLabels(e.Text, len(e.Images))
		for i := range e.Images {
			label := fmt.Sprintf("Question %d", k+1)
			if len(e.Images) > 1 {
				label += ", " + lowerImage(labels[i])
			}
			earlier = append(earlier, thumbView{URL: fmt.Sprintf("/image/%d/%d/%d", pos, k, i), Label: label,
				Alt: fmt.Sprintf("%s of question %d", lowerImage(labels[i]), k+1)})
		}
	}
	if len(earlier) == 0 {
		return imgs, nil, nil
	}
	ref = &figureView{ID: "ref", Label: earlier[0].Label, Alt: earlier[0].Alt}
	if len(imgs) == 0 {
		ref.URL = earlier[0].URL
		earlier[0].Open = true
	} else {
		ref.Hidden = true
	}
	return imgs, ref, earlier
}

// imageLabels names the n images of a question: by the question's option
// lines ("(1) 1st mask") when it has one image per option, else "Image 1",
// "Image 2", ….
func imageLabels(text string, n int) []string {
	lines := optionLine.FindAllStringSubmatch(text, -1)
	byOption := n > 1 && len(lines) == n
	for i := 0; byOption && i < n; i++ {
		byOption = lines[i][1] == strconv.Itoa(i+1) && strings.TrimSpace(lines[i][2]) != ""
	}
	out := make([]string, n)
	for i := range out {
		out[i] = "Image " + strconv.Itoa(i+1)
		if byOption {
			out[i] = fmt.Sprintf("(%d) %s", i+1, strings.TrimSpace(lines[i][2]))
		}
	}
	return out
}

// lowerImage is a label inside a sentence: "image 2", or an option's
// label as it is.
func lowerImage(label string) string {
	if rest, ok := strings.CutPrefix(label, "Image "); ok {
		return "image " + rest
	}
	return label
}

// patchView is the implicit oracle's notice: the earlier questions whose
// answers the protocol replaced, each with the answer now in the
// conversation in the page's words. Summary is its one line.
type patchView struct {
	Summary string
	Items   []string // "question 4 as (6) purple point", one per replaced answer
}

// patchedView is the notice of the replaced answers of history (nil when
// none was replaced).
func patchedView(history []Exchange) *patchView {
	var qs []string
	v := &patchView{}
	for k, e := range history {
		if !e.Patched {
			continue
		}
		q := fmt.Sprintf("question %d", k+1)
		qs = append(qs, strconv.Itoa(k+1))
		v.Items = append(v.Items, q+" is answered for you as "+answerWords(e.Answer, e.Text))
	}
	switch len(v.Items) {
	case 0:
		return nil
	case 1:
		v.Summary = "Oracle: " + v.Items[0]
	default:
		v.Summary = fmt.Sprintf("Oracle: questions %s and %s are answered for you", strings.Join(qs[:len(qs)-1], ", "), qs[len(qs)-1])
	}
	return v
}

// answerWords says an answer ("Answer: 1,3") in the words of the question
// text's option lines: "(1) right upper and (3) right lower"; an option
// the text does not list is "option N".
func answerWords(answer, text string) string {
	labels := map[string]string{}
	for _, m := range optionLine.FindAllStringSubmatch(text, -1) {
		labels[m[1]] = strings.TrimSpace(m[2])
	}
	var parts []string
	for _, f := range strings.Split(strings.TrimPrefix(strings.TrimSpace(answer), "Answer:"), ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if l, ok := labels[f]; ok && l != "" {
			parts = append(parts, fmt.Sprintf("(%s) %s", f, l))
		} else {
			parts = append(parts, "option "+f)
		}
	}
	switch len(parts) {
	case 0:
		return "no option"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// answer stores the reader's choice for the turn on screen, then shows
// the next one. Only the current turn can be answered, once.
func (srv *Server) answer(w http.ResponseWriter, r *http.Request) {
	u := webapp.UserOf(r)
	if u.Admin {
		webapp.APIError(w, http.StatusForbidden, "the admin does not read")
		return
	}
	if err := r.ParseForm(); err != nil {
		webapp.FormError(w, err)
		return
	}
	pos, err1 := strconv.Atoi(r.PostForm.Get("pos"))
	seq, err2 := strconv.Atoi(r.PostForm.Get("seq"))
	if err1 != nil || err2 != nil {
		webapp.APIError(w, http.StatusBadRequest, "pos and seq must be numbers")
		return
	}
	cur, err := srv.place(r.Context(), u.ID, false)
	if err != nil {
		srv.web.Fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if cur.pending == nil || cur.pos != pos || cur.pending.Seq != seq {
		// An earlier turn (answered: answers never change) or a later one.
		srv.readPage(w, r, http.StatusConflict, "That question was already answered (answers cannot be changed) or is not the one on screen; this is the current question.")
		return
	}
	vals := r.PostForm["option"]
	if len(vals) > cur.pending.NOptions {
		webapp.APIError(w, http.StatusBadRequest, "too many options")
		return
	}
	var chosen []int
	for _, v := range vals {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 || k > cur.pending.NOptions {
			webapp.APIError(w, http.StatusBadRequest, fmt.Sprintf("option must be 1 to %d", cur.pending.NOptions))
			return
		}
		chosen = append(chosen, k)
	}
	switch {
	case len(chosen) == 0:
		srv.readPage(w, r, http.StatusUnprocessableEntity, "Choose an option before submitting.")
		return
	case !cur.pending.Multi && len(chosen) > 1:
		webapp.APIError(w, http.StatusBadRequest, "this question takes one option")
		return
	}
	if srv.study.Aid != nil {
		srv.aidedAnswer(w, r, cur, parse.FormatAnswer(chosen))
		return
	}
	err = srv.saveAt(r.Context(), u.ID, cur, parse.FormatAnswer(chosen))
	if errors.Is(err, ErrAnswered) {
		srv.readPage(w, r, http.StatusConflict, "That question was already answered (answers cannot be changed); this is the current question.")
		return
	}
	if err != nil {
		srv.web.Fail(w, r, http.StatusInternalServerError, err)
		return
	}
	srv.Log.Printf("%s answered record %d question %d", u.Name, pos+1, seq+1)
	if pos < srv.study.Training {
		// A training turn is followed by its right answer.
		http.Redirect(w, r, fmt.Sprintf("/read?feedback=%d/%d", pos, seq), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/read", http.StatusSeeOther)
}

// feedbackView is the right answer of a training turn just answered.
type feedbackView struct {
	Record, Question int
	Yours, Right     string
	Correct          bool
}

// feedback is the right answer of the reader's training turn "pos/seq"
// (the query's feedback), nil when it names no answered training turn.
func (srv *Server) feedback(ctx context.Context, readerID int64, q string) (*feedbackView, error) {
	ps, ss, ok := strings.Cut(q, "/")
	pos, err1 := strconv.Atoi(ps)
	seq, err2 := strconv.Atoi(ss)
	if !ok || err1 != nil || err2 != nil || pos < 0 || pos >= srv.study.Training || seq < 0 {
		return nil, nil
	}
	items, err := srv.store.Items(ctx, readerID)
	if err != nil || pos >= len(items) {
		return nil, err
	}
	ans, err := srv.store.Answers(ctx, readerID, pos)
	if err != nil {
		return nil, err
	}
	if seq >= len(ans) || ans[seq].Text == "" {
		return nil, nil
	}
	rec, err := itemRecord(srv.bench, items[pos])
	if err != nil {
		return nil, err
	}
	plan, err := protocol.Plan(rec, srv.bench.Dir)
	if err != nil {
		return nil, err
	}
	var asked []protocol.PlannedTurn
	for _, p := range plan {
		if p.Asked() {
			asked = append(asked, p)
		}
	}
	if seq >= len(asked) {
		return nil, nil
	}
	t := asked[seq]
	labels := options(t.Text, t.NOptions)
	name := func(nums []int) string {
		var parts []string
		for _, n := range nums {
			if n >= 1 && n <= len(labels) {
				parts = append(parts, fmt.Sprintf("(%d) %s", n, labels[n-1].Label))
			}
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, "; ")
	}
	var yours []int
	for _, f := range strings.Split(strings.TrimPrefix(ans[seq].Text, "Answer: "), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			yours = append(yours, n)
		}
	}
	right := parse.OptionSet(t.GT)
	return &feedbackView{Record: pos + 1, Question: seq + 1, Yours: name(yours), Right: name(right),
		Correct: slices.Equal(parse.OptionSet(yours), right)}, nil
}

// saveAt stores the answer to the pending turn of cur, the reader's place
// when the request was read, and moves the kept place on: one write,
// then one replay of the current record. Another answer of the reader
// that came first (the place moved) is ErrAnswered, as is a turn the
// database already holds an answer to.
func (srv *Server) saveAt(ctx context.Context, readerID int64, cur *current, text string) error {
	p := srv.positionOf(readerID)
	p.mu.Lock()
	defer p.mu.Unlock()
	now, err := p.load(ctx, srv, readerID)
	if err != nil {
		return err
	}
	if now.pending == nil || now.pos != cur.pos || now.pending.Seq != cur.pending.Seq {
		return ErrAnswered
	}
	at := srv.store.now().UnixMilli()
	shown := p.shownMS
	if shown == 0 {
		shown = at // answered without its page (a scripted client)
	}
	if err := srv.store.saveAnswer(ctx, readerID, now.pos, now.pending.Seq, text, shown, at); err != nil {
		p.cur = nil // read again from the database
		return err
	}
	p.advance(context.WithoutCancel(ctx), srv, Answer{Seq: now.pending.Seq, ShownMS: shown, Text: text, AnsweredMS: at})
	return nil
}

// imageCacheControl lets the reader's browser keep an image of a turn:
// the image of a reader's record, turn and index never changes while the
// study is served; private because it needs the reader's session, and
// the response varies by the session cookie, because the URL names a
// place in the reader's own order (two accounts may share a browser).
const imageCacheControl = "private, max-age=604800, immutable"

// image serves an image of the current record's turns shown so far.
func (srv *Server) image(w http.ResponseWriter, r *http.Request) {
	u := webapp.UserOf(r)
	pos, err1 := strconv.Atoi(r.PathValue("pos"))
	seq, err2 := strconv.Atoi(r.PathValue("seq"))
	i, err3 := strconv.Atoi(r.PathValue("i"))
	if u.Admin || err1 != nil || err2 != nil || err3 != nil {
		webapp.APIError(w, http.StatusNotFound, "no such image")
		return
	}
	cur, err := srv.place(r.Context(), u.ID, false)
	if err != nil {
		srv.web.Fail(w, r, http.StatusInternalServerError, err)
		return
	}
	var imgs []string
	switch {
	case cur.pending == nil || pos != cur.pos || seq > cur.pending.Seq || seq < 0:
	case seq == cur.pending.Seq:
		imgs = cur.pending.Images
	default:
		imgs = cur.pending.History[seq].Images
	}
	tag := srv.imageTag(u.ID, pos, seq, i)
	if i < 0 || i >= len(imgs) {
		webapp.APIError(w, http.StatusNotFound, "no such image")
		return
	}
	etag := `"` + tag + `"`
	w.Header().Set("Vary", "Cookie")
	if r.Header.Get("If-None-Match") == etag {
		w.Header().Set("ETag", etag)
		w.Header().Set("Cache-Control", imageCacheControl)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	data, err := srv.turnImage(r.Context(), imgs, i)
	if err != nil {
		srv.web.Fail(w, r, http.StatusInternalServerError, err)
		return
	}
	// The ETag is the image's place, no Last-Modified is sent, and the
	// length is the same for every image of a question: no header
	// describes the bytes.
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", imageCacheControl)
	w.Write(data)
}

// turnImage is the i-th of a turn's images as served. Every request reads
// all of the turn's files and checks each against SHA256SUMS, whichever
// image it asks for: a changed file is never served, and every request
// of the turn costs the same. The files are encoded together (encodeTurn)
// once per content and kept for the next request of any of them.
func (srv *Server) turnImage(ctx context.Context, imgs []string, i int) ([]byte, error) {
	files := make([][]byte, len(imgs))
	digests := make([]string, len(imgs))
	for k, rel := range imgs {
		data, err := safefile.ReadFile(filepath.Join(srv.bench.Dir, filepath.FromSlash(rel)), imagefile.MaxFileBytes, safefile.NoFollow)
		if err != nil {
			return nil, fmt.Errorf("image: %w", safefile.Reason(err))
		}
		digests[k] = benchmark.SHA256Hex(data)
		if srv.sums != nil {
			// Checked on every read from disk: hashing costs little
			// next to the read, and a file changed while the study runs
			// is caught.
			if err := srv.sums.Check(rel, digests[k]); err != nil {
				return nil, err
			}
		}
		files[k] = data
	}
	blob, err := srv.images.GetBytes(ctx, strings.Join(digests, ","), func() ([]byte, error) {
		out, err := srv.encode(imgs, files)
		if err != nil {
			return nil, err
		}
		return packImages(out), nil
	})
	if err != nil {
		return nil, err
	}
	return unpackImage(blob, i)
}

type progressRow struct {
	Name        string
	Done, Total int
}

func (srv *Server) admin(w http.ResponseWriter, r *http.Request) {
	u := webapp.UserOf(r)
	if !u.Admin {
		http.Redirect(w, r, "/read", http.StatusSeeOther)
		return
	}
	readers, err := srv.store.Readers(r.Context())
	if err != nil {
		srv.web.Fail(w, r, http.StatusInternalServerError, err)
		return
	}
	var rows []progressRow
	for _, rd := range readers {
		cur, err := srv.locate(r.Context(), rd.ID)
		if err != nil {
			srv.web.Fail(w, r, http.StatusInternalServerError, err)
			return
		}
		rows = append(rows, progressRow{Name: rd.Name, Done: cur.pos, Total: cur.total})
	}
	srv.render(w, http.StatusOK, "admin.html", adminView{Page: page{User: u, CSRF: webapp.CSRFOf(r), Title: "Progress"},
		Rows: rows, Oracle: srv.study.Oracle, Records: srv.study.Records, Aid: srv.study.Aid,
		Export: "chexpercept read export --db " + textsafe.ShellQuote(ExportDB(srv.store.Path)) + " --out results/"})
}

// adminView is the admin's progress page.
type adminView struct {
	Page    page
	Rows    []progressRow
	Oracle  string
	Records int    // per reader
	Aid     *Aid   // nil: an unaided study
	Export  string // the export command, with this database's path
}

// ExportDB is the database path the export command names: absolute, so
// that it works from any folder (as given when it cannot be made so).
func ExportDB(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
