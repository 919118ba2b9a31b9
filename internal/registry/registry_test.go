package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// TestDefaultRegistry checks every entry against the table of spec §13.
func TestDefaultRegistry(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		alias, display, domain, prov, backend, id string
		ctx, img                                  int // 0 = unset
		trust                                     bool
		tp                                        int
		quirks                                    string
	}
	want := []row{
		{"qwen3.6-27b", "Qwen3.6-27B", "general", "opensource", "vllm", "Qwen/Qwen3.6-27B", 65536, 7, false, 0, "thinking_toggle"},
		{"qwen3.5-moe", "Qwen3.5-122B (MoE)", "general", "opensource", "vllm", "Qwen/Qwen3.5-122B-A10B", 65536, 7, false, 0, "thinking_toggle"},
		{"glm-4v", "GLM-4.6V", "general", "opensource", "vllm", "zai-org/GLM-4.6V", 65536, 7, false, 4, "glm_box_unwrap"},
		{"internvl3.5", "InternVL3.5-38B", "general", "opensource", "vllm", "OpenGVLab/InternVL3_5-38B", 40960, 7, true, 0, ""},
		{"gemma4", "Gemma4-31B", "general", "opensource", "vllm", "google/gemma-4-31B-it", 65536, 7, false, 0, ""},
		{"medgemma", "MedGemma-27B", "medical", "opensource", "vllm", "google/medgemma-27b-it", 65536, 7, false, 0, ""},
		{"medgemma1.5", "MedGemma1.5-4B", "medical", "opensource", "vllm", "google/medgemma-1.5-4b-it", 65536, 7, false, 0, ""},
		{"huatuo", "HuatuoGPT-Vision-7B", "medical", "opensource", "vllm", "FreedomIntelligence/HuatuoGPT-Vision-7B-Qwen2.5VL", 65536, 7, false, 4, ""},
		{"lingshu", "Lingshu-32B", "medical", "opensource", "vllm", "lingshu-medical-mllm/Lingshu-32B", 65536, 7, false, 0, ""},
		{"hulu-med", "Hulu-Med-32B", "medical", "opensource", "openai_compat", "ZJU-AI4H/Hulu-Med-32B", 32768, 7, true, 0, ""},
		{"gemini-3.1-pro", "Gemini-3.1-Pro", "proprietary", "gemini", "gemini", "gemini-3.1-pro-preview", 0, 0, false, 0, ""},
		{"gemini-3.1-flash", "Gemini-3.1-Flash", "proprietary", "gemini", "gemini", "gemini-3.1-flash-lite-preview", 0, 0, false, 0, ""},
		{"gpt-5.4", "GPT-5.4", "proprietary", "azure", "azure", "gpt-5.4", 0, 0, false, 0, ""},
		{"gpt-5.4-nano", "GPT-5.4-nano", "proprietary", "azure", "azure", "gpt-5.4-nano", 0, 0, false, 0, ""},
		{"qwen3.6", "Qwen3.6-35B-A3B", "general", "opensource", "vllm", "Qwen/Qwen3.6-35B-A3B", 65536, 7, false, 0, "thinking_toggle"},
		{"qwen3.5", "Qwen3.5-27B", "general", "opensource", "vllm", "Qwen/Qwen3.5-27B", 65536, 7, false, 0, "thinking_toggle"},
		{"gemma3", "Gemma3-27B", "general", "opensource", "vllm", "google/gemma-3-27b-it", 65536, 7, false, 0, ""},
	}
	es := r.Entries()
	if len(es) != len(want) {
		t.Fatalf("%d entries, want %d", len(es), len(want))
	}
	iv := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	for i, w := range want {
		e := es[i]
		got := row{e.Alias, e.DisplayName, e.Domain, e.Provider, e.Backend, e.ModelID, iv(e.MaxModelLen), iv(e.ImageLimit),
			e.TrustRemoteCode, iv(e.TPDivisorHint), strings.Join(e.Quirks, ",")}
		if got != w {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got, w)
		}
		if e.Sampling != (runmodel.Sampling{}) {
			t.Errorf("%s: unexpected sampling overrides %+v", e.Alias, e.Sampling)
		}
	}
	// base: only where the model card names a base that has an alias.
	for _, e := range es {
		want := map[string]string{"medgemma": "gemma3"}[e.Alias]
		if e.Base != want {
			t.Errorf("%s: base %q, want %q", e.Alias, e.Base, want)
		}
	}
}

// A user file may name a base defined by a later file.
func TestBaseAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := dir+"/a.yaml", dir+"/b.yaml"
	os.WriteFile(a, []byte("- {alias: my-med, domain: medical, provider: opensource, backend: vllm, model_id: x/med, base: my-base}\n"), 0o644)
	os.WriteFile(b, []byte("- {alias: my-base, domain: general, provider: opensource, backend: vllm, model_id: x/base}\n"), 0o644)
	r, err := Load(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := r.Lookup("my-med"); e.Base != "my-base" {
		t.Errorf("base %q", e.Base)
	}
	if _, err := Load(a); err == nil || !strings.Contains(err.Error(), "a.yaml") {
		t.Errorf("missing base: %v", err)
	}
}

func TestSamplingParams(t *testing.T) {
	r, _ := Default()
	js := func(s runmodel.Sampling) string {
		var b strings.Builder
		f := func(n string, v *float64) {
			if v != nil {
				b.WriteString(n + "=" + provider.FormatNumber(*v) + " ")
			}
		}
		i := func(n string, v *int64) {
			if v != nil {
				b.WriteString(n + "=" + provider.FormatNumber(float64(*v)) + " ")
			}
		}
		f("temperature", s.Temperature)
		f("top_p", s.TopP)
		i("max_tokens", s.MaxTokens)
		i("max_completion_tokens", s.MaxCompletionTokens)
		i("max_output_tokens", s.MaxOutputTokens)
		if s.ReasoningEffort != "" {
			b.WriteString("reasoning_effort=" + s.ReasoningEffort + " ")
		}
		if s.ThinkingLevel != "" {
			b.WriteString("thinking_level=" + s.ThinkingLevel + " ")
		}
		f("frequency_penalty", s.FrequencyPenalty)
		f("presence_penalty", s.PresencePenalty)
		if s.EnableThinking != nil {
			b.WriteString("enable_thinking=" + map[bool]string{true: "true", false: "false"}[*s.EnableThinking] + " ")
		}
		return strings.TrimSpace(b.String())
	}
	cases := []struct {
		alias      string
		noThinking bool
		want       string
	}{
		{"qwen3.6-27b", false, "temperature=0 top_p=1 max_completion_tokens=8192"},
		{"qwen3.6-27b", true, "temperature=0 top_p=1 max_completion_tokens=8192 enable_thinking=false"},
		{"glm-4v", true, "temperature=0 top_p=1 max_completion_tokens=8192"}, // no thinking_toggle: flag has no effect
		{"hulu-med", false, "max_tokens=8192"},
		{"hulu-med", true, "max_tokens=8192"},
		{"gpt-5.4", false, "temperature=1 max_completion_tokens=8192 reasoning_effort=medium frequency_penalty=0 presence_penalty=0"},
		{"gemini-3.1-pro", true, "temperature=1 max_output_tokens=8192 thinking_level=medium"},
	}
	for _, tc := range cases {
		e, ok := r.Lookup(tc.alias)
		if !ok {
			t.Fatalf("no %s", tc.alias)
		}
		s, err := e.SamplingParams(tc.noThinking)
		if err != nil {
			t.Fatal(err)
		}
		if got := js(s); got != tc.want {
			t.Errorf("%s noThinking=%v: %s, want %s", tc.alias, tc.noThinking, got, tc.want)
		}
	}
}

func TestUserFileOverridesAndExtends(t *testing.T) {
	r, err := Load("testdata/extra_models.yaml")
	if err != nil {
		t.Fatal(err)
	}
	es := r.Entries()
	if len(es) != 18 || es[17].Alias != "my-llava" || es[2].Alias != "glm-4v" {
		t.Fatalf("entries: %d, last %q, third %q", len(es), es[len(es)-1].Alias, es[2].Alias)
	}
	g, _ := r.Lookup("glm-4v")
	s, _ := g.SamplingParams(false)
	if g.DisplayName != "GLM-4.6V (warm)" || *g.MaxModelLen != 32768 || *s.Temperature != 0.6 || *s.TopP != 0.95 || *s.MaxCompletionTokens != 8192 {
		t.Errorf("override not applied: %+v %+v", g, s)
	}
}

func TestBadFiles(t *testing.T) {
	cases := []struct{ file, want string }{
		{"bad_unknown_key.yaml", `line 5: unknown key "[0].temprature"`},
		{"bad_sampling_key.yaml", `unknown key "[0].sampling.temp"`},
		{"bad_backend.yaml", `entry "x": field backend "sglang"`},
		{"bad_quirk.yaml", `unknown quirk "think_toggle"`},
		{"bad_dup.yaml", "alias defined twice"},
		{"bad_alias.yaml", "field alias"},
		{"bad_temperature.yaml", "sampling.temperature -1"},
		{"bad_nan.yaml", "sampling.temperature NaN is outside [0, 2]"},
		{"bad_two_docs.yaml", `line 2: a second YAML document starts here ("---")`},
		{"bad_not_list.yaml", "line 1: want a list, got a mapping"},
		{"missing.yaml", "no such file"},
		{"bad_empty.yaml", "no model entries"},
		{"bad_base.yaml", `entry "my-med": field base "qwen2.5-vl" is not a registry alias`},
		{"bad_base_self.yaml", `entry "my-med": field base names the entry itself`},
		{"bad_vllm_version.yaml", `entry "x": field vllm_min_version "latest" is not a release number like 0.17.0`},
	}
	for _, tc := range cases {
		_, err := Load("testdata/" + tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
			t.Errorf("%s: got %v, want an error naming the file and containing %q", tc.file, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: multi-line error %q", tc.file, err)
		}
	}
}

// TestLargeFileBounded: a --models file of wrong-typed entries far above
// any real registry is refused by its size before it is parsed
// (unbounded, 15 MiB of them would take 1.2 to 2.5 GB); one just under the cap
// is explained in one short line.
func TestLargeFileBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, bytes.Repeat([]byte("- 1\n"), 15<<20/4), 0o644)
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "more than the 262144-byte limit") {
		t.Errorf("15 MiB file: %v", err)
	}
	under := filepath.Join(dir, "under.yaml")
	os.WriteFile(under, bytes.Repeat([]byte("- 1\n"), (256<<10)/4-1), 0o644)
	_, err := Load(under)
	if err == nil || !strings.Contains(err.Error(), "and 65530 more") || len(err.Error()) > 600 {
		t.Errorf("file under the cap: %.300v", err)
	}
}

func TestResolve(t *testing.T) {
	r, _ := Default()
	cases := []struct {
		prov, model          string
		backend, label, id   string
		raw, notice, wantErr bool
	}{
		{"opensource", "glm-4v", "vllm", "glm-4v", "zai-org/GLM-4.6V", false, false, false},
		{"opensource", "hulu-med", "openai_compat", "hulu-med", "ZJU-AI4H/Hulu-Med-32B", false, false, false},
		{"azure", "gpt-5.4", "azure", "gpt-5.4", "gpt-5.4", false, false, false},
		{"gemini", "gemini-3.1-pro", "gemini", "gemini-3.1-pro", "gemini-3.1-pro-preview", false, false, false},
		{"opensource", "Qwen/Qwen2.5-VL-7B", "vllm", "Qwen--Qwen2.5-VL-7B", "Qwen/Qwen2.5-VL-7B", true, true, false},
		{"openai", "gpt-5.4", "openai", "gpt-5.4", "gpt-5.4", true, true, false}, // alias of another provider
		{"openai", "llava:13b", "openai", "llava_13b", "llava:13b", true, true, false},
		{"gemini", "gemini-2.5-flash", "gemini", "gemini-2.5-flash", "gemini-2.5-flash", true, true, false},
		{"baseline", "oracle", "baseline", "oracle", "oracle", false, false, false},
		{"baseline", "dummy", "", "", "", false, false, true},
		// vllm is another spelling of opensource
		{"vllm", "x", "vllm", "x", "x", true, true, false},
		{"vllm", "glm-4v", "vllm", "glm-4v", "zai-org/GLM-4.6V", false, false, false},
		{"vLLM", "x", "", "", "", false, false, true},
		{"opensource", " ", "", "", "", false, false, true},
		// an entry's model id names the entry, as its alias does
		{"opensource", "Qwen/Qwen3.6-27B", "vllm", "qwen3.6-27b", "Qwen/Qwen3.6-27B", false, false, false},
		{"vllm", "zai-org/GLM-4.6V", "vllm", "glm-4v", "zai-org/GLM-4.6V", false, false, false},
		{"gemini", "gemini-3.1-pro-preview", "gemini", "gemini-3.1-pro", "gemini-3.1-pro-preview", false, false, false},
		{"openai", "Qwen/Qwen3.6-27B", "openai", "Qwen--Qwen3.6-27B", "Qwen/Qwen3.6-27B", true, true, false},   // another provider's id
		{"opensource", "qwen/qwen3.6-27b", "vllm", "qwen--qwen3.6-27b", "qwen/qwen3.6-27b", true, true, false}, // ids are exact
	}
	for _, tc := range cases {
		e, notice, err := r.Resolve(tc.prov, tc.model)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s/%s: err %v", tc.prov, tc.model, err)
			continue
		}
		if err != nil {
			continue
		}
		if e.Backend != tc.backend || e.Label() != tc.label || e.ModelID != tc.id || e.Raw != tc.raw || (notice != "") != tc.notice || e.Provider != CanonicalProvider(tc.prov) {
			t.Errorf("%s/%s: %+v label %q notice %q", tc.prov, tc.model, e, e.Label(), notice)
		}
		if e.Raw && len(e.Quirks) > 0 {
			t.Errorf("raw entry has quirks")
		}
	}
	// a raw opensource id gets the vllm defaults, even with --no-thinking
	e, _, _ := r.Resolve("opensource", "Qwen/Qwen3-VL-8B")
	s, _ := e.SamplingParams(true)
	if *s.Temperature != 0 || *s.TopP != 1 || *s.MaxCompletionTokens != 8192 || s.MaxTokens != nil || s.EnableThinking != nil {
		t.Errorf("raw sampling %+v", s)
	}
}

// TestResolveSharedModelID: a model id that two entries of the provider
// share names neither; it runs raw, and the notice names both aliases.
func TestResolveSharedModelID(t *testing.T) {
	f := filepath.Join(t.TempDir(), "models.yaml")
	yaml := "- alias: qwen3.6-27b-long\n  display_name: Qwen3.6-27B long\n  domain: general\n  provider: opensource\n" +
		"  backend: vllm\n  model_id: Qwen/Qwen3.6-27B\n  max_model_len: 131072\n"
	if err := os.WriteFile(f, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	e, notice, err := r.Resolve("opensource", "Qwen/Qwen3.6-27B")
	if err != nil || !e.Raw || !strings.Contains(notice, "qwen3.6-27b, qwen3.6-27b-long") {
		t.Errorf("shared model id: raw %v notice %q err %v", e.Raw, notice, err)
	}
	if e, _, _ := r.Resolve("opensource", "qwen3.6-27b-long"); e.Raw || *e.MaxModelLen != 131072 {
		t.Errorf("alias of the added entry: %+v", e)
	}
}

func TestRunLabel(t *testing.T) {
	cases := map[string]string{
		"Qwen/Qwen2.5-VL-7B":    "Qwen--Qwen2.5-VL-7B",
		"glm-4v":                "glm-4v",
		"a b:c@d/e":             "a_b_c_d--e",
		"médical/é":             "m_dical--_",
		"org/sub/model_v1.2":    "org--sub--model_v1.2",
		"gemini-3.1-flash-lite": "gemini-3.1-flash-lite",
		"../../etc":             "..--..--etc",
	}
	for in, want := range cases {
		if got := RunLabel(in); got != want {
			t.Errorf("RunLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrices(t *testing.T) {
	p, err := LoadPrices("")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(defaultPrices)
	if p.SHA256 != hex.EncodeToString(sum[:]) {
		t.Error("hash is not of the file bytes")
	}
	lookups := []struct{ id, key string }{
		{"gpt-5.4", "gpt-5.4"},
		{"gpt-5.4-nano", "gpt-5.4-nano"},
		{"GPT-5.4-Nano-2026-03-01", "gpt-5.4-nano"},
		{"azure/gpt-5.4-mini", "gpt-5.4-mini"},
		{"gemini-3.1-pro-preview", "gemini-3.1-pro-preview"},
		{"gemini-3.1-flash-lite-preview", "gemini-3.1-flash-lite-preview"},
		{"gemini-3.1-flash", ""},
		{"Qwen/Qwen3.6-27B", ""},
	}
	for _, l := range lookups {
		k, _, ok := p.Lookup(l.id)
		if k != l.key || ok != (l.key != "") {
			t.Errorf("Lookup(%q) = %q %v, want %q", l.id, k, ok, l.key)
		}
	}
	u := &runmodel.Usage{Input: 1_000_000, CachedInput: 400_000, Output: 200_000, Thinking: 150_000, Total: 1_200_000}
	// (600k·2.50 + 400k·0.25 + 200k·15.00) / 1e6 = 1.5 + 0.1 + 3.0
	if c := p.Cost("gpt-5.4", u); c == nil || math.Abs(*c-4.6) > 1e-12 {
		t.Errorf("cost = %v, want 4.6", c)
	}
	if c := p.Cost("Qwen/Qwen3.6-27B", u); c != nil {
		t.Errorf("unpriced model cost %v, want nil", *c)
	}
	if c := p.Cost("gpt-5.4", nil); c != nil {
		t.Error("cost without usage")
	}

	cp, err := LoadPrices("testdata/prices_custom.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile("testdata/prices_custom.yaml")
	sum = sha256.Sum256(b)
	if cp.SHA256 != hex.EncodeToString(sum[:]) {
		t.Error("custom hash")
	}
	if k, _, _ := cp.Lookup("me/LLaVA-Med-7b"); k != "llava-med" {
		t.Errorf("longest substring: got %q", k)
	}
	if _, _, ok := cp.Lookup("gpt-5.4"); ok {
		t.Error("a user price file replaces the default table")
	}
	for file, want := range map[string]string{
		"testdata/prices_bad_key.yaml": `line 2: unknown key "prices.x.reasoning"`,
		"testdata/prices_missing.yaml": "prices.x.cached_input is missing",
		"testdata/nope.yaml":           "no such file",
	} {
		if _, err := LoadPrices(file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}

// TestVLLMFacts: the registry says which vLLM release each open model
// needs, that standard vLLM cannot serve Hulu-Med, and asks for remote
// code only where the checkpoint brings its own (InternVL3.5's
// configuration; Hulu-Med's whole model).
func TestVLLMFacts(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range r.Entries() {
		if e.Provider != "opensource" {
			continue
		}
		hulu := e.Alias == "hulu-med"
		if hulu != (e.VLLMUnsupported != "") {
			t.Errorf("%s: vllm_unsupported %q", e.Alias, e.VLLMUnsupported)
		}
		if !hulu && e.VLLMMinVersion == "" {
			t.Errorf("%s: no vllm_min_version", e.Alias)
		}
		if e.TrustRemoteCode != (hulu || e.Alias == "internvl3.5") {
			t.Errorf("%s: trust_remote_code %v", e.Alias, e.TrustRemoteCode)
		}
	}
	for alias, v := range map[string]string{"gemma4": "0.19.0", "qwen3.5": "0.17.0", "qwen3.5-moe": "0.17.0", "qwen3.6": "0.18.0",
		"qwen3.6-27b": "0.18.0", "glm-4v": "0.12.0"} {
		if e, _ := r.Lookup(alias); e.VLLMMinVersion != v {
			t.Errorf("%s: vllm_min_version %q, want %s", alias, e.VLLMMinVersion, v)
		}
	}
}
