package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
)

// report --flag-share: a share that is not a majority is refused (exit 2,
// naming the flag); a valid one writes the item-health files.
func TestReportFlagShare(t *testing.T) {
	tmp := t.TempDir()
	b, err := analysistest.WriteBench(filepath.Join(tmp, "bench"), benchtest.Sample())
	if err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(tmp, "results")
	for _, l := range []string{"a", "b", "c"} {
		r := &analysistest.Run{Provider: "fake", Label: l, Oracle: "none", Policy: analysistest.First}
		if _, err := r.Write(results, b); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(tmp, "report")
	cmd := findCommand(t, "report")
	defer cmd.Flags().Set("flag-share", "0.8")
	_, _, err = runCommand(t, cmd, results, "--out", out, "--bootstrap", "10", "--flag-share", "0.5")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--flag-share") {
		t.Fatalf("--flag-share 0.5: %v", err)
	}
	if _, stderr, err := runCommand(t, cmd, results, "--out", out, "--bootstrap", "10", "--flag-share", "0.6"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "flagged_items.csv"))
	if err != nil || !strings.HasPrefix(string(data), "oracle_mode,key_id,question,turn,reason,") {
		t.Errorf("flagged_items.csv: %v %q", err, data)
	}
}
