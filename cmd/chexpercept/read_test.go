package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// readServer is a `read serve` child process (this test binary as the
// chexpercept binary).
type readServer struct {
	cmd  *exec.Cmd
	base string
}

func startReadServer(t *testing.T, db string) *readServer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunToolsHelperProcess$")
	cmd.Env = append(os.Environ(), "CHX_TEST_MAIN=1", "CHX_TEST_ARGS="+strings.Join([]string{"read", "serve", "--db", db, "--listen", "127.0.0.1:0", "--quiet"}, argSep))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read serve: %v", err)
	}
	return &readServer{cmd: cmd, base: strings.TrimSuffix(strings.TrimSpace(line), "/")}
}

type readClient struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func signInReader(t *testing.T, base, token string) *readClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &readClient{t: t, base: base, http: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp, err := c.http.PostForm(base+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	return c
}

var readHidden = regexp.MustCompile(`name="(csrf|pos|seq)" value="([^"]*)"`)

// next is the turn on screen as "pos/seq", or "done".
func (c *readClient) next() string {
	c.t.Helper()
	resp, err := c.http.Get(c.base + "/read")
	if err != nil {
		c.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), "data-done") {
		return "done"
	}
	vals := map[string]string{}
	for _, m := range readHidden.FindAllStringSubmatch(string(b), -1) {
		vals[m[1]] = m[2]
	}
	c.csrf = vals["csrf"]
	return vals["pos"] + "/" + vals["seq"]
}

// answer picks option 1 for the turn "pos/seq".
func (c *readClient) answer(state string) {
	c.t.Helper()
	pos, seq, _ := strings.Cut(state, "/")
	resp, err := c.http.PostForm(c.base+"/answer", url.Values{"csrf": {c.csrf}, "pos": {pos}, "seq": {seq}, "option": {"1"}})
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("answer at %s: %d", state, resp.StatusCode)
	}
}

func readInit(t *testing.T, bench, db string) map[string]string {
	t.Helper()
	stdout, stderr, code := runCLI(t, "read", "init", "--benchmark", bench, "--db", db, "--readers", "2", "--seed", "3", "--oracle", "explicit")
	if code != 0 {
		t.Fatalf("read init: %d %s", code, stderr)
	}
	tok := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "reader":
			tok[f[1]] = f[2]
		case len(f) == 2 && f[0] == "admin":
			tok["admin"] = f[1]
		default:
			t.Fatalf("read init line %q", l)
		}
	}
	if len(tok) != 3 {
		t.Fatalf("read init printed %q", stdout)
	}
	return tok
}

// exported is the reader's exported results.jsonl without its times
// (a resumed session's answers are given at other moments).
func exported(t *testing.T, out string) string {
	t.Helper()
	recs, err := rundir.ReadResults(filepath.Join(out, "human_reader1", "oracle_explicit", rundir.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, r := range recs {
		r.StartedAt, r.FinishedAt = "", ""
		for i := range r.Turns {
			r.Turns[i].LatencyMS, r.Turns[i].TotalMS = 0, 0
		}
		line, err := r.MarshalLine()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
	}
	return b.String()
}

// TestReadKillResume: `read serve` killed with SIGKILL in the middle of a
// record loses no acknowledged answer; restarted, it shows the next
// unanswered turn, and the export equals an uninterrupted session's.
func TestReadKillResume(t *testing.T) {
	t.Parallel()
	bench := protocoltest.Bench(t).Dir
	dir := t.TempDir()

	// Uninterrupted.
	db0 := filepath.Join(dir, "plain.sqlite")
	tok0 := readInit(t, bench, db0)
	s0 := startReadServer(t, db0)
	c0 := signInReader(t, s0.base, tok0["reader1"])
	for st := c0.next(); st != "done"; st = c0.next() {
		c0.answer(st)
	}
	s0.cmd.Process.Kill()
	s0.cmd.Wait()
	out0 := filepath.Join(dir, "out0")
	if _, stderr, code := runCLI(t, "read", "export", "--db", db0, "--out", out0); code != 0 {
		t.Fatalf("read export: %s", stderr)
	}

	// Killed in the middle of a record, then restarted.
	db := filepath.Join(dir, "killed.sqlite")
	tok := readInit(t, bench, db)
	s := startReadServer(t, db)
	c := signInReader(t, s.base, tok["reader1"])
	var st string
	answered := 0
	for st = c.next(); ; st = c.next() {
		pos, seq, _ := strings.Cut(st, "/")
		if p, _ := strconv.Atoi(pos); p >= 1 && seq != "0" {
			break // in the middle of the second record
		}
		c.answer(st)
		answered++
	}
	if err := s.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	s.cmd.Wait()
	s = startReadServer(t, db)
	c = signInReader(t, s.base, tok["reader1"])
	if got := c.next(); got != st {
		t.Fatalf("after kill -9 and restart (%d answers given) the reader is at %s, want %s", answered, got, st)
	}
	for st := c.next(); st != "done"; st = c.next() {
		c.answer(st)
	}
	out := filepath.Join(dir, "out")
	if _, stderr, code := runCLI(t, "read", "export", "--db", db, "--out", out); code != 0 {
		t.Fatalf("read export: %s", stderr)
	}
	want, got := exported(t, out0), exported(t, out)
	if got != want || strings.Count(got, "\n") != 4 {
		t.Errorf("export after kill -9 differs from the uninterrupted one:\n%s\nwant\n%s", got, want)
	}
	// A second export does not overwrite without --force.
	if _, stderr, code := runCLI(t, "read", "export", "--db", db, "--out", out); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("second export: exit %d, %s", code, stderr)
	}
}

// TestReadInitAidRefused: read init --aid with a directory that holds no
// run is refused in one line (exit 2) and creates no database.
func TestReadInitAidRefused(t *testing.T) {
	t.Parallel()
	bench := protocoltest.Bench(t).Dir
	db := filepath.Join(t.TempDir(), "aided.sqlite")
	_, stderr, code := runCLI(t, "read", "init", "--benchmark", bench, "--db", db, "--readers", "2", "--aid", t.TempDir())
	// The hand-made benchmark has no SHA256SUMS, which is a warning line
	// of its own; the refusal is the one line after it.
	refusal := strings.TrimSpace(stderr)
	if i := strings.LastIndex(refusal, "\n"); strings.HasPrefix(refusal, "warning:") && i >= 0 && !strings.Contains(refusal[:i], "\n") {
		refusal = refusal[i+1:]
	}
	if code != 2 || !strings.Contains(refusal, "--aid") || strings.Contains(refusal, "\n") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a refused init left its database")
	}
}
