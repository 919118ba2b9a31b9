package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/job"
)

// splitVanDyke writes the Van Dyke study cut into a split-plot study of
// two blocks: readers 1 and 2 keep the odd cases, readers 3 to 5 the even
// ones. withBlock adds the block column.
func splitVanDyke(t *testing.T, withBlock bool) string {
	t.Helper()
	data, err := os.ReadFile(vanDykeScores)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var b strings.Builder
	b.WriteString(strings.TrimSpace(lines[0]))
	if withBlock {
		b.WriteString(",block")
	}
	b.WriteString("\n")
	for _, line := range lines[1:] {
		f := strings.Split(strings.TrimSpace(line), ",")
		reader, _ := strconv.Atoi(f[1])
		c, _ := strconv.Atoi(f[2])
		block := "odd"
		if reader > 2 {
			block = "even"
		}
		if (c%2 == 1) != (block == "odd") {
			continue
		}
		b.WriteString(strings.Join(f, ","))
		if withBlock {
			b.WriteString("," + block)
		}
		b.WriteString("\n")
	}
	path := filepath.Join(t.TempDir(), "split.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMrmcSplitPlot: chexpercept mrmc analyses a split-plot scores table
// with or without its block column alike, says the design, and writes a
// pilot that mrmc plan --blocks sizes from.
func TestMrmcSplitPlot(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "mrmc")
	found, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", splitVanDyke(t, false), "--fom", "auc", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(found, "Design: split-plot, 2 blocks (block 1: 2 readers, 57 cases; block 2: 3 readers, 57 cases)") {
		t.Errorf("the design is not stated:\n%s", found)
	}
	given, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", splitVanDyke(t, true), "--fom", "auc")
	if err != nil {
		t.Fatal(err)
	}
	given = strings.Replace(given, "block odd:", "block 1:", 1)
	given = strings.Replace(given, "block even:", "block 2:", 1)
	if given != found {
		t.Errorf("with the block column:\n%s\nfound from the scores:\n%s", given, found)
	}
	plan, _, err := runCommand(t, newMrmcPlanCmd(job.Options{}), "--pilot", filepath.Join(out, "mrmc.json"), "--blocks", "2", "--readers", "10", "--cases", "200")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "components over 57 cases") || !strings.Contains(plan, "design: split-plot, 2 blocks") {
		t.Errorf("plan from a split-plot pilot:\n%s", plan)
	}
}

// TestMrmcPlanBlocks: --blocks 1 is the fully crossed plan, to the byte;
// more blocks need more cases for the same power (each block's readers
// share fewer cases), and a study too small for its blocks is refused.
func TestMrmcPlanBlocks(t *testing.T) {
	t.Parallel()
	pilot := filepath.Join(vanDykePilotDir(t), "mrmc.json")
	crossed, _, err := runCommand(t, newMrmcPlanCmd(job.Options{}), "--pilot", pilot, "--readers", "10", "--power", "0.8")
	if err != nil {
		t.Fatal(err)
	}
	one, _, err := runCommand(t, newMrmcPlanCmd(job.Options{}), "--pilot", pilot, "--readers", "10", "--power", "0.8", "--blocks", "1")
	if err != nil {
		t.Fatal(err)
	}
	if one != crossed {
		t.Errorf("--blocks 1 differs from the fully crossed plan:\n%s\n%s", one, crossed)
	}
	two, _, err := runCommand(t, newMrmcPlanCmd(job.Options{}), "--pilot", pilot, "--readers", "10", "--power", "0.8", "--blocks", "2")
	if err != nil {
		t.Fatal(err)
	}
	c, s := planRows(t, crossed)["random readers, random cases"], planRows(t, two)["random readers, random cases"]
	if !(s[1] > c[1]) || int(s[1])%2 != 0 || s[2] < 0.8 {
		t.Errorf("smallest cases: crossed %v, 2 blocks %v: want more cases with 2 blocks, an even number, with power ≥ 0.8", c, s)
	}
	_, _, err = runCommand(t, newMrmcPlanCmd(job.Options{}), "--pilot", pilot, "--readers", "5", "--cases", "100", "--blocks", "3")
	if err == nil || !strings.Contains(err.Error(), "readers 5: a study of 3 blocks needs at least 6 (2 a block)") {
		t.Errorf("5 readers in 3 blocks: %v", err)
	}
}

// TestMrmcPlanWritesStudyPlan: mrmc plan --write-plan writes the sized
// study's plan, which read init's parser takes back; an existing file is
// not replaced.
func TestMrmcPlanWritesStudyPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	planFile := filepath.Join(dir, "plan.yaml")
	args := []string{"--var", "0.002", "--cov1", "0.0006", "--cov2", "0.0006", "--cov3", "0.00045", "--var-tr", "0.0015", "--pilot-cases", "80",
		"--effect", "0.074", "--readers", "8", "--power", "0.8", "--blocks", "2", "--write-plan", planFile, "--primary-path", "revision_required", "--primary-stage", "2"}
	if _, _, err := runCommand(t, newMrmcPlanCmd(job.Options{}), args...); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"path: revision_required", "stage: 2", "figure_of_merit: accuracy", "analysis: rrrc", "alpha: 0.05", "design: split-plot", "blocks: 2", "readers: 8", "records: "} {
		if !strings.Contains(string(data), want) {
			t.Errorf("plan lacks %q:\n%s", want, data)
		}
	}
	if _, _, err := runCommand(t, newMrmcPlanCmd(job.Options{}), args...); err == nil || !strings.Contains(err.Error(), "exists; it is not replaced") {
		t.Errorf("second write: %v", err)
	}
}
