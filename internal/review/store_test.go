package review

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/appdb/appdbtest"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/source"
)

func TestAssignBalancedAndSeeded(t *testing.T) {
	var cases []*source.Case
	for _, les := range []string{"edema", "effusion"} {
		for i := 0; i < 23; i++ {
			label := "positive"
			if i%3 == 0 {
				label = "negative"
			}
			cases = append(cases, &source.Case{CaseID: fmt.Sprintf("c%d_%s_0", i, label), Lesion: les, Label: label})
		}
	}
	tests := []struct{ n, k int }{{6, 1}, {6, 2}, {3, 3}, {5, 2}, {1, 1}}
	for _, tc := range tests {
		a := Assign(cases, tc.n, tc.k, 42)
		counts := map[string][]int{}
		for i, rs := range a {
			if len(rs) != tc.k {
				t.Fatalf("n=%d k=%d: case %d has %d reviewers", tc.n, tc.k, i, len(rs))
			}
			for j := 1; j < len(rs); j++ {
				if rs[j] <= rs[j-1] {
					t.Fatalf("n=%d k=%d: case %d reviewers %v not distinct ascending", tc.n, tc.k, i, rs)
				}
			}
			for _, r := range rs {
				for _, g := range []string{cases[i].Lesion, cases[i].Lesion + "/" + cases[i].Label} {
					if counts[g] == nil {
						counts[g] = make([]int, tc.n)
					}
					counts[g][r]++
				}
			}
		}
		for g, c := range counts {
			lo, hi := c[0], c[0]
			for _, x := range c {
				lo, hi = min(lo, x), max(hi, x)
			}
			// Within lesion and label the spread is at most 1; over a
			// lesion at most 2 (one per label group).
			limit := 1
			if !strings.Contains(g, "/") {
				limit = 2
			}
			if hi-lo > limit {
				t.Errorf("n=%d k=%d: %s counts %v not balanced", tc.n, tc.k, g, c)
			}
		}
		if b := Assign(cases, tc.n, tc.k, 42); !reflect.DeepEqual(a, b) {
			t.Errorf("n=%d k=%d: same seed gave different assignments", tc.n, tc.k)
		}
	}
	if reflect.DeepEqual(Assign(cases, 6, 2, 1), Assign(cases, 6, 2, 2)) {
		t.Error("different seeds gave identical assignments")
	}
}

func TestInitStoresDigestsAndHashesOnly(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 2, 1)
	s, tok := initStore(t, fx, 3, 2)
	if len(tok) != 4 || tok[AdminName] == "" || tok["r1"] == "" {
		t.Fatalf("credentials %v", tok)
	}
	ctx := context.Background()
	for _, c := range fx.Cases {
		ci, err := s.CaseByKey(ctx, c.KeyID())
		if err != nil || ci == nil {
			t.Fatalf("%s: %v", c.KeyID(), err)
		}
		img, _ := source.ImageSHA256(c)
		if ci.ImageSHA256 != img {
			t.Errorf("%s image digest %s, want %s", c.KeyID(), ci.ImageSHA256, img)
		}
		if c.Positive() {
			l, _ := source.NewLoader(nil, nil, defaultCfg(), "", nil)
			m, _ := l.CandidateMask(c)
			if ci.MaskSHA256 == nil || *ci.MaskSHA256 != source.MaskSHA256(m) {
				t.Errorf("%s mask digest %v", c.KeyID(), ci.MaskSHA256)
			}
			if want := []string{"left lower lobe", "left lower lobe", "right, upper"}; !reflect.DeepEqual(ci.LocationHints, want) {
				t.Errorf("hints %q", ci.LocationHints)
			}
		} else if ci.MaskSHA256 != nil {
			t.Errorf("%s: negative with a mask digest", c.KeyID())
		}
	}
	// The database file must not contain any token in clear.
	s.Close()
	data, _ := os.ReadFile(s.Path)
	wal, _ := os.ReadFile(s.Path + "-wal")
	for n, tk := range tok {
		if strings.Contains(string(data)+string(wal), tk) {
			t.Errorf("token of %s stored in clear", n)
		}
	}
	if _, _, err := Init(s.Path, fx.Cases, InitOptions{Reviewers: 1, Overlap: 1}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("re-init over an existing db: %v", err)
	}
}

func TestInitErrors(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 1, 0)
	p := filepath.Join(t.TempDir(), "x.db")
	for _, tc := range []struct {
		n, k int
		want string
	}{{0, 1, "reviewers must be at least 1, got 0"}, {2, 3, "overlap must be between 1 and the number of reviewers (2), got 3"},
		{2, 0, "overlap must be between 1 and the number of reviewers (2), got 0"}} {
		// The command adds its flag names; Init names the settings.
		if _, _, err := Init(p, fx.Cases, InitOptions{Reviewers: tc.n, Overlap: tc.k}); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "--") {
			t.Errorf("n=%d k=%d: %v", tc.n, tc.k, err)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.db")); err == nil || !strings.Contains(err.Error(), "missing.db") {
		t.Errorf("open missing: %v", err)
	}
	notDB := filepath.Join(t.TempDir(), "other.db")
	os.WriteFile(notDB, []byte("hello"), 0o644)
	if _, err := Open(notDB); err == nil || !strings.Contains(err.Error(), "not a chexpercept review database") {
		t.Errorf("open non-db: %v", err)
	}
	// A case whose image is missing is skipped with a warning.
	os.Remove(fx.Cases[0].Image)
	var warn strings.Builder
	if _, _, err := Init(filepath.Join(t.TempDir(), "y.db"), fx.Cases, InitOptions{Reviewers: 1, Overlap: 1, Warn: &warn}); err == nil {
		t.Error("init with no readable case succeeded")
	}
	if !strings.Contains(warn.String(), fx.Cases[0].KeyID()+" skipped") {
		t.Errorf("warning %q", warn.String())
	}
}

// decideAs records decisions by reviewer name on the case.
func decideAs(t *testing.T, s *Store, key string, byName map[string]string) {
	t.Helper()
	ctx := context.Background()
	c, err := s.CaseByKey(ctx, key)
	if err != nil || c == nil {
		t.Fatalf("case %s: %v", key, err)
	}
	revs, _ := s.Reviewers(ctx)
	for _, r := range revs {
		if d, ok := byName[r.Name]; ok {
			if _, err := s.Decide(ctx, r.ID, c, d, ""); err != nil {
				t.Fatalf("%s decides %s on %s: %v", r.Name, d, key, err)
			}
		}
	}
}

// TestResolutionRules runs the §4 rule table through the database and
// checks that the exported log gives the build the same answers.
func TestResolutionRules(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 9, 1)
	s, _ := initStore(t, fx, 3, 3) // every case goes to r1, r2, r3
	ctx := context.Background()
	keys := make([]string, len(fx.Cases))
	for i, c := range fx.Cases {
		keys[i] = c.KeyID()
	}
	type row struct {
		decisions map[string]string
		admin     string
		want      string // resolved decision ("" = no line)
		status    string
	}
	rows := []row{
		{map[string]string{"r1": "accept", "r2": "accept", "r3": "accept"}, "", "accept", reviewlog.Accepted},
		{map[string]string{"r1": "reject", "r2": "reject", "r3": "reject"}, "", "reject", reviewlog.Rejected},
		{map[string]string{"r1": "accept", "r2": "reject", "r3": "accept"}, "", "disputed", reviewlog.Disputed},
		{map[string]string{"r1": "accept", "r2": "unsure", "r3": "accept"}, "", "disputed", reviewlog.Disputed},
		{map[string]string{"r1": "accept", "r2": "accept"}, "", "pending", reviewlog.Missing}, // r3 has not decided
		{map[string]string{"r1": "unsure", "r2": "unsure", "r3": "unsure"}, "", "unsure", reviewlog.Missing},
		{map[string]string{"r1": "accept", "r2": "reject"}, "accept", "accept", reviewlog.Accepted},
		{map[string]string{"r1": "accept", "r2": "accept", "r3": "accept"}, "reject", "reject", reviewlog.Rejected},
		{nil, "", "", reviewlog.Missing},
		{map[string]string{"r1": "reject", "r2": "accept", "r3": "accept"}, "", "disputed", reviewlog.Disputed}, // the negative
	}
	for i, r := range rows {
		decideAs(t, s, keys[i], r.decisions)
		if r.admin != "" {
			c, _ := s.CaseByKey(ctx, keys[i])
			if _, err := s.Resolve(ctx, c, r.admin, "looked again"); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A later decision replaces an earlier one of the same reviewer.
	decideAs(t, s, keys[9], map[string]string{"r1": "accept"})
	rows[9].want, rows[9].status = "accept", reviewlog.Accepted

	exported := filepath.Join(t.TempDir(), "reviews.jsonl")
	if _, err := s.ExportJSONL(ctx, nil, exported); err != nil {
		t.Fatal(err)
	}
	fromLog, err := reviewlog.ReadLog(exported)
	if err != nil {
		t.Fatal(err)
	}
	fromDB, err := OpenDecisions(ctx, s.Path)
	if err != nil {
		t.Fatal(err)
	}
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := OpenDecisions(stopped, s.Path); !errors.Is(err, context.Canceled) {
		t.Errorf("OpenDecisions after the end: %v, want context.Canceled", err)
	}
	for i, r := range rows {
		c := fx.Cases[i]
		img, _ := source.ImageSHA256(c)
		msk := ""
		if c.Positive() {
			ci, _ := s.CaseByKey(ctx, keys[i])
			msk = *ci.MaskSHA256
		}
		got := fromDB.Resolve(keys[i], img, msk)
		if got.Decision != r.want || got.Status != r.status {
			t.Errorf("row %d (%v, admin %q): got %s/%s, want %s/%s", i, r.decisions, r.admin, got.Decision, got.Status, r.want, r.status)
		}
		if lg := fromLog.Resolve(keys[i], img, msk); !reflect.DeepEqual(lg, got) {
			t.Errorf("row %d: log gives %+v, db gives %+v", i, lg, got)
		}
		// Changed inputs make an accepted case stale.
		if r.status == reviewlog.Accepted {
			if st := fromDB.Resolve(keys[i], strings.Repeat("0", 64), msk).Status; st != reviewlog.Stale {
				t.Errorf("row %d: changed image gives %s, want stale", i, st)
			}
		}
	}
	// Withdrawing a resolution restores the reviewers' outcome.
	c6, _ := s.CaseByKey(ctx, keys[6])
	s.Resolve(ctx, c6, "", "")
	fromDB, _ = OpenDecisions(ctx, s.Path)
	if got := fromDB.Latest(keys[6]); got == nil || got.Decision != "disputed" {
		t.Errorf("after withdrawal: %+v", got)
	}
}

func TestDecideRules(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 4, 0)
	s, _ := initStore(t, fx, 2, 1)
	ctx := context.Background()
	revs, _ := s.Reviewers(ctx)
	q1, _ := s.Queue(ctx, revs[0].ID)
	q2, _ := s.Queue(ctx, revs[1].ID)
	if len(q1) != 2 || len(q2) != 2 {
		t.Fatalf("queues %d and %d, want 2 and 2", len(q1), len(q2))
	}
	if _, err := s.Decide(ctx, revs[1].ID, q1[0].Case, "accept", ""); err == nil {
		t.Error("a reviewer decided a case not assigned to them")
	}
	if _, err := s.Decide(ctx, revs[0].ID, q1[0].Case, "maybe", ""); err == nil {
		t.Error("decision maybe accepted")
	}
	s.SetLocked(ctx, true)
	if _, err := s.Decide(ctx, revs[0].ID, q1[0].Case, "accept", ""); err != ErrLocked {
		t.Errorf("locked: %v", err)
	}
	s.SetLocked(ctx, false)
	if _, err := s.Decide(ctx, revs[0].ID, q1[0].Case, "accept", "fine"); err != nil {
		t.Fatal(err)
	}
	q1, _ = s.Queue(ctx, revs[0].ID)
	if q1[0].Decision != "accept" || q1[0].Note != "fine" || !strings.HasPrefix(q1[0].Time, "2026-01-02T03:04:") {
		t.Errorf("queue item %+v", q1[0])
	}
}

// TestConcurrentDecisions: many reviewers deciding at once lose nothing.
func TestConcurrentDecisions(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 3, 0)
	s, _ := initStore(t, fx, 4, 4)
	ctx := context.Background()
	revs, _ := s.Reviewers(ctx)
	c, _ := s.CaseByKey(ctx, fx.Cases[0].KeyID())
	const each = 25
	var wg sync.WaitGroup
	errs := make(chan error, len(revs)*each)
	for _, r := range revs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				d := "reject"
				if i == each-1 {
					d = "accept"
				}
				if _, err := s.Decide(ctx, r.ID, c, d, ""); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var n int
	s.db.QueryRowContext(context.Background(), `SELECT count(*) FROM decisions`).Scan(&n)
	if n != len(revs)*each {
		t.Errorf("%d decisions stored, want %d", n, len(revs)*each)
	}
	lines, _ := s.ResolvedLines(ctx)
	if len(lines) != 1 || lines[0].Decision != "accept" {
		t.Errorf("resolved %+v", lines)
	}
}

// TestInitFIFOInputs: a case whose image, lesion mask or report file is a
// FIFO is skipped with a one-line warning naming the file; a blocking open
// would hang Init for ever.
func TestInitFIFOInputs(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 3, 0)
	dir := t.TempDir()
	fifo := func(name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("mkfifo:", err)
		}
		return p
	}
	fx.Cases[0].Image = fifo("image.png")
	fx.Cases[1].LesionMasks = []string{fifo("mask.png")}
	fx.Cases[2].Report, fx.Cases[2].ReportPath = "", fifo("report.txt")
	var warn strings.Builder
	if _, _, err := Init(filepath.Join(t.TempDir(), "y.db"), fx.Cases, InitOptions{Reviewers: 1, Overlap: 1, Warn: &warn}); err == nil {
		t.Error("init with no readable case succeeded")
	}
	lines := strings.Split(strings.TrimSpace(warn.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("warnings:\n%s", warn.String())
	}
	for i, name := range []string{"image.png", "mask.png", "report.txt"} {
		if !strings.Contains(lines[i], fx.Cases[i].KeyID()+" skipped") || !strings.Contains(lines[i], filepath.Join(dir, name)+": not a regular file (named pipe)") {
			t.Errorf("warning %q should name %s as a named pipe", lines[i], name)
		}
	}
}

// TestInitCountsStoredAndChecksHeaders: a case whose
// image is no image (a text file such as /etc/hostname, named .png) is
// skipped with a warning, as sample refuses it, instead of being stored
// and failing when served; the count returned is what the database holds.
func TestInitCountsStoredAndChecksHeaders(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 3, 0)
	text := filepath.Join(t.TempDir(), "hostname.png")
	os.WriteFile(text, []byte("myhost\n"), 0o644)
	fx.Cases[0].Image = text
	os.Remove(fx.Cases[1].Image)
	var warn strings.Builder
	db := filepath.Join(t.TempDir(), "y.db")
	_, stored, err := Init(db, fx.Cases, InitOptions{Reviewers: 1, Overlap: 1, Warn: &warn})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warn.String(), fx.Cases[0].KeyID()+" skipped: image_unreadable: image "+text) {
		t.Errorf("warnings %q", warn.String())
	}
	s, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if stored != 1 || len(snap) != 1 {
		t.Errorf("stored %d, database holds %d, want 1 and 1", stored, len(snap))
	}
}

// TestOpenLeavesAForeignDatabaseAlone: another SQLite database (in
// rollback-journal mode) named as the review database is refused and
// keeps every byte; the read-write connection's WAL switch must not touch
// it first.
func TestOpenLeavesAForeignDatabaseAlone(t *testing.T) {
	appdbtest.ForeignRefused(t, func(path string) error { _, err := Open(path); return err }, "not a chexpercept review database")
}

// TestOpenLeavesNoSideFilesItMade: a database in WAL mode that is read and
// refused (here another application's), read-write or read-only, keeps
// no -wal or -shm file that the reading connection made beside it.
func TestOpenLeavesNoSideFilesItMade(t *testing.T) {
	for name, open := range map[string]func(string) (*Store, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		t.Run(name, func(t *testing.T) {
			appdbtest.ForeignWALRefused(t, func(path string) error { _, err := open(path); return err }, "not a chexpercept review database")
		})
	}
}

// TestInitKeepsForeignSideFiles: a -wal, -shm or -journal file where the
// new database's would go is not ours; init refuses and leaves it as it
// was (SQLite would replay or delete it).
func TestInitKeepsForeignSideFiles(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 1, 0)
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		t.Run(suffix, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "review.sqlite")
			if err := os.WriteFile(db+suffix, []byte("not ours\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, _, err := Init(db, fx.Cases, InitOptions{Reviewers: 1, Overlap: 1}); err == nil || !strings.Contains(err.Error(), "already exists beside it") {
				t.Errorf("Init = %v, want refused", err)
			}
			if got, err := os.ReadFile(db + suffix); err != nil || string(got) != "not ours\n" {
				t.Errorf("%s after init: %q, %v", suffix, got, err)
			}
		})
	}
}

// TestInitDeliversBeforePublishing: Init gives the credentials to Deliver
// while nothing is at the database's name yet and publishes only after
// Deliver succeeds; a failed Deliver (the tokens could not be printed)
// leaves nothing, and a file that appears at the name during Deliver is
// kept and the init refused.
func TestInitDeliversBeforePublishing(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 1, 1)
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
			db := filepath.Join(dir, "review.sqlite")
			var got []Credential
			deliver := func(creds []Credential) error {
				if _, err := os.Lstat(db); err == nil {
					t.Error("the database is at its name before its tokens are delivered")
				}
				got = creds
				return tc.deliver(db)
			}
			creds, _, err := Init(db, fx.Cases, InitOptions{Reviewers: 2, Overlap: 1, Workers: 1, Deliver: deliver})
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
