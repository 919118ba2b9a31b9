package provider

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// TestRedirectNotFollowed: a 3xx reply is never followed (the request and
// its key would go elsewhere) and is reported as the redirect it is, with
// its status, never as a malformed 200 — for a call and for the
// preflight; a credential in the Location is not repeated.
func TestRedirectNotFollowed(t *testing.T) {
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			followed := 0
			other, _ := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				followed++
				reply(200, okReply)(w, r)
			})
			srv, _ := fakeServer(t, reply(status, "", "Location", other.URL+"/v1/chat/completions?key=secret-token"))
			c, err := New(Config{Backend: runmodel.BackendVLLM, Endpoint: srv.URL + "/v1", Getenv: env(nil)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Complete(context.Background(), conversation(runmodel.Sampling{}))
			var ce *CallError
			if !errors.As(err, &ce) || ce.Status != status || ce.Kind != KindClient || ce.Retryable() {
				t.Fatalf("call: %#v, want a non-retryable client error with status %d", err, status)
			}
			if msg := err.Error(); !strings.Contains(msg, "redirects") || strings.Contains(msg, "malformed") || strings.Contains(msg, "secret-token") {
				t.Errorf("call error %q", msg)
			}
			_, err = c.(runmodel.Identifier).Identify(context.Background(), "m")
			var pe *PreflightError
			if !errors.As(err, &pe) || pe.Unreachable || !strings.Contains(err.Error(), "redirects") || strings.Contains(err.Error(), "secret-token") {
				t.Errorf("preflight: %v, want the redirect named", err)
			}
			if followed != 0 {
				t.Errorf("the redirect was followed %d time(s)", followed)
			}
		})
	}
}
