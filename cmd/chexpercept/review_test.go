package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/review"
)

// reviewManifest writes a tiny manifest: one positive and one negative
// edema case with generated PNGs.
func reviewManifest(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, img image.Image) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		png.Encode(f, img)
		f.Close()
	}
	for i := 1; i <= 2; i++ {
		g := image.NewGray(image.Rect(0, 0, 32, 32))
		for p := range g.Pix {
			g.Pix[p] = uint8(p * i)
		}
		write(fmt.Sprintf("cxr%d.png", i), g)
	}
	m := image.NewGray(image.Rect(0, 0, 16, 16))
	for p := 20; p < 120; p++ {
		m.Pix[p] = 255
	}
	write("mask1.png", m)
	man := filepath.Join(dir, "manifest.jsonl")
	os.WriteFile(man, []byte(`{"case_id":"a1_positive_0","lesion":"edema","label":"positive","image":"cxr1.png","image_id":"a1","lesion_masks":["mask1.png"],"lung_masks":{"right":"mask1.png","left":"mask1.png"}}
{"case_id":"a2_negative_0","lesion":"edema","label":"negative","image":"cxr2.png","image_id":"a2"}
`), 0o644)
	return man
}

func reviewExitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return 2
	}
	return 0
}

func TestReviewCommands(t *testing.T) {
	findCommand(t, "review")
	man := reviewManifest(t)
	tmp := t.TempDir()
	db := filepath.Join(tmp, "review.db")
	out, _, err := runCommand(t, reviewInitCmd(job.Options{}), "--source", man, "--review-db", db, "--reviewers", "2", "--overlap", "2", "--seed", "3")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^reviewer r1 [A-Za-z0-9_-]{43}\nreviewer r2 [A-Za-z0-9_-]{43}\nadmin [A-Za-z0-9_-]{43}\n$`).MatchString(out) {
		t.Errorf("init output:\n%s", out)
	}
	if _, _, err := runCommand(t, reviewInitCmd(job.Options{}), "--source", man, "--review-db", db, "--reviewers", "2"); reviewExitCode(err) != 2 || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second init: %v", err)
	}

	// Both reviewers accept the positive → accepted in the export.
	st, err := review.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, _ := st.CaseByKey(ctx, "edema_a1_positive_0")
	revs, _ := st.Reviewers(ctx)
	for _, r := range revs {
		st.Decide(ctx, r.ID, c, "accept", "")
	}
	st.Close()
	jl := filepath.Join(tmp, "reviews.jsonl")
	if _, _, err := runCommand(t, reviewExportCmd(job.Options{}), "--review-db", db, "--jsonl", jl); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(jl)
	if strings.Count(string(data), "\n") != 1 || !strings.Contains(string(data), `"key_id":"edema_a1_positive_0","decision":"accept","reviewers":["r1","r2"]`) {
		t.Errorf("export jsonl:\n%s", data)
	}
	csvDir := filepath.Join(tmp, "sheets")
	if _, _, err := runCommand(t, reviewExportCmd(job.Options{}), "--review-db", db, "--csv", csvDir); err != nil {
		t.Fatal(err)
	}
	pos, _ := os.ReadFile(filepath.Join(csvDir, "positive.csv"))
	if !strings.HasSuffix(string(pos), "edema_a1_positive_0,a1,edema,a1_positive_0,right lung and left lung,,,1\r\n") {
		t.Errorf("positive.csv:\n%q", pos)
	}
	if _, _, err := runCommand(t, reviewExportCmd(job.Options{}), "--review-db", db, "--jsonl", jl, "--csv", csvDir); reviewExitCode(err) != 2 {
		t.Errorf("export with both outputs: %v", err)
	}

	// Exports never replace what they did not write: an existing --jsonl
	// (perhaps the main review log) needs --force; so does a --csv
	// directory holding a filled sheet and no marker.
	if _, _, err := runCommand(t, reviewExportCmd(job.Options{}), "--review-db", db, "--jsonl", jl); reviewExitCode(err) != 2 || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("export over an existing --jsonl: %v", err)
	}
	if _, _, err := runCommand(t, reviewExportCmd(job.Options{}), "--review-db", db, "--jsonl", jl, "--force"); err != nil {
		t.Errorf("export --force over an existing --jsonl: %v", err)
	}
	// Not even --force replaces the review database (by name, through a
	// symbolic link, or its WAL), the other output, a directory or a FIFO.
	dbBefore, _ := os.ReadFile(db)
	dbLink, dir, fifo := filepath.Join(tmp, "db-link"), filepath.Join(tmp, "a-dir"), filepath.Join(tmp, "a-fifo")
	os.Symlink(db, dbLink)
	os.Mkdir(dir, 0o755)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--jsonl", db}, {"--jsonl", dbLink}, {"--outcomes", db + "-wal"}, {"--jsonl", dir},
		{"--outcomes", fifo}, {"--jsonl", jl, "--outcomes", jl}} {
		_, _, err := runCommand(t, reviewExportCmd(job.Options{}), append([]string{"--review-db", db, "--force"}, args...)...)
		if reviewExitCode(err) != 2 || strings.Contains(err.Error(), "\n") {
			t.Errorf("export --force %v: %v", args, err)
		}
	}
	// The same files spelled differently (a relative
	// output beside an absolute database, a "./" or a linked folder) are
	// the same files, with or without --force, and whether or not the
	// -wal file exists yet.
	t.Chdir(tmp)
	os.Symlink(".", filepath.Join(tmp, "here"))
	for _, args := range [][]string{{"--jsonl", "review.db-wal"}, {"--jsonl", "./review.db-shm"}, {"--outcomes", "here/review.db-journal"},
		{"--jsonl", "here/review.db", "--force"}, {"--jsonl", "x.jsonl", "--outcomes", "here/x.jsonl"}} {
		_, _, err := runCommand(t, reviewExportCmd(job.Options{}), append([]string{"--review-db", db}, args...)...)
		if reviewExitCode(err) != 2 || !strings.Contains(err.Error(), "same file") && !strings.Contains(err.Error(), "is the review database or one of its files") {
			t.Errorf("export %v: %v", args, err)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "x.jsonl")); err == nil {
		t.Error("x.jsonl was written although --outcomes names the same file")
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(after, dbBefore) {
		t.Error("the review database changed")
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v", err)
	}
	if _, _, err := runCommand(t, reviewExportCmd(job.Options{}), "--review-db", db, "--csv", csvDir); err != nil {
		t.Errorf("export into its own earlier --csv directory: %v", err)
	}
	filled := filepath.Join(tmp, "filled")
	os.MkdirAll(filled, 0o755)
	os.WriteFile(filepath.Join(filled, "positive.csv"), []byte("a reviewer's filled sheet\n"), 0o644)
	before := outdirtest.Snapshot(t, filled)
	if _, _, err := runCommand(t, reviewExportCmd(job.Options{}), "--review-db", db, "--csv", filled); reviewExitCode(err) != 2 || !strings.Contains(err.Error(), "positive.csv") {
		t.Errorf("export into a folder with a filled sheet: %v", err)
	}
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, filled))

	// Pack, fill the negative sheet, import into a log and into the db.
	packDir := filepath.Join(tmp, "pack")
	if out, _, err := runCommand(t, reviewPackCmd(job.Options{}), "--source", man, "--out", packDir, "--reviewers", "3"); err != nil || !strings.Contains(out, "2 case(s) in 2 sheet(s)") {
		t.Fatalf("pack: %v %s", err, out)
	}
	sheet := filepath.Join(packDir, "annotator_A", "edema", "negative", "review_sheet.csv")
	b, err := os.ReadFile(sheet)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(sheet, bytes.Replace(b, []byte(",\r\n"), []byte(",yes\r\n"), 1), 0o644) // header ends in "decision\r\n"
	log2 := filepath.Join(tmp, "imported.jsonl")
	if _, _, err := runCommand(t, reviewImportCmd(job.Options{}), "--csv", sheet, "--reviews", log2); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(log2)
	if !strings.Contains(string(data), `"key_id":"edema_a2_negative_0","decision":"accept","reviewer":"annotator_A"`) {
		t.Errorf("imported log:\n%s", data)
	}
	if _, _, err := runCommand(t, reviewImportCmd(job.Options{}), "--review-db", db, "--reviewer", "r1", sheet); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCommand(t, reviewImportCmd(job.Options{}), "--csv", sheet); reviewExitCode(err) != 2 {
		t.Errorf("import without a target: %v", err)
	}
	l, err := review.OpenDecisions(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if ln := l.Latest("edema_a2_negative_0"); ln == nil || ln.Decision != "pending" { // r1 accepted, r2 has not decided
		t.Errorf("after db import: %+v", ln)
	}
}

// reviewSyncBuffer is a bytes.Buffer safe for a concurrent writer and reader.
type reviewSyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *reviewSyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *reviewSyncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestReviewExportRerunAfterKill: the temporary files a review export
// killed while renaming its output into place left (beside --reviews, in
// the --csv folder) are removed by the plain rerun; a file that only
// resembles one is not.
func TestReviewExportRerunAfterKill(t *testing.T) {
	t.Parallel()
	man := reviewManifest(t)
	tmp := t.TempDir()
	db := filepath.Join(tmp, "review.db")
	if _, _, err := runCommand(t, reviewInitCmd(job.Options{}), "--source", man, "--review-db", db, "--reviewers", "1"); err != nil {
		t.Fatal(err)
	}
	csvDir := filepath.Join(tmp, "csv")
	if err := os.Mkdir(csvDir, 0o755); err != nil {
		t.Fatal(err)
	}
	debris := []string{"r.jsonl.tmp-381945024", "csv/.chexpercept-review-sheets", "csv/negative.csv.tmp-753999129", "csv/positive.csv.tmp-1"}
	foreign := []string{"r.jsonl.tmp-old", "other.jsonl.tmp-2", "csv/notes.csv.tmp-3"}
	for _, n := range append(append([]string{}, debris...), foreign...) {
		if err := os.WriteFile(filepath.Join(tmp, n), []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"--reviews", filepath.Join(tmp, "r.jsonl")}, {"--csv", csvDir}} {
		if _, _, err := runCommand(t, reviewExportCmd(job.Options{}), append([]string{"--review-db", db}, args...)...); err != nil {
			t.Fatalf("export %v: %v", args, err)
		}
	}
	for _, n := range debris {
		if _, err := os.Lstat(filepath.Join(tmp, n)); err == nil && strings.Contains(n, ".tmp-") {
			t.Errorf("the rerun left %s", n)
		}
	}
	for _, n := range foreign {
		if b, err := os.ReadFile(filepath.Join(tmp, n)); err != nil || string(b) != "half" {
			t.Errorf("the rerun removed or changed %s (%v)", n, err)
		}
	}
}

func TestReviewServe(t *testing.T) {
	t.Parallel()
	man := reviewManifest(t)
	db := filepath.Join(t.TempDir(), "review.db")
	if _, _, err := runCommand(t, reviewInitCmd(job.Options{}), "--source", man, "--review-db", db, "--reviewers", "1"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		listen string
		warn   bool
	}{{"127.0.0.1:0", false}, {"0.0.0.0:0", true}} {
		c := reviewServeCmd()
		// The server prints its URL on stdout once it listens: the test
		// goes on when that line arrives (the pipe ends if the command
		// ends first).
		pr, pw := io.Pipe()
		var errb reviewSyncBuffer
		c.SetOut(pw)
		c.SetErr(&errb)
		c.SetArgs([]string{"--review-db", db, "--listen", tc.listen, "--quiet"})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.ExecuteContext(ctx); pw.Close() }()
		safety := time.AfterFunc(time.Minute, func() { pw.CloseWithError(errors.New("nothing printed within a minute")) })
		line, err := bufio.NewReader(pr).ReadString('\n')
		safety.Stop()
		go io.Copy(io.Discard, pr) // nothing more is expected; never block the server
		url := strings.TrimSpace(line)
		if err != nil || url == "" {
			cancel()
			t.Fatalf("%s: no URL printed (%v); stderr %s", tc.listen, err, errb.String())
		}
		url = strings.Replace(url, "0.0.0.0", "127.0.0.1", 1)
		resp, err := http.Get(url + "queue")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: GET /queue without a session: %d", tc.listen, resp.StatusCode)
		}
		if got := strings.Contains(errb.String(), "not a loopback address"); got != tc.warn {
			t.Errorf("%s: warning printed %v, want %v (stderr %q)", tc.listen, got, tc.warn, errb.String())
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: serve ended with %v", tc.listen, err)
		}
	}
	if _, _, err := runCommand(t, reviewServeCmd(), "--review-db", db, "--listen", "nonsense"); reviewExitCode(err) != 2 {
		t.Errorf("bad --listen: %v", err)
	}
	if _, _, err := runCommand(t, reviewServeCmd(), "--review-db", filepath.Join(t.TempDir(), "none.db")); reviewExitCode(err) != 2 {
		t.Errorf("missing db: %v", err)
	}
}
