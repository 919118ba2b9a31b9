package reading

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/appdb/appdbtest"
	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// study is a reading study over the protocol test benchmark (records of
// all three paths) served by httptest.
type study struct {
	t     *testing.T
	bench *benchmark.Benchmark
	db    string
	store *Store
	app   *Server
	srv   *httptest.Server
	creds map[string]string
	// bodies collects every response body the server sent (with its
	// path on the first line), unless skipBodies is set (by a test that
	// reads none of them, before its first request).
	mu         sync.Mutex
	bodies     []string
	skipBodies bool
}

// recorder copies a response body as it is written.
type recorder struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// testBench is the protocol test benchmark with real PNG files (eval
// verifies its images before it asks).
func testBench(t *testing.T) *benchmark.Benchmark {
	t.Helper()
	b := protocoltest.Bench(t)
	var buf bytes.Buffer
	img := image.NewGray(image.Rect(0, 0, 64, 64))
	for i := range img.Pix {
		img.Pix[i] = uint8(i)
	}
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	for _, rec := range b.Records {
		for _, p := range protocoltest.ImagePaths(rec) {
			if err := os.WriteFile(filepath.Join(b.Dir, filepath.FromSlash(p)), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b
}

// own is a copy of b for a study of its own: Init sets the benchmark's
// identity, and studies over one benchmark may be made at once.
func own(b *benchmark.Benchmark) *benchmark.Benchmark {
	c := *b
	return &c
}

func newStudy(t *testing.T, bench *benchmark.Benchmark, oracle protocol.OracleMode) *study {
	t.Helper()
	db := filepath.Join(t.TempDir(), "reading.sqlite")
	creds, n, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: 2, Seed: 7, Oracle: oracle})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(bench.Records) || len(creds) != 3 || creds[2].Name != AdminName {
		t.Fatalf("init: %d records, credentials %v", n, creds)
	}
	st := &study{t: t, bench: bench, db: db, creds: map[string]string{}}
	for _, c := range creds {
		st.creds[c.Name] = c.Token
	}
	st.start()
	return st
}

func (st *study) start() {
	s, err := Open(st.db)
	if err != nil {
		st.t.Fatal(err)
	}
	st.store = s
	srv, err := NewServer(context.Background(), s)
	if err != nil {
		st.t.Fatal(err)
	}
	st.app = srv
	h := srv.Handler()
	st.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.mu.Lock()
		skip := st.skipBodies
		st.mu.Unlock()
		if skip {
			h.ServeHTTP(w, r)
			return
		}
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		st.mu.Lock()
		st.bodies = append(st.bodies, r.URL.Path+"\n"+rec.body.String())
		st.mu.Unlock()
	}))
	st.t.Cleanup(func() { st.srv.Close(); s.Close() })
}

// noBodies stops collecting response bodies, for a test that reads none
// (the phantom benchmark's images run to hundreds of megabytes).
func (st *study) noBodies() {
	st.mu.Lock()
	st.skipBodies = true
	st.mu.Unlock()
}

type client struct {
	st   *study
	http *http.Client
	csrf string
	name string
}

func (st *study) signIn(name string) *client {
	st.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &client{st: st, name: name, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	code, _, _ := c.do("POST", "/login", url.Values{"token": {st.creds[name]}})
	if code != http.StatusSeeOther {
		st.t.Fatalf("sign-in as %s: %d", name, code)
	}
	return c
}

func (c *client) do(method, path string, form url.Values) (int, http.Header, string) {
	c.st.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, c.st.srv.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.st.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

var (
	hiddenRE = regexp.MustCompile(`name="(csrf|pos|seq)" value="([^"]*)"`)
	optionRE = regexp.MustCompile(`data-option="(\d+)"`)
	imageRE  = regexp.MustCompile(`src="(/image/[^"]+)"`)
)

// turnPage is one question as the page shows it.
type turnPage struct {
	done     bool
	pos, seq int
	options  int
	multi    bool
	html     string
}

func (c *client) current() turnPage {
	c.st.t.Helper()
	code, _, page := c.do("GET", "/read", nil)
	if code != 200 {
		c.st.t.Fatalf("/read: %d %s", code, page)
	}
	tp := c.parseTurn(page)
	if tp.done {
		return tp
	}
	for _, m := range imageRE.FindAllStringSubmatch(page, -1) {
		if code, hd, _ := c.do("GET", m[1], nil); code != 200 || hd.Get("Content-Type") != "image/png" {
			c.st.t.Fatalf("%s: %d", m[1], code)
		}
	}
	return tp
}

// parseTurn reads the question a /read page shows, and keeps its CSRF
// token for the answer; it fetches nothing.
func (c *client) parseTurn(page string) turnPage {
	tp := turnPage{html: page, done: strings.Contains(page, "data-done")}
	if tp.done {
		return tp
	}
	for _, m := range hiddenRE.FindAllStringSubmatch(page, -1) {
		switch m[1] {
		case "csrf":
			c.csrf = m[2]
		case "pos":
			tp.pos, _ = strconv.Atoi(m[2])
		case "seq":
			tp.seq, _ = strconv.Atoi(m[2])
		}
	}
	tp.options = len(optionRE.FindAllString(page, -1))
	tp.multi = strings.Contains(page, `type="checkbox"`)
	return tp
}

func (c *client) answer(tp turnPage, opts ...int) int {
	c.st.t.Helper()
	f := url.Values{"csrf": {c.csrf}, "pos": {strconv.Itoa(tp.pos)}, "seq": {strconv.Itoa(tp.seq)}}
	for _, o := range opts {
		f.Add("option", strconv.Itoa(o))
	}
	code, _, _ := c.do("POST", "/answer", f)
	return code
}

// gtAnswer is the ground truth of a reader's current turn, read from the
// benchmark by the test: the reader's record from the database, the
// turn's ground truth from the plan.
func (st *study) gtAnswer(reader string, tp turnPage) []int {
	st.t.Helper()
	rs, err := st.store.Readers(context.Background())
	if err != nil {
		st.t.Fatal(err)
	}
	var id int64
	for _, r := range rs {
		if r.Name == reader {
			id = r.ID
		}
	}
	items, err := st.store.Items(context.Background(), id)
	if err != nil {
		st.t.Fatal(err)
	}
	rec := st.bench.Records[items[tp.pos].BenchIndex]
	plan, err := protocol.Plan(rec, st.bench.Dir)
	if err != nil {
		st.t.Fatal(err)
	}
	var asked []protocol.PlannedTurn
	for _, p := range plan {
		if p.Asked() {
			asked = append(asked, p)
		}
	}
	return asked[tp.seq].GT
}

// work answers every turn of the reader: option 1, or the ground truth.
func (st *study) work(c *client, gt bool, stopAfter int) (answered int) {
	for {
		tp := c.current()
		if tp.done {
			return answered
		}
		if answered == stopAfter {
			return answered
		}
		if tp.options < 2 {
			st.t.Fatalf("%s: page with %d options:\n%s", c.name, tp.options, tp.html)
		}
		opts := []int{1}
		if gt {
			opts = st.gtAnswer(c.name, tp)
		}
		if code := c.answer(tp, opts...); code != http.StatusSeeOther {
			st.t.Fatalf("%s: answer %v at record %d turn %d: %d", c.name, opts, tp.pos, tp.seq, code)
		}
		answered++
	}
}

// baselineFirst runs eval's in-process "first" policy (the policy of
// serve-baseline --policy first) over the benchmark.
func baselineFirst(t *testing.T, bench *benchmark.Benchmark, oracle protocol.OracleMode) map[string]*results.Record {
	t.Helper()
	return readRun(t, modelRun(t, bench, oracle))
}

func readRun(t *testing.T, dir string) map[string]*results.Record {
	t.Helper()
	recs, err := rundir.ReadResults(filepath.Join(dir, rundir.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*results.Record{}
	for _, r := range recs {
		out[r.KeyID] = r
	}
	return out
}

// scoreView is what scoring decides about a record: per turn the status,
// texts, parse and verdict; the oracle events; the stages.
func scoreView(r *results.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\n", r.KeyID, r.Status, r.OracleMode)
	for _, t := range r.Turns {
		fmt.Fprintf(&b, "%s %s text=%q fed=%q parsed=%v correct=%v jac=%v\n", t.Turn, t.Status, deref(t.UserText), deref(t.FedBack), derefS(t.Parsed), derefB(t.Correct), derefF(t.Jaccard))
	}
	fmt.Fprintf(&b, "events=%+v stages=%s\n", r.OracleEvents, stagesString(r.Stages))
	return b.String()
}

func stagesString(s results.Stages) string {
	f := func(p *bool) string {
		if p == nil {
			return "null"
		}
		return strconv.FormatBool(*p)
	}
	return fmt.Sprintf("det=%s ce=%s rev=%s(%s,%s,%s) attr=%s(%s,%s,%s,%s)", f(s.Detection.Correct), f(s.ContourEvaluation.Correct),
		f(s.ContourRevision.Correct), f(s.ContourRevision.Expansion), f(s.ContourRevision.Contraction), f(s.ContourRevision.RevisionResult),
		f(s.AttributeExtraction.Correct), f(s.AttributeExtraction.Distribution), f(s.AttributeExtraction.Location), f(s.AttributeExtraction.Severity), f(s.AttributeExtraction.Comparison))
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
func derefS(s *[]int) any {
	if s == nil {
		return nil
	}
	return *s
}
func derefB(s *bool) any {
	if s == nil {
		return nil
	}
	return *s
}
func derefF(s *float64) any {
	if s == nil {
		return nil
	}
	return *s
}

// TestReadersScoreLikeModels: in each oracle mode, a reader who always
// picks option 1 scores record by record exactly like eval's "first"
// policy, and a reader who answers the ground truth scores 100 %.
func TestReadersScoreLikeModels(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	for _, oracle := range []protocol.OracleMode{protocol.OracleNone, protocol.OracleImplicit, protocol.OracleExplicit} {
		t.Run(string(oracle), func(t *testing.T) {
			st := newStudy(t, bench, oracle)
			st.work(st.signIn("reader1"), false, -1)
			st.work(st.signIn("reader2"), true, -1)
			// The oracle texts are shown as the mode says: reader1 gets
			// steps wrong, so implicit patches and explicit texts occur.
			all := strings.Join(st.bodies, "\n")
			implicit, explicit := strings.Contains(all, `class="oracle implicit"`), strings.Contains(all, `class="oracle explicit"`)
			if implicit != (oracle == protocol.OracleImplicit) || explicit != (oracle == protocol.OracleExplicit) {
				t.Errorf("oracle %s: implicit notice shown %v, explicit text shown %v", oracle, implicit, explicit)
			}
			st.checkExport(t, oracle)
		})
	}
}

// TestNoAnswerReachesTheBrowser: every body the reading app sends to a
// reader (pages, images, assets, refusals) holds no ground truth, no
// option file name and no verdict.
func TestNoAnswerReachesTheBrowser(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	for _, oracle := range []protocol.OracleMode{protocol.OracleNone, protocol.OracleImplicit, protocol.OracleExplicit} {
		st := newStudy(t, bench, oracle)
		c := st.signIn("reader1")
		for _, p := range []string{"/static/read.js", "/static/read.css", "/static/common/zoom.js", "/static/common/common.css", "/login"} {
			c.do("GET", p, nil)
		}
		st.work(c, false, -1)
		st.work(st.signIn("reader2"), true, -1)
		// Refusals too: an answer to a finished turn, a future image.
		c.answer(turnPage{pos: 0, seq: 0}, 2)
		c.do("GET", "/image/0/5/0", nil)
		st.checkNoLeak(t)
	}
}

// checkNoLeak finds no ground truth, option file name, record key or
// verdict in any response body the server sent.
func (st *study) checkNoLeak(t *testing.T) {
	t.Helper()
	forbidden := []string{"mask_answer", "mask_fake", "option_1_", "answer_index", `"gt"`, `"correct"`, "data-correct", "data-gt", "correct answer", "incorrect", "wrong answer", "ground truth"}
	for _, rec := range st.bench.Records {
		forbidden = append(forbidden, rec.KeyID, rec.PairID)
	}
	lowered := make([]string, len(forbidden))
	for i, f := range forbidden {
		lowered[i] = strings.ToLower(f)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.bodies) < 20 {
		t.Fatalf("only %d responses collected", len(st.bodies))
	}
	for i, b := range st.bodies {
		lower := strings.ToLower(b)
		for k, f := range forbidden {
			if strings.Contains(lower, lowered[k]) {
				t.Errorf("response %d contains %q:\n%.400s", i, f, b)
			}
		}
	}
}

// checkExport exports the study and checks reader1 (option 1) against
// eval's first policy record by record and reader2 (ground truth) at
// 100 %.
func (st *study) checkExport(t *testing.T, oracle protocol.OracleMode) []ExportedRun {
	t.Helper()
	bench := st.bench
	runs, err := Export(context.Background(), nil, st.store, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Finished != len(bench.Records) || runs[1].Finished != len(bench.Records) {
		t.Fatalf("export: %+v", runs)
	}
	first := baselineFirst(t, bench, oracle)
	r1 := readRun(t, runs[0].Dir)
	for _, rec := range bench.Records {
		got, want := scoreView(r1[rec.KeyID]), scoreView(first[rec.KeyID])
		if got != want {
			t.Errorf("record %s: reader1 (option 1)\n%s\neval first\n%s", rec.KeyID, got, want)
		}
	}
	for key, r := range readRun(t, runs[1].Dir) {
		for _, tn := range r.Turns {
			if tn.Status == results.TurnAsked && (tn.Correct == nil || !*tn.Correct) {
				t.Errorf("ground-truth reader: %s %s not correct", key, tn.Turn)
			}
		}
		for _, c := range []*bool{r.Stages.Detection.Correct, r.Stages.ContourEvaluation.Correct, r.Stages.ContourRevision.Correct, r.Stages.AttributeExtraction.Correct} {
			if c != nil && !*c {
				t.Errorf("ground-truth reader: %s has a wrong stage: %s", key, stagesString(r.Stages))
			}
		}
	}
	m, err := rundir.ReadManifest(runs[1].Dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Model.Provider != ProviderHuman || m.Model.Name != "reader2" || m.OracleMode != string(oracle) {
		t.Errorf("manifest: provider %q model %q oracle %q", m.Model.Provider, m.Model.Name, m.OracleMode)
	}
	// An unaided study: one arm, named by the database's file.
	if want := (results.ReadingArm{Study: "reading", Reader: "reader2", Arm: results.ArmUnaided}); m.Reading == nil || *m.Reading != want {
		t.Errorf("manifest reading %+v, want %+v", m.Reading, want)
	}
	return runs
}

// TestAnswersAreFinal: an answered turn cannot be answered again, only
// the turn on screen can be answered, and a future turn's images are not
// served.
func TestAnswersAreFinal(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	st := newStudy(t, bench, protocol.OracleNone)
	c := st.signIn("reader1")
	tp := c.current()
	if code, _, _ := c.do("POST", "/answer", url.Values{"pos": {"0"}, "seq": {"0"}, "option": {"1"}}); code != http.StatusForbidden {
		t.Errorf("answer without the CSRF token: %d", code)
	}
	anon := &client{st: st, http: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if code, _, body := anon.do("GET", "/image/0/0/0", nil); code != http.StatusUnauthorized || strings.Contains(body, "PNG") {
		t.Errorf("image without a session: %d", code)
	}
	if code := c.answer(turnPage{pos: tp.pos, seq: tp.seq + 1}, 1); code != http.StatusConflict {
		t.Errorf("answer to a turn not on screen: %d", code)
	}
	if code := c.answer(tp, 1); code != http.StatusSeeOther {
		t.Fatalf("answer: %d", code)
	}
	if code := c.answer(tp, 2); code != http.StatusConflict {
		t.Errorf("second answer to the same turn: %d", code)
	}
	if code, _, _ := c.do("GET", fmt.Sprintf("/image/%d/%d/0", tp.pos, tp.seq+3), nil); code != http.StatusNotFound {
		t.Errorf("image of a turn not shown yet: %d", code)
	}
	if code, _, _ := c.do("GET", fmt.Sprintf("/image/%d/0/0", tp.pos+1), nil); code != http.StatusNotFound {
		t.Errorf("image of a later record: %d", code)
	}
	tp2 := c.current()
	if tp2.options > 0 && !tp2.multi {
		if code := c.answer(tp2, 1, 2); code != http.StatusBadRequest {
			t.Errorf("two options for a single-choice question: %d", code)
		}
	}
	if code := c.answer(tp2, 99); code != http.StatusBadRequest {
		t.Errorf("option out of range: %d", code)
	}
	if code := c.answer(tp2); code != http.StatusUnprocessableEntity {
		t.Errorf("no option: %d", code)
	}
	ans, err := st.store.Answers(context.Background(), 1, tp.pos)
	if err != nil {
		t.Fatal(err)
	}
	if len(ans) < 1 || ans[0].Text != "Answer: 1" {
		t.Errorf("stored answers: %+v", ans)
	}
	// Another reader cannot post as reader1: the session decides.
	c2 := st.signIn("reader2")
	c2.current()
}

// TestResumeAfterRestart: a server restarted mid-record shows the next
// unanswered turn, and the export equals an uninterrupted session's.
func TestResumeAfterRestart(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	for _, oracle := range []protocol.OracleMode{protocol.OracleImplicit, protocol.OracleExplicit} {
		st := newStudy(t, bench, oracle)
		c := st.signIn("reader2")
		n := st.work(c, true, 5)
		before := c.current()
		st.srv.Close()
		st.store.Close()
		st.start()
		c = st.signIn("reader2")
		after := c.current()
		if after.pos != before.pos || after.seq != before.seq {
			t.Fatalf("resumed at record %d turn %d, want %d %d (after %d answers)", after.pos, after.seq, before.pos, before.seq, n)
		}
		st.work(c, true, -1)
		st.work(st.signIn("reader1"), false, -1)
		runs, err := Export(context.Background(), nil, st.store, t.TempDir(), false)
		if err != nil {
			t.Fatal(err)
		}
		ref := newStudy(t, bench, oracle)
		ref.work(ref.signIn("reader2"), true, -1)
		ref.work(ref.signIn("reader1"), false, -1)
		refRuns, err := Export(context.Background(), nil, ref.store, t.TempDir(), false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range runs {
			a, b := readRun(t, runs[i].Dir), readRun(t, refRuns[i].Dir)
			for k := range b {
				if scoreView(a[k]) != scoreView(b[k]) {
					t.Errorf("%s %s: resumed\n%s\nuninterrupted\n%s", oracle, k, scoreView(a[k]), scoreView(b[k]))
				}
			}
		}
	}
}

// TestTimePerTurn: a turn's time runs from its first display (a reload
// does not restart it) to its stored answer, and the export carries it.
func TestTimePerTurn(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	st := newStudy(t, bench, protocol.OracleNone)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	st.store.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	advance := func(d time.Duration) {
		mu.Lock()
		clock = clock.Add(d)
		mu.Unlock()
	}
	c := st.signIn("reader1")
	for {
		tp := c.current()
		if tp.done {
			break
		}
		advance(2 * time.Second)
		c.current() // a reload: the first display counts
		advance(1500 * time.Millisecond)
		if code := c.answer(tp, 1); code != http.StatusSeeOther {
			t.Fatalf("answer: %d", code)
		}
	}
	runs, err := Export(context.Background(), nil, st.store, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range readRun(t, runs[0].Dir) {
		for _, tn := range r.Turns {
			// shown at t, reloaded at t+2 s, answered at t+3.5 s.
			if tn.Status == results.TurnAsked && (tn.TotalMS != 3500 || tn.LatencyMS != 3500) {
				t.Errorf("%s %s: %d ms, want 3500", r.KeyID, tn.Turn, tn.TotalMS)
			}
		}
		if r.StartedAt == "" || r.StartedAt >= r.FinishedAt {
			t.Errorf("%s: started %s, finished %s", r.KeyID, r.StartedAt, r.FinishedAt)
		}
	}
}

// TestOpenLeavesAForeignDatabaseAlone: naming another SQLite database
// (rollback-journal mode) as the reading database is refused, and the
// file keeps every byte: the WAL switch of the read-write connection must
// not run before the file is known to be a reading database.
func TestOpenLeavesAForeignDatabaseAlone(t *testing.T) {
	t.Parallel()
	appdbtest.ForeignRefused(t, func(path string) error { _, err := Open(path); return err }, "not a chexpercept reading database")
}

// TestOpenLeavesNoSideFilesItMade: a database in WAL mode that is read and
// refused (here another application's) keeps no -wal or -shm file that
// the reading connection made beside it.
func TestOpenLeavesNoSideFilesItMade(t *testing.T) {
	t.Parallel()
	appdbtest.ForeignWALRefused(t, func(path string) error { _, err := Open(path); return err }, "not a chexpercept reading database")
}

// TestInitKeepsForeignSideFiles: a -wal, -shm or -journal file that sits
// where the new database's would go is someone else's; init refuses and
// the file keeps its bytes (SQLite would replay or delete it).
func TestInitKeepsForeignSideFiles(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		t.Run(suffix, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "study.sqlite")
			if err := os.WriteFile(db+suffix, []byte("not ours\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: 1, Oracle: protocol.OracleImplicit})
			if err == nil || !strings.Contains(err.Error(), "already exists beside it") {
				t.Errorf("Init = %v, want refused", err)
			}
			if got, err := os.ReadFile(db + suffix); err != nil || string(got) != "not ours\n" {
				t.Errorf("%s after init: %q, %v", suffix, got, err)
			}
			if _, err := os.Lstat(db); err == nil {
				t.Errorf("the refused init left %s", db)
			}
		})
	}
}

// TestExportChecksEveryTargetFirst: a reader's run folder planted as a
// link to an outside folder, or holding a foreign results.jsonl (no
// manifest), stops the export before any reader's run is written, even
// with force; the outside folder and the foreign file keep their bytes.
func TestExportChecksEveryTargetFirst(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	st := newStudy(t, bench, protocol.OracleNone)
	for _, name := range []string{"reader1", "reader2"} {
		st.work(st.signIn(name), false, -1) // every record
	}
	probe := t.TempDir()
	runs, err := Export(context.Background(), nil, st.store, probe, false)
	if err != nil || len(runs) != 2 || runs[1].Dir == "" {
		t.Fatalf("export: %+v, %v", runs, err)
	}
	rel, _ := filepath.Rel(probe, runs[1].Dir) // <run>/oracle_none of reader2

	t.Run("link", func(t *testing.T) {
		out, outside := t.TempDir(), t.TempDir()
		if err := os.MkdirAll(filepath.Join(out, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(out, rel)); err != nil {
			t.Fatal(err)
		}
		if _, err := Export(context.Background(), nil, st.store, out, true); err == nil {
			t.Fatal("a linked run folder was accepted")
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Errorf("written through the link: %d entries", len(ents))
		}
		if _, err := os.Stat(filepath.Join(out, runs[0].Dir[len(probe):])); err == nil {
			t.Error("the first reader's run was written before the refusal")
		}
	})
	t.Run("foreign results", func(t *testing.T) {
		out := t.TempDir()
		target := filepath.Join(out, rel)
		if err := os.MkdirAll(target, 0o755); err != nil {
			t.Fatal(err)
		}
		foreign := []byte(`{"not":"ours"}` + "\n")
		if err := os.WriteFile(filepath.Join(target, rundir.ResultsFile), foreign, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Export(context.Background(), nil, st.store, out, true); err == nil {
			t.Fatal("a foreign results.jsonl was replaced")
		}
		if got, _ := os.ReadFile(filepath.Join(target, rundir.ResultsFile)); string(got) != string(foreign) {
			t.Errorf("foreign file changed: %q", got)
		}
	})
}

// TestAnswersRefusesOversizedAnswer: the server only stores "Answer: …";
// a database edited to hold a huge answer is refused with the record named,
// before the answer is read whole or scored.
func TestAnswersRefusesOversizedAnswer(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "reading.db")
	s, c, err := create(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abandon()
	ctx := context.Background()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO readers(id, name, token_sha256) VALUES(1, 'r1', x'00')`, nil},
		{`INSERT INTO turns(reader_id, pos, seq, shown_ms, answer, answered_ms) VALUES(1, 3, 1, 0, ?, 1)`, []any{"Answer: 2"}},
		{`INSERT INTO turns(reader_id, pos, seq, shown_ms, answer, answered_ms) VALUES(1, 4, 1, 0, ?, 1)`, []any{strings.Repeat("1,", 1<<20)}},
		{`INSERT INTO turns(reader_id, pos, seq, shown_ms, answer, answered_ms) VALUES(1, 5, 1, 0, ?, 1)`, []any{strings.Repeat("1", maxAnswerBytes)}},
	} {
		if _, err := s.db.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	if ans, err := s.Answers(ctx, 1, 3); err != nil || len(ans) != 1 || ans[0].Text != "Answer: 2" {
		t.Errorf("a normal answer: %+v, %v", ans, err)
	}
	if ans, err := s.Answers(ctx, 1, 5); err != nil || len(ans) != 1 || len(ans[0].Text) != maxAnswerBytes {
		t.Errorf("an answer at the bound: %d answers, %v", len(ans), err)
	}
	_, err = s.Answers(ctx, 1, 4)
	if want := "reader 1, record 4, turn 1: the stored answer is 2097152 bytes"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
		t.Errorf("an oversized answer: %v, want an error naming the file and %q", err, want)
	}
}

// sealedBench is testBench with a distinct image in every file and the
// build's SHA256SUMS over them; change rotates the images' contents (each
// file gets the next one's bytes), so every image differs from the build's
// while all are present and decodable.
func sealedBench(t *testing.T) (bench *benchmark.Benchmark, change func()) {
	t.Helper()
	b := protocoltest.Bench(t)
	var paths []string
	for _, rec := range b.Records {
		paths = append(paths, protocoltest.ImagePaths(rec)...)
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	for k, p := range paths {
		var buf bytes.Buffer
		img := image.NewGray(image.Rect(0, 0, 64, 64))
		for i := range img.Pix {
			img.Pix[i] = uint8(i + 7*k)
		}
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.Dir, filepath.FromSlash(p)), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := benchtest.WriteSums(b.Dir); err != nil {
		t.Fatal(err)
	}
	return b, func() {
		for i := 0; i+1 < len(paths); i++ {
			if err := benchtest.Swap(b.Dir, paths[i], paths[i+1]); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestChangedBenchmarkRefused: a study runs only on the benchmark its
// build wrote. read init refuses a benchmark whose images differ from
// SHA256SUMS, naming a file; read serve, over a study made before the
// images changed, refuses to serve a changed image (the reader gets an
// error, never the image); a benchmark without SHA256SUMS is used with a
// warning.
func TestChangedBenchmarkRefused(t *testing.T) {
	t.Parallel()
	t.Run("init", func(t *testing.T) {
		bench, change := sealedBench(t)
		change()
		db := filepath.Join(t.TempDir(), "reading.sqlite")
		_, _, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: 1, Oracle: protocol.OracleNone})
		if !errors.Is(err, benchdir.ErrChanged) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "SHA256SUMS") {
			t.Errorf("init over changed images: %v, want one line wrapping ErrChanged", err)
		}
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused init left %s behind (%v)", db, err)
		}
	})
	t.Run("serve", func(t *testing.T) {
		bench, change := sealedBench(t)
		st := newStudy(t, bench, protocol.OracleNone)
		c := st.signIn("reader1")
		before := c.current() // every image of the turn served (checked in current)
		change()
		code, _, page := c.do("GET", "/read", nil)
		if code != http.StatusOK {
			t.Fatalf("/read: %d", code)
		}
		srcs := imageRE.FindAllStringSubmatch(page, -1)
		if before.done || len(srcs) == 0 {
			t.Fatal("the first turn shows no image")
		}
		for _, m := range srcs {
			code, hd, body := c.do("GET", m[1], nil)
			if code == http.StatusOK || hd.Get("Content-Type") == "image/png" || strings.Contains(body, "PNG") {
				t.Errorf("%s served after its file changed: %d %s", m[1], code, hd.Get("Content-Type"))
			}
		}
	})
	t.Run("no SHA256SUMS", func(t *testing.T) {
		bench := testBench(t)
		var log bytes.Buffer
		db := filepath.Join(t.TempDir(), "reading.sqlite")
		if _, _, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: 1, Oracle: protocol.OracleNone, Log: &log}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), "warning: benchmark "+bench.Dir+": no SHA256SUMS") {
			t.Errorf("init log %q: no warning about the missing SHA256SUMS", log.String())
		}
		s, err := Open(db)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		srv, err := NewServer(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(srv.Warning, "no SHA256SUMS") {
			t.Errorf("server warning %q", srv.Warning)
		}
	})
}

// TestOneAnswerRule: a turn takes exactly one answer. A POST for the
// current, unanswered turn is accepted whether or not its page was loaded
// first, and a repeated POST is 409 on every turn, the last included (the
// end page then keeps the status).
func TestOneAnswerRule(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	st := newStudy(t, bench, protocol.OracleNone)
	c := st.signIn("reader1")
	// The CSRF token from the store: no page is loaded before answering.
	if err := st.store.db.QueryRowContext(context.Background(), `SELECT csrf FROM sessions WHERE reader_id = 1`).Scan(&c.csrf); err != nil {
		t.Fatal(err)
	}
	// The current turn as the server derives it, without a page load.
	view := &Server{store: st.store, bench: st.bench, oracle: protocol.OracleNone}
	var answered []turnPage
	for {
		cur, err := view.locate(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if cur.pending == nil {
			break
		}
		tp := turnPage{pos: cur.pos, seq: cur.pending.Seq}
		if code := c.answer(tp, 1); code != http.StatusSeeOther {
			t.Fatalf("turn %d/%d answered without loading its page: %d", tp.pos, tp.seq, code)
		}
		answered = append(answered, tp)
	}
	if len(answered) < 2*len(bench.Records) {
		t.Fatalf("answered %d turns", len(answered))
	}
	for pos := range bench.Records {
		ans, err := st.store.Answers(context.Background(), 1, pos)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range ans {
			if a.Text != "Answer: 1" || a.ShownMS != a.AnsweredMS {
				t.Errorf("record %d turn %d answered without a page: %+v", pos, a.Seq, a)
			}
		}
	}
	for i, tp := range answered {
		code, _, body := c.do("POST", "/answer", url.Values{"csrf": {c.csrf}, "pos": {strconv.Itoa(tp.pos)}, "seq": {strconv.Itoa(tp.seq)}, "option": {"2"}})
		if code != http.StatusConflict {
			t.Errorf("second answer to turn %d/%d: %d", tp.pos, tp.seq, code)
		}
		if last := i == len(answered)-1; last && !strings.Contains(body, "data-done") {
			t.Errorf("second answer to the last turn: not the end page")
		}
	}
}

// TestInitDeliversBeforePublishing: Init gives the credentials to Deliver
// while nothing is at the database's name yet and publishes only after
// Deliver succeeds; a failed Deliver (the tokens could not be printed)
// leaves nothing, and a file that appears at the name during Deliver is
// kept and the init refused.
func TestInitDeliversBeforePublishing(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	for _, tc := range []struct {
		name    string
		deliver func(db string) error
		want    string // "" : published
		left    bool   // a file is at the name after the init
	}{
		{"ok", func(string) error { return nil }, "", true},
		{"failed", func(string) error { return errors.New("tokens lost") }, "tokens lost", false},
		{"collision", func(db string) error { return os.WriteFile(db, []byte("not ours\n"), 0o600) }, "already exists", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "study.sqlite")
			var got []Credential
			deliver := func(creds []Credential) error {
				if _, err := os.Lstat(db); err == nil {
					t.Error("the database is at its name before its tokens are delivered")
				}
				got = creds
				return tc.deliver(db)
			}
			creds, _, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: 2, Oracle: protocol.OracleImplicit, Deliver: deliver})
			if len(got) != 3 {
				t.Fatalf("Deliver got %d credentials, want 3", len(got))
			}
			if tc.want == "" {
				if err != nil || !reflect.DeepEqual(creds, got) {
					t.Fatalf("Init = %v, %v; want the delivered credentials", creds, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Init = %v, want an error saying %q", err, tc.want)
			}
			names, err := filepath.Glob(filepath.Join(dir, "*"))
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.left]; len(names) != want {
				t.Errorf("the folder holds %q, want %d file(s)", names, want)
			}
			if tc.name == "collision" {
				if b, err := os.ReadFile(db); err != nil || string(b) != "not ours\n" {
					t.Errorf("the file that appeared at the name: %q, %v", b, err)
				}
			}
		})
	}
}
