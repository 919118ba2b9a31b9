package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
)

// TestEighthLesionEndToEnd defines a lesion only in configuration and takes
// it through every command as a user would: phantom (its shape family),
// build (LF, RF and RR cases of it), validate --deep, eval against the
// baseline server, report. The lesion must appear in every per-lesion
// output, its questions must use the configured wording, and nothing in
// the program may need to know its name.
func TestEighthLesionEndToEnd(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a benchmark")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "lesions.yaml")
	writeFile(t, cfg, `lesion_definitions:
  - name: pneumothorax
    display: Pneumothorax
    kind: lung
    detection: suggestive
    heart_note: false
    source_names: [ptx]
    phantom: pleural-air
lesions: [pneumothorax]
bundle_png_compression: fast
`)
	ph := filepath.Join(dir, "phantom")
	mustRun(t, "phantom", "--config", cfg, "--out", ph, "--cases-per-lesion", "2", "--seed", "4", "--workers", "2")
	manifest, err := os.ReadFile(filepath.Join(ph, "manifest.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(manifest), `"lesion":"pneumothorax"`); n != 4 {
		t.Fatalf("phantom manifest has %d pneumothorax lines, want 4:\n%s", n, manifest)
	}

	bench := filepath.Join(dir, "bench")
	mustRun(t, "build", "--source", filepath.Join(ph, "manifest.jsonl"), "--config", cfg, "--out", bench,
		"--accept-all", "--per-lesion", "1,1,1", "--workers", "2", "--strict-targets")
	set, err := benchdir.ReadLesions(bench)
	if err != nil || set.IsDefault() {
		t.Fatalf("the benchmark does not declare its lesions: %v", err)
	}
	if d, ok := set.Def("pneumothorax"); !ok || d.Heart() || d.Detection != benchmark.SuggestiveWording || d.HeartNote {
		t.Fatalf("declared pneumothorax = %+v", d)
	}
	b, err := benchdir.Load(bench)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[benchmark.Path]int{}
	for _, r := range b.Records {
		if r.Lesion != "pneumothorax" {
			t.Errorf("record %s is not of the configured lesion", r.KeyID)
		}
		paths[r.Path()]++
		if want := "Does it show any finding that suggests\npneumothorax?"; !strings.Contains(strings.ReplaceAll(r.Detection.Question, " pneumothorax?", "\npneumothorax?"), want) {
			t.Errorf("%s detection question does not use the suggestive wording: %q", r.KeyID, r.Detection.Question)
		}
		if r.Contour != nil && strings.Contains(r.Contour.ContourEval.Question, "heart") {
			t.Errorf("%s: heart_note false, but the contour question mentions the heart: %q", r.KeyID, r.Contour.ContourEval.Question)
		}
	}
	if paths[benchmark.LesionFree] != 1 || paths[benchmark.RevisionFree] != 1 || paths[benchmark.RevisionRequired] != 1 {
		t.Fatalf("paths %v, want 1 LF, 1 RF, 1 RR", paths)
	}
	out := mustRun(t, "validate", "--deep", bench)
	if !strings.Contains(out, "pneumothorax") || !strings.Contains(out, "result: PASS") {
		t.Errorf("validate output:\n%s", out)
	}

	base, err := fakemodel.NewServer(fakemodel.ServerConfig{Policy: "random", PolicySeed: 3})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(base)
	defer srv.Close()
	runs := filepath.Join(dir, "runs")
	mustRun(t, "eval", "--benchmark", bench, "--provider", "opensource", "--model", "ptx-test",
		"--endpoint", srv.URL+"/v1", "--oracle", "none", "--out", runs, "--no-cache")
	rep := filepath.Join(dir, "report")
	mustRun(t, "report", runs, "--benchmark", bench, "--out", rep)

	// Every per-lesion output lists the lesion the runs hold, and only it.
	for _, f := range []string{"ext_stage_accuracy.csv", "ext_depth.csv", "ext_subquestion.csv", "ext_chance.csv", "samples.csv", "report.md"} {
		data, err := os.ReadFile(filepath.Join(rep, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "pneumothorax") {
			t.Errorf("%s does not list pneumothorax", f)
		}
		for _, other := range benchmark.DefaultLesions().Names() {
			if strings.Contains(string(data), other) {
				t.Errorf("%s lists %s, which no run holds", f, other)
			}
		}
	}
	plots, _ := filepath.Glob(filepath.Join(rep, "plot_lesion_stage_*.svg"))
	if len(plots) == 0 {
		t.Fatal("no per-lesion plot")
	}
	for _, p := range plots {
		if data, _ := os.ReadFile(p); !strings.Contains(string(data), "pneumothorax") {
			t.Errorf("%s does not label pneumothorax", p)
		}
	}
	// The HTML report (its item browser's lesion filter included) names it.
	if html, err := os.ReadFile(filepath.Join(rep, "index.html")); err != nil || !strings.Contains(string(html), `"pneumothorax"`) {
		t.Errorf("index.html does not list pneumothorax (%v)", err)
	}
	var sum map[string]any
	if data, err := os.ReadFile(filepath.Join(rep, "summary.json")); err != nil || json.Unmarshal(data, &sum) != nil {
		t.Errorf("summary.json unreadable: %v", err)
	}
}

func writeFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustRun runs a command as a user would and returns its stdout; a
// non-zero exit fails the test with both outputs.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("chexpercept %s: exit %d\n%s\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}
