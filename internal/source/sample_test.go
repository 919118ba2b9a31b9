package source

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/rng"
)

func mk(lesion, id, image string, imageID string) *Case {
	c := &Case{CaseID: id, Lesion: lesion, Image: "/x/" + image}
	if strings.Contains(id, "_positive_") {
		c.Label = "positive"
	} else {
		c.Label = "negative"
	}
	if imageID != "" {
		c.ImageID = &imageID
	}
	return c
}

func keys(cs []*Case) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s#%d", c.KeyID(), c.Rank))
	}
	return out
}

func manifestCases() []*Case {
	return []*Case{
		mk("edema", "e1_positive_0", "e1", "i1"),
		mk("edema", "e2_positive_0", "e2", "i2"),
		mk("edema", "e3_positive_0", "e3", "i3"),
		mk("edema", "n1_negative_0", "n1", "n1"),
		mk("edema", "n2_negative_0", "n2", "n2"),
		mk("edema", "n3_negative_0", "n3", ""), // keyed by path
		mk("cardiomegaly", "c1_positive_0", "e1", "i1"),
		mk("cardiomegaly", "m1_negative_0", "n2", "n2"),    // same image as edema's n2
		mk("cardiomegaly", "m2_negative_0", "n2b", "n2"),   // same image id again: dropped
		mk("cardiomegaly", "m3_negative_0", "i3", "i3"),    // image of edema's positive e3
		mk("opacity", "o1_negative_0", "n3", ""),           // lesion outside the filter
		mk("cardiomegaly", "m4_negative_0", "n3", "other"), // same path as n3 but has an id
	}
}

func TestSampleFileOrderAndCaps(t *testing.T) {
	cfg := buildcfg.Default()
	cfg.Lesions = []string{"edema", "cardiomegaly"}
	cfg.SamplingOrder = "file_order"
	got, rep, _ := Sample(context.Background(), manifestCases(), cfg, 9)
	want := []string{
		// cardiomegaly first (lesion order), positives then negatives
		"cardiomegaly_c1_positive_0#0",
		"cardiomegaly_m1_negative_0#0",
		"cardiomegaly_m3_negative_0#1",
		"cardiomegaly_m4_negative_0#2",
		"edema_e1_positive_0#0",
		"edema_e2_positive_0#1",
		"edema_e3_positive_0#2",
		"edema_n1_negative_0#0",
		"edema_n3_negative_0#1",
	}
	if strings.Join(keys(got), " ") != strings.Join(want, " ") {
		t.Errorf("got  %v\nwant %v", keys(got), want)
	}
	for _, c := range got {
		if c.SourceType != "manifest" || c.SampleSeed == nil || *c.SampleSeed != 9 {
			t.Errorf("%s: source_type %q seed %v", c.KeyID(), c.SourceType, c.SampleSeed)
		}
	}
	if rep.Lesions[0].Lesion != "cardiomegaly" || rep.Lesions[0].NegativeDuplicates != 1 || rep.Lesions[1].NegativeDuplicates != 1 {
		t.Errorf("report %+v", rep.Lesions)
	}

	// Caps and exclude_positive_images_from_negatives.
	cfg.MaxPositiveCandidates, cfg.MaxNegativeCandidates = 2, 1
	cfg.ExcludePositiveImagesFromNegatives = true
	got, _, _ = Sample(context.Background(), manifestCases(), cfg, 9)
	want = []string{
		"cardiomegaly_c1_positive_0#0",
		"cardiomegaly_m1_negative_0#0",
		"edema_e1_positive_0#0",
		"edema_e2_positive_0#1",
		"edema_n1_negative_0#0",
	}
	if strings.Join(keys(got), " ") != strings.Join(want, " ") {
		t.Errorf("capped: got %v\nwant %v", keys(got), want)
	}
	cfg.MaxPositiveCandidates, cfg.MaxNegativeCandidates = 3000, 100
	got, _, _ = Sample(context.Background(), manifestCases(), cfg, 9)
	for _, c := range got {
		if c.KeyID() == "cardiomegaly_m3_negative_0" {
			t.Error("m3 uses the image of a positive candidate and must be excluded")
		}
	}
}

func TestSampleShuffle(t *testing.T) {
	cfg := buildcfg.Default()
	cfg.Lesions = []string{"effusion"}
	var cases []*Case
	for i := 20; i > 0; i-- { // reverse key order in the file
		cases = append(cases, mk("effusion", fmt.Sprintf("p%02d_positive_0", i), fmt.Sprint("p", i), fmt.Sprint("p", i)))
		cases = append(cases, mk("effusion", fmt.Sprintf("q%02d_negative_0", i), fmt.Sprint("q", i), fmt.Sprint("q", i)))
	}
	a, _, _ := Sample(context.Background(), cases, cfg, 42)
	b, _, _ := Sample(context.Background(), cases, cfg, 42)
	c, _, _ := Sample(context.Background(), cases, cfg, 43)
	if strings.Join(keys(a), " ") != strings.Join(keys(b), " ") {
		t.Fatal("same seed, different order")
	}
	if strings.Join(keys(a), " ") == strings.Join(keys(c), " ") {
		t.Fatal("seed does not change the order")
	}
	// Independent recomputation of §3/§13: sort by key_id, shuffle with the
	// pool's labelled RNG.
	expect := func(pool, label string) []string {
		var ks []string
		for _, c := range cases {
			if c.Label == label {
				ks = append(ks, c.KeyID())
			}
		}
		sort.Strings(ks)
		rng.Shuffle(rng.New("chexpercept/sample/42/effusion/"+pool), ks)
		return ks
	}
	want := append(expect("manifest-positive", "positive"), expect("manifest-negative", "negative")...)
	for i, c := range a {
		if c.KeyID() != want[i] {
			t.Fatalf("position %d: %s, want %s", i, c.KeyID(), want[i])
		}
	}
	// Input order does not matter in shuffle mode.
	rev := append([]*Case(nil), cases...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	r, _, _ := Sample(context.Background(), rev, cfg, 42)
	if strings.Join(keys(r), " ") != strings.Join(keys(a), " ") {
		t.Error("shuffle order depends on the input order")
	}
}

// MIMIC pools: global items precede basic items; each pool has its own RNG.
func TestSampleGlobalBeforeBasic(t *testing.T) {
	cfg := buildcfg.Default()
	cfg.Lesions = []string{"atelectasis"}
	var cases []*Case
	for i := 0; i < 6; i++ {
		c := mk("atelectasis", fmt.Sprintf("s%d_positive_0", i), fmt.Sprint(i), fmt.Sprint(i))
		c.SourceType = []string{"global", "basic"}[i%2]
		cases = append(cases, c)
	}
	got, rep, _ := Sample(context.Background(), cases, cfg, 1)
	for i, c := range got {
		if want := map[bool]string{true: "global", false: "basic"}[i < 3]; c.SourceType != want {
			t.Errorf("position %d is %s, want %s", i, c.SourceType, want)
		}
	}
	if rep.Lesions[0].Global != 3 || rep.Lesions[0].Basic != 3 {
		t.Errorf("report %+v", rep.Lesions[0])
	}
}

// TestSampleAndCheckInputsStop: an ended context stops the sampling and
// the input check, with the context's error, before they finish.
func TestSampleAndCheckInputsStop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := buildcfg.Default()
	if got, _, err := Sample(ctx, manifestCases(), cfg, 9); !errors.Is(err, context.Canceled) || got != nil {
		t.Errorf("Sample after the end: %d candidates, %v; want none and context.Canceled", len(got), err)
	}
	missing := filepath.Join(t.TempDir(), "gone.png")
	cases := []*Case{{CaseID: "a_negative_0", Lesion: "edema", Label: "negative", Image: missing}}
	if err := CheckInputs(ctx, cases); !errors.Is(err, context.Canceled) {
		t.Errorf("CheckInputs after the end: %v, want context.Canceled (not a verdict on %s)", err, missing)
	}
}
