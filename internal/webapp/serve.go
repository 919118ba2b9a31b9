package webapp

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/chexpercept/chexpercept/internal/imagefile"
)

// MaxPEMBytes bounds a TLS certificate or key file (a chain is a few
// kilobytes).
const MaxPEMBytes = 1 << 20

// ShutdownGrace is how long a stopping server lets requests in flight
// finish.
const ShutdownGrace = 5 * time.Second

// LoadKeyPair reads a TLS certificate and key the way every user-named
// file is read (regular files only, never blocking, bounded) and checks
// that they make a pair. Errors name the files by the apps' flags
// (--tls-cert, --tls-key).
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := imagefile.ReadFile(certFile, MaxPEMBytes, imagefile.Follow)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-cert %s: %w", certFile, imagefile.Reason(err))
	}
	keyPEM, err := imagefile.ReadFile(keyFile, MaxPEMBytes, imagefile.Follow)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-key %s: %w", keyFile, imagefile.Reason(err))
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", certFile, keyFile, err)
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
// that prints its URL and then cannot answer.
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
		return fmt.Errorf("--listen %s: %w", s.Listen, err)
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
