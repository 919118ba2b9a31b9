package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func findCommand(t *testing.T, name string) *cobra.Command {
	t.Helper()
	for _, c := range pendingCommands {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("command %s not registered", name)
	return nil
}

func TestSampleCommand(t *testing.T) {
	fx := "../../internal/source/testdata/mimic"
	out := filepath.Join(t.TempDir(), "candidates.jsonl")
	cmd := findCommand(t, "sample")
	var stdout bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetArgs([]string{"--mimic-cxr", fx, "--mimic-ils", fx + "/mimic_ils_instruction_answer.json",
		"--ils-masks", fx + "/lesion_mask", "--chexmask-csv", fx + "/chexmask_mimic.csv", "--out", out, "--seed", "7"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 14 || !strings.Contains(stdout.String(), "wrote 14 candidates") ||
		!strings.Contains(string(data), `"sample_seed":7}`) {
		t.Errorf("%d lines; stdout:\n%s", n, stdout.String())
	}
	// Flags persist on the command object: adding --manifest now makes the
	// invocation contradictory, a global problem with exit code 2.
	cmd.SetArgs([]string{"--manifest", "x.jsonl"})
	err = cmd.Execute()
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "either --manifest or the MIMIC flags") {
		t.Errorf("got %v", err)
	}
}
