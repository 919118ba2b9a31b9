// Command chexpercept builds, evaluates and reports CheXpercept-style
// benchmarks of lesion perception in chest radiographs.
//
// The command layer is thin: each subcommand lives in its own file, parses
// flags and calls into the domain packages under internal/. Each file
// provides a constructor, newXxxCmd, that returns the command with its
// flag values held in variables of its own; subcommands lists them, and
// newRootCmd builds the tree from that list. Nothing is kept at package
// level, so every tree built is fresh. A command that writes runs its
// work as a job (jobs.go); the tree hands every such command the options
// of its jobs.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
	"github.com/chexpercept/chexpercept/internal/version"
)

// exitError carries a process exit status through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExit wraps err so that main exits with code. A nil err stays nil.
func withExit(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// closeChecked closes c, a database the command may have written to, and
// returns err, or when err is nil the close's error with exit status 2: a
// database's close is its checkpoint, so a close that fails fails the
// command.
func closeChecked(err error, c io.Closer) error {
	if cerr := c.Close(); cerr != nil && err == nil {
		return withExit(2, cerr)
	}
	return err
}

// isTerminal reports whether f is a terminal, where build and eval redraw
// their progress lines. /dev/null is a character device but no terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// silentExit ends the process with code without printing anything more;
// the command has already reported what went wrong.
func silentExit(code int) error { return &exitError{code: code, err: errSilent} }

var errSilent = errors.New("")

// subcommands returns a new instance of every subcommand, those that
// write running their work as jobs with jo. Help lists them sorted by
// name, whatever the order here.
func subcommands(jo job.Options) []*cobra.Command {
	return []*cobra.Command{
		newBuildCmd(jo),
		newDemoCmd(jo),
		newEvalCmd(jo),
		newImportReferenceCmd(jo),
		newInspectCmd(jo),
		newMergeCmd(jo),
		newModelsCmd(),
		newMrmcCmd(jo),
		newPhantomCmd(jo),
		newReadCmd(jo),
		newReportCmd(jo),
		newRescoreCmd(jo),
		newReviewCmd(jo),
		newSampleCmd(jo),
		newServeBaselineCmd(),
		newValidateCmd(),
		newVersionCmd(),
	}
}

// newRootCmd returns a new command tree: the root and every subcommand,
// whose jobs run with jo (the zero value in the program).
func newRootCmd(jo job.Options) *cobra.Command {
	root := &cobra.Command{
		Use:           "chexpercept",
		Short:         "Build, evaluate and report CheXpercept-style chest X-ray lesion-perception benchmarks",
		SilenceUsage:  true,
		SilenceErrors: true,
		// A mistaken path flag is refused, with the fix, before any
		// command reads it (paths.go).
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return withExit(2, checkPathFlags(cmd)) },
	}
	root.AddCommand(subcommands(jo)...)
	// --version is the command version's alias, with the same line.
	root.Version = version.String()
	root.SetVersionTemplate("chexpercept {{.Version}}\n")
	// A mistyped flag gets a suggestion, as a mistyped command does
	// (flagsuggest.go); every subcommand inherits the function.
	root.SetFlagErrorFunc(suggestFlag)
	return root
}

func main() { execute(newRootCmd(job.Options{})) }

// execute runs the command tree root on the process's arguments and ends
// the process with the command's exit status (it returns only when the
// command succeeded).
func execute(root *cobra.Command) {
	// A write to a closed pipe fails with EPIPE instead of killing the
	// process: a command sees the failure and ends as it does for any
	// other (init, whose tokens could not be printed, publishes nothing).
	// Notify, not Ignore: a handler is not inherited by child processes.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	stopProfile := startProfile(os.Getenv(cpuProfileEnv))
	stdout := &checkedWriter{w: os.Stdout}
	root.SetOut(stdout)
	err := root.Execute()
	stopProfile()
	if err == nil {
		err = stdout.failed()
	}
	if errors.Is(err, syscall.EPIPE) && stdout.brokenPipe() {
		// The reader stopped reading (`chexpercept … | head`): the output
		// it did not want is all that is lost, so end quietly, with the
		// status of a writer killed by SIGPIPE. An error that must be
		// seen (init's lost tokens) does not wrap EPIPE.
		os.Exit(exitBrokenPipe)
	}
	if err == nil {
		return
	}
	code := 2
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if !errors.Is(err, errSilent) {
		// Keys and paths in errors come from files: escape what a
		// terminal would act on (ESC, bidi overrides) rather than show.
		fmt.Fprintln(os.Stderr, "chexpercept:", textsafe.Printable(err.Error()))
	}
	os.Exit(code)
}

// checkedWriter is the commands' stdout (cmd.OutOrStdout): it keeps the
// first write error, so that a command whose output could not be written
// (a full disk, a closed descriptor) does not exit 0 as if it had been.
// Commands print with fmt.Fprint* and go on; main checks once at the end.
type checkedWriter struct {
	w   io.Writer
	mu  sync.Mutex
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return n, err
}

// brokenPipe reports whether a write failed because the pipe's reader
// had closed it.
func (c *checkedWriter) brokenPipe() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Is(c.err, syscall.EPIPE)
}

// failed returns the first write error as the command's error (exit
// status 2), or nil.
func (c *checkedWriter) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return nil
	}
	return withExit(2, fmt.Errorf("write standard output: %w", safefile.Reason(c.err)))
}

// exitBrokenPipe is the exit status of a command whose standard output
// was a pipe closed by its reader: 128 + SIGPIPE, what a shell reports
// for a writer killed by that signal.
const exitBrokenPipe = 128 + 13

// cpuProfileEnv names a file to write a CPU profile of the whole command
// to (go tool pprof reads it); scripts/bench-build.sh sets it with
// PROFILE=FILE. Not a flag: it is for measuring the tool, not for users.
const cpuProfileEnv = "CHEXPERCEPT_CPUPROFILE"

// startProfile starts a CPU profile into path (none when path is empty)
// and returns the function that ends it.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chexpercept: %s: %v (no profile written)\n", cpuProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "chexpercept: %s: %v\n", cpuProfileEnv, err)
		}
	}
}

// needArgs is cobra.ExactArgs with errors that name the argument:
// "missing RUN_DIR (usage: chexpercept rescore RUN_DIR ...)".
func needArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return fmt.Errorf("missing %s (usage: %s)", strings.Join(names[len(args):], " "), cmd.UseLine())
		case len(args) > len(names):
			return fmt.Errorf("unexpected argument %q (usage: %s)", args[len(names)], cmd.UseLine())
		}
		return nil
	}
}

// needSomeArgs is cobra.MinimumNArgs(1) with an error that names the
// argument.
func needSomeArgs(name string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("missing %s (usage: %s)", name, cmd.UseLine())
		}
		return nil
	}
}
