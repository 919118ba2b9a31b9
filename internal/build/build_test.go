package build

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/source"
)

func TestRFCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n     int
		ratio float64
		want  int
	}{
		{200, 0.5, 100}, {1, 0.5, 0}, {3, 0.5, 2}, {5, 0.5, 2}, {7, 0.5, 4}, {0, 0.5, 0},
		{10, 0.25, 2}, {10, 0.35, 4}, {4, 1, 4}, {4, 0, 0},
	}
	for _, tc := range tests {
		if got := rfCount(tc.n, tc.ratio); got != tc.want {
			t.Errorf("rfCount(%d, %v) = %d, want %d", tc.n, tc.ratio, got, tc.want)
		}
	}
}

// fakeLists builds lists whose items succeed, fail or are not accepted by
// a fixed pattern, for scheduler tests.
func fakeLists(r *rand.Rand, nLists int) ([]*list, map[string]int) {
	kinds := map[string]int{} // key → 0 success, 1 failure, 2 not accepted
	var lists []*list
	for li := 0; li < nLists; li++ {
		l := &list{lesion: fmt.Sprintf("l%d", li), positive: li%2 == 0, target: r.IntN(6)}
		n := r.IntN(15)
		for i := 0; i < n; i++ {
			key := fmt.Sprintf("%s_c%d_positive_%d", l.lesion, li, i)
			kinds[key] = r.IntN(3)
			l.items = append(l.items, &item{c: &source.Case{Lesion: l.lesion, CaseID: fmt.Sprintf("c%d_positive_%d", li, i)}})
		}
		lists = append(lists, l)
	}
	return lists, kinds
}

func fakeWork(kinds map[string]int) func(*item) error {
	return func(it *item) error {
		switch kinds[it.c.KeyID()] {
		case 0:
			it.res = reviewlog.Resolution{Status: reviewlog.Accepted}
			it.outcome = &Outcome{KeyID: it.c.KeyID(), OK: true}
		case 1:
			it.res = reviewlog.Resolution{Status: reviewlog.Accepted}
			it.outcome = &Outcome{KeyID: it.c.KeyID(), Reason: "deformation_failed"}
		default:
			it.res = reviewlog.Resolution{Status: reviewlog.Missing}
		}
		return nil
	}
}

// TestScheduleWalk checks that the deciding positions do not depend on the
// worker count or the window, and that every walked item is done.
func TestScheduleWalk(t *testing.T) {
	t.Parallel()
	for seed := uint64(0); seed < 30; seed++ {
		var want []int
		for _, workers := range []int{1, 2, 3, 8} {
			for _, window := range []int{0, 1, 4} {
				lists, kinds := fakeLists(rand.New(rand.NewPCG(seed, 1)), 6)
				if err := schedule(context.Background(), lists, workers, window, fakeWork(kinds), nil); err != nil {
					t.Fatal(err)
				}
				var got []int
				for _, l := range lists {
					if !l.decided {
						t.Fatalf("seed %d workers %d: list %s undecided", seed, workers, l.lesion)
					}
					succ := 0
					for _, it := range l.items[:l.walkLen()] {
						if it.state != stateDone {
							t.Fatalf("seed %d: walked item %s not done", seed, it.c.KeyID())
						}
						if it.success() {
							succ++
						}
					}
					if succ > l.target {
						t.Fatalf("seed %d: %d successes in the walk of %s, target %d", seed, succ, l.lesion, l.target)
					}
					if l.walkLen() < len(l.items) && succ != l.target {
						t.Fatalf("seed %d: walk of %s stops early with %d/%d successes", seed, l.lesion, succ, l.target)
					}
					got = append(got, l.decideAt)
				}
				if workers == 1 && window == 0 {
					want = got
					// One worker without speculation never looks past the walk.
					for _, l := range lists {
						for _, it := range l.items[l.walkLen():] {
							if it.state != statePending {
								t.Fatalf("seed %d: 1 worker processed %s beyond the walk", seed, it.c.KeyID())
							}
						}
					}
				} else if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("seed %d workers %d window %d: deciding positions %v, want %v", seed, workers, window, got, want)
				}
			}
		}
	}
}

func TestScheduleStopsOnGlobalError(t *testing.T) {
	t.Parallel()
	lists, kinds := fakeLists(rand.New(rand.NewPCG(7, 7)), 6)
	boom := fmt.Errorf("disk full")
	n := 0
	work := func(it *item) error {
		n++
		if n == 3 {
			return boom
		}
		return fakeWork(kinds)(it)
	}
	if err := schedule(context.Background(), lists, 2, 2, work, nil); err != boom {
		t.Fatalf("got %v, want the global error", err)
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	c := &source.Case{CaseID: "ph0001_positive_0", Lesion: "edema", Label: "positive"}
	in := &inputs{imageSHA: "a", maskSHA: "b", lungSHA: "c"}
	base := buildcfg.Default()
	fp := func(cfg buildcfg.Config, seed uint64, in *inputs) string {
		v, err := fpConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return fingerprint(v, seed, c, in)
	}
	ref := fp(base, 0, in)
	nonFP := base
	nonFP.LF, nonFP.Workers, nonFP.SamplingOrder = 7, 1, "file_order"
	if fp(nonFP, 0, in) != ref {
		t.Error("a non-FP key changed the fingerprint")
	}
	changed := map[string]string{}
	cfg := base
	cfg.MaxIoU = 0.9
	changed["max_iou"] = fp(cfg, 0, in)
	changed["seed"] = fp(base, 1, in)
	changed["image"] = fp(base, 0, &inputs{imageSHA: "x", maskSHA: "b", lungSHA: "c"})
	changed["mask"] = fp(base, 0, &inputs{imageSHA: "a", maskSHA: "x", lungSHA: "c"})
	changed["lungs"] = fp(base, 0, &inputs{imageSHA: "a", maskSHA: "b", lungSHA: "x"})
	for k, v := range changed {
		if v == ref {
			t.Errorf("changing %s kept the fingerprint", k)
		}
	}
}

func TestCleanLeftovers(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	mk := func(rel string, dir bool) {
		p := filepath.Join(out, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if dir {
			os.MkdirAll(p, 0o755)
		} else {
			os.WriteFile(p, []byte("x"), 0o644)
		}
	}
	mk("chexpercept.json.tmp-123", false)
	mk("work/.staging-edema_a_positive_0-abc", true)
	mk("work/.staging-old-edema_a_positive_0-abc", true)
	mk("chexpercept/.staging-x-1/detection_qa", true)
	mk("masks/.staging-y-2", true)
	mk("work/edema_a_positive_0/case.json", false)
	mk("chexpercept.json", false)
	if err := cleanLeftovers(out, os.Rename); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		rel, _ := filepath.Rel(out, p)
		if strings.Contains(rel, "staging") || strings.Contains(rel, ".tmp-") {
			left = append(left, rel)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("leftovers not removed: %v", left)
	}
	if _, err := os.Stat(filepath.Join(out, "work/edema_a_positive_0/case.json")); err != nil {
		t.Error("a real work entry was removed")
	}
}

func TestWorkRoundTripFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := &Outcome{KeyID: "edema_ph0001_positive_0", Positive: true, Reason: "deformation_failed", Detail: "sequential", CaseSeed: "ab", ImageSHA: "i", MaskSHA: "m"}
	if err := writeWork(dir, "fp1", o, "", os.Rename); err != nil {
		t.Fatal(err)
	}
	if readWork(dir, o.KeyID, "fp2", nil) != nil {
		t.Error("another fingerprint was accepted")
	}
	got := readWork(dir, o.KeyID, "fp1", nil)
	if got == nil || got.OK || got.Reason != o.Reason || got.Detail != o.Detail || got.CaseSeed != "ab" {
		t.Fatalf("round trip: %+v", got)
	}
	// Rewriting replaces the entry and leaves no staging folder behind.
	if err := writeWork(dir, "fp3", o, buildcfg.FastPNG, os.Rename); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || readWork(dir, o.KeyID, "fp3", nil) == nil {
		t.Errorf("work dir after rewrite: %v", ents)
	}
}

func TestSkippedCSVQuoting(t *testing.T) {
	t.Parallel()
	a := &assembly{failures: []*item{{c: &source.Case{CaseID: "ph1_positive_0", Lesion: "edema", Label: "positive"},
		outcome: &Outcome{Reason: "internal_error", Detail: `bad "value", here`}}}}
	b, err := a.skippedCSV()
	if err != nil {
		t.Fatal(err)
	}
	want := "key_id,lesion,label,reason,detail\nedema_ph1_positive_0,edema,positive,internal_error,\"bad \"\"value\"\", here\"\n"
	if !bytes.Equal(b, []byte(want)) {
		t.Errorf("got %q", b)
	}
}

// TestIndentedJoinMatchesMarshal checks the streamed deformation_results
// layout against marshalling the whole object at once.
func TestIndentedJoinMatchesMarshal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := ojson.NewObject()
	var recs []*included
	for i, key := range []string{"edema_a_positive_0", "edema_b\"q_positive_1"} {
		d := ojson.NewObject().Set("x", ojson.Arr(ojson.Int(int64(i)), ojson.NewObject().Set("y", ojson.Str("a\nb")))).
			Set("e", ojson.Arr()).Set("o", ojson.NewObject())
		root.Set(key, d)
		recs = append(recs, &included{it: &item{outcome: &Outcome{KeyID: key, Positive: true, Deformation: d}}})
	}
	recs = append(recs, &included{it: &item{outcome: &Outcome{KeyID: "edema_c_negative_0"}}})
	a := &assembly{workDir: dir, records: recs}
	got, err := a.deformationJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := ojson.Marshal(root); !bytes.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	a.records = recs[2:]
	if got, _ := a.deformationJSON(); string(got) != "{}" {
		t.Errorf("empty: %q", got)
	}
}

func TestInspectRejectsBadKey(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"../../etc_x_positive_0", "edema_nope", ""} {
		// The error names the key_id and no flag: the command adds that.
		if _, err := Inspect(InspectOptions{Dir: t.TempDir(), Key: key}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("key_id %q", key)) || strings.Contains(err.Error(), "--") {
			t.Errorf("key %q: %v", key, err)
		}
	}
}
