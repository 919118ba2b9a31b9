//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/webapp"
)

// TestServeTLSFilesBounded: a FIFO or an oversized file named as the TLS
// certificate or key makes `read serve` (and `review serve`, which shares
// the server) exit at once with one line naming the flag and the file; it
// used to print its URL and then block for ever reading the FIFO.
func TestServeTLSFilesBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "study.sqlite")
	if _, stderr, code := runCLI(t, "read", "init", "--benchmark", protocoltest.Bench(t).Dir, "--db", db, "--readers", "1"); code != 0 {
		t.Fatalf("read init: %d %s", code, stderr)
	}
	fifo := filepath.Join(dir, "cert.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, bytes.Repeat([]byte("A"), webapp.MaxPEMBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cert, key, want string }{
		{fifo, big, "--tls-cert " + fifo + ": not a regular file"},
		{big, fifo, "--tls-cert " + big + ": "},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRunToolsHelperProcess$")
		cmd.Env = append(os.Environ(), "CHX_TEST_MAIN=1", "CHX_TEST_ARGS="+strings.Join([]string{"read", "serve", "--db", db,
			"--listen", "127.0.0.1:0", "--quiet", "--tls-cert", tc.cert, "--tls-key", tc.key}, argSep))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		hung := ctx.Err() == context.DeadlineExceeded
		cancel()
		var ee *exec.ExitError
		switch {
		case hung:
			t.Errorf("--tls-cert %s: still running after 15 s (stdout %q)", filepath.Base(tc.cert), out.String())
		case !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(errb.String(), tc.want) || out.Len() != 0:
			t.Errorf("--tls-cert %s: %v, stdout %q, stderr %q; want exit 2 naming %q and no URL", filepath.Base(tc.cert), err, out.String(), errb.String(), tc.want)
		}
	}
}
