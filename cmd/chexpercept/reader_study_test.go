package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
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
	b, recs := full4Bench.get(t)
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
	// The scores tables the report wrote give its numbers in chexpercept
	// mrmc: the panel's mean and one model's difference per cell.
	if n := checkScoresWithMRMC(t, out, func(row map[string]string) bool {
		return row["comparison"] == "readers" || row["comparison"] == "model:opensource_random"
	}); n < 12 {
		t.Errorf("chexpercept mrmc ran on %d scores tables", n)
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
// answer on the page), three readers of the same names an unaided study;
// read export writes both studies into one folder, as docs/reading.md
// shows; report over them and the shown model's run gives two panels
// compared with the model, each named by its study, aided − unaided per
// path and stage and switch counts that samples.csv reproduces, claim 3
// without a verdict (three readers), and scores tables that chexpercept
// mrmc turns into the report's numbers.
func TestScriptedAidedStudy(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	b, recs := full2Bench.get(t)
	models := filepath.Join(tmp, "models")
	shown, err := (&analysistest.Run{Provider: "opensource", Label: "shown", Oracle: "none", Policy: analysistest.Random(11)}).Write(models, b)
	if err != nil {
		t.Fatal(err)
	}
	tokens := func(stdout string) map[string]string {
		tok := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "reader" {
				tok[f[1]] = f[2]
			}
		}
		if len(tok) != 3 {
			t.Fatalf("read init printed %q", stdout)
		}
		return tok
	}
	aidedDB, unaidedDB := filepath.Join(tmp, "aided.sqlite"), filepath.Join(tmp, "study.sqlite")
	stdout, stderr, code := runCLI(t, "read", "init", "--benchmark", b.Dir, "--db", aidedDB, "--readers", "3", "--sample", "20", "--seed", "4", "--oracle", "none", "--aid", shown, "--study", "aided-pilot")
	if code != 0 {
		t.Fatalf("read init: %d %s", code, stderr)
	}
	tok := tokens(stdout)
	srv := startReadServer(t, aidedDB)
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
	// The unaided study, its database named study.sqlite (so the study
	// is "study"), the same reader names.
	stdout, stderr, code = runCLI(t, "read", "init", "--benchmark", b.Dir, "--db", unaidedDB, "--readers", "3", "--sample", "20", "--seed", "5", "--oracle", "none")
	if code != 0 {
		t.Fatalf("read init: %d %s", code, stderr)
	}
	tok = tokens(stdout)
	srv = startReadServer(t, unaidedDB)
	for name := range tok {
		c := signInReader(t, srv.base, tok[name])
		for st, opts := c.turn(); st != "done"; st, opts = c.turn() {
			c.choose(st, opts[len(opts)/2])
		}
	}
	srv.cmd.Process.Kill()
	srv.cmd.Wait()
	readers := filepath.Join(tmp, "readers")
	for _, db := range []string{aidedDB, unaidedDB} {
		if _, stderr, code := runCLI(t, "read", "export", "--db", db, "--out", readers); code != 0 {
			t.Fatalf("read export %s: %s", db, stderr)
		}
	}
	out := filepath.Join(tmp, "report")
	if _, stderr, code := runCLI(t, "report", readers, models, "--benchmark", b.Dir, "--bootstrap", "50", "--out", out); code != 0 {
		t.Fatalf("report: %s", stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Does the model help the readers?", "aided study aided-pilot: 3 reader(s) with both arms", "| aided − unaided (aided-pilot) |", "Switches after the model's answer",
		"Oracle none, study aided-pilot, unaided: 3 reader(s): reader1, reader2, reader3 (runs human_reader1_unaided, human_reader2_unaided, human_reader3_unaided).",
		"Oracle none, study study, unaided: 3 reader(s): reader1, reader2, reader3 (runs human_reader1, human_reader2, human_reader3).",
		"Readers and models, oracle none, study aided-pilot, unaided:", "Readers and models, oracle none, study study, unaided:",
		"- Oracle none, study aided-pilot, unaided: **" + analysis.Undecided + "**. too few readers for a verdict (3; at least 4 are needed)",
		"- Oracle none, study study, unaided: **" + analysis.Undecided + "**. too few readers for a verdict (3; at least 4 are needed)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(string(md), "6 reader(s)") {
		t.Error("report.md counts the two studies' readers as one panel")
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
	problems, mchecked, err := analysistest.RecheckReaderMRMC(out, "none", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	// 8 cells × (aided-pilot: unaided mean, the model, aided mean,
	// aided − unaided; study: mean, the model).
	if mchecked.Rows != 8*6 {
		t.Errorf("%d rows of ext_reader_mrmc.csv checked, want 48", mchecked.Rows)
	}
	if n := checkScoresWithMRMC(t, out, func(row map[string]string) bool {
		return row["comparison"] == "aided-unaided" || row["comparison"] == "readers" && row["study"] == "aided-pilot"
	}); n < 12 {
		t.Errorf("chexpercept mrmc ran on %d scores tables", n)
	}
}

// csvRows reads a CSV file's rows as maps from column to cell.
func csvRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %v", path, err)
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, h := range recs[0] {
			row[h] = rec[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// sixDecimals is a number of chexpercept mrmc's files as the report
// writes it: 6 decimals, never "-0.000000"; NA and inf as they are.
func sixDecimals(t *testing.T, s string) string {
	t.Helper()
	if s == "NA" || s == "inf" {
		return s
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("number %q: %v", s, err)
	}
	if out := strconv.FormatFloat(x, 'f', 6, 64); out != "-0.000000" {
		return out
	}
	return "0.000000"
}

// checkScoresWithMRMC runs `chexpercept mrmc` (in process: the command
// a user runs, with its flags parsed by the same code) on the scores
// table of
// every row of the report's ext_reader_mrmc.csv that keep selects and
// has an analysis (at least 2 readers and 2 records): with --algorithm
// and the model's run for a model's row. Its numbers, at the report's 6
// decimals, must be the row's: the random-readers random-cases mean of
// the one modality (a panel's mean), the algorithm − readers
// (a model's row), or aided − unaided. It returns how many rows it ran.
func checkScoresWithMRMC(t *testing.T, report string, keep func(row map[string]string) bool) int {
	t.Helper()
	ran := 0
	for i, row := range csvRows(t, filepath.Join(report, "ext_reader_mrmc.csv")) {
		if !keep(row) || row["na_reason"] == "too_few_readers" || row["na_reason"] == "too_few_records" {
			continue
		}
		where := fmt.Sprintf("ext_reader_mrmc.csv row %d (%s %s %s %s)", i+2, row["comparison"], row["study"], row["path"], row["stage"])
		out := filepath.Join(t.TempDir(), "mrmc")
		args := []string{"mrmc", "--scores", filepath.Join(report, filepath.FromSlash(row["scores_file"])), "--out", out}
		model, isModel := strings.CutPrefix(row["comparison"], "model:")
		if isModel {
			args = append(args, "--algorithm", model)
		}
		if _, stderr, err := runCommand(t, findCommand(t, "mrmc"), args[1:]...); err != nil {
			t.Fatalf("%s: chexpercept %s: %v\n%s", where, strings.Join(args, " "), err, stderr)
		}
		ran++
		var got map[string]string
		switch {
		case isModel:
			got = csvRows(t, filepath.Join(out, "mrmc_standalone.csv"))[0]
		default:
			kind := "mean"
			if row["comparison"] == "aided-unaided" {
				kind = "difference"
			}
			for _, r := range csvRows(t, filepath.Join(out, "mrmc_intervals.csv")) {
				if r["analysis"] == "rrrc" && r["kind"] == kind {
					got = r
				}
			}
		}
		for _, col := range []string{"estimate", "se", "df", "ci_low", "ci_high", "p_value", "na_reason"} {
			g := got[col]
			if col != "na_reason" {
				g = sixDecimals(t, g)
			}
			if g != row[col] {
				t.Errorf("%s: chexpercept mrmc on %s gives %s %s, the report %s", where, row["scores_file"], col, g, row[col])
			}
		}
	}
	return ran
}
