package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/goldentest"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/mrmc"
	"github.com/chexpercept/chexpercept/internal/outdir"
)

const vanDykeScores = "../../internal/mrmc/testdata/vandyke.csv"

// TestMrmcVanDyke: chexpercept mrmc on the Van Dyke study prints the
// published OR-DBM MRMC figures and writes its files.
func TestMrmcVanDyke(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "mrmc")
	stdout, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", vanDykeScores, "--fom", "auc", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"MS(T)    0.00479617", "MS(R)    0.00383620", "MS(T×R)  0.00055103",
		"Var      0.00080229", "Cov1     0.00034661", "Cov2     0.00034407", "Cov3     0.00023903",
		"F 4.46 on 1 and 15.26 df, p 0.0517",
		"1 − 2: -0.04380, SE 0.02075, df 15.26, 95 % CI (-0.08796, 0.00036), p 0.0517",
		"1 alone: 0.89703704, SE 0.03317360, df 12.74",
		"chi-square 5.47595 on 1 df, p 0.0193",
		"F 8.70 on 1 and 4.00 df, p 0.0420",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	goldentest.Check(t, "testdata/mrmc_vandyke.txt", []byte(stdout))
	for _, name := range []string{".chexpercept-mrmc", "mrmc.json", "mrmc_fom.csv", "mrmc_tests.csv", "mrmc_intervals.csv"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("--out: %v", err)
		}
	}
	tests, err := os.ReadFile(filepath.Join(out, "mrmc_tests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tests), "frrc,chi2,5.47595") {
		t.Errorf("mrmc_tests.csv lacks the fixed-readers chi-square:\n%s", tests)
	}
	// A second run rewrites its own directory.
	if _, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", vanDykeScores, "--fom", "auc", "--out", out); err != nil {
		t.Errorf("rewriting its own output: %v", err)
	}
}

// TestMrmcRerunAfterKill: what a kill -9 of mrmc --out leaves does not
// stop the plain rerun, which removes its own temporary files and nothing
// else: killed while its marker was renamed into place (an earlier version
// wrote it so), or while a result file was.
func TestMrmcRerunAfterKill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		debris, foreign []string
	}{
		{"marker being renamed", []string{".chexpercept-mrmc.tmp-317187146"}, nil},
		{"result being renamed", []string{".chexpercept-mrmc", "mrmc.json.tmp-620291908", "mrmc_fom.csv.tmp-1"}, []string{"mrmc.json.tmp-x", "notes.csv.tmp-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "mo")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, n := range append(slices.Clone(tt.debris), tt.foreign...) {
				if err := os.WriteFile(filepath.Join(out, n), []byte("half"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", vanDykeScores, "--fom", "auc", "--out", out); err != nil {
				t.Fatalf("plain rerun: %v", err)
			}
			for _, n := range tt.debris {
				if _, err := os.Lstat(filepath.Join(out, n)); err == nil && strings.Contains(n, ".tmp-") {
					t.Errorf("the rerun left %s", n)
				}
			}
			for _, n := range tt.foreign {
				if b, err := os.ReadFile(filepath.Join(out, n)); err != nil || string(b) != "half" {
					t.Errorf("the rerun removed or changed %s (%v)", n, err)
				}
			}
			for _, n := range []string{".chexpercept-mrmc", "mrmc.json", "mrmc_fom.csv"} {
				if !outdir.IsRegular(filepath.Join(out, n)) {
					t.Errorf("the rerun did not write %s", n)
				}
			}
		})
	}
}

func TestMrmcRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("modality,reader,case,truth,score\na,r,1,0,1\na,r,2,1,maybe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no scores", nil, "--scores: a scores table is required"},
		{"bad fom", []string{"--scores", bad, "--fom", "kappa"}, `--fom: figure of merit "kappa"`},
		{"missing file", []string{"--scores", filepath.Join(dir, "none.csv")}, "--scores " + filepath.Join(dir, "none.csv")},
		{"bad field", []string{"--scores", bad, "--fom", "auc"}, bad + ` line 3: field score: "maybe" is not a finite number`},
		{"foreign out", []string{"--scores", vanDykeScores, "--fom", "auc", "--out", foreign}, "not made by chexpercept mrmc"},
		{"unknown algorithm", []string{"--scores", vanDykeScores, "--fom", "auc", "--algorithm", "9"}, `--algorithm: ` + vanDykeScores + `: algorithm "9" is not a reader`},
		{"margin alone", []string{"--scores", vanDykeScores, "--fom", "auc", "--margin", "0.05"}, "--margin: needs --algorithm"},
		{"negative margin", []string{"--scores", vanDykeScores, "--fom", "auc", "--algorithm", "4", "--margin", "-1"}, "--margin -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCommand(t, newMrmcCmd(job.Options{}), tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line containing %q", err, tt.want)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(foreign, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("a refused directory changed: %q, %v", b, err)
	}
}

// TestMrmcAlgorithm: --algorithm takes a reader out of the panel and
// compares it with the others in each modality, in the output and in
// mrmc_standalone.csv.
func TestMrmcAlgorithm(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "mrmc")
	stdout, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", vanDykeScores, "--fom", "auc", "--algorithm", "4", "--margin", "0.05", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 modalities, 4 readers, 114 cases", "Algorithm 4 against the 4 readers",
		"1: algorithm 0.97311 − readers 0.87802 = 0.09509", "non-inferiority by 0.0500: one-sided p", "at one-sided level 0.025 (the 95 % interval's lower limit above −0.0500)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "mrmc_standalone.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[1], "1,4,4,0.97310789") {
		t.Errorf("mrmc_standalone.csv:\n%s", b)
	}
}

// TestMrmcRerunReplacesOwnFiles: an mrmc --out folder holds one analysis.
// A rerun without --algorithm removes the earlier analysis'
// mrmc_standalone.csv, which it does not write, and leaves every file it
// did not write alone.
func TestMrmcRerunReplacesOwnFiles(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "mrmc")
	if _, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", vanDykeScores, "--fom", "auc", "--algorithm", "4", "--out", out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("mrmc.json", filepath.Join(out, "mrmc_link.csv")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", vanDykeScores, "--fom", "auc", "--out", out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(out, "mrmc_standalone.csv")); err == nil {
		t.Error("the earlier analysis' mrmc_standalone.csv is still beside the new analysis")
	}
	for _, kept := range []string{"notes.txt", "mrmc_link.csv", "mrmc.json"} {
		if _, err := os.Lstat(filepath.Join(out, kept)); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
}

// TestMrmcKeepsItsInput: a scores table in the --out folder under a name
// an earlier analysis wrote and listed in its marker (mrmc_standalone.csv
// of a run with --algorithm) is the input of the next run, which does not
// write that name: it is kept, whether given by that path or by another
// path to the same file (a hard link), and the new marker does not list
// it.
func TestMrmcKeepsItsInput(t *testing.T) {
	t.Parallel()
	table, err := os.ReadFile(vanDykeScores)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		hardLink bool
	}{{"same path", false}, {"hard link", true}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			if _, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", vanDykeScores, "--fom", "auc", "--algorithm", "4", "--out", out); err != nil {
				t.Fatal(err)
			}
			if marker, _ := os.ReadFile(filepath.Join(out, ".chexpercept-mrmc")); !strings.Contains(string(marker), "mrmc_standalone.csv") {
				t.Fatalf("the first analysis' marker does not list mrmc_standalone.csv:\n%s", marker)
			}
			input := filepath.Join(out, "mrmc_standalone.csv")
			if err := os.WriteFile(input, table, 0o644); err != nil {
				t.Fatal(err)
			}
			given := input
			if tt.hardLink {
				given = filepath.Join(dir, "scores.csv")
				if err := os.Link(input, given); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", given, "--fom", "auc", "--out", out); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(input); err != nil || !bytes.Equal(b, table) {
				t.Fatalf("the input %s was removed or changed (%v)", input, err)
			}
			marker, err := os.ReadFile(filepath.Join(out, ".chexpercept-mrmc"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(marker), mrmcMarkerText) || strings.Contains(string(marker), "mrmc_standalone.csv") {
				t.Errorf("marker after the run:\n%s", marker)
			}
		})
	}
}

// failingWrite is outdir.WriteFile that fails its n-th call, as a full
// disk fails a rename.
func failingWrite(n int) func(j *job.Job, dir, rel string, data []byte) error {
	calls := 0
	return func(j *job.Job, dir, rel string, data []byte) error {
		calls++
		if calls == n {
			return fmt.Errorf("write %s: %w", filepath.Join(dir, rel), syscall.ENOSPC)
		}
		return outdir.WriteFile(j, dir, rel, data)
	}
}

// TestMrmcFailedWriteIsUnfinished: an accuracy analysis written into the
// folder of an AUC analysis (with --algorithm) whose second file fails to
// be written leaves the folder marked unfinished, its marker listing the
// files of both analyses; the plain rerun finishes it: one analysis, the
// earlier one's mrmc_standalone.csv gone, the marker finished.
func TestMrmcFailedWriteIsUnfinished(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if _, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", vanDykeScores, "--fom", "auc", "--algorithm", "4", "--out", out); err != nil {
		t.Fatal(err)
	}
	acc := filepath.Join(dir, "accuracy.csv")
	writeAccuracyTable(t, acc)
	d, err := readScores(acc, mrmc.Accuracy, newMrmcProgress(io.Discard, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	a, err := mrmc.Analyze(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = writeMrmc(nil, out, acc, a, failingWrite(2))
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "marked unfinished") {
		t.Fatalf("error %v, want ENOSPC saying the folder is marked unfinished", err)
	}
	marker, err := os.ReadFile(filepath.Join(out, ".chexpercept-mrmc"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(marker), mrmcUnfinishedText) {
		t.Errorf("after the failed write the marker reads:\n%s", marker)
	}
	for _, name := range []string{"mrmc.json", "mrmc_fom.csv", "mrmc_intervals.csv", "mrmc_tests.csv", "mrmc_standalone.csv"} {
		if !strings.Contains(string(marker), "\n"+name+"\n") {
			t.Errorf("the unfinished marker does not list %s:\n%s", name, marker)
		}
	}
	// The plain rerun.
	if _, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", acc, "--out", out); err != nil {
		t.Fatal(err)
	}
	marker, err = os.ReadFile(filepath.Join(out, ".chexpercept-mrmc"))
	if err != nil {
		t.Fatal(err)
	}
	if want := mrmcMarkerText + "mrmc.json\nmrmc_fom.csv\nmrmc_intervals.csv\nmrmc_tests.csv\n"; string(marker) != want {
		t.Errorf("after the rerun the marker reads:\n%s\nwant:\n%s", marker, want)
	}
	if _, err := os.Lstat(filepath.Join(out, "mrmc_standalone.csv")); err == nil {
		t.Error("the AUC analysis' mrmc_standalone.csv is still beside the accuracy analysis")
	}
	for _, name := range []string{"mrmc.json", "mrmc_fom.csv", "mrmc_intervals.csv", "mrmc_tests.csv"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if want := a.Files()[name]; !bytes.Equal(b, want) {
			t.Errorf("%s is not the accuracy analysis'", name)
		}
	}
}

// writeAccuracyTable writes the Van Dyke study as right/wrong scores
// (rating 3 or more read as diseased) to path.
func writeAccuracyTable(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(vanDykeScores)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(strings.Join(rows[0], ",") + "\n")
	for _, row := range rows[1:] {
		right := "0"
		if (row[4] >= "3") == (row[3] == "1") {
			right = "1"
		}
		b.WriteString(strings.Join([]string{row[0], row[1], row[2], row[3], right}, ",") + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMrmcProgress: a long table prints its progress to stderr; here the
// wait between lines is 0, so every step prints.
func TestMrmcProgress(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newMrmcProgress(&buf, 0)
	d, err := readScores(vanDykeScores, mrmc.AUC, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mrmc.AnalyzeWith(d, mrmc.Options{Progress: p.analysing}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mrmc: reading " + vanDykeScores + ":", "(100 %)", "mrmc: analysing: 20 of 20 jackknifes and covariance rows"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestMrmcEdges: the command on the degenerate studies prints NA with its
// reason where the data carry no variance, infinite degrees of freedom
// where only the case variance is left, and CSV files in the project's
// dialect (CRLF, NA).
func TestMrmcEdges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	table := func(name string, rows func(b *strings.Builder)) string {
		var b strings.Builder
		b.WriteString("modality,reader,case,truth,score\n")
		rows(&b)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ones := table("ones.csv", func(b *strings.Builder) {
		for _, m := range []string{"a", "b"} {
			for r := range 7 {
				for c := range 2 {
					fmt.Fprintf(b, "%s,r%d,c%d,,1\n", m, r, c)
				}
			}
		}
	})
	identical := table("identical.csv", func(b *strings.Builder) {
		for r := range 3 {
			for c := range 10 {
				fmt.Fprintf(b, "a,r%d,c%d,,%d\n", r, c, map[bool]int{true: 1, false: 0}[c < 7])
			}
		}
	})
	out := filepath.Join(dir, "out")
	stdout, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", ones, "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"test of equal modalities: F NA, p NA (no variance", "test of equal modalities: chi-square NA, p NA (no variance",
		"a − b: 0.00000, SE 0.00000, no interval, p NA (no variance"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("all ones: output lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "mrmc_tests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "analysis,statistic,value,df1,df2,p_value,na_reason\r\nrrrc,F,NA,1,NA,NA,no_variance\r\nfrrc,chi2,NA,1,NA,NA,no_variance\r\nrrfc,F,NA,1,6,NA,no_variance\r\n"; string(b) != want {
		t.Errorf("all ones: mrmc_tests.csv\n%q\nwant\n%q", b, want)
	}
	stdout, _, err = runCommand(t, newMrmcCmd(job.Options{}), "--scores", identical)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a alone: 0.70000000, SE 0.15275252, df inf, 95 % CI (0.40061, 0.99939)"; !strings.Contains(stdout, want) {
		t.Errorf("identical readers: output lacks %q:\n%s", want, stdout)
	}
}
