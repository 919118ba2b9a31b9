package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/job"
)

// Functions shared by the command tests. A subcommand runs either in-process
// (runCommand on a command findCommand built) or as a user
// runs it (runCLI: the test binary re-executes itself as the chexpercept
// command, so exit codes and flag parsing are the real ones).

// findCommand returns a new instance of the subcommand name, with its
// flags at their defaults and no parent (so that Execute runs it, not the
// root with the test binary's arguments).
func findCommand(t *testing.T, name string) *cobra.Command {
	t.Helper()
	for _, c := range subcommands(job.Options{}) {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("command %s not registered", name)
	return nil
}

// runCommand executes c in-process with args and returns what it printed
// on stdout and stderr and its error. Flags set by an earlier Execute of
// the same command object persist; findCommand builds a fresh one.
func runCommand(t *testing.T, c *cobra.Command, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&errb)
	// Never nil: cobra reads a nil argument list from os.Args, which
	// holds the test binary's own flags.
	c.SetArgs(append([]string{}, args...))
	err := c.Execute()
	return out.String(), errb.String(), err
}

const argSep = "\x1f"

// TestMain points the default cache directory (response cache, image
// verification memo) at a temporary one, so that no command test writes
// into the user's ~/.cache; child processes inherit it.
func TestMain(m *testing.M) {
	if os.Getenv("CHX_TEST_MAIN") == "1" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "chexpercept-cmd-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	fixtureRoot = filepath.Join(dir, "fixtures")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixtureRoot holds the benchmarks several tests share (sharedBench);
// TestMain sets it before any test runs and removes it after the last.
var fixtureRoot string

// sharedBench is a benchmark that several tests read and none changes,
// written once for the package (flat images, analysistest.WriteBench)
// by the first test that asks for it. A test that changes its benchmark
// writes its own.
type sharedBench struct {
	name string
	recs func() []*benchmark.Record

	once sync.Once
	b    *benchmark.Benchmark
	rs   []*benchmark.Record
	err  error
}

// The shared benchmarks: the hand-made sample and the released
// composition scaled by 2 and by 4.
var (
	sampleBench = &sharedBench{name: "sample", recs: benchtest.Sample}
	full2Bench  = &sharedBench{name: "full2", recs: func() []*benchmark.Record { return benchtest.Full(2) }}
	full4Bench  = &sharedBench{name: "full4", recs: func() []*benchmark.Record { return benchtest.Full(4) }}
)

// get returns the benchmark, as loaded, and the records it was written
// from; neither may be changed. A failed write fails every test that
// asks for it.
func (s *sharedBench) get(t *testing.T) (*benchmark.Benchmark, []*benchmark.Record) {
	t.Helper()
	s.once.Do(func() {
		if fixtureRoot == "" {
			s.err = errors.New("no fixture directory (TestMain did not run)")
			return
		}
		s.rs = s.recs()
		s.b, s.err = analysistest.WriteBench(filepath.Join(fixtureRoot, s.name), s.rs)
	})
	if s.err != nil {
		t.Fatalf("shared benchmark %s: %v", s.name, s.err)
	}
	return s.b, s.rs
}

func TestRunToolsHelperProcess(t *testing.T) {
	if os.Getenv("CHX_TEST_MAIN") != "1" {
		t.Skip("helper process for the command tests")
	}
	os.Args = append([]string{"chexpercept"}, strings.Split(os.Getenv("CHX_TEST_ARGS"), argSep)...)
	main()
	os.Exit(0)
}

// runCLI runs chexpercept with args in a child process with the test's
// environment and returns stdout, stderr and the exit status.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runCLIWithEnv(t, os.Environ(), args...)
}

// runCLIEnv is runCLI with credential variables removed from the
// environment (and extra ones added), so a provider's "no key" path runs
// whatever the developer's shell holds.
func runCLIEnv(t *testing.T, extra []string, args ...string) (string, string, int) {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "GEMINI_API_KEY",
			"GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_GENAI_USE_VERTEXAI":
			continue
		}
		env = append(env, kv)
	}
	return runCLIWithEnv(t, append(env, extra...), args...)
}

func runCLIWithEnv(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunToolsHelperProcess$")
	cmd.Env = append(env, "CHX_TEST_MAIN=1", "CHX_TEST_ARGS="+strings.Join(args, argSep))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}
