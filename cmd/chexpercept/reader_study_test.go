package main

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
)

var readOption = regexp.MustCompile(`data-option="(\d+)"`)

// turn is the question on the reader's screen: "pos/seq" and the
// numbers of its options, or "done". It holds the page to the
// automation contract: options carry data-option, the submit control
// data-submit.
func (c *readClient) turn() (string, []int) {
	c.t.Helper()
	resp, err := c.http.Get(c.base + "/read")
	if err != nil {
		c.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if strings.Contains(page, "data-done") {
		return "done", nil
	}
	vals := map[string]string{}
	for _, m := range readHidden.FindAllStringSubmatch(page, -1) {
		vals[m[1]] = m[2]
	}
	c.csrf = vals["csrf"]
	var opts []int
	for _, m := range readOption.FindAllStringSubmatch(page, -1) {
		n, _ := strconv.Atoi(m[1])
		opts = append(opts, n)
	}
	if len(opts) == 0 || !strings.Contains(page, "data-submit") {
		c.t.Fatalf("turn %s/%s: %d data-option controls, data-submit %v", vals["pos"], vals["seq"], len(opts), strings.Contains(page, "data-submit"))
	}
	return vals["pos"] + "/" + vals["seq"], opts
}

// choose submits option n for the turn "pos/seq".
func (c *readClient) choose(state string, n int) {
	c.t.Helper()
	pos, seq, _ := strings.Cut(state, "/")
	resp, err := c.http.PostForm(c.base+"/answer", url.Values{"csrf": {c.csrf}, "pos": {pos}, "seq": {seq}, "option": {strconv.Itoa(n)}})
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("answer at %s: %d", state, resp.StatusCode)
	}
}

// TestScriptedReaderStudy: four readers with different habits answer a
// sampled study through HTTP (the page's data-option / data-submit
// contract), three models answer every record; `report` over both gives
// an ext_reader_mrmc.csv that samples.csv alone reproduces on the paired
// records, with the readers' record count as n_records.
func TestScriptedReaderStudy(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	recs := benchtest.Full(4)
	b, err := analysistest.WriteBench(filepath.Join(tmp, "bench"), recs)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(tmp, "study.sqlite")
	stdout, stderr, code := runCLI(t, "read", "init", "--benchmark", b.Dir, "--db", db, "--readers", "4", "--sample", "40", "--seed", "9", "--oracle", "none")
	if code != 0 {
		t.Fatalf("read init: %d %s", code, stderr)
	}
	tok := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "reader" {
			tok[f[1]] = f[2]
		}
	}
	// Each reader's habit: the first option, the last, the second when
	// there is one, or one that moves with the turn.
	habits := map[string]func(state string, opts []int) int{
		"reader1": func(_ string, opts []int) int { return opts[0] },
		"reader2": func(_ string, opts []int) int { return opts[len(opts)-1] },
		"reader3": func(_ string, opts []int) int { return opts[min(1, len(opts)-1)] },
		"reader4": func(state string, opts []int) int {
			pos, seq, _ := strings.Cut(state, "/")
			p, _ := strconv.Atoi(pos)
			s, _ := strconv.Atoi(seq)
			return opts[(p+s)%len(opts)]
		},
	}
	if len(tok) != len(habits) {
		t.Fatalf("read init printed %q", stdout)
	}
	srv := startReadServer(t, db)
	for name, habit := range habits {
		c := signInReader(t, srv.base, tok[name])
		for st, opts := c.turn(); st != "done"; st, opts = c.turn() {
			c.choose(st, habit(st, opts))
		}
	}
	srv.cmd.Process.Kill()
	srv.cmd.Wait()
	readers := filepath.Join(tmp, "readers")
	if _, stderr, code := runCLI(t, "read", "export", "--db", db, "--out", readers); code != 0 {
		t.Fatalf("read export: %s", stderr)
	}
	models := filepath.Join(tmp, "models")
	for _, m := range []*analysistest.Run{
		{Provider: "opensource", Label: "first", Oracle: "none", Policy: analysistest.First},
		{Provider: "opensource", Label: "random", Oracle: "none", Policy: analysistest.Random(5)},
		{Provider: "opensource", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle},
	} {
		if _, err := m.Write(models, b); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(tmp, "report")
	if _, stderr, code := runCLI(t, "report", readers, models, "--benchmark", b.Dir, "--bootstrap", "50", "--out", out); code != 0 {
		t.Fatalf("report: %s", stderr)
	}
	problems, checked, err := analysistest.RecheckReaderMRMC(out, "none", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if checked.WithInterval == 0 || checked.Rows != 8*4 {
		t.Errorf("%d rows of ext_reader_mrmc.csv checked, %d with an interval; want 8 cells × (the readers and 3 models), some with an interval", checked.Rows, checked.WithInterval)
	}
	// n_records is the readers' count: the 40 sampled records over the
	// paths and stages, never a model's larger set.
	o, err := analysistest.ReadOutcomes(out, "none", recs)
	if err != nil {
		t.Fatal(err)
	}
	sampled := len(o.Correct["human_reader1"])
	if sampled != 40 || len(o.Correct["opensource_oracle"]) != len(recs) {
		t.Errorf("readers answered %d records, the oracle model %d; want 40 and %d", sampled, len(o.Correct["opensource_oracle"]), len(recs))
	}
}

var readStage = regexp.MustCompile(`name="stage" value="(\w+)"`)

// TestScriptedAidedStudy: three readers take a sequential aided study
// through HTTP (each turn answered unaided, then finally with the model's
// answer on the page); read export writes both arms; report over them and
// the shown model's run gives aided − unaided per path and stage and
// switch counts that samples.csv reproduces.
func TestScriptedAidedStudy(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	recs := benchtest.Full(2)
	b, err := analysistest.WriteBench(filepath.Join(tmp, "bench"), recs)
	if err != nil {
		t.Fatal(err)
	}
	models := filepath.Join(tmp, "models")
	shown, err := (&analysistest.Run{Provider: "opensource", Label: "shown", Oracle: "none", Policy: analysistest.Random(11)}).Write(models, b)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(tmp, "study.sqlite")
	stdout, stderr, code := runCLI(t, "read", "init", "--benchmark", b.Dir, "--db", db, "--readers", "3", "--sample", "20", "--seed", "4", "--oracle", "none", "--aid", shown, "--study", "s1")
	if code != 0 {
		t.Fatalf("read init: %d %s", code, stderr)
	}
	tok := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "reader" {
			tok[f[1]] = f[2]
		}
	}
	if len(tok) != 3 {
		t.Fatalf("read init printed %q", stdout)
	}
	srv := startReadServer(t, db)
	for name := range tok {
		c := signInReader(t, srv.base, tok[name])
		for i := 0; ; i++ {
			resp, err := c.http.Get(c.base + "/read")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			page := string(body)
			if strings.Contains(page, "data-done") {
				break
			}
			vals := map[string]string{}
			for _, m := range readHidden.FindAllStringSubmatch(page, -1) {
				vals[m[1]] = m[2]
			}
			stage := readStage.FindStringSubmatch(page)
			opts := readOption.FindAllStringSubmatch(page, -1)
			if stage == nil || len(opts) == 0 {
				t.Fatalf("%s: an aided turn without stage or options", name)
			}
			// Unaided the last option; finally the first on every
			// other turn (a reader swayed now and then).
			choice := opts[len(opts)-1][1]
			if stage[1] == "final" && i%4 == 1 {
				choice = opts[0][1]
			}
			resp, err = c.http.PostForm(c.base+"/answer", url.Values{"csrf": {vals["csrf"]}, "pos": {vals["pos"]}, "seq": {vals["seq"]}, "stage": {stage[1]}, "option": {choice}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("%s: answer %s at %s/%s: %d", name, stage[1], vals["pos"], vals["seq"], resp.StatusCode)
			}
		}
	}
	srv.cmd.Process.Kill()
	srv.cmd.Wait()
	readers := filepath.Join(tmp, "readers")
	if _, stderr, code := runCLI(t, "read", "export", "--db", db, "--out", readers); code != 0 {
		t.Fatalf("read export: %s", stderr)
	}
	out := filepath.Join(tmp, "report")
	if _, stderr, code := runCLI(t, "report", readers, models, "--benchmark", b.Dir, "--bootstrap", "50", "--out", out); code != 0 {
		t.Fatalf("report: %s", stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Does the model help the readers?", "aided study s1: 3 reader(s) with both arms", "| aided − unaided (s1) |", "Switches after the model's answer"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	problems, checked, err := analysistest.RecheckReaderSwitches(out, "none", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if checked.Rows != 3*8 {
		t.Errorf("ext_reader_switches.csv has %d rows, want 3 readers × 8 cells", checked.Rows)
	}
}
