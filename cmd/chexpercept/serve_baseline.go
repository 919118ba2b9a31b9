package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/spf13/cobra"
)

// newServeBaselineCmd returns the command serve-baseline: a stand-in model server.
func newServeBaselineCmd() *cobra.Command {
	var cfg fakemodel.ServerConfig
	var sim fakemodel.SimConfig
	var listen string
	var accuracy []float64
	cmd := &cobra.Command{
		Use:   "serve-baseline --policy random|first|simulated [--listen ADDR]",
		Short: "Serve a baseline policy behind an OpenAI-compatible Chat Completions API",
		Long: "serve-baseline answers POST /v1/chat/completions with a built-in policy " +
			"(random: a pure function of --policy-seed and the request's texts; first: always option 1; " +
			"simulated: a simulated model of the benchmark given with --benchmark, see below) " +
			"and lists one model at GET /v1/models. Any model name is accepted. Latency, jitter and " +
			"injected faults let you smoke-test an evaluation setup and its retries without a GPU.\n\n" +
			"The simulated policy stands in for a model of known skill, for demos and tests. It answers " +
			"the benchmark's ground truth with the stage accuracies of --accuracy (" + fakemodel.AccuracyMeaning +
			") and otherwise another valid option, seeded by " +
			"--policy-seed. It finds the record and question only from what a real model is sent: the " +
			"radiograph's bytes and the question text. --mislabel-rate makes it give a shared wrong " +
			"answer (seeded by --mislabel-seed, the same for every model with that seed) on a share of " +
			"the questions, as if their ground truth were wrong, so item health has something to flag.\n\n" +
			"Asked without a radiograph it knows (an image control: eval --control text-only or " +
			"blank-radiograph), a simulated model with --text-prior answers from the question's text " +
			"alone: frequent, the most frequent answer of that question type and option count in the " +
			"benchmark; favoured, the option this model favours there (drawn from --policy-seed). Without " +
			"--text-prior such a request is refused. --ignore-image makes it answer from its text prior even " +
			"when it sees the radiograph: a model that guesses, whose controls show no drop.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, _, err := net.SplitHostPort(listen)
			if err != nil {
				return withExit(2, fmt.Errorf("--listen %q: %w", listen, err))
			}
			if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: listening on %s, which is not a loopback address; anyone who can reach it can use this server\n", listen)
			}
			if err := setupSimulated(cmd, &cfg, &sim, accuracy); err != nil {
				return withExit(2, err)
			}
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			url, _, stop, err := fakemodel.StartServerOn(ctx, listen, cfg)
			if err != nil {
				return withExit(2, err)
			}
			defer stop()
			fmt.Fprintf(cmd.ErrOrStderr(), "serving policy %q (seed %d) — press Ctrl-C to stop\n", cfg.Policy, cfg.PolicySeed)
			fmt.Fprintln(cmd.OutOrStdout(), url)
			<-ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Policy, "policy", "random", "policy: random, first or simulated")
	f.StringVar(&sim.Benchmark, "benchmark", "", "simulated: the benchmark directory whose questions it answers")
	f.Float64SliceVar(&accuracy, "accuracy", []float64{0.9, 0.7, 0.5, 0.4},
		"simulated: accuracy of stages 1-4 (detection, contour evaluation, contour revision, attribute extraction), each in [0, 1]")
	f.Float64Var(&sim.MislabelRate, "mislabel-rate", 0, "simulated: share of questions answered with the shared wrong answer of --mislabel-seed")
	f.Int64Var(&sim.MislabelSeed, "mislabel-seed", 0, "simulated: seed of the shared wrong answers (the same for every model with this seed)")
	f.StringVar(&sim.TextPrior, "text-prior", "", "simulated: how to answer without the radiograph: frequent (the question type's most frequent answer) or favoured (an option the model favours); unset: refuse")
	f.BoolVar(&sim.IgnoresImage, "ignore-image", false, "simulated: answer from --text-prior even when the radiograph is shown (a model that guesses)")
	f.StringVar(&listen, "listen", "127.0.0.1:8011", "address to listen on (loopback by default)")
	f.Int64Var(&cfg.PolicySeed, "policy-seed", 0, "seed of the random and simulated policies")
	f.DurationVar(&cfg.Latency, "latency", 0, "least time from a request's arrival to its reply, e.g. 50ms (the server's own reading and parsing count within it)")
	f.DurationVar(&cfg.Jitter, "jitter", 0, "extra uniform random delay in [0, D) per reply, added to --latency")
	f.Float64Var(&cfg.Fail429, "fail-429", 0, "rate of injected 429 replies (with Retry-After)")
	f.Float64Var(&cfg.Fail500, "fail-500", 0, "rate of injected 500 replies")
	f.Float64Var(&cfg.FailTimeout, "fail-timeout", 0, "rate of requests that hang until the client gives up")
	f.Float64Var(&cfg.FailMalformed, "fail-malformed", 0, "rate of 200 replies whose body is not valid JSON")
	f.Float64Var(&cfg.FailEmpty, "fail-empty", 0, "rate of 200 replies with empty content")
	f.Int64Var(&cfg.FaultSeed, "fault-seed", 0, "seed of the per-request fault and jitter draws")
	f.DurationVar(&cfg.RetryAfter, "retry-after", time.Second, "Retry-After sent with injected 429s (negative: none)")
	return cmd
}

// setupSimulated loads the simulated model when the policy asks for one,
// and refuses its flags with any other policy.
func setupSimulated(cmd *cobra.Command, cfg *fakemodel.ServerConfig, sim *fakemodel.SimConfig, accuracy []float64) error {
	f := cmd.Flags()
	if cfg.Policy != fakemodel.PolicySimulated {
		for _, name := range []string{"benchmark", "accuracy", "mislabel-rate", "mislabel-seed", "text-prior", "ignore-image"} {
			if f.Changed(name) {
				return fmt.Errorf("--%s applies only to --policy simulated", name)
			}
		}
		return nil
	}
	if sim.Benchmark == "" {
		return fmt.Errorf("--policy simulated needs --benchmark DIR (the benchmark whose questions it answers)")
	}
	if len(accuracy) != len(sim.Accuracy) {
		return fmt.Errorf("--accuracy: %d values, want %d (stages 1-4)", len(accuracy), len(sim.Accuracy))
	}
	if sim.TextPrior != "" && !slices.Contains(fakemodel.TextPriors, sim.TextPrior) {
		return fmt.Errorf("--text-prior %q: want %s", sim.TextPrior, strings.Join(fakemodel.TextPriors, " or "))
	}
	if sim.IgnoresImage && sim.TextPrior == "" {
		return fmt.Errorf("--ignore-image needs --text-prior: a model that ignores the image answers from its text prior")
	}
	copy(sim.Accuracy[:], accuracy)
	sim.Seed = cfg.PolicySeed
	m, err := fakemodel.LoadSimulated(*sim)
	if err != nil {
		return err
	}
	cfg.Simulated = m
	return nil
}
