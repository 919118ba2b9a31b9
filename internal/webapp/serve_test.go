package webapp

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSettingErrors: an address or a TLS file that Serve cannot use is a
// *SettingError naming the setting by what it is (no flag: the command
// names its own), before the server listens or announces itself.
func TestSettingErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		srv   Server
		want  string // Error()
		flags string // Settings as a command words them
	}{
		{"bad address", Server{Listen: "127.0.0.1:http-not-a-port"}, "listen address 127.0.0.1:http-not-a-port: ", "--listen 127.0.0.1:http-not-a-port"},
		{"no certificate", Server{Listen: "127.0.0.1:0", CertFile: missing, KeyFile: junk}, "TLS certificate " + missing + ": ", "--tls-cert " + missing},
		{"no key", Server{Listen: "127.0.0.1:0", CertFile: junk, KeyFile: missing}, "TLS key " + missing + ": ", "--tls-key " + missing},
		{"no pair", Server{Listen: "127.0.0.1:0", CertFile: junk, KeyFile: junk}, "TLS certificate " + junk + ", TLS key " + junk + ": ", "--tls-cert " + junk + ", --tls-key " + junk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var url strings.Builder
			tc.srv.URL = &url
			err := tc.srv.Serve(context.Background(), http.NotFoundHandler())
			se, ok := errors.AsType[*SettingError](err)
			if !ok || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "--") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want a one-line *SettingError starting %q, naming no flag", err, tc.want)
			}
			if got := se.Settings("--listen", "--tls-cert", "--tls-key"); got != tc.flags {
				t.Errorf("Settings: %q, want %q", got, tc.flags)
			}
			if url.Len() != 0 {
				t.Errorf("announced %q", url.String())
			}
		})
	}
}
