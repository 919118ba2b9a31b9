package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSampleCommand(t *testing.T) {
	fx := "../../internal/source/testdata/mimic"
	out := filepath.Join(t.TempDir(), "candidates.jsonl")
	cmd := findCommand(t, "sample")
	stdout, stderr, err := runCommand(t, cmd, "--mimic-cxr", fx, "--mimic-ils", fx+"/mimic_ils_instruction_answer.json",
		"--ils-masks", fx+"/lesion_mask", "--chexmask-csv", fx+"/chexmask_mimic.csv", "--out", out, "--seed", "7")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 14 || !strings.Contains(stdout, "wrote 14 candidates") ||
		!strings.Contains(string(data), `"sample_seed":7}`) {
		t.Errorf("%d lines; stdout:\n%s", n, stdout)
	}
	// Flags persist on the command object: adding --manifest now makes the
	// invocation contradictory, a global problem with exit code 2.
	_, _, err = runCommand(t, cmd, "--manifest", "x.jsonl")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "either --manifest or the MIMIC flags") {
		t.Errorf("got %v", err)
	}
}
