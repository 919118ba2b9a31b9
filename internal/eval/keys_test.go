package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// API keys (from the environment or a key file) and endpoint credentials
// never reach any file of the run directory or the log, even when the
// server echoes them back in error bodies.
func TestKeysNeverWritten(t *testing.T) {
	const envKey = "sk-envSECRET-0123456789abcdef"
	const fileKey = "sk-fileSECRET-fedcba9876543210"
	const urlPass = "urlSECRETpass"
	srv, _ := fakemodel.NewServer(fakemodel.ServerConfig{Policy: "random"})
	var n atomic.Int64
	var sawAuth atomic.Value
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		sawAuth.Store(auth)
		if r.Method == http.MethodGet { // the preflight: not a chat call
			srv.ServeHTTP(w, r)
			return
		}
		if n.Add(1)%5 == 0 { // a hostile server echoing the credentials
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"bad key %s (header %q)"}}`, strings.TrimPrefix(auth, "Bearer "), auth)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	endpoint := strings.Replace(hs.URL, "http://", "http://user:"+urlPass+"@", 1) + "/v1"

	keyFile := filepath.Join(t.TempDir(), "key.txt")
	if err := os.WriteFile(keyFile, []byte(fileKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, key string
	}{{"env", "", envKey}, {"file", keyFile, fileKey}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", envKey)
			var log bytes.Buffer
			o := baseOptions(sampleBench, t.TempDir(), model(t, "openai", "key-test-model"))
			o.Endpoints, o.APIKeyFile, o.Log = []string{endpoint}, tc.file, &log
			s := run(t, o)
			if got, _ := sawAuth.Load().(string); got != "Bearer "+tc.key {
				t.Fatalf("server saw %q, not the %s key", got, tc.name)
			}
			if s.Results.Counts.RecordsError == 0 {
				t.Fatal("no record hit the echoing 401, so the test proves nothing")
			}
			secrets := []string{envKey, fileKey, urlPass}
			check := func(what string, b []byte) {
				for _, sec := range secrets {
					if bytes.Contains(b, []byte(sec)) {
						t.Errorf("%s contains a secret (%s…)", what, sec[:6])
					}
				}
			}
			check("log", log.Bytes())
			filepath.Walk(filepath.Dir(filepath.Dir(s.RunDir)), func(p string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() {
					check(p, readFile(t, p))
				}
				return nil
			})
			if !strings.Contains(string(readFile(t, filepath.Join(s.RunDir, "results.jsonl"))), "[redacted]") {
				t.Error("no error message shows the scrubbed echo")
			}
			m := string(readFile(t, filepath.Join(s.RunDir, "manifest.json")))
			if !strings.Contains(m, strings.TrimPrefix(hs.URL, "http://")) {
				t.Error("manifest does not record the endpoint")
			}
		})
	}
}

// TestKeyEchoedInRepliesRedacted: a server that echoes the key inside
// successful replies (content and reasoning) gets "[redacted]" stored
// instead; the run's manifest counts every replacement and the log says
// so once.
func TestKeyEchoedInRepliesRedacted(t *testing.T) {
	const key = "sk-echoSECRET-0123456789abcdef"
	srv, _ := fakemodel.NewServer(fakemodel.ServerConfig{Policy: "random"})
	var echoed atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, r)
		var body map[string]any
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return
		}
		msg := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		msg["content"] = msg["content"].(string) + " (" + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + ")"
		msg["reasoning_content"] = "the key is " + key
		echoed.Add(2)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(body)
	}))
	defer hs.Close()
	t.Setenv("OPENAI_API_KEY", key)
	var log bytes.Buffer
	o := baseOptions(sampleBench, t.TempDir(), model(t, "openai", "key-test-model"))
	o.Endpoints, o.Log, o.NoPreflight = []string{hs.URL + "/v1"}, &log, true // the server answers chat calls only
	s := run(t, o)
	if echoed.Load() == 0 {
		t.Fatal("no reply echoed the key, so the test proves nothing")
	}
	filepath.Walk(filepath.Dir(filepath.Dir(s.RunDir)), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && bytes.Contains(readFile(t, p), []byte(key)) {
			t.Errorf("%s contains the key", p)
		}
		return nil
	})
	if bytes.Contains(log.Bytes(), []byte(key)) {
		t.Error("the log contains the key")
	}
	if !strings.Contains(string(readFile(t, filepath.Join(s.RunDir, rundir.ResultsFile))), "[redacted]") {
		t.Error("results.jsonl shows no [redacted] marker")
	}
	m, err := rundir.ReadManifest(s.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Redactions != echoed.Load() {
		t.Errorf("manifest redactions %d, want %d", m.Redactions, echoed.Load())
	}
	if want := fmt.Sprintf("manifest.json redactions: %d)", echoed.Load()); strings.Count(log.String(), want) != 1 {
		t.Errorf("log does not say %q once:\n%s", want, log.String())
	}
}
