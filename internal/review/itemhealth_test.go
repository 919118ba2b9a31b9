package review

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
)

// flaggedCSV is a report's flagged_items.csv (report.FlaggedHeader) for
// three cases of the fixture; the first case has two flagged questions.
const flaggedCSV = "oracle_mode,key_id,question,turn,reason,n_runs,agree_share,gt,modal_answer,accuracy,discrimination,lesion,path,p_chance,gt_text,modal_text\r\n" +
	"none,edema_fx001_positive_0,comparison,T9,unanimous_wrong,5,1.000000,1,4,0.000000,NA,edema,revision_free,0.046875,about the same in both lungs,present in one lung only\r\n" +
	"none,edema_fx001_positive_0,location,T7,majority_wrong,5,0.800000,2,1,0.200000,NA,edema,revision_free,0.01,right mid zone,left costophrenic angle\r\n" +
	"none,edema_fx002_positive_0,severity/measurement,T8,unanimous_wrong,5,1.000000,1,3,0.000000,NA,edema,revision_free,0.01,,\r\n" +
	"none,effusion_fx009_negative_0,detection,T1,unanimous_wrong,5,1.000000,2,1,0.000000,NA,effusion,lesion_free,0.03125,No,Yes\r\n"

// itemRound opens an item-health round over the fixture's flagged cases.
func itemRound(t *testing.T) *app { t.Helper(); return itemRoundCSV(t, flaggedCSV) }

// itemRoundCSV opens an item-health round from the flagged_items.csv body.
func itemRoundCSV(t *testing.T, body string) *app {
	t.Helper()
	fx := makeFixture(t, []string{"edema", "effusion"}, 3, 2)
	path := filepath.Join(t.TempDir(), "flagged_items.csv")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	flags, err := ReadFlagged(path)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := OnlyFlagged(fx.Cases, flags)
	if err != nil {
		t.Fatal(err)
	}
	fx.Cases = cases
	db := filepath.Join(t.TempDir(), "round.db")
	creds, _, err := Init(db, cases, InitOptions{Reviewers: 1, Overlap: 1, Seed: 1, Workers: 2, Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	fixedClock(s)
	h, err := NewServer(s)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h.Handler())
	t.Cleanup(ts.Close)
	tok := map[string]string{}
	for _, c := range creds {
		tok[c.Name] = c.Token
	}
	return &app{t: t, fx: fx, store: s, srv: ts, tok: tok}
}

// The done-when check on the review side: a round made from
// flagged_items.csv holds exactly the flagged cases, shows each flag with
// the models' modal answer, records keep / fix / drop, and its exports
// make the next build drop the fix and drop cases and keep the kept one.
func TestItemHealthRound(t *testing.T) {
	a := itemRound(t)
	want := []string{"edema_fx001_positive_0", "edema_fx002_positive_0", "effusion_fx009_negative_0"}
	if got := a.queueOf("r1"); !slices.Equal(got, want) {
		t.Fatalf("round queue %v, want exactly the flagged cases %v", got, want)
	}
	r1 := a.signIn("r1")
	page := r1.get("/case/edema_fx001_positive_0")
	for _, s := range []string{"Item-health re-review", "T9 comparison", "unanimous_wrong (100% of 5 runs agree), oracle none",
		"about the same in both lungs", "modal answer: <span class=\"modal\">4 (present in one lung only)", "T7 location", "majority_wrong (80% of 5 runs agree)",
		`data-decision="keep"`, `data-decision="fix"`, `data-decision="drop"`} {
		if !strings.Contains(page.body, s) {
			t.Errorf("case page lacks %q", s)
		}
	}
	for key, outcome := range map[string]string{want[0]: "fix", want[1]: "drop", want[2]: "keep"} {
		if r := r1.decide(key, outcome, "see note"); r.code != 200 || !strings.Contains(r.body, `"decision":"`+outcome+`"`) {
			t.Errorf("%s %s: %d %s", key, outcome, r.code, r.body)
		}
	}
	if page := r1.get("/case/" + want[0]); !strings.Contains(page.body, `chosen" data-decision="fix"`) || strings.Contains(page.body, FixPrefix) {
		t.Error("the case page does not show the saved fix outcome (or shows its note prefix)")
	}

	ctx := context.Background()
	dir := t.TempDir()
	outPath := filepath.Join(dir, "outcomes.csv")
	if n, err := a.store.ExportOutcomes(ctx, nil, outPath); err != nil || n != 4 {
		t.Fatalf("ExportOutcomes: %d, %v", n, err)
	}
	out, _ := os.ReadFile(outPath)
	for _, row := range []string{
		"edema_fx001_positive_0,none,comparison,unanimous_wrong,1,4,fix,reject,r1,r1: [fix] see note\r\n",
		"edema_fx001_positive_0,none,location,majority_wrong,2,1,fix,reject,",
		"edema_fx002_positive_0,none,severity/measurement,unanimous_wrong,1,3,drop,reject,",
		"effusion_fx009_negative_0,none,detection,unanimous_wrong,2,1,keep,accept,",
	} {
		if !strings.Contains(string(out), row) {
			t.Errorf("outcomes lack %q:\n%s", row, out)
		}
	}

	// An admin resolution decides alone; a reject noted "[fix]" is a fix.
	c2, _ := a.store.CaseByKey(ctx, want[1])
	if _, err := a.store.Resolve(ctx, c2, reviewlog.DecisionReject, "[fix]the mask is too small"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.ExportOutcomes(ctx, nil, outPath); err != nil {
		t.Fatal(err)
	}
	if out, _ := os.ReadFile(outPath); !strings.Contains(string(out), "edema_fx002_positive_0,none,severity/measurement,unanimous_wrong,1,3,fix,reject,r1;admin,") {
		t.Errorf("admin fix:\n%s", out)
	}

	// The next build reads the main log with the round's lines appended:
	// the latest line per key wins, so fix and drop leave the benchmark.
	roundPath := filepath.Join(dir, "round.jsonl")
	if _, err := a.store.ExportJSONL(ctx, nil, roundPath); err != nil {
		t.Fatal(err)
	}
	var mainLog []byte
	digests := map[string][2]string{}
	for _, c := range a.fx.Cases {
		ci, err := a.store.CaseByKey(ctx, c.KeyID())
		if err != nil || ci == nil {
			t.Fatal(c.KeyID(), err)
		}
		m := ""
		mask := "null"
		if ci.MaskSHA256 != nil {
			m, mask = *ci.MaskSHA256, `"`+*ci.MaskSHA256+`"`
		}
		digests[ci.KeyID] = [2]string{ci.ImageSHA256, m}
		mainLog = append(mainLog, `{"key_id":"`+ci.KeyID+`","decision":"accept","reviewer":"r9","time":"2026-01-01T00:00:00Z","image_sha256":"`+ci.ImageSHA256+`","mask_sha256":`+mask+"}\n"...)
	}
	round, _ := os.ReadFile(roundPath)
	logPath := filepath.Join(dir, "reviews.jsonl")
	if err := os.WriteFile(logPath, append(mainLog, round...), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := reviewlog.ReadLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for key, status := range map[string]string{want[0]: reviewlog.Rejected, want[1]: reviewlog.Rejected, want[2]: reviewlog.Accepted} {
		d := digests[key]
		if got := l.Resolve(key, d[0], d[1]).Status; got != status {
			t.Errorf("build would resolve %s as %s, want %s", key, got, status)
		}
	}
}

// TestReadFlaggedColumnNames: the run count is read from n_runs, and from
// runs in a flagged_items.csv written before the column was renamed.
func TestReadFlaggedColumnNames(t *testing.T) {
	dir := t.TempDir()
	for i, header := range []string{"key_id,question,reason,n_runs,gt", "key_id,question,reason,runs,gt"} {
		p := filepath.Join(dir, fmt.Sprintf("f%d.csv", i))
		if err := os.WriteFile(p, []byte(header+"\nk1,detection,unanimous_wrong,5,2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		flags, err := ReadFlagged(p)
		if err != nil || len(flags) != 1 || flags[0].Runs != "5" || flags[0].GT != "2" {
			t.Errorf("%s: %+v, %v; want runs 5, gt 2", header, flags, err)
		}
	}
}

func TestReadFlaggedErrors(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"nokey.csv":  "question,reason\r\ndetection,unanimous_wrong\r\n",
		"empty.csv":  "key_id,question,reason\r\n",
		"blank.csv":  "key_id,question,reason\r\n,detection,unanimous_wrong\r\n",
		"binary.csv": "\x00\x01\x02",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := ReadFlagged(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ReadFlagged(filepath.Join(dir, "nope.csv")); err == nil {
		t.Error("missing file accepted")
	}
	fx := makeFixture(t, []string{"edema"}, 1, 0)
	if _, err := OnlyFlagged(fx.Cases, []ItemFlag{{KeyID: "edema_nope_0", Reason: "x"}}); err == nil || !strings.Contains(err.Error(), "edema_nope_0") {
		t.Errorf("missing key: %v", err)
	}
}

// Outside an item-health round nothing changes: no flags, plain
// decisions, and no outcomes export.
func TestNotItemHealthRound(t *testing.T) {
	a := newApp(t, 1, 1)
	ctx := context.Background()
	if a.store.ItemHealthRound(ctx) {
		t.Fatal("a plain review is an item-health round")
	}
	key := a.queueOf("r1")[0]
	r1 := a.signIn("r1")
	if p := r1.get("/case/" + key); strings.Contains(p.body, "Item-health") || !strings.Contains(p.body, `data-decision="accept"`) {
		t.Error("plain case page shows item-health controls")
	}
	if r := r1.decide(key, "fix", ""); r.code != 400 {
		t.Errorf("fix outside a round: %d %s", r.code, r.body)
	}
	if _, err := a.store.ExportOutcomes(ctx, nil, filepath.Join(t.TempDir(), "o.csv")); err == nil {
		t.Error("outcomes exported from a plain review")
	}
}

// TestHostileFlaggedItems: a crafted flagged_items.csv (BOM, CRLF, a row
// given three times, HTML, a bidi override, an escape sequence and bytes
// that are not UTF-8 in the texts) gives a case page that shows each flag
// once, with the markup escaped and no control or format character.
func TestHostileFlaggedItems(t *testing.T) {
	row := "none,edema_fx001_positive_0,comparison,T9,unanimous_wrong,5,1.000000,1,4,0,NA,edema,revision_free,0.04," +
		"\"<script>alert('gt')</script>\",\"<img src=x onerror=y()>\u202eevil\x1b[31m\xff\"\r\n"
	a := itemRoundCSV(t, "\ufeff"+flaggedCSV[:strings.Index(flaggedCSV, "\r\n")+2]+row+row+row)
	page := a.signIn("r1").get("/case/edema_fx001_positive_0").body
	if n := strings.Count(page, "T9 comparison"); n != 1 {
		t.Errorf("the flag shows %d times, want once", n)
	}
	for _, bad := range []string{"<script>alert", "<script>x", "<img src=x", "\u202e", "\x1b", "\xff"} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	for _, good := range []string{"&lt;script&gt;alert(&#39;gt&#39;)", "&lt;img src=x", `\u202eevil\x1b[31m`} {
		if !strings.Contains(page, good) {
			t.Errorf("page lacks %q", good)
		}
	}
}

// TestFlaggedRowsBounded: a flagged-items file with more rows for one
// case than a report can write (or two different rows for one question)
// is refused with its line, and memory stays proportional to the file:
// 200,000 rows of one case stop at the first row past the bound.
func TestFlaggedRowsBounded(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("oracle_mode,key_id,question,turn,reason\r\n")
	// Distinct valid rows: 9 questions in each of 4 oracle-mode spellings
	// ("" is a report without modes), more than MaxFlagsPerCase.
	var rows []string
	for _, mode := range []string{"", "none", "implicit", "explicit"} {
		for _, q := range benchmark.Questions {
			rows = append(rows, fmt.Sprintf("%s,edema_fx001_positive_0,%s,T1,unanimous_wrong\r\n", mode, q.Name()))
		}
	}
	for i := range 200000 {
		b.WriteString(rows[i%len(rows)])
	}
	p := filepath.Join(dir, "many.csv")
	os.WriteFile(p, []byte(b.String()), 0o644)
	_, err := ReadFlagged(p)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s:%d: more than %d flagged rows", p, MaxFlagsPerCase+2, MaxFlagsPerCase)) {
		t.Errorf("200,000 rows of one case: %v", err)
	}
	twice := filepath.Join(dir, "twice.csv")
	os.WriteFile(twice, []byte("oracle_mode,key_id,question,turn,reason\r\nnone,k_1,detection,T1,unanimous_wrong\r\nnone,k_1,detection,T1,majority_wrong\r\n"), 0o644)
	if _, err := ReadFlagged(twice); err == nil || !strings.Contains(err.Error(), twice+":3: a second, different row") {
		t.Errorf("two rows for one question: %v", err)
	}
	ok := filepath.Join(dir, "ok.csv")
	os.WriteFile(ok, []byte("oracle_mode,key_id,question,turn,reason\r\nnone,k_1,detection,T1,unanimous_wrong\r\nimplicit,k_1,detection,T1,majority_wrong\r\n"), 0o644)
	if f, err := ReadFlagged(ok); err != nil || len(f) != 2 {
		t.Errorf("one question in two modes: %d, %v", len(f), err)
	}
}

// TestQueuePaginated: the queue page lists one page of cases, with links
// to the others, so its size does not grow with the queue.
func TestQueuePaginated(t *testing.T) {
	old := queuePageSize
	queuePageSize = 3
	t.Cleanup(func() { queuePageSize = old })
	a := newApp(t, 1, 1)
	r1 := a.signIn("r1")
	keys := a.queueOf("r1")
	if len(keys) < 5 {
		t.Fatalf("queue of %d", len(keys))
	}
	first := r1.get("/queue").body
	if n := strings.Count(first, "<tr class=\"d-"); n != 3 || !strings.Contains(first, `href="/queue?page=2"`) {
		t.Errorf("first page: %d rows\n%s", n, first)
	}
	second := r1.get("/queue?page=2").body
	if !strings.Contains(second, keys[3]) || strings.Contains(second, `data-key="`+keys[0]+`"`) || !strings.Contains(second, "<td>4</td>") {
		t.Errorf("second page does not hold cases 4–6")
	}
	if last := r1.get("/queue?page=999").body; !strings.Contains(last, `href="/queue?page=`) {
		t.Error("a page past the end is not the last page")
	}
}

// TestNeighbours: a case page's position and neighbours, read by bounded
// queries, are those of the reviewer's queue (or of every case for the
// admin).
func TestNeighbours(t *testing.T) {
	a := newApp(t, 3, 2)
	ctx := context.Background()
	st, err := a.store.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, cs := range st {
		all = append(all, cs.Case.KeyID)
	}
	revs, err := a.store.Reviewers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lists := map[int64][]string{0: all}
	for _, r := range revs {
		lists[r.ID] = a.queueOf(r.Name)
	}
	for who, keys := range lists {
		for i, k := range keys {
			c, err := a.store.CaseByKey(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			pos, total, prev, next, err := a.store.Neighbours(ctx, c.ID, who)
			wantPrev, wantNext := "", ""
			if i > 0 {
				wantPrev = keys[i-1]
			}
			if i+1 < len(keys) {
				wantNext = keys[i+1]
			}
			if err != nil || pos != i+1 || total != len(keys) || prev != wantPrev || next != wantNext {
				t.Errorf("reviewer %d, %s: %d of %d, %q, %q, %v; want %d of %d, %q, %q", who, k, pos, total, prev, next, err, i+1, len(keys), wantPrev, wantNext)
			}
		}
	}
}

// TestFlaggedItemsClosedSets: the columns an outcomes
// export copies (reason, oracle_mode, question, gt, modal_answer) hold
// only what a report writes; a reason outside the closed set of codes,
// such as a spreadsheet formula, is refused with the file and line, and a
// database that holds one (made before the check) exports nothing.
func TestFlaggedItemsClosedSets(t *testing.T) {
	head := flaggedCSV[:strings.Index(flaggedCSV, "\r\n")+2]
	good := "none,edema_fx001_positive_0,comparison,T9,%s,5,1.000000,%s,%s,0,NA,edema,revision_free,0.04,a,b\r\n"
	for _, tc := range []struct{ reason, gt, modal, want string }{
		{`"=HYPERLINK(""http://x"",""y"")"`, "1", "4", `:2: reason "=HYPERLINK(\"http://x\",\"y\")" is not one of unanimous_wrong`},
		{"Unanimous_Wrong", "1", "4", "is not one of"},
		{"unanimous_wrong;evil", "1", "4", "is not one of"},
		{"unanimous_wrong", "=1+1", "4", `:2: gt "=1+1" is not an answer`},
		{"unanimous_wrong", "1", "@SUM(A1)", `modal_answer "@SUM(A1)" is not an answer`},
	} {
		path := filepath.Join(t.TempDir(), "flagged_items.csv")
		os.WriteFile(path, []byte(head+fmt.Sprintf(good, tc.reason, tc.gt, tc.modal)), 0o644)
		if _, err := ReadFlagged(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.reason, err, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "flagged_items.csv")
	os.WriteFile(path, []byte(head+fmt.Sprintf(good, "unanimous_wrong;parse_failures", "1;3", "NA")), 0o644)
	if _, err := ReadFlagged(path); err != nil {
		t.Errorf("two codes: %v", err)
	}
	os.WriteFile(path, []byte(head+fmt.Sprintf(good, "majority_wrong;answerable_without_image", "1", "1")), 0o644)
	if flags, err := ReadFlagged(path); err != nil || len(flags) != 1 {
		t.Errorf("an item answerable without the image: %v, %v", flags, err)
	}

	a := itemRound(t)
	if _, err := a.store.db.ExecContext(context.Background(), `UPDATE item_flags SET reason = '=HYPERLINK("x")' WHERE key_id = 'edema_fx002_positive_0'`); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "o.csv")
	if _, err := a.store.ExportOutcomes(context.Background(), nil, out); err == nil || !strings.Contains(err.Error(), "edema_fx002_positive_0") {
		t.Errorf("export with a stored formula: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("outcomes written: %v", err)
	}
}

// A flagged_items.csv or a sheet with one endless row is refused at that
// row, naming it, instead of encoding/csv holding the row whole.
func TestCSVRecordCap(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", maxFlaggedRecordBytes+1)
	for _, c := range []struct {
		name, body, want string
	}{
		{"flagged row", "key_id,question,reason\n" + long + "\n", "line 2: record longer than 1048576 bytes"},
		{"flagged header", long + "\nkey_id,question,reason\n", "line 1: record longer than 1048576 bytes"},
	} {
		p := filepath.Join(dir, c.name+".csv")
		os.WriteFile(p, []byte(c.body), 0o644)
		if _, err := ReadFlagged(p); err == nil || !strings.Contains(err.Error(), p+" "+c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	sheet := filepath.Join(dir, "review_sheet.csv")
	os.WriteFile(sheet, []byte(strings.Repeat("x", maxSheetRecordBytes+1)+"\n"), 0o644)
	_, problems := readSheet(sheet, ImportOptions{Reviewer: "r1"}, "", nil, nil)
	if len(problems) != 1 || !strings.Contains(problems[0], sheet+":1: cannot read the header: record longer than 1048576 bytes") {
		t.Errorf("sheet: %q", problems)
	}
}
