package reading

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/eval"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// modelRun runs eval's in-process "first" policy over the benchmark and
// returns the run directory (the aid of an aided study; a baseline
// policy's run, so the studies pass --aid-allow-baseline).
func modelRun(t *testing.T, bench *benchmark.Benchmark, oracle protocol.OracleMode) string {
	t.Helper()
	out := t.TempDir()
	m := runmodel.Model{Name: "first", Provider: "baseline", Backend: "baseline", ModelID: "first", Label: "first"}
	if _, err := eval.Run(context.Background(), eval.Options{BenchDir: bench.Dir, OutDir: out, Model: m, Oracle: oracle, NoCache: true, Concurrency: 1, AllowInvalid: true}); err != nil {
		t.Fatal(err)
	}
	return rundir.Path(out, results.RunName("baseline", "first", false, false), string(oracle), nil)
}

func newAidedStudy(t *testing.T, bench *benchmark.Benchmark, oracle protocol.OracleMode, aid string) *study {
	t.Helper()
	db := filepath.Join(t.TempDir(), "aided.sqlite")
	creds, _, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: 2, Seed: 7, Oracle: oracle, Aid: aid, AidAllowBaseline: true, Study: "pilot"})
	if err != nil {
		t.Fatal(err)
	}
	st := &study{t: t, bench: bench, db: db, creds: map[string]string{}}
	for _, c := range creds {
		st.creds[c.Name] = c.Token
	}
	st.start()
	return st
}

var stageRE = regexp.MustCompile(`name="stage" value="(\w+)"`)

// post answers the turn tp at the given stage.
func (c *client) post(tp turnPage, stage string, opts ...int) (int, string) {
	c.st.t.Helper()
	f := url.Values{"csrf": {c.csrf}, "pos": {strconv.Itoa(tp.pos)}, "seq": {strconv.Itoa(tp.seq)}, "stage": {stage}}
	for _, o := range opts {
		f.Add("option", strconv.Itoa(o))
	}
	code, _, body := c.do("POST", "/answer", f)
	return code, body
}

// TestAidedStudy: in a sequential aided study every turn is answered
// twice — first unaided (here the ground truth), then, with the model's
// answer on the page, finally (here the model's answer: option 1, the
// "first" policy). The model's answer is shown only after the unaided
// one, both are final (the server answers 409, the database refuses an
// update), and the export writes two runs per reader: the unaided one
// scores 100 %, the aided one record by record like the model's own run;
// their manifests name the study, the reader, the arm and the aid run.
func TestAidedStudy(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	oracle := protocol.OracleImplicit
	aidDir := modelRun(t, bench, oracle)
	st := newAidedStudy(t, bench, oracle, aidDir)
	c := st.signIn("reader1")
	turns := 0
	for {
		tp := c.current()
		if tp.done {
			break
		}
		if m := stageRE.FindStringSubmatch(tp.html); m == nil || m[1] != "unaided" || strings.Contains(tp.html, "data-aid") {
			t.Fatalf("record %d turn %d: first page is not the unaided step (stage %v, model answer shown %v)", tp.pos, tp.seq, m, strings.Contains(tp.html, "data-aid"))
		}
		if turns == 0 {
			// The final answer cannot come first.
			if code, _ := c.post(tp, "final", 1); code != http.StatusConflict {
				t.Errorf("final answer before the unaided one: %d", code)
			}
		}
		gt := st.gtAnswer(c.name, tp)
		if code, _ := c.post(tp, "unaided", gt...); code != http.StatusSeeOther {
			t.Fatalf("unaided answer: %d", code)
		}
		if code, _ := c.post(tp, "unaided", 1); code != http.StatusConflict {
			t.Errorf("second unaided answer: %d", code)
		}
		aided := c.current()
		if aided.pos != tp.pos || aided.seq != tp.seq || !strings.Contains(aided.html, "data-aid") || !strings.Contains(aided.html, `The model (first) answered: <b id="aid-model">(1) `) {
			t.Fatalf("record %d turn %d: the page after the unaided answer does not show the model's answer:\n%s", tp.pos, tp.seq, aided.html)
		}
		if strings.Count(aided.html, " checked") != len(gt) {
			t.Errorf("record %d turn %d: %d options ticked, want the unaided answer's %d", tp.pos, tp.seq, strings.Count(aided.html, " checked"), len(gt))
		}
		if turns == 0 {
			_, err := st.store.db.ExecContext(context.Background(), `UPDATE turns SET unaided = 'Answer: 2' WHERE reader_id = 1 AND pos = ? AND seq = ?`, tp.pos, tp.seq)
			if err == nil || !strings.Contains(err.Error(), "cannot be changed") {
				t.Errorf("changing the unaided answer in the database after the model's was shown: %v", err)
			}
		}
		if code, _ := c.post(tp, "final", 1); code != http.StatusSeeOther {
			t.Fatalf("final answer: %d", code)
		}
		if code, _ := c.post(tp, "final", 2); code != http.StatusConflict {
			t.Errorf("second final answer: %d", code)
		}
		turns++
	}
	if _, err := st.store.db.ExecContext(context.Background(), `UPDATE turns SET answer = 'Answer: 2' WHERE reader_id = 1`); err == nil {
		t.Error("the database let a final answer change")
	}
	if _, err := st.store.db.ExecContext(context.Background(), `DELETE FROM turns WHERE reader_id = 1`); err == nil {
		t.Error("the database let given answers be deleted")
	}
	if turns < 2*len(bench.Records) {
		t.Fatalf("%d turns", turns)
	}
	out := t.TempDir()
	runs, err := Export(context.Background(), nil, st.store, out, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 || runs[0].Dir == "" || runs[1].Dir == "" || runs[2].Dir != "" || runs[3].Dir != "" {
		t.Fatalf("export: %+v", runs)
	}
	aidM, err := rundir.ReadManifest(aidDir)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ arm, dir string }{{results.ArmUnaided, "human_reader1_unaided"}, {results.ArmAided, "human_reader1_aided"}} {
		m, err := rundir.ReadManifest(runs[i].Dir)
		if err != nil {
			t.Fatal(err)
		}
		wantR := results.ReadingArm{Study: "pilot", Reader: "reader1", Arm: want.arm, AidRun: aidM.RunName}
		if m.Reading == nil || *m.Reading != wantR || !strings.Contains(runs[i].Dir, string(filepath.Separator)+want.dir+string(filepath.Separator)) {
			t.Errorf("run %s: reading %+v, want %+v", runs[i].Dir, m.Reading, wantR)
		}
		// One person in both arms: the model is the reader, the arm is
		// in the reading member, the run keeps the arm in its name.
		if m.Model.Name != "reader1" || m.Model.ModelID != "reader1" || m.RunName != want.dir {
			t.Errorf("run %s: model %q (id %q), run_name %q; want the reader's name and %s", runs[i].Dir, m.Model.Name, m.Model.ModelID, m.RunName, want.dir)
		}
	}
	for key, r := range readRun(t, runs[0].Dir) {
		for _, tn := range r.Turns {
			if tn.Status == results.TurnAsked && (tn.Correct == nil || !*tn.Correct) {
				t.Errorf("unaided arm (ground truth): %s %s not correct", key, tn.Turn)
			}
		}
	}
	model := readRun(t, aidDir)
	aidedRun := readRun(t, runs[1].Dir)
	if len(aidedRun) != len(bench.Records) {
		t.Fatalf("aided run: %d records", len(aidedRun))
	}
	for key, r := range aidedRun {
		if got, want := scoreView(r), scoreView(model[key]); got != want {
			t.Errorf("record %s: aided arm (the model's answers)\n%s\nthe model\n%s", key, got, want)
		}
	}
	st.checkNoLeak(t)
}

// TestAidedStudyPostWithoutPage: an aided study's unaided answer is taken
// without its page having been loaded, but a final answer only once the
// page has shown the model's answer.
func TestAidedStudyPostWithoutPage(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	st := newAidedStudy(t, bench, protocol.OracleNone, modelRun(t, bench, protocol.OracleNone))
	c := st.signIn("reader1")
	if err := st.store.db.QueryRowContext(context.Background(), `SELECT csrf FROM sessions WHERE reader_id = 1`).Scan(&c.csrf); err != nil {
		t.Fatal(err)
	}
	tp := turnPage{pos: 0, seq: 0}
	if code, _ := c.post(tp, "unaided", 1); code != http.StatusSeeOther {
		t.Fatalf("unaided answer without the page: %d", code)
	}
	if code, _ := c.post(tp, "final", 1); code != http.StatusConflict {
		t.Errorf("final answer before the model's answer was shown: %d", code)
	}
	if code, _ := c.post(tp, "", 1); code != http.StatusBadRequest {
		t.Errorf("answer without a stage: %d", code)
	}
	if p := c.current(); !strings.Contains(p.html, "data-aid") {
		t.Fatal("the model's answer is not shown")
	}
	if code, _ := c.post(tp, "final", 2); code != http.StatusSeeOther {
		t.Errorf("final answer: %d", code)
	}
}

// TestInitAidRefused: the aid is only a finished model run of the study's
// benchmark and oracle mode that holds every selected record; anything
// else is refused in one line naming the aid run (an *AidError, which
// the command words with its flag) and leaves no database behind.
func TestInitAidRefused(t *testing.T) {
	t.Parallel()
	bench := testBench(t)
	good := modelRun(t, bench, protocol.OracleImplicit)
	edit := func(name string, f func(dir string)) string {
		dir := filepath.Join(t.TempDir(), name)
		outdirtest.CopyTree(t, good, dir)
		f(dir)
		return dir
	}
	rewrite := func(path, old, new string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s lacks %q", path, old)
		}
		if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, dir, want string
		noBaseline      bool // without --aid-allow-baseline
	}{
		{"a baseline policy", good, "the first baseline policy's run, not a model's", true},
		{"a parsed answer changed", edit("parsed", func(d string) {
			rewrite(filepath.Join(d, rundir.ResultsFile), `"parsed":[1]`, `"parsed":[2]`)
		}), "stores parsed [2], but its raw reply parses as [1] under the run's parse rules (reference)", false},
		{"an unfinished run", edit("unfinished", func(d string) {
			if err := rundir.MarkUnfinished(d); err != nil {
				t.Fatal(err)
			}
		}), "holds an unfinished run", false},
		{"a model folder", filepath.Dir(good), "is a model folder, not a run directory; pass one of: " + filepath.Join(filepath.Dir(good), "oracle_implicit"), false},
		{"another benchmark identity", edit("identity", func(d string) {
			rewrite(filepath.Join(d, "manifest.json"), bench.Identity.SHA256, strings.Repeat("0", 64))
		}), "the run is of benchmark", false},
		{"another benchmark", edit("hash", func(d string) {
			rewrite(filepath.Join(d, "manifest.json"), bench.SHA256, strings.Repeat("0", 64))
		}), "the run is of benchmark", false},
		{"another oracle mode", modelRun(t, bench, protocol.OracleExplicit), "oracle mode is explicit", false},
		{"a record missing", edit("short", func(d string) {
			p := filepath.Join(d, rundir.ResultsFile)
			b, _ := os.ReadFile(p)
			lines := strings.SplitAfter(string(b), "\n")
			os.WriteFile(p, []byte(strings.Join(lines[1:], "")), 0o644)
		}), "lacks 1 of the study's", false},
		{"a human run", edit("human", func(d string) {
			rewrite(filepath.Join(d, "manifest.json"), `"kind": "baseline"`, `"kind": "human"`)
		}), "a run of human answers", false},
		{"a human run from before kinds", edit("human-old", func(d string) {
			rewrite(filepath.Join(d, "manifest.json"), "  \"kind\": \"baseline\",\n", "")
			rewrite(filepath.Join(d, "manifest.json"), `"provider": "baseline"`, `"provider": "human"`)
		}), "a run of human answers", false},
		{"no run", t.TempDir(), "manifest.json", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "r.sqlite")
			_, _, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: 1, Oracle: protocol.OracleImplicit, Aid: tc.dir, AidAllowBaseline: !tc.noBaseline})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err %v, want one line with %q", err, tc.want)
			}
			if ae, ok := errors.AsType[*AidError](err); !ok || ae.Dir != tc.dir || !strings.HasPrefix(err.Error(), "aid run "+tc.dir+": ") {
				t.Errorf("err %v, want an *AidError of %s", err, tc.dir)
			}
			if _, serr := os.Stat(db); serr == nil {
				t.Error("a refused init left its database")
			}
		})
	}
}

// TestModelAnswer: what the page says of each kind of model turn.
func TestModelAnswer(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	two := []int{2}
	multi := []int{3, 1}
	none := []int{}
	for _, tc := range []struct {
		name string
		turn results.Turn
		want aidAnswer
	}{
		{"answered", results.Turn{Status: results.TurnAsked, Parsed: &two, ParseOK: &yes, InRange: &yes}, aidAnswer{Text: "Answer: 2"}},
		{"several options", results.Turn{Status: results.TurnAsked, Parsed: &multi, ParseOK: &yes, InRange: &yes}, aidAnswer{Text: "Answer: 1,3"}},
		{"skipped", results.Turn{Status: results.TurnSkipped}, aidAnswer{Note: "the model was not asked this question"}},
		{"call failed", results.Turn{Status: results.TurnError}, aidAnswer{Note: "the model's call failed; it gave no answer"}},
		{"unparsed", results.Turn{Status: results.TurnAsked, Parsed: &none, ParseOK: &no}, aidAnswer{Note: "the model's reply named no option"}},
		{"out of range", results.Turn{Status: results.TurnAsked, Parsed: &two, ParseOK: &yes, InRange: &no}, aidAnswer{Note: "the model's reply named an option the question does not have"}},
	} {
		if got := modelAnswer(&tc.turn); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestOpenUpgradesEarlierStudies: reading databases made by earlier
// releases, which recorded no version (testdata: one made before the
// aided design, without its columns, table and triggers, and one made
// after it, which has them), open, get the aided design once and record
// version 1, keeping their study and their answers; a second open
// changes nothing in the file.
func TestOpenUpgradesEarlierStudies(t *testing.T) {
	ctx := context.Background()
	for _, fixture := range []string{"v0-before-aid.sqlite", "v0-with-aid.sqlite"} {
		t.Run(fixture, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", fixture))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "reading.sqlite")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			var after [2][]byte
			for i := range after {
				s, err := Open(path)
				if err != nil {
					t.Fatalf("open %d: %v", i+1, err)
				}
				var version, answered, aidTables int
				if err := s.db.QueryRowContext(ctx, `SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM turns WHERE answer IS NOT NULL),
					(SELECT count(*) FROM sqlite_schema WHERE name IN ('aid', 'turns_final', 'turns_kept'))`).Scan(&version, &answered, &aidTables); err != nil {
					t.Fatal(err)
				}
				if version != 1 || answered != 3 || aidTables != 3 {
					t.Errorf("open %d: version %d, %d answers, %d of the aided design's table and triggers; want 1, 3, 3", i+1, version, answered, aidTables)
				}
				if st, err := s.Study(ctx); err != nil || st.Records != 4 || st.Aid != nil {
					t.Errorf("open %d: study %+v, %v", i+1, st, err)
				}
				if ans, err := s.Answers(ctx, 1, 0); err != nil || len(ans) == 0 || ans[0].Text == "" {
					t.Errorf("open %d: reader 1's first record: %+v, %v", i+1, ans, err)
				}
				if _, err := s.db.ExecContext(ctx, `UPDATE turns SET answer = 'Answer: 2' WHERE reader_id = 1`); err == nil {
					t.Errorf("open %d: the triggers are missing", i+1)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if after[i], err = os.ReadFile(path); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(after[0], after[1]) {
				t.Error("the second open changed the file")
			}
		})
	}
}
