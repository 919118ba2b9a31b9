package runs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

func TestDiffJSON(t *testing.T) {
	for _, c := range []struct {
		name, a, b string
		want       []string
	}{
		{"equal", `{"a":1,"b":[1,2]}`, `{"a":1,"b":[1,2]}`, nil},
		{"nested scalar", `{"model":{"policy_seed":7}}`, `{"model":{"policy_seed":8}}`, []string{"model.policy_seed: 7 vs 8"}},
		{"number literal kept", `{"t":600.0}`, `{"t":600}`, []string{"t: 600.0 vs 600"}},
		{"absent member", `{"a":1}`, `{"a":1,"b":null}`, []string{"b: absent vs null"}},
		{"array", `{"e":["x"]}`, `{"e":["x","y"]}`, []string{`e: ["x"] vs ["x","y"]`}},
		{"kind change", `{"s":{"i":1}}`, `{"s":"1"}`, []string{`s: {"i":1} vs "1"`}},
		{"sibling", `{"dataset":{"path":"/a","sha256":"h1"}}`, `{"dataset":{"path":"/a","sha256":"h2"}}`, []string{`dataset.sha256: "h1" vs "h2"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := ojson.Parse([]byte(c.a))
			if err != nil {
				t.Fatal(err)
			}
			b, err := ojson.Parse([]byte(c.b))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			diffJSON("", a, b, &got)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// The shards of one run may differ only in the shard, what derives from
// it, the creation time and the dataset path.
func TestSettingsDiff(t *testing.T) {
	seed := func(v int64) *int64 { return &v }
	base := results.Manifest{RunName: "baseline_random", CreatedAt: "t1", Dataset: results.Dataset{Path: "/a", SHA256: "h"},
		Selection: results.Selection{Shard: &results.Shard{I: 1, N: 3}}, SelectionSHA256: "s1", SelectedRecords: 7, KeysSHA256: "k1",
		Model: results.ModelInfo{PolicySeed: seed(7)}, Retry: results.RetryPolicy{TimeoutS: 600}}
	for _, c := range []struct {
		name string
		edit func(m *results.Manifest)
		want []string
	}{
		{"shard-derived members", func(m *results.Manifest) {
			m.CreatedAt, m.Dataset.Path, m.Selection.Shard = "t2", "/b", &results.Shard{I: 2, N: 3}
			m.SelectionSHA256, m.SelectedRecords, m.KeysSHA256 = "s2", 8, "k2"
		}, nil},
		{"policy seed", func(m *results.Manifest) { m.Model.PolicySeed = seed(8) }, []string{"model.policy_seed: 7 vs 8"}},
		{"benchmark hash", func(m *results.Manifest) { m.Dataset.SHA256 = "g" }, []string{`dataset.sha256: "h" vs "g"`}},
		{"selection", func(m *results.Manifest) { m.Selection.Seed = 3 }, []string{"selection.seed: 0 vs 3"}},
		{"generation seed", func(m *results.Manifest) { m.Sampling.Seed = seed(5) }, []string{"sampling.seed: absent vs 5"}},
		{"extra body", func(m *results.Manifest) { m.Sampling.ExtraBody = `{"top_k":20}` }, []string{`sampling.extra_body: absent vs {"top_k":20}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := base
			c.edit(&b)
			got, err := settingsDiff(&base, &b)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
			if base.Selection.Shard.I != 1 || base.CreatedAt != "t1" {
				t.Error("settingsDiff changed its argument")
			}
		})
	}
}

// A run split into two shards by hand merges back into the same run.
func TestMerge(t *testing.T) {
	bench := protocoltest.Bench(t)
	src := scriptedRun(t, bench, t.TempDir(), glmModel())
	run := filepath.Join(t.TempDir(), "opensource_glm-4v", "oracle_none")
	lines := strings.SplitAfter(strings.TrimSuffix(string(mustReadFile(t, filepath.Join(src, rundir.ResultsFile))), "\n"), "\n")
	for i := 1; i <= 2; i++ {
		d := filepath.Join(run, "shard-"+strconv.Itoa(i)+"-of-2")
		copyAsShard(t, src, d, i, 2)
		var own string
		for j, l := range lines {
			if j%2 == i-1 {
				own += strings.TrimSuffix(l, "\n") + "\n"
			}
		}
		if err := os.WriteFile(filepath.Join(d, rundir.ResultsFile), []byte(own), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(d, rundir.SummaryFile))
	}
	out := t.TempDir()
	rep, err := Merge(context.Background(), []string{run}, MergeOptions{Out: out, Now: func() time.Time { return testTime }})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "opensource_glm-4v", "oracle_none"); rep.Dir != want || rep.Shards != 2 || rep.Records != 4 || rep.Selected != 4 || len(rep.Missing) != 0 {
		t.Errorf("report %+v", rep)
	}
	for _, f := range []string{rundir.ManifestFile, rundir.ResultsFile, rundir.AllResultsFile, rundir.RefSummaryFile} {
		if !bytes.Equal(mustReadFile(t, filepath.Join(rep.Dir, f)), mustReadFile(t, filepath.Join(src, f))) {
			t.Errorf("merged %s differs from the unsharded run's", f)
		}
	}

	// A shard with other settings is refused, naming the member.
	other := filepath.Join(t.TempDir(), "shard-2-of-2")
	copyAsShard(t, src, other, 2, 2)
	m, _ := rundir.ReadManifest(other)
	m.NoThinking = true
	b, _ := m.Marshal()
	os.WriteFile(filepath.Join(other, rundir.ManifestFile), b, 0o644)
	_, err = Merge(context.Background(), []string{filepath.Join(run, "shard-1-of-2"), other}, MergeOptions{Out: t.TempDir()})
	var re *RefusalError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "no_thinking: false vs true") {
		t.Errorf("other settings: %v", err)
	}

	// So is a shard sent other extra request members (eval --extra-body):
	// written into the JSON as eval writes it.
	other = filepath.Join(t.TempDir(), "shard-2-of-2")
	copyAsShard(t, src, other, 2, 2)
	mb := mustReadFile(t, filepath.Join(other, rundir.ManifestFile))
	ins := `"sampling": {"extra_body": {"top_k": 20}`
	if !bytes.Contains(mb, []byte(`"sampling": {}`)) {
		ins += ","
	}
	mb = bytes.Replace(mb, []byte(`"sampling": {`), []byte(ins), 1)
	os.WriteFile(filepath.Join(other, rundir.ManifestFile), mb, 0o644)
	_, err = Merge(context.Background(), []string{filepath.Join(run, "shard-1-of-2"), other}, MergeOptions{Out: t.TempDir()})
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "sampling.extra_body") {
		t.Errorf("other extra body: %v", err)
	}
}

func mustReadFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFindShards(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "baseline_random", "oracle_none")
	for _, d := range []string{"shard-1-of-2", "shard-2-of-2", "notes"} {
		if err := os.MkdirAll(filepath.Join(run, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)
	file := filepath.Join(root, "f")
	os.WriteFile(file, nil, 0o644)

	got, err := findShards([]string{run, filepath.Join(run, "shard-2-of-2")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(run, "shard-1-of-2"), filepath.Join(run, "shard-2-of-2")}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q (the same folder given twice counts once)", got, want)
	}
	for _, c := range []struct{ in, want string }{
		{empty, "neither a shard folder"},
		{file, "not a directory"},
		{filepath.Join(root, "nope"), "no such file"},
	} {
		if _, err := findShards([]string{c.in}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.in, err, c.want)
		}
	}
}

func TestMergeRefusesNonShard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shard-1-of-1")
	os.MkdirAll(dir, 0o755)
	m := `{"dataset":{"path":"/b","sha256":"h"},"selection":{"lesions":[],"shard":null},"run_name":"x_y","model":{},"oracle_mode":"none","parse_mode":"reference"}`
	os.WriteFile(filepath.Join(dir, rundir.ManifestFile), []byte(m), 0o644)
	_, err := Merge(context.Background(), []string{dir}, MergeOptions{Out: t.TempDir()})
	var re *RefusalError
	if err == nil || !strings.Contains(err.Error(), "has no shard") {
		t.Fatalf("error %v", err)
	}
	if !errors.As(err, &re) {
		t.Errorf("not a RefusalError: %T", err)
	}
}

// TestCheckRunTarget: the run directory of a merge or rescore is written when
// new, empty or holding only the debris of an interrupted write; a run is
// replaced only with force; anything else is refused, untouched.
// TestMergeAfterUnfinishedMerge: a merge cut short leaves a run marked
// unfinished, with its manifest and a temporary file; no reader takes it
// for a run, and the same merge run again, without force, replaces it
// with the run an uninterrupted merge writes.
func TestMergeAfterUnfinishedMerge(t *testing.T) {
	bench := protocoltest.Bench(t)
	src := scriptedRun(t, bench, t.TempDir(), glmModel())
	run := filepath.Join(t.TempDir(), "opensource_glm-4v", "oracle_none")
	lines := strings.SplitAfter(strings.TrimSuffix(string(mustReadFile(t, filepath.Join(src, rundir.ResultsFile))), "\n"), "\n")
	for i := 1; i <= 2; i++ {
		d := filepath.Join(run, "shard-"+strconv.Itoa(i)+"-of-2")
		copyAsShard(t, src, d, i, 2)
		var own string
		for j, l := range lines {
			if j%2 == i-1 {
				own += strings.TrimSuffix(l, "\n") + "\n"
			}
		}
		if err := os.WriteFile(filepath.Join(d, rundir.ResultsFile), []byte(own), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := MergeOptions{Out: t.TempDir(), Now: func() time.Time { return testTime }}
	rep, err := Merge(context.Background(), []string{run}, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, f := range []string{rundir.ManifestFile, rundir.ResultsFile, rundir.AllResultsFile, rundir.SummaryFile} {
		want[f] = mustReadFile(t, filepath.Join(rep.Dir, f))
	}
	if rundir.IsUnfinished(rep.Dir) {
		t.Fatal("a finished merge is marked unfinished")
	}
	// What an interrupted merge leaves: the marker, the manifest, a
	// temporary results file, no summary.
	if err := rundir.MarkUnfinished(rep.Dir); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(rep.Dir, rundir.SummaryFile))
	os.Remove(filepath.Join(rep.Dir, rundir.AllResultsFile))
	os.Rename(filepath.Join(rep.Dir, rundir.ResultsFile), filepath.Join(rep.Dir, rundir.ResultsFile+".tmp-42"))
	if _, err := ReadRun(rep.Dir); !errors.Is(err, rundir.ErrUnfinished) {
		t.Errorf("reading the unfinished run: %v, want ErrUnfinished", err)
	}
	if _, err := Merge(context.Background(), []string{run}, opts); err != nil {
		t.Fatalf("merge again after an unfinished merge: %v", err)
	}
	for f, b := range want {
		if !bytes.Equal(mustReadFile(t, filepath.Join(rep.Dir, f)), b) {
			t.Errorf("%s differs from the uninterrupted merge's", f)
		}
	}
	ents, _ := os.ReadDir(rep.Dir)
	for _, e := range ents {
		if e.Name() == rundir.UnfinishedFile || strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	// A finished run is still replaced only with force.
	if _, err := Merge(context.Background(), []string{run}, opts); !errors.Is(err, ErrRunExists) {
		t.Errorf("merge over a finished run: %v, want ErrRunExists", err)
	}
}

func TestCheckTarget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string // entries to create ("/" suffix: directory)
		force bool
		want  string // error substring; "" accepted
		is    error  // the error matches it (errors.Is), when not nil
	}{
		{"absent", nil, false, "", nil},
		{"empty", []string{}, false, "", nil},
		{"interrupted write", []string{rundir.LockFile, rundir.ManifestFile + ".tmp-123"}, false, "", nil},
		{"a run", []string{rundir.LockFile, rundir.ManifestFile, rundir.ResultsFile}, false, "already holds a run (manifest.json or results.jsonl exists)", ErrRunExists},
		{"a run with force", []string{rundir.ManifestFile, rundir.ResultsFile, rundir.SummaryFile}, true, "", nil},
		{"a run's manifest only", []string{rundir.ManifestFile}, false, "already holds a run", ErrRunExists},
		{"someone's summary", []string{rundir.SummaryFile}, true, `holds no run (no manifest.json or results.jsonl): it holds "summary.json"`, nil},
		{"shard folders", []string{"shard-1-of-2/", "shard-2-of-2/", rundir.LockFile}, false, "", nil},
		{"shard folders and more", []string{"shard-1-of-2/", rundir.LockFile, "notes/"}, false, `it holds "notes"`, nil},
		{"an unfinished run", []string{rundir.UnfinishedFile, rundir.LockFile, rundir.ManifestFile, rundir.ResultsFile + ".tmp-1"}, false, "", nil},
		{"only the unfinished marker", []string{rundir.UnfinishedFile}, false, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run", "oracle_none")
			if tc.files != nil {
				os.MkdirAll(dir, 0o755)
			}
			for _, f := range tc.files {
				if strings.HasSuffix(f, "/") {
					os.MkdirAll(filepath.Join(dir, f), 0o755)
				} else {
					os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644)
				}
			}
			err := CheckTarget(dir, tc.force)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v does not match %v", err, tc.is)
			}
			if strings.Contains(err.Error(), "--") {
				t.Errorf("err = %v names a flag; the command adds it", err)
			}
		})
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if err := CheckTarget(file, true); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
}

// TestRedactionsAndEndpointsAcrossShards: shards may differ in their key-redaction
// counts without refusing the merge, and the merged manifest carries the
// sum.
func TestRedactionsAndEndpointsAcrossShards(t *testing.T) {
	shard := func(n int64) *shardRun {
		return &shardRun{Run: &Run{Manifest: &results.Manifest{RunName: "r", OracleMode: "none", Redactions: n}}}
	}
	shards := []*shardRun{shard(2), shard(0), shard(5)}
	if got := sumRedactions(shards); got != 7 {
		t.Errorf("sum %d, want 7", got)
	}
	diffs, err := settingsDiff(shards[0].Manifest, shards[2].Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 0 {
		t.Errorf("redaction counts refuse the merge: %q", diffs)
	}
	other := *shards[0].Manifest
	other.Model.Endpoints = []string{"http://b/v1", "http://a/v1"}
	if diffs, _ := settingsDiff(shards[0].Manifest, &other); len(diffs) != 0 {
		t.Errorf("endpoints of one server refuse the merge: %q", diffs)
	}
	shards[0].Manifest.Model.Endpoints = []string{"http://a/v1"}
	shards[2].Manifest.Model.Endpoints = []string{"http://b/v1", "http://a/v1", "http://c/v1"}
	if got, want := unionEndpoints(shards), []string{"http://a/v1", "http://b/v1", "http://c/v1"}; !slices.Equal(got, want) {
		t.Errorf("merged endpoints %q, want %q", got, want)
	}
	other.Model.Endpoints = nil
	other.Concurrency = 99
	if diffs, _ := settingsDiff(shards[0].Manifest, &other); len(diffs) == 0 {
		t.Error("a real settings difference went unnoticed")
	}
}

// A shard manifest without dataset.path and no benchmark given: the error
// names the manifest and matches ErrNoDatasetPath, so that the command
// can name its --benchmark flag.
func TestMergeBenchmarkWithoutDatasetPath(t *testing.T) {
	dir := t.TempDir()
	first := &shardRun{Run: &Run{Dir: dir, Manifest: &results.Manifest{}}, i: 1, n: 2}
	_, _, err := mergeBenchmark(first, "")
	if !errors.Is(err, ErrNoDatasetPath) || err.Error() != filepath.Join(dir, rundir.ManifestFile)+": no dataset.path" {
		t.Errorf("err = %v", err)
	}
}
