package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/provider/baselineserver"
)

func init() {
	var cfg baselineserver.Config
	var listen string
	cmd := &cobra.Command{
		Use:   "serve-baseline --policy random|first [--listen ADDR]",
		Short: "Serve a baseline policy behind an OpenAI-compatible Chat Completions API",
		Long: "serve-baseline answers POST /v1/chat/completions with a built-in policy " +
			"(random: a pure function of --policy-seed and the request's texts; first: always option 1) " +
			"and lists one model at GET /v1/models. Any model name is accepted. Latency, jitter and " +
			"injected faults let you smoke-test an evaluation setup and its retries without a GPU.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, _, err := net.SplitHostPort(listen)
			if err != nil {
				return withExit(2, fmt.Errorf("--listen %q: %w", listen, err))
			}
			if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: listening on %s, which is not a loopback address; anyone who can reach it can use this server\n", listen)
			}
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			url, _, stop, err := baselineserver.StartOn(ctx, listen, cfg)
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
	f.StringVar(&cfg.Policy, "policy", "random", "baseline policy: random or first")
	f.StringVar(&listen, "listen", "127.0.0.1:8011", "address to listen on (loopback by default)")
	f.Int64Var(&cfg.PolicySeed, "policy-seed", 0, "seed of the random policy")
	f.DurationVar(&cfg.Latency, "latency", 0, "delay added to every reply, e.g. 50ms")
	f.DurationVar(&cfg.Jitter, "jitter", 0, "extra uniform random delay in [0, D) per reply")
	f.Float64Var(&cfg.Fail429, "fail-429", 0, "rate of injected 429 replies (with Retry-After)")
	f.Float64Var(&cfg.Fail500, "fail-500", 0, "rate of injected 500 replies")
	f.Float64Var(&cfg.FailTimeout, "fail-timeout", 0, "rate of requests that hang until the client gives up")
	f.Float64Var(&cfg.FailMalformed, "fail-malformed", 0, "rate of 200 replies whose body is not valid JSON")
	f.Float64Var(&cfg.FailEmpty, "fail-empty", 0, "rate of 200 replies with empty content")
	f.Int64Var(&cfg.FaultSeed, "fault-seed", 0, "seed of the per-request fault and jitter draws")
	f.DurationVar(&cfg.RetryAfter, "retry-after", time.Second, "Retry-After sent with injected 429s (negative: none)")
	addCommand(cmd)
}
