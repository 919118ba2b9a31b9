package reading

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
)

// TestSplitPlotInit: a split-plot study deals the readers and the
// records into blocks by the seed, each reader's list is its block's
// records, the blocks' records are disjoint and cover the selection, and
// the same seed makes the same study.
func TestSplitPlotInit(t *testing.T) {
	bench := testBench(t)
	lists := func(seed uint64) (map[string][]string, *Study) {
		db := filepath.Join(t.TempDir(), "split.sqlite")
		if _, _, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: 4, Seed: seed, Oracle: protocol.OracleNone, Blocks: 2}); err != nil {
			t.Fatal(err)
		}
		s, err := Open(db)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		st, err := s.Study(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		readers, err := s.Readers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, r := range readers {
			items, err := s.Items(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				out[r.Name] = append(out[r.Name], it.KeyID)
			}
		}
		return out, st
	}
	a, st := lists(7)
	if st.Blocks != 2 || len(st.ReaderBlock) != 4 {
		t.Fatalf("study: %d blocks, reader blocks %v", st.Blocks, st.ReaderBlock)
	}
	byBlock := map[string][]string{}
	perBlock := map[string]int{}
	for reader, keys := range a {
		b := st.ReaderBlock[reader]
		perBlock[b]++
		sorted := slices.Sorted(slices.Values(keys))
		if prev, ok := byBlock[b]; ok && !slices.Equal(prev, sorted) {
			t.Errorf("block %s: readers with different records", b)
		}
		byBlock[b] = sorted
	}
	if perBlock["1"] != 2 || perBlock["2"] != 2 {
		t.Errorf("readers per block %v, want 2 and 2", perBlock)
	}
	all := append(slices.Clone(byBlock["1"]), byBlock["2"]...)
	slices.Sort(all)
	if len(all) != len(bench.Records) || len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Errorf("the blocks hold %d records (%d distinct), want the %d selected, disjoint", len(all), len(slices.Compact(slices.Clone(all))), len(bench.Records))
	}
	b, _ := lists(7)
	for r := range a {
		if !slices.Equal(a[r], b[r]) {
			t.Errorf("%s: the same seed gives another list", r)
		}
	}
	// Too few readers or records for the blocks: refused, nothing made.
	db := filepath.Join(t.TempDir(), "x.sqlite")
	if _, _, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: 3, Seed: 7, Oracle: protocol.OracleNone, Blocks: 2}); err == nil ||
		!strings.Contains(err.Error(), "at least 2 readers a block") {
		t.Errorf("3 readers in 2 blocks: %v", err)
	}
}

// TestPlanChecks: a plan is parsed with its defaults, each bad field is
// refused in one line naming it, and init refuses a plan whose design or
// size is not the study's.
func TestPlanChecks(t *testing.T) {
	p, err := ParsePlan(strings.NewReader("primary:\n  path: revision_required\n  stage: 3\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.FOM != "accuracy" || p.Analysis != "rrrc" || p.Alpha != 0.05 {
		t.Errorf("defaults: %+v", p)
	}
	for _, c := range []struct{ yaml, want string }{
		{"primary:\n  path: nowhere\n  stage: 1\n", `p.yaml: primary.path "nowhere"`},
		{"primary:\n  path: lesion_free\n  stage: 3\n", "p.yaml: primary.stage 3: not a stage of path lesion_free"},
		{"primary:\n  path: revision_required\n  stage: 1\nanalysis: dbm\n", `p.yaml: analysis "dbm"`},
		{"primary:\n  path: revision_required\n  stage: 1\nalpha: 2\n", "p.yaml: alpha 2"},
		{"primary:\n  path: revision_required\n  stage: 1\ndesign: split-plot\n", "p.yaml: blocks 0: a split-plot design needs 1 block or more"},
		{"primary:\n  path: revision_required\n  stage: 1\nfigure_of_merit: auc\n", `p.yaml: figure_of_merit "auc"`},
		{"primary:\n  path: revision_required\n  stage: 1\nextra: 1\n", "p.yaml: line 4"},
		{"", "p.yaml: empty"},
	} {
		_, err := ParsePlan(strings.NewReader(c.yaml), "p.yaml")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want %q…", c.yaml, err, c.want)
		}
	}
	bench := testBench(t)
	for _, c := range []struct {
		plan results.StudyPlan
		want string
	}{
		{results.StudyPlan{Design: DesignSplitPlot, Blocks: 2}, "plan: design split-plot with 2 block(s), the study crossed with 0"},
		{results.StudyPlan{Readers: 5}, "plan: 5 readers planned, the study has 2"},
		{results.StudyPlan{Records: 999}, "plan: 999 records planned, the study selects"},
	} {
		pl := *p
		pl.Design, pl.Blocks, pl.Readers, pl.Records = c.plan.Design, c.plan.Blocks, c.plan.Readers, c.plan.Records
		db := filepath.Join(t.TempDir(), "p.sqlite")
		_, _, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: 2, Seed: 7, Oracle: protocol.OracleNone, Plan: &pl})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("plan %+v: %v, want %q", c.plan, err, c.want)
		}
	}
}

// TestTrainingRecords: each reader reads the training records first,
// records outside the study's selection; after each training turn the
// page gives the right answer; the export holds none of them.
func TestTrainingRecords(t *testing.T) {
	bench := testBench(t)
	k := len(bench.Records) - 2
	db := filepath.Join(t.TempDir(), "training.sqlite")
	creds, n, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: 2, Sample: &k, Seed: 7, Oracle: protocol.OracleNone, Training: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n != k {
		t.Fatalf("%d study records, want %d", n, k)
	}
	st := &study{t: t, bench: bench, db: db, creds: map[string]string{}}
	for _, c := range creds {
		st.creds[c.Name] = c.Token
	}
	st.start()
	sel, err := results.Select(bench.Records, results.Selection{Sample: &k, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	selected := map[string]bool{}
	for _, i := range sel {
		selected[bench.Records[i].KeyID] = true
	}
	rs, err := st.store.Readers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	items, err := st.store.Items(context.Background(), rs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var training []string
	for _, it := range items[:2] {
		if selected[it.KeyID] {
			t.Errorf("training record %s is a study record", it.KeyID)
		}
		training = append(training, it.KeyID)
	}
	c := st.signIn("reader1")
	feedbacks := 0
	for {
		tp := c.current()
		if tp.done {
			break
		}
		isTraining := tp.pos < 2
		if isTraining != strings.Contains(tp.html, "Training record") {
			t.Fatalf("record %d: the page says training %v", tp.pos, !isTraining)
		}
		f := url.Values{"csrf": {c.csrf}, "pos": {strconv.Itoa(tp.pos)}, "seq": {strconv.Itoa(tp.seq)}, "option": {"1"}}
		code, hd, _ := c.do("POST", "/answer", f)
		if code != http.StatusSeeOther {
			t.Fatalf("answer: %d", code)
		}
		loc := hd.Get("Location")
		if !isTraining {
			if loc != "/read" {
				t.Errorf("study record %d: redirected to %q", tp.pos, loc)
			}
			continue
		}
		if want := fmt.Sprintf("/read?feedback=%d/%d", tp.pos, tp.seq); loc != want {
			t.Fatalf("training turn: redirected to %q, want %q", loc, want)
		}
		_, _, page := c.do("GET", loc, nil)
		gt := st.gtAnswer("reader1", tp)
		if !strings.Contains(page, "data-feedback") || !strings.Contains(page, fmt.Sprintf(`<b id="feedback-right">(%d)`, gt[0])) {
			t.Errorf("training record %d question %d: no right answer (%v) on the page", tp.pos+1, tp.seq+1, gt)
		}
		feedbacks++
	}
	if feedbacks == 0 {
		t.Fatal("no training turn answered")
	}
	runs, err := Export(context.Background(), nil, st.store, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Finished != k || runs[0].Selected != k {
		t.Errorf("export: %+v, want %d records", runs[0], k)
	}
	got := readRun(t, runs[0].Dir)
	for _, key := range training {
		if _, ok := got[key]; ok {
			t.Errorf("training record %s exported", key)
		}
	}
	if len(got) != k {
		t.Errorf("%d records exported, want %d", len(got), k)
	}
}
