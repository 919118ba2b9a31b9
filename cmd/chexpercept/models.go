package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// newModelsCmd returns the command models: the model registry.
func newModelsCmd() *cobra.Command {
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
			infos := make([]registry.ModelInfo, len(entries))
			for i := range entries {
				if infos[i], err = registry.Describe(entries[i], prices); err != nil {
					return withExit(2, err)
				}
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				return registry.WriteModelsJSON(out, infos)
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
	return cmd
}

func writeModelsTable(w io.Writer, infos []registry.ModelInfo, priceSource string) error {
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

	var open []registry.ModelInfo
	for _, m := range infos {
		if m.VLLM != nil {
			open = append(open, m)
		}
	}
	if len(open) > 0 {
		fmt.Fprintln(w, "\nServe open models with vLLM (no reasoning parser; eval sends the model id as the model name; each line names the first vLLM release that serves the architecture):")
		for _, m := range open {
			fmt.Fprintln(w, cell(m.ServeLine()))
		}
	}
	_, err := fmt.Fprintln(w, "\nUse an alias as: chexpercept eval --provider PROVIDER --model ALIAS ...; `chexpercept models ALIAS` shows one in full.")
	return err
}

func writeModelDetail(w io.Writer, m registry.ModelInfo, priceSource string) error {
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
		row("vllm serve", m.ServeLine())
		if m.VLLM.MinVersion != "" {
			row("vllm version", ">= "+m.VLLM.MinVersion)
		}
	}
	row("eval", fmt.Sprintf("chexpercept eval --provider %s --model %s ...", m.Provider, textsafe.ShellQuote(m.Alias)))
	return tw.Flush()
}

// samplingText renders sampling parameters as key=value in their wire
// names and order; "model defaults" when nothing is sent.
func samplingText(s runmodel.Sampling) string {
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

func priceText(p *registry.PriceInfo) string {
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
func cell(s string) string { return textsafe.OneLine(s) }

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
