package eval

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// A run that cannot start (credentials, key file, endpoint, empty
// selection) fails before the run directory exists, so the corrected
// command is not blocked by a manifest of the failed one.
func TestStartFailureWritesNothing(t *testing.T) {
	bench := generatedBench(t)
	for _, k := range []string{"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT",
		"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_GENAI_USE_VERTEXAI"} {
		t.Setenv(k, "")
	}
	zero := 0
	tests := []struct {
		name, prov, model string
		edit              func(*Options)
		want              string
	}{
		{"azure no key", "azure", "gpt-5.4", nil, "azure: no API key"},
		{"gemini no credentials", "gemini", "gemini-3.1-flash", nil, "gemini: no credentials"},
		{"opensource no endpoint", "opensource", "some/model", nil, "no endpoint"},
		{"missing key file", "openai", "gpt-5.4", func(o *Options) { o.APIKeyFile = "nonexist.txt" }, "nonexist.txt"},
		{"limit 0", "baseline", "random", func(o *Options) { o.Selection.Limit = &zero }, "selection limit 0 selects no record"},
		{"sample 0", "baseline", "random", func(o *Options) { o.Selection.Sample = &zero }, "selection sample 0 selects no record"},
		// A manifest that cannot be written (a name too long, a NaN)
		// must not leave an empty run directory holding .lock.
		{"run name too long", "opensource", "org/" + strings.Repeat("m", 250), nil, "more than the 255 a folder name may hold"},
		{"NaN temperature", "baseline", "random", func(o *Options) { nan := math.NaN(); o.Model.Sampling.Temperature = &nan }, "NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "bad", "r")
			o := baseOptions(bench, out, model(t, tc.prov, tc.model))
			if tc.edit != nil {
				tc.edit(&o)
			}
			s, err := Run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if s != nil {
				t.Errorf("a failed start returned a summary naming %s", s.RunDir)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was created (stat: %v)", out, err)
			}
		})
	}
}

// missingDirs and removeNew undo exactly what a refused start made: the
// folders it created and its lock file, never a folder that was there.
func TestRemoveNew(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "res"), 0o755)
	runDir := filepath.Join(root, "res", "run", "oracle_none")
	created := missingDirs(runDir)
	if err := os.MkdirAll(runDir, 0o755); err != nil || len(created) != 2 || created[0] != filepath.Join(root, "res", "run") {
		t.Fatalf("created %v, %v", created, err)
	}
	os.WriteFile(filepath.Join(runDir, rundir.LockFile), nil, 0o644)
	removeNew(runDir, created, true)
	if _, err := os.Stat(filepath.Join(root, "res", "run")); !os.IsNotExist(err) {
		t.Errorf("run folder left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "res")); err != nil {
		t.Errorf("a folder that was there is gone: %v", err)
	}
	// A folder that holds something else stays.
	created = missingDirs(runDir)
	os.MkdirAll(runDir, 0o755)
	os.WriteFile(filepath.Join(runDir, "notes.txt"), nil, 0o644)
	removeNew(runDir, created, false)
	if _, err := os.Stat(filepath.Join(runDir, "notes.txt")); err != nil {
		t.Errorf("foreign file removed: %v", err)
	}
}

// Two runs of one run directory at once: the second is refused with the
// directory named, and the first's lock ends with it.
func TestRunDirLock(t *testing.T) {
	bench := generatedBench(t)
	for _, shard := range []string{"", "1/2"} {
		t.Run("shard="+shard, func(t *testing.T) {
			// The server holds every call until release is closed, so the
			// first run is still writing when the second starts.
			release := make(chan struct{})
			entered := make(chan struct{}, 64)
			srv, _ := fakemodel.NewServer(fakemodel.ServerConfig{Policy: "random"})
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet { // the preflight passes
					srv.ServeHTTP(w, r)
					return
				}
				entered <- struct{}{}
				<-release
				srv.ServeHTTP(w, r)
			}))
			defer hs.Close()
			out := t.TempDir()
			o := baseOptions(bench, out, model(t, "opensource", "lock-test"))
			o.Endpoints = []string{hs.URL + "/v1"}
			o.Oracle = protocol.OracleImplicit
			limit := 2
			o.Selection.Limit = &limit
			if shard != "" {
				sh, err := results.ParseShard(shard, os.Getenv)
				if err != nil {
					t.Fatal(err)
				}
				o.Selection.Shard = sh
			}
			first := make(chan error, 1)
			go func() { _, err := Run(context.Background(), o); first <- err }()
			<-entered // the first run holds the lock and is calling
			_, err := Run(context.Background(), o)
			dir := rundir.Path(out, results.RunName("opensource", o.Model.Label, false, o.Parse == parse.ModeStrict), string(o.Oracle), o.Selection.Shard)
			if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "in use") {
				t.Errorf("second run: err = %v, want a refusal naming %s", err, dir)
			}
			close(release)
			if err := <-first; err != nil {
				t.Fatalf("first run: %v", err)
			}
			// Released: the same command now runs (and has nothing to ask).
			s, err := Run(context.Background(), o)
			if err != nil {
				t.Fatalf("run after the lock was released: %v", err)
			}
			if s.Attempted != 0 || s.Results.Counts.RecordsOK != s.Selected {
				t.Errorf("rerun asked %d records; %+v", s.Attempted, s.Results.Counts)
			}
		})
	}
}
