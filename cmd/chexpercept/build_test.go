package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/source"
)

// TestBuildAndInspectCommands builds the MIMIC-layout fixture through the
// command (its targets cannot all be met: exit 3 with --strict-targets),
// then inspects one included case.
func TestBuildAndInspectCommands(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a benchmark")
	}
	fx := "../../internal/source/testdata/mimic"
	cfg := buildcfg.Default()
	cases, _, err := source.FromMIMIC(context.Background(), fx, fx+"/mimic_ils_instruction_answer.json", fx+"/lesion_mask", fx+"/chexmask_mimic.csv", "", cfg)
	if err != nil {
		t.Fatal(err)
	}
	cands, _, _ := source.Sample(context.Background(), cases, cfg, 0)
	dir := t.TempDir()
	cand := filepath.Join(dir, "candidates.jsonl")
	if err := source.WriteCandidates(nil, cand, cands); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bench")
	// The fastest PNG level: the same pixels and code paths at a fraction
	// of the deflate time (internal/build holds the levels against each
	// other); inspect re-runs the case with the build's configuration.
	conf := filepath.Join(dir, "build.yaml")
	if err := os.WriteFile(conf, []byte("bundle_png_compression: fast\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runCommand(t, findCommand(t, "build"),
		"--source", cand, "--config", conf, "--out", out, "--per-lesion", "1,1,1", "--workers", "2", "--accept-all", "--strict-targets")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 3 {
		t.Fatalf("got %v, want exit 3 for the shortfalls\n%s\n%s", err, stdout, stderr)
	}
	for _, want := range []string{"UNREVIEWED", "composition (LF / RF / RR):", "warning: target shortfall:", "chexmask_size_mismatch"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "WARNING: --accept-all") {
		t.Errorf("no accept-all warning on stderr:\n%s", stderr)
	}
	// Inspect an included RR case.
	data, err := os.ReadFile(filepath.Join(out, "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	keyOf := func(path string) string {
		for _, ln := range strings.Split(string(data), "\n") {
			if strings.Contains(ln, `"path":"`+path+`"`) {
				k := ln[strings.Index(ln, `"key_id":"`)+10:]
				return k[:strings.Index(k, `"`)]
			}
		}
		t.Fatalf("no %s case in the fixture build", path)
		return ""
	}
	key := keyOf("revision_required")
	if _, stderr, err := runCommand(t, findCommand(t, "inspect"), out, "--key", key); err != nil {
		t.Fatalf("inspect: %v\n%s", err, stderr)
	}
	for _, f := range []string{"summary.txt", "geometry.png", "regions.png", "overlaps.json", "deformation.json", "points.png", "revision_options.png"} {
		if _, err := os.Stat(filepath.Join(out, "inspect", key, f)); err != nil {
			t.Errorf("inspect: %v", err)
		}
	}
	// Its "wrote DIR" line that cannot be written is a failure: shown
	// on a lesion-free case, whose inspection draws no deformation.
	args := []string{"inspect", out, "--key", keyOf("lesion_free")}
	stderr, code := runCLIStdout(t, devFull(t), args...)
	wantStdoutFailure(t, args, stderr, code)
	sum, _ := os.ReadFile(filepath.Join(out, "inspect", key, "summary.txt"))
	for _, want := range []string{"path revision_required", "distribution = ", "severity: ", "comparison: ", "revision result: "} {
		if !strings.Contains(string(sum), want) && !(strings.HasPrefix(key, "cardiomegaly") && want != "path revision_required" && want != "revision result: ") {
			t.Errorf("summary.txt lacks %q", want)
		}
	}
}

// TestCommandsRefuseForeignDirectories runs build and report as a user
// does into a directory they did not write: exit status 2, one error line
// naming the directory and an entry, nothing changed.
func TestCommandsRefuseForeignDirectories(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mine := filepath.Join(root, "mine")
	if err := os.MkdirAll(filepath.Join(mine, "masks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, "masks", "lung.png"), []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "manifest.jsonl")
	if err := os.WriteFile(src, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := outdirtest.Snapshot(t, root)
	for _, args := range [][]string{
		{"build", "--source", src, "--out", mine, "--accept-all"},
		{"report", root, "--out", mine},
	} {
		_, stderr, code := runCLI(t, args...)
		var errLines []string
		for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
			if strings.HasPrefix(l, "chexpercept: ") {
				errLines = append(errLines, l)
			}
		}
		if code != 2 || len(errLines) != 1 || !strings.Contains(errLines[0], "output directory "+mine+" is not empty and was not made by chexpercept "+args[0]+`: it holds "masks"`) {
			t.Errorf("%s: exit %d, stderr:\n%s", args[0], code, stderr)
		}
	}
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, root))
}
