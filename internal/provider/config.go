package provider

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// placeholderKey is sent to keyless local servers (vLLM, SGLang), whose
// OpenAI-compatible API ignores the Authorization header.
const placeholderKey = "EMPTY"

// DefaultOpenAIEndpoint is the OpenAI API base URL.
const DefaultOpenAIEndpoint = "https://api.openai.com/v1"

// DefaultAzureAPIVersion is the Azure OpenAI api-version sent when none is
// configured (spec §11 example).
const DefaultAzureAPIVersion = "2024-12-01-preview"

// Config selects and configures a network client.
type Config struct {
	Backend string // vllm | openai_compat | openai | azure | gemini

	// Endpoint is the base URL: ".../v1" for OpenAI-compatible servers
	// (default api.openai.com for openai), the resource URL for azure
	// (default $AZURE_OPENAI_ENDPOINT), an API base URL override for gemini.
	Endpoint string

	// APIKeyFile names a file holding the key (first line, trimmed). When
	// empty, the backend's usual environment variable is used.
	APIKeyFile string

	AzureAPIVersion string // default DefaultAzureAPIVersion

	// GeminiImageFormat is "png" (default: the file bytes) or "jpeg"
	// (re-encoded at quality 75, the reference's SDK behaviour).
	GeminiImageFormat string
	// GeminiVertex selects Vertex AI (project from $GOOGLE_CLOUD_PROJECT,
	// location "global", application-default credentials) instead of the
	// Gemini API key. It is also chosen when no Gemini key is set and a
	// project is.
	GeminiVertex bool

	// HTTPClient overrides the pooled default client (tests). Either way
	// reply bodies are capped at MaxReplyBytes.
	HTTPClient *http.Client

	// MaxReplyBytes caps one HTTP reply body; ≤ 0 means
	// DefaultMaxReplyBytes. A larger reply fails the call with KindTooLarge.
	MaxReplyBytes int64

	// budget replaces the process budget of reply bytes (tests).
	budget *replyBudget

	// Getenv overrides os.Getenv (tests).
	Getenv func(string) string
}

func (c *Config) getenv(k string) string {
	if c.Getenv != nil {
		return c.Getenv(k)
	}
	return os.Getenv(k)
}

// maxKeyFileBytes bounds an API key file (a key is under a kilobyte).
const maxKeyFileBytes = 64 << 10

// apiKey resolves the key: the key file when given, else the first set
// variable among envs. The error names the file or variables, never a value.
func (c *Config) apiKey(envs ...string) (string, error) {
	if c.APIKeyFile != "" {
		b, err := safefile.ReadFile(c.APIKeyFile, maxKeyFileBytes, safefile.Follow)
		if err != nil {
			return "", fmt.Errorf("api key file: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		k := strings.TrimSpace(line)
		if k == "" {
			return "", fmt.Errorf("api key file %s: first line is empty", c.APIKeyFile)
		}
		return k, nil
	}
	for _, e := range envs {
		if v := strings.TrimSpace(c.getenv(e)); v != "" {
			return v, nil
		}
	}
	return "", nil
}

// New returns the network client of cfg.Backend. The in-process
// baselines are package fakemodel's (NewClient).
func New(cfg Config) (Client, error) {
	switch cfg.Backend {
	case runmodel.BackendVLLM, runmodel.BackendOpenAICompat, runmodel.BackendOpenAI, runmodel.BackendAzure:
		return newOpenAI(cfg)
	case runmodel.BackendGemini:
		return newGemini(cfg)
	case runmodel.BackendBaseline:
		return nil, fmt.Errorf("backend baseline has no network client; use the in-process baseline client (package fakemodel)")
	}
	return nil, fmt.Errorf("unknown backend %q (want vllm, openai_compat, openai, azure or gemini)", cfg.Backend)
}

// defaultHTTPClient pools enough idle connections per host for a highly
// concurrent run against one server; per-call deadlines come from ctx.
func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}
