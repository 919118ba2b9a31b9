package benchdir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
)

// sampleDir is the committed sample benchmark (package benchmark's
// fixture, regenerated there).
const sampleDir = "../benchmark/testdata/sample"

func TestLoadSample(t *testing.T) {
	b, err := benchdir.Load(sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Records) != 7 {
		t.Fatalf("got %d records", len(b.Records))
	}
	sum, err := benchdir.SHA256File(filepath.Join(sampleDir, benchmark.JSONName))
	if err != nil || sum != b.SHA256 {
		t.Fatalf("SHA256 %s vs %s (%v)", b.SHA256, sum, err)
	}
	wantPaths := map[string]benchmark.Path{
		"edema_s50414267_negative_3":        benchmark.LesionFree,
		"pneumonia_s57001234_positive_0":    benchmark.RevisionFree,
		"atelectasis_s56543210_positive_1":  benchmark.RevisionRequired,
		"cardiomegaly_s55123456_positive_0": benchmark.RevisionRequired,
		"cardiomegaly_s55123457_positive_0": benchmark.RevisionFree,
	}
	wantQ := map[string]int{"edema_s50414267_negative_3": 1, "pneumonia_s57001234_positive_0": 6,
		"atelectasis_s56543210_positive_1": 9, "cardiomegaly_s55123456_positive_0": 5, "cardiomegaly_s55123457_positive_0": 2}
	for k, p := range wantPaths {
		r := b.Lookup(k)
		if r == nil {
			t.Fatalf("Lookup(%s) = nil", k)
		}
		if r.Path() != p || r.Questions() != wantQ[k] {
			t.Errorf("%s: path %s questions %d", k, r.Path(), r.Questions())
		}
	}
	if b.Lookup("edema_nope_negative_1") != nil {
		t.Error("Lookup of an absent key found a record")
	}
	rr := b.Lookup("atelectasis_s56543210_positive_1")
	if rr.Contour.Contraction.AnswerIndex[0] != 4 || rr.Attributes.Severity.OverlapRatio == "" {
		t.Errorf("decoded fields wrong: %+v", rr.Contour.Contraction)
	}
	p, err := rr.OptionPath(2)
	if err != nil || p != "contour_qa/contour_revision_qa/option_2_mask_fake.png" {
		t.Errorf("OptionPath(2) = %q, %v", p, err)
	}
	if _, err := os.Stat(b.Abs(rr.KeyID, p)); err != nil {
		t.Error(err)
	}
	if p, err := rr.ContourEvalPath(); err != nil || p != "contour_qa/contour_eval_qa/xray_with_mask.png" {
		t.Errorf("ContourEvalPath = %q, %v", p, err)
	}
	if _, err := rr.OptionPath(5); err == nil {
		t.Error("OptionPath(5) of 4 options succeeded")
	}
	if _, err := b.Lookup("edema_s50414267_negative_3").ContourEvalPath(); err == nil {
		t.Error("ContourEvalPath of an LF record succeeded")
	}
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := benchdir.Load(dir); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
	target := filepath.Join(dir, "other.json")
	os.WriteFile(target, []byte("{}"), 0o644)
	os.Symlink(target, filepath.Join(dir, benchmark.JSONName))
	if _, err := benchdir.Load(dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("symlink: %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	recs := benchtest.Sample()
	if err := benchdir.WriteJSON(nil, dir, recs); err != nil {
		t.Fatal(err)
	}
	if err := benchdir.WriteJSON(nil, dir, recs[:1]); err != nil {
		t.Fatal(err)
	}
	b, err := benchdir.Load(dir)
	if err != nil || len(b.Records) != 1 {
		t.Fatalf("reload: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("leftover files: %v", ents)
	}
	if err := benchdir.WriteJSON(nil, filepath.Join(dir, "absent"), recs); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
