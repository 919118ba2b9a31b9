package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/results"
)

// runScriptedStudy makes a study of sample records with read init and
// the extra flags, lets every reader answer through HTTP with a habit of
// its own, exports it and reports on it; it returns the report's
// directory and the export's.
func runScriptedStudy(t *testing.T, tmp, b string, readers, sample int, extra ...string) (report, export string) {
	t.Helper()
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(tmp, "study.sqlite")
	args := append([]string{"read", "init", "--benchmark", b, "--db", db, "--readers", strconv.Itoa(readers), "--sample", strconv.Itoa(sample), "--seed", "9", "--oracle", "none"}, extra...)
	stdout, stderr, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("read init: %d %s", code, stderr)
	}
	tok := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "reader" {
			tok[f[1]] = f[2]
		}
	}
	if len(tok) != readers {
		t.Fatalf("read init printed %q", stdout)
	}
	srv := startReadServer(t, db)
	for i := 1; i <= readers; i++ {
		c := signInReader(t, srv.base, tok["reader"+strconv.Itoa(i)])
		for st, opts := c.turn(); st != "done"; st, opts = c.turn() {
			pos, seq, _ := strings.Cut(st, "/")
			p, _ := strconv.Atoi(pos)
			s, _ := strconv.Atoi(seq)
			c.choose(st, opts[(p*i+s)%len(opts)])
		}
	}
	_ = srv.cmd.Process.Kill()
	_ = srv.cmd.Wait()
	export = filepath.Join(tmp, "readers")
	if _, stderr, code := runCLI(t, "read", "export", "--db", db, "--out", export); code != 0 {
		t.Fatalf("read export: %s", stderr)
	}
	report = filepath.Join(tmp, "report")
	if _, stderr, code := runCLI(t, "report", export, "--benchmark", b, "--bootstrap", "50", "--out", report); code != 0 {
		t.Fatalf("report: %s", stderr)
	}
	return report, export
}

// readersRows are ext_reader_mrmc.csv's rows of the readers' panel.
func readersRows(t *testing.T, report string) []map[string]string {
	t.Helper()
	var rows []map[string]string
	for _, row := range csvRows(t, filepath.Join(report, "ext_reader_mrmc.csv")) {
		if row["comparison"] == "readers" {
			delete(row, "study")
			delete(row, "scores_file")
			rows = append(rows, row)
		}
	}
	return rows
}

// TestScriptedSplitPlotStudy: eight readers in two blocks answer through
// HTTP; each reads only its block's records; the export carries the
// blocks; the report says the design and gives the numbers chexpercept
// mrmc gives on its scores tables (whose block column says the design).
// A split-plot study of one block gives a fully crossed study's numbers.
func TestScriptedSplitPlotStudy(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	b, _ := full4Bench.get(t)
	split := filepath.Join(tmp, "split")
	planFile := filepath.Join(tmp, "plan.yaml")
	plan := "primary:\n  path: revision_required\n  stage: 2\nalpha: 0.05\ndesign: split-plot\nblocks: 2\nreaders: 8\nrecords: 40\n"
	if err := os.WriteFile(planFile, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	report, export := runScriptedStudy(t, split, b.Dir, 8, 40, "--design", "split-plot", "--blocks", "2", "--plan", planFile)
	// The plan comes first in the report, then its primary result; the
	// rest is exploratory.
	md, err := os.ReadFile(filepath.Join(report, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	iPlan := strings.Index(string(md), "**Analysis plan** of reader study study (oracle none), fixed at read init before the first record was read: primary endpoint end-to-end accuracy on path revision_required at stage 2; figure of merit accuracy; analysis random readers, random cases (rrrc); α 0.05; design split-plot, 2 block(s); planned 8 readers and 40 records.")
	iPrimary := strings.Index(string(md), "**Primary result** (split-plot, 2 blocks, 8 readers, ")
	iWritten := strings.Index(string(md), "Written by chexpercept")
	if iPlan < 0 || iPrimary < iPlan || iWritten < iPrimary || !strings.Contains(string(md), "Every other result in this report is exploratory.") {
		t.Errorf("report.md does not state the plan and its primary result first (at %d, %d, %d):\n%.1500s", iPlan, iPrimary, iWritten, md)
	}
	// The export: each reader's manifest names its block, and the two
	// blocks' records are disjoint and together the 40 sampled.
	keys := map[string]map[string]bool{}
	for i := 1; i <= 8; i++ {
		dir := filepath.Join(export, "human_reader"+strconv.Itoa(i), "oracle_none")
		data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m results.Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		if m.Reading == nil || m.Reading.Design != "split-plot" || m.Reading.Blocks != 2 || (m.Reading.Block != "1" && m.Reading.Block != "2") ||
			m.Reading.Plan == nil || m.Reading.Plan.Primary.Stage != 2 || m.Reading.Plan.Records != 40 {
			t.Fatalf("reader%d: manifest reading member %+v", i, m.Reading)
		}
		if keys[m.Reading.Block] == nil {
			keys[m.Reading.Block] = map[string]bool{}
		}
		lines, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
			var rec struct {
				KeyID string `json:"key_id"`
			}
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatal(err)
			}
			keys[m.Reading.Block][rec.KeyID] = true
		}
	}
	if len(keys) != 2 || len(keys["1"])+len(keys["2"]) != 40 {
		t.Fatalf("blocks' records: %d and %d, want 40 in all", len(keys["1"]), len(keys["2"]))
	}
	for k := range keys["1"] {
		if keys["2"][k] {
			t.Fatalf("record %s in both blocks", k)
		}
	}
	// The report says the design and analyses it as chexpercept mrmc does.
	found := false
	_ = filepath.WalkDir(report, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".html")) {
			data, _ := os.ReadFile(path)
			found = found || strings.Contains(string(data), "Design: split-plot, 2 blocks")
		}
		return nil
	})
	if !found {
		t.Error("the report does not say the design")
	}
	if n := checkScoresWithMRMC(t, report, func(row map[string]string) bool { return row["comparison"] == "readers" }); n < 4 {
		t.Errorf("chexpercept mrmc ran on %d scores tables", n)
	}
	withBlock := 0
	for _, row := range csvRows(t, filepath.Join(report, "ext_reader_mrmc.csv")) {
		if row["comparison"] != "readers" || row["scores_file"] == "NA" || row["scores_file"] == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(report, filepath.FromSlash(row["scores_file"])))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(string(data), "modality,reader,case,truth,score,block") {
			withBlock++
		}
	}
	if withBlock == 0 {
		t.Error("no scores table of the split-plot panel has a block column")
	}
	// One block is the fully crossed study, to the report's digits (on
	// 20 records: the equality does not need the plan's 40).
	oneReport, _ := runScriptedStudy(t, filepath.Join(tmp, "one"), b.Dir, 4, 20, "--design", "split-plot", "--blocks", "1")
	crossedReport, _ := runScriptedStudy(t, filepath.Join(tmp, "crossed"), b.Dir, 4, 20)
	one, crossed := readersRows(t, oneReport), readersRows(t, crossedReport)
	if len(one) == 0 || len(one) != len(crossed) {
		t.Fatalf("%d and %d readers' rows", len(one), len(crossed))
	}
	for i := range one {
		for col, v := range crossed[i] {
			if one[i][col] != v {
				t.Errorf("row %d, %s: one block %s, fully crossed %s", i, col, one[i][col], v)
			}
		}
	}
	if !slices.ContainsFunc(one, func(r map[string]string) bool { return r["na_reason"] == "" || r["na_reason"] == "NA" }) {
		t.Log("no readers' row with an interval in the one-block study")
	}
}
