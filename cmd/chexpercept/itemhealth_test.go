package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/review"
)

// report --flag-share: a share that is not a majority is refused (exit 2,
// naming the flag); a valid one writes the item-health files.
func TestReportFlagShare(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	b, _ := sampleBench.get(t)
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
	// 0 (and 1e-400, which parses as 0) is no share either: it must not
	// silently mean the default.
	for _, bad := range []string{"0.5", "0", "1e-400", "NaN"} {
		_, _, err := runCommand(t, cmd, results, "--out", out, "--bootstrap", "10", "--flag-share", bad)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--flag-share") {
			t.Fatalf("--flag-share %s: %v", bad, err)
		}
	}
	if _, stderr, err := runCommand(t, cmd, results, "--out", out, "--bootstrap", "10", "--flag-share", "0.6"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "flagged_items.csv"))
	if err != nil || !strings.HasPrefix(string(data), "oracle_mode,key_id,question,turn,reason,") {
		t.Errorf("flagged_items.csv: %v %q", err, data)
	}
}

// The item-health loop through the commands: report flags the planted
// mislabeled item; review init --only opens a round with exactly that
// case; a fix decision comes out of review export --outcomes as fix and
// out of --jsonl as a reject line (which the next build applies).
func TestItemHealthLoopCommands(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	recs := benchtest.Full(1)
	key, truth := analysistest.PlantMislabel(recs)
	b, err := analysistest.WriteBench(filepath.Join(tmp, "bench"), recs)
	if err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(tmp, "results")
	for _, l := range []string{"m1", "m2", "m3", "m4", "m5"} {
		r := &analysistest.Run{Provider: "fake", Label: l, Oracle: "none", Policy: truth}
		if _, err := r.Write(results, b); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(tmp, "report")
	if _, stderr, err := runCommand(t, findCommand(t, "report"), results, "--out", out, "--bootstrap", "10"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	flagged := filepath.Join(out, "flagged_items.csv")

	// The source the benchmark was built from, with the flagged case.
	man := reviewManifest(t)
	lesion, caseID, _ := strings.Cut(key, "_")
	line := `{"case_id":"` + caseID + `","lesion":"` + lesion + `","label":"positive","image":"cxr1.png","image_id":"z1","lesion_masks":["mask1.png"],"lung_masks":{"right":"mask1.png","left":"mask1.png"}}` + "\n"
	f, err := os.OpenFile(man, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line)
	f.Close()

	db := filepath.Join(tmp, "round.db")
	_, stderr, err := runCommand(t, reviewInitCmd(job.Options{}), "--source", man, "--review-db", db, "--reviewers", "1", "--only", flagged)
	if err != nil || !strings.Contains(stderr, ": 1 cases") {
		t.Fatalf("review init --only: %v\n%s", err, stderr)
	}
	st, err := review.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := st.CaseByKey(ctx, key)
	revs, _ := st.Reviewers(ctx)
	if err != nil || c == nil || len(revs) == 0 {
		t.Fatalf("case %s not in the round: %v", key, err)
	}
	dec, note := review.OutcomeDecision(review.OutcomeFix, "the mask misses the left base")
	if _, err := st.Decide(ctx, revs[0].ID, c, dec, note); err != nil {
		t.Fatal(err)
	}
	st.Close()

	outcomes, jsonl := filepath.Join(tmp, "outcomes.csv"), filepath.Join(tmp, "round.jsonl")
	if _, stderr, err := runCommand(t, reviewExportCmd(job.Options{}), "--review-db", db, "--jsonl", jsonl, "--outcomes", outcomes); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	o, _ := os.ReadFile(outcomes)
	j, _ := os.ReadFile(jsonl)
	if !strings.Contains(string(o), key+",none,comparison,unanimous_wrong,1,4,fix,reject,r1,") || !strings.Contains(string(j), `"key_id":"`+key+`","decision":"reject"`) {
		t.Errorf("outcomes:\n%s\nreviews:\n%s", o, j)
	}
	// --outcomes alone.
	alone := filepath.Join(tmp, "alone.csv")
	if _, stderr, err := runCommand(t, reviewExportCmd(job.Options{}), "--review-db", db, "--outcomes", alone); err != nil {
		t.Fatalf("--outcomes alone: %v\n%s", err, stderr)
	}
	if a, _ := os.ReadFile(alone); string(a) != string(o) {
		t.Errorf("--outcomes alone wrote:\n%s", a)
	}
	// A flagged key missing from the source is refused.
	_, _, err = runCommand(t, reviewInitCmd(job.Options{}), "--source", reviewManifest(t), "--review-db", filepath.Join(tmp, "other.db"), "--reviewers", "1", "--only", flagged)
	if reviewExitCode(err) != 2 || !strings.Contains(err.Error(), "--only") || !strings.Contains(err.Error(), key) {
		t.Errorf("missing flagged key: %v", err)
	}
}
