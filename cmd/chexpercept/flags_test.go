package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/job"
)

// --seed is one type, uint64, in every command that has it, so that a
// seed names the same RNG label everywhere.
func TestSeedFlagIsUint64Everywhere(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]*cobra.Command{
		"build": findCommand(t, "build"), "sample": findCommand(t, "sample"), "eval": findCommand(t, "eval"),
		"phantom": findCommand(t, "phantom"), "review init": reviewInitCmd(job.Options{}),
	} {
		f := c.Flags().Lookup("seed") // the hidden alias of each command's named seed
		if f == nil || f.Value.Type() != "uint64" {
			t.Errorf("%s --seed: %v", name, f)
		}
	}
}

func TestSeedValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want uint64
		err  string // substring; "" = accepted
	}{
		{"7", 7, ""},
		{"0", 0, ""},
		{"18446744073709551615", 18446744073709551615, ""},
		{"-1", 0, "must not be negative"},
		{"18446744073709551616", 0, "at most 18446744073709551615"},
		{"x", 0, "whole number"},
	} {
		var s seedValue
		err := s.Set(tc.in)
		switch {
		case tc.err == "" && (err != nil || uint64(s) != tc.want):
			t.Errorf("Set(%q) = %d, %v; want %d", tc.in, s, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Set(%q): %v, want %q", tc.in, err, tc.err)
		}
	}
}

// eval and phantom took an int64 seed; a negative one is now refused with
// a sentence naming the flag, before anything is written.
func TestNegativeSeedRefused(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"eval", "--benchmark", "../../internal/benchmark/testdata/sample", "--provider", "baseline", "--model", "random",
			"--out", out, "--sample", "2", "--seed", "-3"},
		{"phantom", "--out", out, "--cases-per-lesion", "1", "--seed", "-3"},
	} {
		_, stderr, code := runCLI(t, args...)
		if code == 0 || !strings.Contains(stderr, `invalid argument "-3" for "--seed" flag: a seed must not be negative`) {
			t.Errorf("%s: exit %d, stderr %q", args[0], code, stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s wrote %s", args[0], out)
		}
	}
}

// /dev/null is a character device but no terminal: eval used to draw its
// progress lines for it.
func TestIsTerminal(t *testing.T) {
	t.Parallel()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer null.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, f := range []*os.File{null, file} {
		if isTerminal(f) {
			t.Errorf("%s is taken for a terminal", f.Name())
		}
	}
}

func TestWithHints(t *testing.T) {
	t.Parallel()
	errA, errB := errors.New("a"), errors.New("b")
	wrapped := fmt.Errorf("dir: %w", errA)
	hints := []flagHint{{errA, "; pass --a"}, {errB, "; pass --b"}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{wrapped, "dir: a; pass --a"},
		{errB, "b; pass --b"},
		{errors.New("c"), "c"},
	} {
		got := withHints(tc.err, hints...)
		if got.Error() != tc.want || !errors.Is(got, tc.err) {
			t.Errorf("withHints(%v) = %v, want %q wrapping it", tc.err, got, tc.want)
		}
	}
	if withHints(nil, hints...) != nil {
		t.Error("a nil error gained a hint")
	}
}

// review pack --reviewers is review init's name for the same number;
// --annotators still works, with a deprecation notice.
func TestReviewPackReviewersFlag(t *testing.T) {
	t.Parallel()
	man := reviewManifest(t)
	tmp := t.TempDir()
	// cobra prints the notice with the command's output writer: stderr
	// in the binary (runCLI), out here.
	stdout, stderr, err := runCommand(t, reviewPackCmd(job.Options{}), "--source", man, "--out", filepath.Join(tmp, "old"), "--annotators", "2")
	if err != nil || !strings.Contains(stdout+stderr, "Flag --annotators has been deprecated, use --reviewers") {
		t.Errorf("--annotators: %v, output %q", err, stdout+stderr)
	}
	// The old name sets the same number.
	if _, _, err := runCommand(t, reviewPackCmd(job.Options{}), "--source", man, "--out", filepath.Join(tmp, "zero0"), "--annotators", "0"); reviewExitCode(err) != 2 || !strings.Contains(err.Error(), "--reviewers must be at least 1, got 0") {
		t.Errorf("--annotators 0: %v", err)
	}
	if _, _, err := runCommand(t, reviewPackCmd(job.Options{}), "--source", man, "--out", filepath.Join(tmp, "both"), "--annotators", "2", "--reviewers", "2"); reviewExitCode(err) != 2 || !strings.Contains(err.Error(), "give only --reviewers") {
		t.Errorf("both names: %v", err)
	}
	for _, tc := range []struct {
		c    *cobra.Command
		args []string
		want string
	}{
		{reviewPackCmd(job.Options{}), []string{"--out", filepath.Join(tmp, "zero"), "--reviewers", "0"}, "--reviewers must be at least 1, got 0"},
		{reviewInitCmd(job.Options{}), []string{"--review-db", filepath.Join(tmp, "r.db"), "--reviewers", "0"}, "--reviewers must be at least 1, got 0"},
		{reviewInitCmd(job.Options{}), []string{"--review-db", filepath.Join(tmp, "r.db"), "--reviewers", "2", "--overlap", "3"}, "--overlap must be between 1 and --reviewers (2), got 3"},
	} {
		if _, _, err := runCommand(t, tc.c, append([]string{"--source", man}, tc.args...)...); reviewExitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.c.Name(), tc.args, err, tc.want)
		}
	}
}

// Rows without digests need --source: review import names the flag.
func TestReviewImportNamesSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sheet := filepath.Join(dir, "negative.csv")
	os.WriteFile(sheet, []byte("lesion,key_id,dicom_id,optimal\nedema,edema_a2_negative_0,a2,x\n"), 0o644)
	_, _, err := runCommand(t, reviewImportCmd(job.Options{}), "--csv", sheet, "--reviews", filepath.Join(dir, "r.jsonl"))
	if reviewExitCode(err) != 2 || !strings.Contains(err.Error(), "the row carries no digests") ||
		!strings.Contains(err.Error(), "(pass --source FILE, the manifest or candidates the sheets were made from, for the rows without digests)") {
		t.Errorf("import without --source: %v", err)
	}
}

// Errors of internal packages that a flag overcomes get the flag's name
// from the command.
func TestCommandsNameTheFlagThatHelps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := filepath.Join(dir, "baseline_random", "oracle_none", "shard-1-of-1")
	os.MkdirAll(run, 0o755)
	os.WriteFile(filepath.Join(run, "manifest.json"), []byte(`{"run_name":"baseline_random","oracle_mode":"none","parse_mode":"reference",`+
		`"selection":{"shard":{"i":1,"n":1}},"dataset":{"path":""}}`), 0o644)
	os.WriteFile(filepath.Join(run, "results.jsonl"), nil, 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sample", "--mimic-cxr", dir, "--mimic-ils", filepath.Join(dir, "ils.json"), "--ils-masks", dir, "--out", filepath.Join(dir, "c.jsonl")},
			"MIMIC sources need a lung source: a CheXmask CSV and/or a lung PNG pattern (--chexmask-csv and/or --lung-png-pattern)"},
		{[]string{"merge", run, "--out", filepath.Join(dir, "merged")}, "manifest.json: no dataset.path; pass --benchmark"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.args[0], code, stderr, tc.want)
		}
	}
}
