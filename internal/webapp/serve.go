package webapp

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/safefile"
)

// MaxPEMBytes bounds a TLS certificate or key file (a chain is a few
// kilobytes).
const MaxPEMBytes = 1 << 20

// ShutdownGrace is how long a stopping server lets requests in flight
// finish.
const ShutdownGrace = 5 * time.Second

// SettingError is a setting of a Server that cannot be used: its listen
// address, its TLS certificate or key file, or the two files together.
// The fields name the settings at fault (the others are ""), so that a
// command can name the flags that gave them.
type SettingError struct {
	Listen, CertFile, KeyFile string
	Err                       error
}

func (e *SettingError) Error() string {
	return e.Settings("listen address", "TLS certificate", "TLS key") + ": " + e.Err.Error()
}

// Settings names the settings at fault, each by its name given (of the
// listen address, the certificate file, the key file) and its value:
// "TLS certificate a.pem, TLS key b.pem".
func (e *SettingError) Settings(listen, cert, key string) string {
	if e.CertFile == "" && e.KeyFile == "" {
		return listen + " " + e.Listen
	}
	var at []string
	if e.CertFile != "" {
		at = append(at, cert+" "+e.CertFile)
	}
	if e.KeyFile != "" {
		at = append(at, key+" "+e.KeyFile)
	}
	return strings.Join(at, ", ")
}

func (e *SettingError) Unwrap() error { return e.Err }

// LoadKeyPair reads a TLS certificate and key the way every user-named
// file is read (regular files only, never blocking, bounded) and checks
// that they make a pair. Its errors are *SettingError.
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := safefile.ReadFile(certFile, MaxPEMBytes, safefile.Follow)
	if err != nil {
		return tls.Certificate{}, &SettingError{CertFile: certFile, Err: safefile.Reason(err)}
	}
	keyPEM, err := safefile.ReadFile(keyFile, MaxPEMBytes, safefile.Follow)
	if err != nil {
		return tls.Certificate{}, &SettingError{KeyFile: keyFile, Err: safefile.Reason(err)}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, &SettingError{CertFile: certFile, KeyFile: keyFile, Err: err}
	}
	return pair, nil
}

// Server is how an app is served.
type Server struct {
	Listen            string // host:port
	CertFile, KeyFile string // both or neither: HTTPS
	// URL, when set, is told the address served ("http://127.0.0.1:8080/")
	// once the server listens.
	URL io.Writer
}

// Serve serves h until ctx ends (the command's SIGINT or SIGTERM), then
// shuts down gracefully: no new connections, requests in flight get
// ShutdownGrace to finish. The certificate pair is loaded before the
// server listens or announces itself, so a bad file never leaves a server
// that prints its URL and then cannot answer. An address or a file that
// cannot be used is a *SettingError.
func (s Server) Serve(ctx context.Context, h http.Handler) error {
	useTLS := s.CertFile != ""
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if useTLS {
		pair, err := LoadKeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return &SettingError{Listen: s.Listen, Err: err}
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 64 << 10,
		TLSConfig: cfg}
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	if s.URL != nil {
		fmt.Fprintf(s.URL, "%s://%s/\n", scheme, ln.Addr())
	}
	errc := make(chan error, 1)
	go func() {
		if useTLS {
			errc <- hs.ServeTLS(ln, "", "") // the pair is in TLSConfig
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	return hs.Shutdown(sctx)
}
