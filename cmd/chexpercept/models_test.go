package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/goldentest"
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// runModels runs a new models command in-process.
func runModels(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	c := findCommand(t, "models")
	if args == nil {
		args = []string{} // nil would make cobra parse the test binary's os.Args
	}
	return runCommand(t, c, args...)
}

func TestModelsGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"models.txt", nil},
		{"models.json", []string{"--json"}},
		{"models_glm-4v.txt", []string{"glm-4v"}},
		{"models_gpt-5.4.txt", []string{"gpt-5.4"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, stderr, err := runModels(t, tc.args...)
			if err != nil || stderr != "" {
				t.Fatalf("models %q: %v\n%s", tc.args, err, stderr)
			}
			goldentest.Check(t, filepath.Join("testdata", tc.golden), []byte(out))
		})
	}
}

// TestModelsJSON checks the JSON against the registry itself: every
// alias once, in registry order, the fixed key order, serve hints for
// exactly the open models and a price for exactly the priced ones.
func TestModelsJSON(t *testing.T) {
	t.Parallel()
	out, _, err := runModels(t, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not a JSON array of objects: %v", err)
	}
	reg, _ := registry.Default()
	prices, _ := registry.LoadPrices("")
	es := reg.Entries()
	if len(got) != len(es) {
		t.Fatalf("%d objects, registry has %d aliases", len(got), len(es))
	}
	var keys []string
	dec := json.NewDecoder(strings.NewReader(string(got[0]["vllm"])))
	for dec.More() {
		tok, _ := dec.Token()
		if k, ok := tok.(string); ok && dec.More() {
			keys = append(keys, k)
			var skip json.RawMessage
			_ = dec.Decode(&skip)
		}
	}
	if want := []string{"max_model_len", "image_limit", "trust_remote_code", "tp_divisor_hint", "argv", "serve", "min_version", "unsupported"}; !slices.Equal(keys, want) {
		t.Errorf("vllm keys %q, want %q", keys, want)
	}
	for i, e := range es {
		o := got[i]
		var alias string
		_ = json.Unmarshal(o["alias"], &alias)
		if alias != e.Alias {
			t.Errorf("object %d is %q, want %q (registry order)", i, alias, e.Alias)
		}
		if (string(o["vllm"]) != "null") != (e.Provider == "opensource") {
			t.Errorf("%s: vllm %s for provider %s", e.Alias, o["vllm"], e.Provider)
		}
		_, _, priced := prices.Lookup(e.ModelID)
		if (string(o["price"]) != "null") != priced {
			t.Errorf("%s: price %s, price table match %v", e.Alias, o["price"], priced)
		}
		var s runmodel.Sampling
		want, _ := e.SamplingParams(false)
		if err := json.Unmarshal(o["sampling"], &s); err != nil || !samplingEqual(s, want) {
			t.Errorf("%s: sampling %s, want what eval sends (%+v)", e.Alias, o["sampling"], want)
		}
	}
}

func samplingEqual(a, b runmodel.Sampling) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestModelsUserFiles: the --models and --prices files eval accepts show
// in models too: a new alias, an overridden one, a user's price.
func TestModelsUserFiles(t *testing.T) {
	t.Parallel()
	out, _, err := runModels(t, "--models", "../../internal/registry/testdata/extra_models.yaml",
		"--prices", "../../internal/registry/testdata/prices_custom.yaml", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got []registry.ModelInfo
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	byAlias := map[string]registry.ModelInfo{}
	for _, m := range got {
		byAlias[m.Alias] = m
	}
	llava, ok := byAlias["my-llava"]
	if !ok || got[len(got)-1].Alias != "my-llava" {
		t.Fatalf("the user's alias my-llava is missing or not last: %v", out)
	}
	if llava.Price == nil || llava.Price.Key != "llava-med" || llava.Price.Input != 3 {
		t.Errorf("my-llava price %+v, want the user table's llava-med entry", llava.Price)
	}
	if llava.VLLM == nil || llava.VLLM.Serve != "vllm serve me/llava-med" {
		t.Errorf("my-llava (no serve hints) serve line %+v", llava.VLLM)
	}
	glm := byAlias["glm-4v"]
	if glm.VLLM == nil || !strings.Contains(glm.VLLM.Serve, "--max-model-len 32768") || glm.Sampling.Temperature == nil || *glm.Sampling.Temperature != 0.6 {
		t.Errorf("glm-4v not overridden by the user file: %+v %+v", glm.VLLM, glm.Sampling)
	}
	if gpt := byAlias["gpt-5.4"]; gpt.Price != nil {
		t.Errorf("gpt-5.4 priced %+v by a table that replaces the default and lacks it", gpt.Price)
	}
	text, _, err := runModels(t, "--prices", "../../internal/registry/testdata/prices_custom.yaml")
	if err != nil || !strings.Contains(text, "from ../../internal/registry/testdata/prices_custom.yaml;") {
		t.Errorf("the table does not name the user's price file: %v\n%s", err, text)
	}
}

// TestModelsEscapesNames: a model id and a display
// name with a bidi override and a newline are printed escaped
// (textsafe.OneLine), in the table and in the detail view.
func TestModelsEscapesNames(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "m.yaml")
	os.WriteFile(f, []byte("- {alias: evil, provider: opensource, backend: vllm, model_id: \"a\\u202eb\\nc\", display_name: \"d\\u2066e\"}\n"), 0o644)
	for _, args := range [][]string{{"--models", f}, {"--models", f, "evil"}} {
		out, _, err := runModels(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(out, "\u202e\u2066") || !strings.Contains(out, `a\u202eb\nc`) {
			t.Errorf("models %v: raw or missing name:\n%s", args, out)
		}
	}
}

func TestModelsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"models", "medgema"}, `"medgema" is not a registry alias; did you mean medgemma? (see ` + "`chexpercept models`)"},
		{[]string{"models", "--json", "zzz"}, `"zzz" is not a registry alias; ` + "`chexpercept models` lists the registry aliases"},
		{[]string{"models", "glm-4v", "medgemma"}, `unexpected argument "medgemma"`},
		{[]string{"models", "--models", "no-such.yaml"}, "no-such.yaml"},
		{[]string{"models", "--models", "../../internal/registry/testdata/bad_quirk.yaml"}, "bad_quirk.yaml: entry"},
		{[]string{"models", "--prices", "../../internal/registry/testdata/prices_missing.yaml"}, "prices_missing.yaml: prices."},
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// TestModelsServeLineMatchesDeploy keeps the printed serve line, the
// vLLM Deployment and docs/evaluation.md spelling the same flags: every
// flag models prints for the alias the Kubernetes eval Job uses is in
// vllm.yaml with the same value, and the docs show the line verbatim.
func TestModelsServeLineMatchesDeploy(t *testing.T) {
	t.Parallel()
	s, err := loadK8sSet()
	if err != nil {
		t.Fatal(err)
	}
	args, err := s.eval.chexperceptContainer().cliArgs()
	if err != nil {
		t.Fatal(err)
	}
	inv, err := parseInvocation(args)
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := registry.Default()
	e, ok := reg.Lookup(inv.get("model"))
	if !ok {
		t.Fatalf("eval-job.yaml --model %q is no alias", inv.get("model"))
	}
	var vc *k8sContainer
	for _, o := range s.vllm {
		if o.Kind == "Deployment" {
			vc = &o.Spec.Template.Spec.Containers[0]
		}
	}
	if vc == nil {
		t.Fatal("vllm.yaml has no Deployment")
	}
	deployed, _ := vllmFlags(vc.Args)
	argv := registry.VLLMServeArgv(e)
	printed, pos := vllmFlags(argv[2:])
	if len(pos) != 1 || deployed["model"] != pos[0] {
		t.Errorf("models serves %q, vllm.yaml --model=%q", pos, deployed["model"])
	}
	for k, v := range printed {
		if dv, ok := deployed[k]; !ok || dv != v {
			t.Errorf("models prints --%s %q; vllm.yaml has %q (present %v)", k, v, dv, ok)
		}
	}
	prices, _ := registry.LoadPrices("")
	m, err := registry.Describe(e, prices)
	if err != nil {
		t.Fatal(err)
	}
	if doc := readRepoFile(t, "docs/evaluation.md"); !strings.Contains(doc, "\n"+m.VLLM.Serve+"\n") {
		t.Errorf("docs/evaluation.md does not show the serve line models prints:\n%s", m.VLLM.Serve)
	}
}

// TestEvalSuggestsAliases: a --model that is no alias still runs as a raw
// id (spec protocol.md §13), and the notice points at the aliases it may
// have meant, or at `chexpercept models`.
func TestEvalSuggestsAliases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		prov, model, want string
	}{
		{"opensource", "medgema", "no quirks; did you mean medgemma? (see `chexpercept models`)\n"},
		{"opensource", "qwen3.6-27", "did you mean qwen3.6-27b or qwen3.5? (see `chexpercept models`)\n"},
		{"gemini", "gemini-3-pro", "did you mean gemini-3.1-pro? (see `chexpercept models`)\n"},
		{"gemini", "medgema", "did you mean medgemma (--provider opensource)? (see `chexpercept models`)\n"},
		{"opensource", "Qwen/Qwen2.5-VL-7B-Instruct", "no quirks; `chexpercept models` lists the registry aliases\n"},
		{"openai", "gpt-5.4", "is a registry alias for provider azure; with --provider openai it is used as a raw model id, with openai defaults and no quirks\n"},
	} {
		out := t.TempDir()
		stdout, stderr, code := runCLIEnv(t, nil, "eval", "--benchmark", "../../internal/benchmark/testdata/sample", "--provider", tc.prov,
			"--model", tc.model, "--out", out, "--dry-run", "--limit", "1")
		if code != 0 || !strings.Contains(stderr, "notice: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("eval --provider %s --model %s: exit %d\nstdout %s\nstderr %s\nwant %q", tc.prov, tc.model, code, stdout, stderr, tc.want)
		}
	}
}

// TestModelByModelID: --model (and `models NAME`) accept a registry
// entry's model id as well as its alias: the run is the alias's, with no
// notice of a raw id.
func TestModelByModelID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ prov, model, run string }{
		{"opensource", "Qwen/Qwen3.6-27B", "opensource_qwen3.6-27b"},
		{"opensource", "qwen3.6-27b", "opensource_qwen3.6-27b"},
		{"gemini", "gemini-3.1-pro-preview", "gemini_gemini-3.1-pro"},
	} {
		out := t.TempDir()
		stdout, stderr, code := runCLIEnv(t, nil, "eval", "--benchmark", "../../internal/benchmark/testdata/sample", "--provider", tc.prov,
			"--model", tc.model, "--out", out, "--dry-run", "--limit", "1")
		if want := filepath.Join(out, tc.run, "oracle_implicit"); code != 0 || !strings.Contains(stdout, want) || strings.Contains(stderr, "notice:") {
			t.Errorf("eval --provider %s --model %s: exit %d, want a run in %s and no notice\nstdout %s\nstderr %s", tc.prov, tc.model, code, want, stdout, stderr)
		}
	}
	stdout, _, code := runCLI(t, "models", "Qwen/Qwen3.6-27B")
	if code != 0 || !strings.Contains(stdout, "qwen3.6-27b") {
		t.Errorf("models Qwen/Qwen3.6-27B: exit %d\n%s", code, stdout)
	}
}

func TestModelsFormatting(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{2: "2.00", 2.5: "2.50", 0.025: "0.025", 15: "15.00", 0: "0.00", 1.25: "1.25"} {
		if got := num(in); got != want {
			t.Errorf("num(%v) = %q, want %q", in, got, want)
		}
	}
	if got := cell("a\nb\x1b[31m"); got != `a\nb\x1b[31m` {
		t.Errorf("cell kept control characters: %q", got)
	}
	if got := samplingText(runmodel.Sampling{}); got != "model defaults" {
		t.Errorf("empty sampling: %q", got)
	}
	t7, on := 0.7, true
	if got := samplingText(runmodel.Sampling{Temperature: &t7, ReasoningEffort: "low", EnableThinking: &on}); got != "temperature=0.7 reasoning_effort=low enable_thinking=true" {
		t.Errorf("sampling text %q", got)
	}
}

// TestModelsServeLinesStart: `chexpercept models` prints no serve line
// known not to start. Hulu-Med's architecture is not in standard vLLM, so
// it gets a note instead of a command; every printed command names the
// first vLLM release for its architecture; --trust-remote-code appears
// only for a model whose checkpoint needs its own code.
func TestModelsServeLinesStart(t *testing.T) {
	t.Parallel()
	stdout, _, err := runModels(t)
	if err != nil {
		t.Fatal(err)
	}
	serve, notes := 0, 0
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, "Hulu-Med") && (strings.HasPrefix(line, "vllm serve") || strings.HasPrefix(line, "#")) {
			if strings.HasPrefix(line, "vllm serve") || !strings.Contains(line, "not servable by standard vLLM") ||
				!strings.Contains(line, "HulumedQwen2ForCausalLM") {
				t.Errorf("hulu-med line %q: want a note saying why standard vLLM cannot serve it, not a command", line)
			}
			notes++
		}
		if !strings.HasPrefix(line, "vllm serve ") {
			continue
		}
		serve++
		if !regexp.MustCompile(`; vLLM >= \d+\.\d+(\.\d+)?`).MatchString(line) {
			t.Errorf("serve line without a minimum vLLM version: %q", line)
		}
		if strings.Contains(line, "--trust-remote-code") != strings.Contains(line, "InternVL3_5") {
			t.Errorf("serve line %q: --trust-remote-code only where the checkpoint needs its own code (InternVL3.5)", line)
		}
	}
	if serve != 12 || notes != 1 {
		t.Errorf("%d serve lines and %d Hulu-Med notes, want 12 (the open models but Hulu-Med) and 1", serve, notes)
	}
}
