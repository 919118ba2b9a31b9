package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/registry"
)

func init() {
	var (
		asJSON     bool
		modelFiles []string
		pricesFile string
	)
	cmd := &cobra.Command{
		Use:   "models [ALIAS] [--json]",
		Short: "List the model registry: aliases, model ids, sampling, quirks, prices, vLLM serve lines",
		Long: `models lists every registry alias eval accepts as --model, in registry order:
provider, backend, domain, base (a medical model's general-domain base),
model id, quirks and price (USD per million tokens,
or "unpriced": such a run records a null cost), then the sampling each alias
sends per call, then a copy-paste vllm serve line for each open model
(provider opensource) with the serve hints the registry holds.

models ALIAS shows one alias in full. --models and --prices take the same
files as eval's, so a user's own aliases and prices show too.

--json prints a JSON array, one object per alias in registry order, with the
keys alias, display_name, provider, backend, model_id, domain, quirks,
sampling, price, vllm, base (see docs/evaluation.md). vllm holds the serve
hints, the command (argv, serve), min_version (the first vLLM release that
serves the architecture) and unsupported (why standard vLLM cannot serve the
model; then argv is empty and no serve line is printed).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("unexpected argument %q: models shows one alias or all (usage: %s)", args[1], cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := registry.Load(modelFiles...)
			if err != nil {
				return withExit(2, err)
			}
			prices, err := registry.LoadPrices(pricesFile)
			if err != nil {
				return withExit(2, err)
			}
			entries := reg.Entries()
			if len(args) == 1 {
				e, ok := reg.Lookup(args[0])
				if byID := reg.ByModelID("", args[0]); !ok && len(byID) == 1 {
					e, ok = byID[0], true // an entry named by its model id
				}
				if !ok {
					return withExit(2, fmt.Errorf("%q is not a registry alias%s", args[0], rawModelHint(reg, "", args[0])))
				}
				entries = []registry.Entry{e}
			}
			infos := make([]modelInfo, len(entries))
			for i := range entries {
				if infos[i], err = describeModel(entries[i], prices); err != nil {
					return withExit(2, err)
				}
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				return writeModelsJSON(out, infos)
			case len(args) == 1:
				return writeModelDetail(out, infos[0], prices.Source)
			}
			return writeModelsTable(out, infos, prices.Source)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print a JSON array, one object per alias")
	f.StringArrayVar(&modelFiles, "models", nil, "extra models.yaml extending the registry, as for eval (repeatable)")
	f.StringVar(&pricesFile, "prices", "", "price table replacing the built-in prices.yaml, as for eval")
	addCommand(cmd)
}

// modelInfo is one alias as `models --json` prints it. The key order is
// the field order and is documented in docs/evaluation.md: add keys at
// the end only.
type modelInfo struct {
	Alias       string            `json:"alias"`
	DisplayName string            `json:"display_name"`
	Provider    string            `json:"provider"`
	Backend     string            `json:"backend"`
	ModelID     string            `json:"model_id"`
	Domain      string            `json:"domain"` // "" when the entry has none
	Quirks      []string          `json:"quirks"` // [] when none
	Sampling    provider.Sampling `json:"sampling"`
	Price       *priceInfo        `json:"price"` // null: unpriced
	VLLM        *vllmInfo         `json:"vllm"`  // null: not an open model
	Base        string            `json:"base"`  // a medical model's general-domain base alias; "" when none
}

type priceInfo struct {
	Key         string  `json:"key"` // the price-table key that matched the model id
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cached_input"`
	Output      float64 `json:"output"`
}

type vllmInfo struct {
	MaxModelLen     *int     `json:"max_model_len"`
	ImageLimit      *int     `json:"image_limit"`
	TrustRemoteCode bool     `json:"trust_remote_code"`
	TPDivisorHint   *int     `json:"tp_divisor_hint"`
	Argv            []string `json:"argv"`        // vllm serve MODEL_ID flags…, one word each; [] when unsupported
	Serve           string   `json:"serve"`       // Argv as a shell command line; "" when unsupported
	MinVersion      string   `json:"min_version"` // first vLLM release for the architecture; "" when not recorded
	Unsupported     string   `json:"unsupported"` // why standard vLLM cannot serve it; "" when it can
}

// describeModel gathers what models prints about e: the sampling sent
// per call (as manifest.json records it, thinking left on), the price
// entry eval would use, and for an open model the vLLM serve command.
func describeModel(e registry.Entry, prices *registry.Prices) (modelInfo, error) {
	s, err := e.SamplingParams(false)
	if err != nil {
		return modelInfo{}, fmt.Errorf("alias %s: %w", e.Alias, err)
	}
	m := modelInfo{Alias: e.Alias, DisplayName: e.DisplayName, Provider: e.Provider, Backend: e.Backend,
		ModelID: e.ModelID, Domain: e.Domain, Quirks: append([]string{}, e.Quirks...), Sampling: s, Base: e.Base}
	if e.Backend != provider.BackendBaseline {
		if key, p, ok := prices.Lookup(e.ModelID); ok {
			m.Price = &priceInfo{Key: key, Input: p.Input, CachedInput: p.CachedInput, Output: p.Output}
		}
	}
	if e.Provider == "opensource" {
		m.VLLM = &vllmInfo{MaxModelLen: e.MaxModelLen, ImageLimit: e.ImageLimit, TrustRemoteCode: e.TrustRemoteCode,
			TPDivisorHint: e.TPDivisorHint, Argv: []string{}, MinVersion: e.VLLMMinVersion, Unsupported: e.VLLMUnsupported}
		// A model standard vLLM cannot load gets no command that would
		// not start.
		if e.VLLMUnsupported == "" {
			argv := vllmServeArgv(e)
			quoted := make([]string, len(argv))
			for i, a := range argv {
				quoted[i] = shellQuote(a)
			}
			m.VLLM.Argv, m.VLLM.Serve = argv, strings.Join(quoted, " ")
		}
	}
	return m, nil
}

// vllmServeArgv is the vllm serve command for an open model, spelled as
// docs/evaluation.md and deploy/kubernetes/vllm.yaml spell it. The model
// id is served under its own name, which is what eval sends as "model".
// No reasoning parser: the reply content must hold the raw text (spec
// protocol.md §11). The tensor-parallel hint is no flag (the size depends
// on the GPUs); the command lines print it as a comment.
func vllmServeArgv(e registry.Entry) []string {
	argv := []string{"vllm", "serve", e.ModelID}
	if e.MaxModelLen != nil {
		argv = append(argv, "--max-model-len", strconv.Itoa(*e.MaxModelLen))
	}
	if e.ImageLimit != nil {
		argv = append(argv, "--limit-mm-per-prompt", fmt.Sprintf(`{"image": %d}`, *e.ImageLimit))
	}
	if e.TrustRemoteCode {
		argv = append(argv, "--trust-remote-code")
	}
	return argv
}

// serveLine is the copy-paste line: the command, then a comment naming
// the alias, the vLLM release it needs and the tensor-parallel hint; for
// a model standard vLLM cannot serve, a comment saying why instead.
func serveLine(m modelInfo) string {
	v := m.VLLM
	if v.Unsupported != "" {
		return "# " + m.Alias + " (" + m.ModelID + "): not servable by standard vLLM: " + v.Unsupported
	}
	line := v.Serve + "  # " + m.Alias
	if v.MinVersion != "" {
		line += "; vLLM >= " + v.MinVersion
	}
	if v.TPDivisorHint != nil {
		line += fmt.Sprintf("; --tensor-parallel-size must divide %d", *v.TPDivisorHint)
	}
	return line
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9@%+=:,./_-]+$`)

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func writeModelsJSON(w io.Writer, infos []modelInfo) error {
	b, err := json.MarshalIndent(infos, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func writeModelsTable(w io.Writer, infos []modelInfo, priceSource string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ALIAS\tPROVIDER\tBACKEND\tDOMAIN\tBASE\tMODEL ID\tQUIRKS\tPRICE")
	for _, m := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(m.Alias), m.Provider, m.Backend, orDash(m.Domain), cell(orDash(m.Base)),
			cell(m.ModelID), orDash(strings.Join(m.Quirks, ",")), priceText(m.Price))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nPRICE: USD per million tokens, input/cached input/output, from %s; an unpriced model's cost is recorded as null.\n", cell(priceSource))

	// Sampling: one line per distinct setting, with the aliases sending it.
	fmt.Fprintln(w, "\nSampling sent per call (--no-thinking adds enable_thinking=false for thinking_toggle models):")
	var order []string
	users := map[string][]string{}
	for _, m := range infos {
		s := samplingText(m.Sampling)
		if _, ok := users[s]; !ok {
			order = append(order, s)
		}
		users[s] = append(users[s], m.Alias)
	}
	for _, s := range order {
		fmt.Fprintf(w, "  %s: %s\n", s, cell(strings.Join(users[s], ", ")))
	}

	var open []modelInfo
	for _, m := range infos {
		if m.VLLM != nil {
			open = append(open, m)
		}
	}
	if len(open) > 0 {
		fmt.Fprintln(w, "\nServe open models with vLLM (no reasoning parser; eval sends the model id as the model name; each line names the first vLLM release that serves the architecture):")
		for _, m := range open {
			fmt.Fprintln(w, cell(serveLine(m)))
		}
	}
	_, err := fmt.Fprintln(w, "\nUse an alias as: chexpercept eval --provider PROVIDER --model ALIAS ...; `chexpercept models ALIAS` shows one in full.")
	return err
}

func writeModelDetail(w io.Writer, m modelInfo, priceSource string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, cell(v)) }
	row("alias", m.Alias)
	row("display name", orDash(m.DisplayName))
	row("provider", m.Provider)
	row("backend", m.Backend)
	row("model id", m.ModelID)
	row("domain", orDash(m.Domain))
	row("base", orDash(m.Base))
	row("quirks", orDash(strings.Join(m.Quirks, ", ")))
	row("sampling", samplingText(m.Sampling))
	if m.Price != nil {
		row("price", fmt.Sprintf("USD/1M input %s, cached input %s, output %s (key %q in %s)",
			num(m.Price.Input), num(m.Price.CachedInput), num(m.Price.Output), m.Price.Key, priceSource))
	} else {
		row("price", "unpriced in "+priceSource+" (cost recorded as null)")
	}
	if m.VLLM != nil {
		row("vllm serve", serveLine(m))
		if m.VLLM.MinVersion != "" {
			row("vllm version", ">= "+m.VLLM.MinVersion)
		}
	}
	row("eval", fmt.Sprintf("chexpercept eval --provider %s --model %s ...", m.Provider, shellQuote(m.Alias)))
	return tw.Flush()
}

// samplingText renders sampling parameters as key=value in their wire
// names and order; "model defaults" when nothing is sent.
func samplingText(s provider.Sampling) string {
	b, err := json.Marshal(s)
	if err != nil {
		return "?"
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var parts []string
	if _, err := dec.Token(); err != nil { // {
		return "?"
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "?"
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "?"
		}
		val := string(v)
		if u, err := strconv.Unquote(val); err == nil {
			val = u
		}
		parts = append(parts, fmt.Sprintf("%v=%s", k, val))
	}
	if len(parts) == 0 {
		return "model defaults"
	}
	return strings.Join(parts, " ")
}

func priceText(p *priceInfo) string {
	if p == nil {
		return "unpriced"
	}
	return num(p.Input) + "/" + num(p.CachedInput) + "/" + num(p.Output)
}

// num prints a price with at least two decimals (2.50, 0.025).
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if i := strings.IndexByte(s, '.'); i < 0 {
		s += ".00"
	} else if len(s)-i == 2 {
		s += "0"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cell quotes a value from a user's YAML that holds control characters,
// so it cannot break the table or the terminal.
func cell(s string) string { return benchmark.OneLine(s) }

// didYouMean is the hint for a name that is no alias: ", did you mean
// A or B? (see `chexpercept models`)", naming the provider of an alias
// that is not prov's; "" when nothing is close.
func didYouMean(reg *registry.Registry, prov, name string) string {
	sugg := reg.Suggest(name)
	if len(sugg) == 0 {
		return ""
	}
	for i, a := range sugg {
		if e, ok := reg.Lookup(a); ok && prov != "" && e.Provider != prov {
			sugg[i] = fmt.Sprintf("%s (--provider %s)", a, e.Provider)
		}
	}
	return fmt.Sprintf("; did you mean %s? (see `chexpercept models`)", strings.Join(sugg, " or "))
}

// rawModelHint extends eval's notice for a --model that is no alias
// (spec protocol.md §13 runs it as a raw model id): the closest aliases,
// or where to find them all. A raw id is legitimate (any served or API
// model), so this is a hint, never an error.
func rawModelHint(reg *registry.Registry, prov, name string) string {
	if _, ok := reg.Lookup(strings.TrimSpace(name)); ok {
		return "" // an alias of another provider: the notice says so
	}
	if h := didYouMean(reg, prov, name); h != "" {
		return h
	}
	return "; `chexpercept models` lists the registry aliases"
}
