package main

import (
	"net/url"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// samplingOrigin is where the value of one sampling member came from.
type samplingOrigin struct {
	member runmodel.Member
	from   string
}

// flagOfMember is the eval flag that sets a sampling member.
var flagOfMember = map[string]string{"temperature": "--temperature", "top_p": "--top-p", "max_tokens": "--max-tokens",
	"max_completion_tokens": "--max-tokens", "max_output_tokens": "--max-tokens", "seed": "--gen-seed"}

// samplingOrigins names, for each member the run sends (in wire order),
// where its value came from: a flag (changed lists the flags given, extra
// the --extra-body keys), --no-thinking, the registry entry's own
// sampling, or the backend's defaults.
func samplingOrigins(s runmodel.Sampling, backend string, entry registry.Entry, changed func(string) bool, extra []string) []samplingOrigin {
	fromEntry := map[string]bool{}
	for _, m := range entry.Sampling.Members() {
		fromEntry[m.Name] = true
	}
	var out []samplingOrigin
	for _, m := range s.Members() {
		from := backend + " backend defaults"
		switch flag, ok := flagOfMember[m.Name]; {
		case ok && changed(strings.TrimPrefix(flag, "--")):
			from = flag
		case slices.Contains(extra, m.Name):
			from = "--extra-body"
		case m.Name == "enable_thinking":
			from = "--no-thinking (quirk " + registry.QuirkThinkingToggle + ")"
		case fromEntry[m.Name] && !entry.Raw:
			from = "registry entry " + entry.Alias
		}
		out = append(out, samplingOrigin{m, from})
	}
	return out
}

// samplingLine says in one line what every call of the run sends beside
// the model and the messages, and where each value came from, grouped
// by origin in the order the members first appear.
func samplingLine(origins []samplingOrigin) string {
	const head = "sampling sent with every call: "
	if len(origins) == 0 {
		return head + "none (no generation parameter; the server's own defaults apply)"
	}
	var order []string
	groups := map[string][]string{}
	for _, o := range origins {
		if _, ok := groups[o.from]; !ok {
			order = append(order, o.from)
		}
		groups[o.from] = append(groups[o.from], o.member.Name+"="+o.member.Value)
	}
	parts := make([]string, len(order))
	for i, from := range order {
		parts[i] = strings.Join(groups[from], " ") + " (" + from + ")"
	}
	return head + strings.Join(parts, "; ")
}

// openAIOnly are the request members that OpenAI's API takes and other
// OpenAI-compatible servers (vLLM, SGLang) reject or ignore.
var openAIOnly = []string{"reasoning_effort"}

// openAIHint is the hint for --provider openai pointed at a server that
// is not OpenAI's (a loopback vLLM, a proxy): it sends OpenAI's own
// defaults there, OpenAI-only members among them. "" when every endpoint
// is OpenAI's.
func openAIHint(endpoints []string, origins []samplingOrigin) string {
	var other string
	for _, e := range endpoints {
		if u, err := url.Parse(e); err == nil && !strings.EqualFold(u.Hostname(), "api.openai.com") {
			other = u.Scheme + "://" + u.Host + u.EscapedPath()
			break
		}
	}
	if other == "" {
		return ""
	}
	var sent, only []string
	for _, o := range origins {
		sent = append(sent, o.member.Name+"="+o.member.Value)
		if slices.Contains(openAIOnly, o.member.Name) {
			only = append(only, o.member.Name)
		}
	}
	msg := "hint: --provider openai speaks to OpenAI's API and sends its settings (" + strings.Join(sent, " ") + ") to " + other + ", which is not OpenAI's"
	if len(only) > 0 {
		msg += "; " + strings.Join(only, ", ") + " is a member only OpenAI's API knows"
	}
	vllm, err := runmodel.DefaultSampling(runmodel.BackendVLLM)
	if err != nil { // a backend of the table: cannot fail
		return msg + ". For vLLM and other OpenAI-compatible servers use --provider opensource"
	}
	return msg + ". For vLLM and other OpenAI-compatible servers use --provider opensource, which sends " + vllm.Text()
}
