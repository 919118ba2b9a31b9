package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServeBaselineCommand(t *testing.T) {
	t.Parallel()
	cmd := findCommand(t, "serve-baseline")
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	cmd.SetOut(pw)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--policy", "first", "--listen", "127.0.0.1:0", "--latency", "1ms"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
		t.Fatalf("printed %q", url)
	}
	body := `{"model":"whatever","messages":[{"role":"user","content":"Q\n\nOptions:\n(1) Yes\n(2) No"}]}`
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"content":"Answer: 1"`) {
		t.Errorf("reply %d %s", resp.StatusCode, b)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("command did not stop on cancel")
	}
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("loopback listen warned: %s", stderr.String())
	}
}

func TestServeBaselineBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--policy", "oracle", "--listen", "127.0.0.1:0"},
		{"--fail-429", "1.5", "--listen", "127.0.0.1:0"},
		{"--listen", "nonsense"},
	} {
		cmd := findCommand(t, "serve-baseline")
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(args)
		// reset flags changed by earlier tests
		cmd.Flags().Set("policy", "random")
		cmd.Flags().Set("fail-429", "0")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := cmd.ExecuteContext(ctx)
		cancel()
		if err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

// TestServeBaselineSimulatedFlags: the simulated policy's flags are
// checked before anything listens, each refusal naming its flag.
func TestServeBaselineSimulatedFlags(t *testing.T) {
	t.Parallel()
	const sample = "../../internal/benchmark/testdata/sample"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "random", "--accuracy", "0.5,0.5,0.5,0.5"}, "--accuracy applies only to --policy simulated"},
		{[]string{"--policy", "first", "--benchmark", sample}, "--benchmark applies only to --policy simulated"},
		{[]string{"--policy", "simulated"}, "--policy simulated needs --benchmark DIR"},
		{[]string{"--policy", "simulated", "--benchmark", sample, "--accuracy", "0.5,0.5,0.5"}, "--accuracy: 3 values, want 4"},
		{[]string{"--policy", "simulated", "--benchmark", sample, "--accuracy", "0.5,0.5,0.5,2"}, "stage 4 accuracy 2 is not in [0, 1]"},
		{[]string{"--policy", "simulated", "--benchmark", sample, "--mislabel-rate", "1.5"}, "mislabel rate 1.5"},
		{[]string{"--policy", "random", "--text-prior", "frequent"}, "--text-prior applies only to --policy simulated"},
		{[]string{"--policy", "simulated", "--benchmark", sample, "--text-prior", "often"}, `--text-prior "often": want frequent or favoured`},
		{[]string{"--policy", "simulated", "--benchmark", sample, "--ignore-image"}, "--ignore-image needs --text-prior"},
	} {
		args := append([]string{"serve-baseline", "--listen", "127.0.0.1:0"}, tc.args...)
		_, stderr, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
