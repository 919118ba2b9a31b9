package fakemodel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/provider"
)

// TestSimulatedOverHTTP: a perfect simulated model behind the server,
// asked through the real OpenAI-compatible client with nothing but the
// radiograph's bytes and the question text, answers the ground truth of
// every question, including one sent after an earlier turn with images.
func TestSimulatedOverHTTP(t *testing.T) {
	dir := t.TempDir()
	recs := benchtest.Full(1)
	if err := benchtest.Write(dir, recs, false); err != nil {
		t.Fatal(err)
	}
	xrays := map[string][]byte{}
	for i, r := range recs {
		b := []byte(fmt.Sprintf("radiograph %d", i))
		xrays[r.KeyID] = b
		if err := os.WriteFile(filepath.Join(dir, benchmark.ImagesDir, r.KeyID, filepath.FromSlash(benchmark.XrayRel)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := LoadSimulated(SimConfig{Benchmark: dir, Accuracy: [4]float64{1, 1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewServer(ServerConfig{Policy: PolicySimulated}); err == nil || !strings.Contains(err.Error(), "needs a simulated model") {
		t.Errorf("simulated policy without a model: %v", err)
	}
	url, _, stop, err := StartServer(context.Background(), ServerConfig{Policy: PolicySimulated, Simulated: m})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := client(t, url)
	asked := 0
	for _, r := range recs {
		plan, err := protocol.Plan(r, dir)
		if err != nil {
			t.Fatal(err)
		}
		xray := provider.NewImage(xrays[r.KeyID])
		other := provider.NewImage([]byte("an overlay"))
		for _, p := range plan {
			if !p.Asked() {
				continue
			}
			req := &provider.Request{Model: "sim", Messages: []provider.Message{
				{Role: provider.RoleSystem, Text: "SYS"},
				{Role: provider.RoleUser, Text: "first question", Images: []*provider.Image{xray}},
				{Role: provider.RoleAssistant, Text: "Answer: 1"},
				{Role: provider.RoleUser, Text: p.Text, Images: []*provider.Image{other}},
			}}
			got, err := c.Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("%s %s: %v", r.KeyID, p.ID, err)
			}
			if want := parse.FormatAnswer(p.GT); got.Text != want {
				t.Errorf("%s %s: %q, want %q", r.KeyID, p.ID, got.Text, want)
			}
			asked++
		}
	}
	if asked < 100 {
		t.Errorf("only %d questions asked", asked)
	}
	// A radiograph the benchmark does not hold is a 400, not a guess.
	req := request(0)
	if _, err := c.Complete(context.Background(), req); err == nil || !strings.Contains(err.Error(), "not in the benchmark") {
		t.Errorf("unknown radiograph: %v, want a client error naming it", err)
	}
}
