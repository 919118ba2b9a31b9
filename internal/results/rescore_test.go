package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// fakeEngine records what the tools hand to the engine.
type fakeEngine struct {
	modes []string
	glm   []bool
	final []string
}

func (f *fakeEngine) Rescore(r *Record, _ *benchmark.Record, mode string, glm bool) (*Record, error) {
	f.modes, f.glm = append(f.modes, mode), append(f.glm, glm)
	c := *r
	c.ParseMode = mode
	return &c, nil
}

func (f *fakeEngine) Replay(*benchmark.Record, int, ReplaySettings, func(int, ReplayTurn) (ReplayReply, error)) *Record {
	return nil
}

func (f *fakeEngine) Select(*benchmark.Benchmark, *ojson.Value) (*WholeSelection, error) {
	return nil, nil
}

func (f *fakeEngine) Finalize(dir string, _ *ojson.Value, _ int, _ float64) error {
	f.final = append(f.final, dir)
	return nil
}

func writeSourceRun(t *testing.T, dir string, b *benchmark.Benchmark, quirks string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := `{"dataset":{"path":"` + b.Dir + `","sha256":"` + b.SHA256 + `"},"selection":{"lesions":[],"shard":null},` +
		`"selected_records":2,"run_name":"opensource_glm-4v","model":{"quirks":` + quirks + `},"oracle_mode":"none","parse_mode":"reference","rescored_from":null}`
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	var lines []byte
	for i, r := range b.Records[:2] {
		rec := &Record{KeyID: r.KeyID, Index: i, Status: StatusOK, ParseMode: "reference", Turns: []Turn{}, OracleEvents: []Event{}}
		l, _ := rec.MarshalLine()
		lines = append(lines, l...)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), lines, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRescoreRun(t *testing.T) {
	b := sampleBenchmark(t)
	out := t.TempDir()
	for _, c := range []struct {
		quirks, mode, name string
		glm                bool
	}{
		{`["glm_box_unwrap"]`, "reference", "opensource_glm-4v_rescored", true},
		{`[]`, "strict", "opensource_glm-4v_strict", false},
	} {
		src := filepath.Join(out, "r"+c.mode, "opensource_glm-4v", "oracle_none")
		writeSourceRun(t, src, b, c.quirks)
		eng := &fakeEngine{}
		rep, err := RescoreRun(src, RescoreOptions{Mode: c.mode, Bench: b, Engine: eng})
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(out, "r"+c.mode, c.name, "oracle_none")
		if rep.Dir != want || len(eng.final) != 1 || eng.final[0] != want {
			t.Errorf("wrote %s (finalized %v), want %s", rep.Dir, eng.final, want)
		}
		if len(eng.glm) != 2 || eng.glm[0] != c.glm || eng.modes[0] != c.mode {
			t.Errorf("engine got glm %v modes %v, want %v %s", eng.glm, eng.modes, c.glm, c.mode)
		}
		m, err := ojson.Parse(mustReadFile(t, filepath.Join(want, ManifestFile)))
		if err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(src)
		if mstr(m, "parse_mode") != c.mode || mstr(m, "rescored_from") != abs || mstr(m, "run_name") != c.name {
			t.Errorf("manifest %s", ojson.MarshalCompact(m))
		}
	}

	// Shard folders and misnamed folders are not run directories.
	shard := filepath.Join(out, "s", "opensource_glm-4v", "oracle_none", "shard-1-of-2")
	writeSourceRun(t, shard, b, `[]`)
	odd := filepath.Join(out, "s", "opensource_glm-4v", "results")
	writeSourceRun(t, odd, b, `[]`)
	wrongMode := filepath.Join(out, "w", "opensource_glm-4v", "oracle_explicit")
	writeSourceRun(t, wrongMode, b, `[]`)
	for _, c := range []struct{ dir, want string }{
		{shard, "shard folder"},
		{odd, "oracle_<mode>"},
		{wrongMode, `oracle_mode "none" does not match`},
	} {
		if _, err := RescoreRun(c.dir, RescoreOptions{Mode: "strict", Bench: b, Engine: &fakeEngine{}}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.dir, err, c.want)
		}
	}
	if _, err := RescoreRun(wrongMode, RescoreOptions{Mode: "lenient", Bench: b, Engine: &fakeEngine{}}); err == nil {
		t.Error("unknown parse mode accepted")
	}
}

// sampleBenchmark writes the hand-made sample benchmark to a temporary
// folder and loads it.
func sampleBenchmark(t *testing.T) *benchmark.Benchmark {
	t.Helper()
	bdir := filepath.Join(t.TempDir(), "bench")
	if err := os.MkdirAll(bdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := benchtest.Write(bdir, benchtest.Sample(), false); err != nil {
		t.Fatal(err)
	}
	b, err := benchmark.Load(bdir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustReadFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
