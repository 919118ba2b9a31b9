package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/goldentest"
	"github.com/chexpercept/chexpercept/internal/job"
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
		"1: algorithm 0.97311 − readers 0.87802 = 0.09509", "non-inferiority by 0.0500: p"} {
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
