package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// recorder is a server answering every request with status and body,
// remembering the paths and queries it saw.
type recorder struct {
	mu    sync.Mutex
	paths []string
}

func (rc *recorder) serve(t *testing.T, status int, body string) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.paths = append(rc.paths, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func identify(t *testing.T, cfg Config, model string) (runmodel.Identity, error) {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c.(runmodel.Identifier).Identify(context.Background(), model)
}

const vllmModels = `{"object":"list","data":[
 {"id":"qwen3.6-27b","object":"model","created":1764590000,"owned_by":"vllm","root":"Qwen/Qwen3.6-27B","parent":null,"max_model_len":32768,"permission":[]},
 {"id":"lora-a","object":"model","created":1764590000,"owned_by":"vllm","root":"/loras/a","parent":"qwen3.6-27b","max_model_len":32768}]}`

// A vLLM model list gives the entry's id, root, max_model_len and
// owned_by, and not created (vLLM stamps the time of the request).
func TestIdentifyVLLM(t *testing.T) {
	var rc recorder
	url := rc.serve(t, 200, vllmModels)
	id, err := identify(t, Config{Backend: runmodel.BackendVLLM, Endpoint: url + "/v1", Getenv: env(nil)}, "qwen3.6-27b")
	if err != nil {
		t.Fatal(err)
	}
	if !id.Verified || id.Source != runmodel.IdentityModelsList || *id.ID != "qwen3.6-27b" || *id.Root != "Qwen/Qwen3.6-27B" ||
		*id.MaxModelLen != 32768 || *id.OwnedBy != "vllm" || id.Policy != nil || id.SHA256 == "" {
		t.Errorf("identity %+v", id)
	}
	if rc.paths[0] != "GET /v1/models?" {
		t.Errorf("asked %v, want GET /v1/models", rc.paths)
	}
	// The same entry with another created time is the same server; another
	// root or context length is not.
	url2 := (&recorder{}).serve(t, 200, strings.ReplaceAll(vllmModels, "1764590000", "1764599999"))
	again, _ := identify(t, Config{Backend: runmodel.BackendVLLM, Endpoint: url2 + "/v1", Getenv: env(nil)}, "qwen3.6-27b")
	if !again.Same(id) {
		t.Errorf("created changed the identity")
	}
	for _, other := range []string{strings.Replace(vllmModels, "32768", "8192", 1), strings.Replace(vllmModels, "Qwen/Qwen3.6-27B", "Qwen/Qwen3.6-27B-FP8", 1)} {
		u := (&recorder{}).serve(t, 200, other)
		o, err := identify(t, Config{Backend: runmodel.BackendVLLM, Endpoint: u + "/v1", Getenv: env(nil)}, "qwen3.6-27b")
		if err != nil || o.Same(id) {
			t.Errorf("another deployment has the same identity (err %v)", err)
		}
	}
}

func TestIdentifyFailures(t *testing.T) {
	const key = "sk-identifySECRET-0123456789"
	huge := `{"object":"list","data":[{"id":"` + strings.Repeat("x", maxPreflightBytes) + `"}]}`
	for _, c := range []struct {
		name   string
		status int
		body   string
		check  func(*PreflightError) bool
		want   string
	}{
		{"not served", 200, vllmModels, func(e *PreflightError) bool { return e.NotServed && errors.Is(e, ErrModelNotServed) },
			`does not serve model "gpt-x" (it serves "qwen3.6-27b", "lora-a")`},
		{"refused", 401, `{"error":{"message":"bad key ` + key + `"}}`, func(e *PreflightError) bool { return e.Refused },
			"the API key was refused (HTTP 401)"},
		{"forbidden", 403, `{}`, func(e *PreflightError) bool { return e.Refused }, "refused (HTTP 403)"},
		{"no models endpoint", 404, `{"detail":"Not Found"}`, func(e *PreflightError) bool { return errors.Is(e, ErrNoModelsEndpoint) },
			"GET /models failed (HTTP 404)"},
		{"server error", 500, `{"error":{"message":"boom"}}`, func(e *PreflightError) bool { return !e.Refused && !e.NotServed }, "HTTP 500"},
		{"not a list", 200, `{"hello":1}`, func(e *PreflightError) bool { return true }, "not a model list"},
		{"too large", 200, huge, func(e *PreflightError) bool { return true }, "reply larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := (&recorder{}).serve(t, c.status, c.body)
			_, err := identify(t, Config{Backend: runmodel.BackendOpenAI, Endpoint: url + "/v1", Getenv: env(map[string]string{"OPENAI_API_KEY": key})}, "gpt-x")
			var pe *PreflightError
			if !errors.As(err, &pe) || !c.check(pe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %#v (%v), want %q", err, err, c.want)
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "identifySECRET") || len(err.Error()) > 600 {
				t.Errorf("error %q: not one short line without the key", err)
			}
		})
	}
}

// serve-baseline's one entry answers any model id: its identity is the
// baseline's policy and seed. A list of several entries is matched by id.
func TestIdentifyBaselineEntry(t *testing.T) {
	entry := `{"id":"baseline-random","object":"model","created":0,"owned_by":"` + BaselineOwner + `","policy":"random","policy_seed":5}`
	url := (&recorder{}).serve(t, 200, `{"object":"list","data":[`+entry+`]}`)
	id, err := identify(t, Config{Backend: runmodel.BackendVLLM, Endpoint: url + "/v1", Getenv: env(nil)}, "qwen3.6-27b")
	if err != nil || *id.Policy != "random" || *id.PolicySeed != 5 || *id.OwnedBy != BaselineOwner {
		t.Fatalf("identity %+v, error %v", id, err)
	}
	url = (&recorder{}).serve(t, 200, `{"object":"list","data":[`+entry+`,{"id":"m2","owned_by":"vllm"}]}`)
	if _, err := identify(t, Config{Backend: runmodel.BackendVLLM, Endpoint: url + "/v1", Getenv: env(nil)}, "qwen3.6-27b"); !errors.Is(err, ErrModelNotServed) {
		t.Errorf("error %v, want not served", err)
	}
}

// Azure asks the SDK's model lookup for the deployment, with the
// api-version and without an Authorization header.
func TestIdentifyAzure(t *testing.T) {
	var rc recorder
	url := rc.serve(t, 200, `{"id":"gpt-4o-2024-08-06","object":"model","created":1722902400,"owned_by":"system"}`)
	id, err := identify(t, Config{Backend: runmodel.BackendAzure, Endpoint: url, Getenv: env(map[string]string{"AZURE_OPENAI_API_KEY": "azure-key-0123456789"})}, "gpt-4o-2024-08-06")
	if err != nil || id.Source != runmodel.IdentityModelLookup || *id.ID != "gpt-4o-2024-08-06" || *id.OwnedBy != "system" {
		t.Fatalf("identity %+v, error %v", id, err)
	}
	if want := "GET /openai/models/gpt-4o-2024-08-06?api-version=" + DefaultAzureAPIVersion; rc.paths[0] != want {
		t.Errorf("asked %q, want %q", rc.paths[0], want)
	}
	url = (&recorder{}).serve(t, 404, `{"error":{"code":"DeploymentNotFound","message":"no"}}`)
	_, err = identify(t, Config{Backend: runmodel.BackendAzure, Endpoint: url, Getenv: env(map[string]string{"AZURE_OPENAI_API_KEY": "azure-key-0123456789"})}, "mine")
	if !errors.Is(err, ErrModelNotServed) || !strings.Contains(err.Error(), `deployment "mine"`) {
		t.Errorf("error %v, want deployment not served", err)
	}
}

// Gemini asks the SDK's model lookup; the identity is the resource name,
// version and token limits.
func TestIdentifyGemini(t *testing.T) {
	var rc recorder
	url := rc.serve(t, 200, `{"name":"models/gemini-3-pro","version":"3.0","displayName":"Gemini 3 Pro","inputTokenLimit":1048576,"outputTokenLimit":65536}`)
	c := geminiClientFor(t, url, Config{})
	id, err := c.(runmodel.Identifier).Identify(context.Background(), "gemini-3-pro")
	if err != nil || id.Source != runmodel.IdentityModelLookup || *id.ID != "models/gemini-3-pro" || *id.Version != "3.0" ||
		*id.InputTokenLimit != 1048576 || *id.OutputTokenLimit != 65536 {
		t.Fatalf("identity %+v, error %v", id, err)
	}
	if !strings.HasPrefix(rc.paths[0], "GET /") || !strings.Contains(rc.paths[0], "models/gemini-3-pro") {
		t.Errorf("asked %v", rc.paths)
	}
	url = (&recorder{}).serve(t, 404, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`)
	c = geminiClientFor(t, url, Config{})
	if _, err := c.(runmodel.Identifier).Identify(context.Background(), "gemini-9"); !errors.Is(err, ErrModelNotServed) {
		t.Errorf("error %v, want not served", err)
	}
	url = (&recorder{}).serve(t, 403, `{"error":{"code":403,"message":"API key AIza-gemini-secret-0123456789 not valid","status":"PERMISSION_DENIED"}}`)
	c = geminiClientFor(t, url, Config{})
	_, err = c.(runmodel.Identifier).Identify(context.Background(), "gemini-3-pro")
	var pe *PreflightError
	if !errors.As(err, &pe) || !pe.Refused || strings.Contains(err.Error(), "gemini-secret") {
		t.Errorf("error %v, want the key refused and not printed", err)
	}
}

// TestIdentityHoldsNoKey: a server that echoes the API key in the texts of
// its model entry (the Authorization header as owned_by, the key
// upper-cased as root, a long part of it as the policy) does not get it
// into the identity, which is printed and written to the manifest.
func TestIdentityHoldsNoKey(t *testing.T) {
	const key = "sk-identity-SECRET-0123456789abcdef"
	body := `{"data":[{"id":"qwen","object":"model","owned_by":"Bearer ` + key + `","root":"` + strings.ToUpper(key) +
		`","policy":"` + key[3:25] + `"}]}`
	url := (&recorder{}).serve(t, 200, body)
	id, err := identify(t, Config{Backend: runmodel.BackendVLLM, Endpoint: url + "/v1", Getenv: env(map[string]string{"VLLM_API_KEY": key})}, "qwen")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ToLower(id.String())
	for _, part := range []string{strings.ToLower(key), strings.ToLower(key[3:25]), "secret-0123456789"} {
		if strings.Contains(text, part) {
			t.Errorf("the identity holds the key: %s", id)
		}
	}
	if *id.ID != "qwen" {
		t.Errorf("id %q, want qwen", *id.ID)
	}
}

// TestGeminiPreflightCap: Gemini's model lookup reads at most the
// preflight's 4 MiB, as the models list of the other backends does, not
// the run's larger reply cap.
func TestGeminiPreflightCap(t *testing.T) {
	url := (&recorder{}).serve(t, 200, `{"name":"models/gemini-3-pro","displayName":"`+strings.Repeat("x", maxPreflightBytes)+`"}`)
	c := geminiClientFor(t, url, Config{MaxReplyBytes: 32 << 20})
	_, err := c.(runmodel.Identifier).Identify(context.Background(), "gemini-3-pro")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("larger than %d bytes", maxPreflightBytes)) {
		t.Errorf("error %v, want the reply refused past %d bytes", err, maxPreflightBytes)
	}
}
