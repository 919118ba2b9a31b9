package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/job"
)

// TestOneNamePerConcept: each concept has one visible spelling, and the
// older spelling is a hidden alias that sets the same value.
func TestOneNamePerConcept(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd      string
		c        *cobra.Command
		name     string
		old      string
		seedType bool
	}{
		{"build", findCommand(t, "build"), "build-seed", "seed", true},
		{"sample", findCommand(t, "sample"), "sample-seed", "seed", true},
		{"eval", findCommand(t, "eval"), "sample-seed", "seed", true},
		{"phantom", findCommand(t, "phantom"), "phantom-seed", "seed", true},
		{"review init", reviewInitCmd(job.Options{}), "assign-seed", "seed", true},
		{"review export", reviewExportCmd(job.Options{}), "reviews", "jsonl", false},
	} {
		f := tc.c.Flags()
		nf, of := f.Lookup(tc.name), f.Lookup(tc.old)
		if nf == nil || of == nil {
			t.Errorf("%s: --%s %v, --%s %v; want both", tc.cmd, tc.name, nf, tc.old, of)
			continue
		}
		if nf.Hidden || !of.Hidden {
			t.Errorf("%s: --%s hidden %v, --%s hidden %v; want only the old spelling hidden", tc.cmd, tc.name, nf.Hidden, tc.old, of.Hidden)
		}
		if tc.seedType && nf.Value.Type() != "uint64" {
			t.Errorf("%s --%s: type %s, want uint64", tc.cmd, tc.name, nf.Value.Type())
		}
		value := "12345"
		if !tc.seedType {
			value = "out.jsonl"
		}
		if err := f.Set(tc.old, value); err != nil {
			t.Fatalf("%s --%s %s: %v", tc.cmd, tc.old, value, err)
		}
		if got := nf.Value.String(); got != value {
			t.Errorf("%s: --%s %s left --%s at %q", tc.cmd, tc.old, value, tc.name, got)
		}
		if !changed(f, tc.name, tc.old) {
			t.Errorf("%s: --%s given but not seen as changed", tc.cmd, tc.old)
		}
		if strings.Contains(tc.c.Flags().FlagUsages(), "--"+tc.old+" ") {
			t.Errorf("%s: the help lists the old spelling --%s", tc.cmd, tc.old)
		}
	}
	// phantom's workers default to the CPU count as everywhere else (0),
	// not to the number of this machine's CPUs written into the help.
	for _, name := range []string{"phantom", "build", "demo"} {
		if d := findCommand(t, name).Flags().Lookup("workers").DefValue; d != "0" {
			t.Errorf("%s --workers default %s, want 0 (number of CPUs)", name, d)
		}
	}
}

// TestBenchmarkFlagOrPositional: validate and inspect take --benchmark
// like eval; the positional BENCH_DIR still works, and giving both is
// refused.
func TestBenchmarkFlagOrPositional(t *testing.T) {
	t.Parallel()
	const sample = "../../internal/benchmark/testdata/sample"
	for _, args := range [][]string{
		{"validate", "--benchmark", sample},
		{"validate", sample},
	} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 || !strings.Contains(stdout, "result: PASS") {
			t.Errorf("%q: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", "--benchmark", sample, sample}, "give the benchmark once"},
		{[]string{"validate"}, "missing --benchmark BENCH_DIR"},
		{[]string{"inspect", "--key", "x"}, "missing --benchmark BENCH_DIR"},
		{[]string{"inspect", "--benchmark", sample, sample, "--key", "x"}, "give the benchmark once"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	// inspect reaches the build with the benchmark given either way.
	for _, args := range [][]string{{"inspect", "--benchmark", sample, "--key", "x"}, {"inspect", sample, "--key", "x"}} {
		_, stderr, code := runCLI(t, args...)
		if code != 2 || strings.Contains(stderr, "missing") || strings.Contains(stderr, "once") {
			t.Errorf("%q: exit %d, stderr %q; want the build's own refusal", args, code, stderr)
		}
	}
}
