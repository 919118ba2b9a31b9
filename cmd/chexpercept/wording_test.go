package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/job"
)

// TestSimulatedAccuracyWording: serve-baseline --help and
// docs/evaluation.md say what a simulated model's stage accuracy is in
// the same words (fakemodel.AccuracyMeaning), which the demo prints too
// (its own test checks its output).
func TestSimulatedAccuracyWording(t *testing.T) {
	t.Parallel()
	words := strings.Join(strings.Fields(fakemodel.AccuracyMeaning), " ")
	root := newRootCmd(job.Options{})
	cmd, _, err := root.Find([]string{"serve-baseline"})
	if err != nil {
		t.Fatal(err)
	}
	if help := strings.Join(strings.Fields(cmd.Long), " "); !strings.Contains(help, words) {
		t.Errorf("serve-baseline --help does not say %q", words)
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "evaluation.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), words) {
		t.Errorf("docs/evaluation.md does not say %q", words)
	}
}
