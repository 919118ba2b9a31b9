package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chexpercept/chexpercept/internal/eval"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/protocol/profile"
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// evalFlags holds eval's flag values. Flags that map one to one onto
// eval.Options are bound to o directly; the rest are parsed into o by
// the RunE steps below.
type evalFlags struct {
	o                                        eval.Options
	entry                                    registry.Entry // the model's registry entry (Raw for a raw id)
	prov, model, oracle, parseMode, profile_ string
	control                                  string
	lesions, shard, imageCache, pricesFile   string
	maxReply                                 string
	modelFiles, extraBody                    []string
	limit, perPathLimit, sampleN             int
	temperature, topP                        float64
	maxTokens, genSeed                       int64
}

// newEvalCmd returns the command eval: a model through a benchmark; its flags are held in an evalFlags of its own.
func newEvalCmd(jo job.Options) *cobra.Command {
	fl := &evalFlags{}
	cmd := &cobra.Command{
		Use:   "eval --benchmark BENCH_DIR --provider P --model M --out RESULTS_DIR [flags]",
		Short: "Run a vision-language model through a benchmark, turn by turn",
		Long: `eval asks every selected record's questions in order (spec protocol.md),
many records at a time, and appends each finished record to results.jsonl in
the run directory RESULTS_DIR/<provider>_<label>[_no_thinking][_strict]/oracle_<mode>/.
A killed run restarted with the same command continues where it stopped.
At the end (and on Ctrl-C) the run directory also gets all_results.json,
summary.json and the per-model reference CSVs. The last line printed is the
run directory. A run directory that holds files but no run (no manifest.json
or results.jsonl) is refused before anything in it is written.

Before anything is written, a preflight asks each endpoint who serves the
model (GET /models, or the SDK's model lookup); an unreachable server, a
refused key or a model the server does not serve stops the run at once. The
server's identity keys the response cache and is recorded in manifest.json;
a run is never resumed against a server of another identity.
--no-preflight skips the question for servers without a models endpoint.

Providers: opensource (also spelt vllm; vLLM/SGLang, --endpoint), openai
(OpenAI or any compatible server, --endpoint, else $OPENAI_BASE_URL), azure,
gemini, baseline (--model random|first|oracle, in process).

--temperature, --top-p, --max-tokens, --gen-seed and --extra-body KEY=JSON
replace the registry's sampling for this run (docs/evaluation.md); the
manifest records what is sent, and eval prints it in one line, with where
each value came from, before it starts.

--control text-only (every image removed, the texts unchanged) or
blank-radiograph (the drawn masks, points and contours over a uniform grey
instead of the radiograph) asks the same questions as a run of its own,
<run>_<control>, which the report compares with the model's run: does the
model use the image? One more run per model and control. --sample-seed is the seed of --sample, not of the
model. Keys come from OPENAI_API_KEY, AZURE_OPENAI_API_KEY with
AZURE_OPENAI_ENDPOINT, GEMINI_API_KEY, Vertex AI application-default
credentials, or --api-key-file.

Ctrl-C stops starting records and waits for those in flight; a second Ctrl-C
abandons them (they are asked again on restart).

Exit status: 0 every selected record ok, 1 some records ended in error,
2 the run could not start, 130 interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return fl.run(cmd, jo) },
	}
	fl.register(cmd.Flags())
	for _, req := range []string{"benchmark", "provider", "model", "out"} {
		_ = cmd.MarkFlagRequired(req)
	}
	return cmd
}

// register declares eval's flags on f.
func (fl *evalFlags) register(f *pflag.FlagSet) {
	o := &fl.o
	f.StringVar(&o.BenchDir, "benchmark", "", "benchmark directory (holds chexpercept.json) (required)")
	f.StringVar(&fl.prov, "provider", "", "opensource (or vllm) | openai | azure | gemini | baseline (required)")
	f.StringVar(&fl.model, "model", "", "registry alias, raw model id, or baseline policy (random|first|oracle) (required)")
	f.StringVar(&o.OutDir, "out", "", "results folder; the run directory is created inside it (required)")
	f.StringVar(&fl.control, "control", "", "image control: text-only (every image removed, the texts unchanged) or blank-radiograph (the radiograph under the drawn masks and points replaced by its mean grey); a run of its own, <run>_<control>, that the report compares with the model's run")
	f.StringVar(&o.RunName, "run-name", "", "name of the run directory instead of <provider>_<model>[_no_thinking][_strict] (letters, digits, '.', '_', '-'), e.g. to report two sampling settings side by side")
	f.StringArrayVar(&o.Endpoints, "endpoint", nil, "server base URL, e.g. http://127.0.0.1:8000/v1 (repeatable)")
	f.BoolVar(&o.NoPreflight, "no-preflight", false, "do not ask the server who it is before the run (for servers without a models endpoint); the identity is then the endpoint list, unverified")
	f.StringVar(&fl.oracle, "oracle", "implicit", "oracle mode: none | implicit | explicit")
	f.StringVar(&fl.parseMode, "parse-mode", "reference", "answer parsing: reference | strict")
	f.StringVar(&fl.profile_, "prompt-profile", "", "YAML prompt profile replacing the system prompt and oracle texts")
	f.BoolVar(&o.NoThinking, "no-thinking", false, "switch thinking off for models with the thinking_toggle quirk")
	f.IntVar(&o.Concurrency, "concurrency", 16, "records in flight (turns of one record stay sequential)")
	f.IntVar(&o.MaxRetries, "max-retries", 5, "retries per call after the first attempt")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "deadline of one call attempt")
	f.IntVar(&o.RPM, "rpm", 0, "cap on requests per minute (0: none)")
	f.IntVar(&o.TPM, "tpm", 0, "cap on estimated tokens per minute (0: none)")
	f.IntVar(&fl.limit, "limit", 0, "only the first N records (file order)")
	f.IntVar(&fl.perPathLimit, "per-path-limit", 0, "only the first N records of each path (overrides --limit)")
	f.StringVar(&fl.lesions, "lesions", "", "only these lesions, comma-separated")
	f.IntVar(&fl.sampleN, "sample", 0, "stratified sample of N records (lesion × path)")
	namedSeedFlag(f, &o.Selection.Seed, "sample-seed", "seed of --sample (record selection)")
	f.Int64Var(&o.PolicySeed, "policy-seed", 0, "seed of the random baseline policy")
	f.StringVar(&fl.shard, "shard", "", "i/n or auto/n: run shard i of n (1-based)")
	f.BoolVar(&o.RetryErrors, "retry-errors", false, "also re-ask records whose last result is an error")
	f.BoolVar(&o.NoCache, "no-cache", false, "do not use the response cache")
	f.StringVar(&o.CacheDir, "cache-dir", "", "directory of the response cache and the image verification memo (default $XDG_CACHE_HOME/chexpercept or ~/.cache/chexpercept)")
	f.StringVar(&o.APIKeyFile, "api-key-file", "", "file whose first line is the API key (instead of the environment)")
	f.BoolVar(&o.AllowInvalid, "allow-invalid", false, "evaluate a benchmark that fails validation")
	f.BoolVar(&o.DryRun, "dry-run", false, "count calls, images, tokens and cost without sending anything")
	f.StringVar(&fl.imageCache, "image-cache", "256MiB", "memory for encoded images shared between records (e.g. 256MiB, 1GiB)")
	f.StringVar(&fl.maxReply, "max-reply-bytes", "32MiB", "largest reply body accepted; a larger reply fails that call without retry")
	f.StringVar(&o.GeminiImageFormat, "gemini-image-format", "png", "images sent to Gemini: png (file bytes) | jpeg (the reference's re-encoding)")
	f.StringArrayVar(&fl.modelFiles, "models", nil, "extra models.yaml extending the registry (repeatable)")
	f.StringVar(&fl.pricesFile, "prices", "", "price table replacing the built-in prices.yaml")
	f.Float64Var(&fl.temperature, "temperature", 0, "sampling temperature in [0, 2], replacing the model's (only 0 is cached)")
	f.Float64Var(&fl.topP, "top-p", 0, "nucleus sampling top_p in (0, 1], replacing the model's")
	f.Int64Var(&fl.maxTokens, "max-tokens", 0, "output token limit per call, sent as the backend's own member (max_tokens, max_completion_tokens or max_output_tokens)")
	f.Int64Var(&fl.genSeed, "gen-seed", 0, "generation seed sent to the model (not sent unless given; --sample-seed is the seed of --sample)")
	f.StringArrayVar(&fl.extraBody, "extra-body", nil, "KEY=JSON: an extra top-level request member for OpenAI-compatible servers, e.g. top_k=20 (repeatable)")
}

// run is eval's RunE: the flags become options (any mistake is exit
// status 2 before anything starts), the run goes as a job with eval's
// Ctrl-C handling (runEvalJob), and its outcome becomes the exit status.
func (fl *evalFlags) run(cmd *cobra.Command, jo job.Options) error {
	if err := fl.protocolOptions(); err != nil {
		return withExit(2, err)
	}
	if err := fl.modelOptions(); err != nil {
		return withExit(2, err)
	}
	if err := fl.limitOptions(cmd.Flags()); err != nil {
		return withExit(2, err)
	}
	if err := fl.genOptions(cmd.Flags()); err != nil {
		return withExit(2, err)
	}
	fl.sayWhatIsSent(cmd.Flags())
	if cmd.Flags().Changed("run-name") {
		if err := results.CheckRunName(fl.o.RunName); err != nil {
			return withExit(2, fmt.Errorf("--run-name: %w", err))
		}
	}
	o := &fl.o
	o.Log = os.Stderr
	o.TTY = isTerminal(os.Stderr)
	var sum *eval.Summary
	err := runEvalJob(cmd.Context(), jo, func(j *job.Job, abandon <-chan struct{}) error {
		o.Abandon, o.Job = abandon, j
		var err error
		sum, err = eval.Run(j.Context(), *o)
		return err
	})
	var in *job.Interrupted
	switch {
	case errors.As(err, &in) && in.Abandoned:
		// Every line of results.jsonl is synced when written and the
		// other files are written atomically: quitting here loses
		// nothing a restart needs.
		fmt.Fprintln(os.Stderr, "\ninterrupt: quitting now; the run resumes where it stopped")
		return silentExit(130)
	case errors.As(err, &in) && errors.Is(in.Err, context.Canceled):
		// Interrupted before the run began (in the preflight, while
		// loading): nothing was asked or written.
		fmt.Fprintln(os.Stderr, "chexpercept eval: interrupted before any record was asked; run the same command again")
		return silentExit(130)
	case errors.As(err, &in):
		err = in.Err
	}
	return evalOutcome(cmd.OutOrStdout(), sum, err)
}

// protocolOptions sets the oracle mode, the parse mode and the prompt
// profile.
func (fl *evalFlags) protocolOptions() error {
	o := &fl.o
	var err error
	if o.Oracle, err = protocol.ParseOracleMode(fl.oracle); err != nil {
		return fmt.Errorf("--oracle: %w", err)
	}
	if o.Parse, err = parse.ParseMode(fl.parseMode); err != nil {
		return fmt.Errorf("--parse-mode: %w", err)
	}
	if o.Control, err = results.ParseControl(fl.control); err != nil {
		return fmt.Errorf("--control: %w", err)
	}
	if fl.profile_ != "" {
		p, warns, err := profile.Load(fl.profile_)
		if err != nil {
			return err
		}
		for _, w := range warns {
			fmt.Fprintln(os.Stderr, "warning:", textsafe.OneLine(w))
		}
		o.Profile = p
	}
	return nil
}

// modelOptions resolves the model against the registry (with --models)
// and the price table (--prices).
func (fl *evalFlags) modelOptions() error {
	o := &fl.o
	fl.prov = registry.CanonicalProvider(fl.prov)
	reg, err := registry.Load(fl.modelFiles...)
	if err != nil {
		return err
	}
	prices, err := registry.LoadPrices(fl.pricesFile)
	if err != nil {
		return err
	}
	o.PriceFileSHA256 = prices.SHA256
	m, notice, err := eval.ResolveModel(reg, prices, fl.prov, fl.model, o.NoThinking)
	if err != nil {
		return err
	}
	if notice != "" {
		fmt.Fprintln(os.Stderr, "notice:", notice+rawModelHint(reg, fl.prov, fl.model))
	}
	if fl.entry, _, err = reg.Resolve(fl.prov, fl.model); err != nil {
		return err
	}
	// Open models are unpriced on purpose (the registry lists them so);
	// an API model, billed per token, should have a price.
	if m.Price == nil && m.Provider != "opensource" && m.Backend != runmodel.BackendBaseline {
		fmt.Fprintf(os.Stderr, "warning: no price entry matches model id %q; cost will be null (add it with --prices)\n", m.ModelID)
	}
	o.Model = m
	return nil
}

// limitOptions checks the call policy, reads the record selection and
// the byte sizes, and refuses --endpoint for the in-process baseline.
func (fl *evalFlags) limitOptions(f *pflag.FlagSet) error {
	o := &fl.o
	if f.Changed("concurrency") && o.Concurrency < 1 {
		return fmt.Errorf("--concurrency must be at least 1")
	}
	if f.Changed("max-retries") {
		if o.MaxRetries < 0 {
			return fmt.Errorf("--max-retries must not be negative")
		}
		o.NoRetries = o.MaxRetries == 0
	}
	if err := fl.selection(f); err != nil {
		return err
	}
	var err error
	if o.ImageCacheBytes, err = parseSize(fl.imageCache); err != nil {
		return fmt.Errorf("--image-cache: %w", err)
	}
	if o.MaxReplyBytes, err = parseSize(fl.maxReply); err != nil {
		return fmt.Errorf("--max-reply-bytes: %w", err)
	}
	if o.Model.Backend == runmodel.BackendBaseline && o.NoPreflight {
		return fmt.Errorf("--no-preflight is not used by the baseline provider (it runs in process and has no server to ask)")
	}
	if o.Model.Backend == runmodel.BackendBaseline && o.Control != "" {
		return fmt.Errorf("--control %s: the baseline policies do not look at the image, so there is nothing to control; give a model (serve-baseline's too, with --provider openai --endpoint URL)", o.Control)
	}
	if o.Model.Backend == runmodel.BackendBaseline && len(o.Endpoints) > 0 {
		return fmt.Errorf("--endpoint is not used by the baseline provider (it runs in process); use --provider openai --endpoint URL to reach serve-baseline")
	}
	return fl.endpointFromEnv()
}

// endpointFromEnv honours OPENAI_BASE_URL for --provider openai without
// --endpoint, as OpenAI's own clients do. It becomes the run's endpoint,
// so the manifest and the log name it (without credentials) instead of
// the api.openai.com default.
func (fl *evalFlags) endpointFromEnv() error {
	o := &fl.o
	env := strings.TrimSpace(os.Getenv("OPENAI_BASE_URL"))
	if o.Model.Provider != "openai" || len(o.Endpoints) > 0 || env == "" {
		return nil
	}
	if u, err := url.ParseRequestURI(env); err != nil || u.Host == "" {
		// the value is not echoed: it may carry credentials
		return fmt.Errorf("OPENAI_BASE_URL is not a URL (want e.g. http://127.0.0.1:8000/v1); unset it or pass --endpoint")
	}
	o.Endpoints = []string{env}
	fmt.Fprintln(os.Stderr, "notice: endpoint from OPENAI_BASE_URL:", eval.ScrubEndpoint(env))
	return nil
}

// selection reads --lesions, --limit, --per-path-limit, --sample and
// --shard into the record selection.
func (fl *evalFlags) selection(f *pflag.FlagSet) error {
	sel := &fl.o.Selection
	var err error
	if sel.Lesions, err = results.ParseLesions(fl.lesions); err != nil {
		return fmt.Errorf("--lesions: %w", err)
	}
	for _, x := range []struct {
		flag string
		v    int
		dst  **int
	}{{"limit", fl.limit, &sel.Limit}, {"per-path-limit", fl.perPathLimit, &sel.PerPathLimit}, {"sample", fl.sampleN, &sel.Sample}} {
		if !f.Changed(x.flag) {
			continue
		}
		if x.v < 1 {
			return fmt.Errorf("--%s %d selects no record; it must be at least 1", x.flag, x.v)
		}
		v := x.v
		*x.dst = &v
	}
	if fl.shard != "" {
		if sel.Shard, err = results.ParseShard(fl.shard, os.Getenv); err != nil {
			return fmt.Errorf("--shard %w", err)
		}
	}
	return nil
}

// genOptions applies --temperature, --top-p, --max-tokens, --gen-seed and
// --extra-body to the model's sampling (registry defaults and overrides),
// so that what is sent, recorded, cached and reported is one value.
func (fl *evalFlags) genOptions(f *pflag.FlagSet) error {
	o := &fl.o
	if changed(f, "sample-seed", "seed") && !f.Changed("sample") {
		fmt.Fprintln(os.Stderr, "warning: --sample-seed only seeds --sample (record selection) and is not sent to the model; the generation seed is --gen-seed")
	}
	var ov runmodel.Overrides
	var given []string
	if f.Changed("temperature") {
		if math.IsNaN(fl.temperature) || fl.temperature < 0 || fl.temperature > 2 {
			return fmt.Errorf("--temperature %v is outside [0, 2]", fl.temperature)
		}
		ov.Temperature, given = &fl.temperature, append(given, "--temperature")
	}
	if f.Changed("top-p") {
		if math.IsNaN(fl.topP) || fl.topP <= 0 || fl.topP > 1 {
			return fmt.Errorf("--top-p %v is outside (0, 1]", fl.topP)
		}
		ov.TopP, given = &fl.topP, append(given, "--top-p")
	}
	if f.Changed("max-tokens") {
		if fl.maxTokens < 1 {
			return fmt.Errorf("--max-tokens %d must be at least 1", fl.maxTokens)
		}
		ov.MaxTokens, given = &fl.maxTokens, append(given, "--max-tokens")
	}
	if f.Changed("gen-seed") {
		ov.Seed, given = &fl.genSeed, append(given, "--gen-seed")
	}
	if len(fl.extraBody) > 0 {
		given = append(given, "--extra-body")
	}
	if len(given) > 0 && o.Model.Backend == runmodel.BackendBaseline {
		return fmt.Errorf("%s: the baseline provider samples nothing, so generation settings do not apply (use --provider openai --endpoint URL to send them to serve-baseline)", strings.Join(given, ", "))
	}
	s, err := o.Model.Sampling.Apply(o.Model.Backend, ov)
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(given, ", "), err)
	}
	extra, err := parseExtraBody(fl.extraBody)
	if err != nil {
		return err
	}
	if _, ok := extra["chat_template_kwargs"]; ok && s.EnableThinking != nil {
		return fmt.Errorf("--extra-body chat_template_kwargs conflicts with --no-thinking, which sends chat_template_kwargs {\"enable_thinking\": false} for this model (quirk thinking_toggle); drop --no-thinking and give enable_thinking in --extra-body")
	}
	if o.Model.Sampling, err = s.Apply(o.Model.Backend, runmodel.Overrides{ExtraBody: extra}); err != nil {
		return fmt.Errorf("--extra-body: %w", err)
	}
	return nil
}

// sayWhatIsSent prints, before the run starts, the one line of what
// every call sends beside the conversation and where each value came
// from; and, for --provider openai aimed at a server that is not
// OpenAI's, the hint that OpenAI's settings go there. The in-process
// baselines send nothing.
func (fl *evalFlags) sayWhatIsSent(f *pflag.FlagSet) {
	o := &fl.o
	if o.Model.Backend == runmodel.BackendBaseline {
		return
	}
	var extra []string
	for _, a := range fl.extraBody {
		k, _, _ := strings.Cut(a, "=")
		extra = append(extra, strings.TrimSpace(k))
	}
	origins := samplingOrigins(o.Model.Sampling, o.Model.Backend, fl.entry, f.Changed, extra)
	fmt.Fprintln(os.Stderr, samplingLine(origins))
	if o.Model.Backend == runmodel.BackendOpenAI {
		if h := openAIHint(o.Endpoints, origins); h != "" {
			fmt.Fprintln(os.Stderr, h)
		}
	}
}

// samplingFlags are the flags that set request members an extra member
// may not name.
var samplingFlags = map[string]string{"temperature": "--temperature", "top_p": "--top-p", "max_tokens": "--max-tokens",
	"max_completion_tokens": "--max-tokens", "max_output_tokens": "--max-tokens", "seed": "--gen-seed"}

// parseExtraBody reads the --extra-body KEY=JSON arguments: each value
// must be one JSON value and each key a member chexpercept does not write
// itself, given once. Errors quote at most the start of an argument.
func parseExtraBody(args []string) (map[string]json.RawMessage, error) {
	const want = "want KEY=JSON, e.g. top_k=20 or chat_template_kwargs='{\"enable_thinking\":false}'"
	var m map[string]json.RawMessage
	total := 0
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		k = strings.TrimSpace(k)
		switch {
		case !ok:
			return nil, fmt.Errorf("--extra-body %s has no '=': %s", textsafe.QuoteClipped(a, 60), want)
		case k == "":
			return nil, fmt.Errorf("--extra-body %s has no key before '=': %s", textsafe.QuoteClipped(a, 60), want)
		}
		if err := runmodel.CheckExtraKey(k); err != nil {
			if f, ok := samplingFlags[strings.ToLower(k)]; ok {
				return nil, fmt.Errorf("--extra-body %s: %w; use %s", k, err, f)
			}
			return nil, fmt.Errorf("--extra-body: %w", err)
		}
		if total += len(v); total > runmodel.MaxExtraBodyBytes {
			return nil, fmt.Errorf("--extra-body %s: the values are more than %d bytes together", k, runmodel.MaxExtraBodyBytes)
		}
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("--extra-body %s: value %s is not valid UTF-8", k, textsafe.QuoteClipped(v, 60))
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			return nil, fmt.Errorf("--extra-body %s: value %s is not valid JSON (%v); a string needs JSON quotes, e.g. %s='\"text\"'",
				k, textsafe.QuoteClipped(v, 60), err, k)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("--extra-body %s is given twice", k)
		}
		if m == nil {
			m = map[string]json.RawMessage{}
		}
		m[k] = json.RawMessage(v)
	}
	return m, nil
}

// interruptGrace is how long the calls in flight may still take after
// the first Ctrl-C or SIGTERM: then their records are abandoned (asked
// again on restart), so that a stopped run ends within about two seconds
// however slow or silent the server. Waits (backoff, Retry-After, rate
// limits) end at once.
const interruptGrace = 1500 * time.Millisecond

// runEvalJob runs work as eval's job, which winds down at the first
// Ctrl-C (or SIGTERM): its context ends, so that no new record starts and
// no record waits any more, and abandon is closed interruptGrace later,
// or at the second signal, abandoning the records still in flight; the
// run then writes its derived files and returns. A third signal, or a
// wind-down longer than the job's grace, ends the wait (job.Run): the
// result is an abandoned *job.Interrupted.
func runEvalJob(parent context.Context, jo job.Options, work func(j *job.Job, abandon <-chan struct{}) error) error {
	ab := make(chan struct{})
	abandonNow := sync.OnceFunc(func() { close(ab) })
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// The first and third signals go to job.Run; the second abandons
	// the records in flight.
	toRun := make(chan os.Signal, 2)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for n := 1; ; n++ {
			select {
			case s := <-sigs:
				switch n {
				case 1, 3:
					toRun <- s
				case 2:
					fmt.Fprintln(os.Stderr, "\ninterrupt: abandoning the records in flight (interrupt again to quit at once)")
					abandonNow()
				}
			case <-done:
				return
			}
		}
	}()
	stopping := func() {
		fmt.Fprintf(os.Stderr, "\ninterrupt: stopping; the calls in flight have %v to finish (interrupt again to abandon them now); the run resumes where it stopped\n", interruptGrace)
		time.AfterFunc(interruptGrace, abandonNow)
	}
	opt := job.RunOptions{Options: jo, Signals: toRun, Stopping: stopping, WindDown: true}
	return job.Run(parent, opt, func(j *job.Job) error { return work(j, ab) })
}

// evalOutcome prints the run directory (the last line of a run's output)
// and turns the summary into the exit status.
func evalOutcome(out io.Writer, sum *eval.Summary, err error) error {
	if err != nil {
		if sum != nil {
			fmt.Fprintln(out, sum.RunDir)
		}
		return withExit(2, withHints(err, evalHints...))
	}
	if sum.DryRun != nil {
		sum.DryRun.Write(os.Stderr)
		// A dry run creates nothing: name the directory as the
		// one a real run would write.
		fmt.Fprintln(out, "would write to "+sum.RunDir)
		return nil
	}
	fmt.Fprintln(out, sum.RunDir)
	switch {
	case sum.Interrupted:
		return silentExit(130)
	case sum.Results != nil && sum.Results.Counts.RecordsError > 0:
		return silentExit(1)
	}
	return nil
}

// parseSize reads a byte size: a plain number of bytes or one with a
// KB/MB/GB (powers of 1000) or KiB/MiB/GiB (powers of 1024) suffix.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%q is not a positive size (e.g. 256MiB)", s)
	}
	return int64(v * float64(mult)), nil
}
