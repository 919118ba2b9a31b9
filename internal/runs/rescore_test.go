package runs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// rfKey is the RF record of protocoltest.Records(); its detection reply is
// a GLM answer box in scriptedRun.
const rfKey = "pneumonia_s57001234_positive_0"

var testTime = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// glmModel is an opensource model with the given registry quirks.
func glmModel(quirks ...string) runmodel.Model {
	return runmodel.Model{Name: "glm-4v", Provider: "opensource", Backend: "vllm", ModelID: "zai/glm-4v", Label: "glm-4v",
		Quirks: quirks, GLMBoxUnwrap: slices.Contains(quirks, registry.QuirkGLMBoxUnwrap)}
}

// scriptedRun writes a finished oracle-none run of the scripted fake
// model (protocoltest.ScenarioReplies, with the RF detection reply given
// as a GLM answer box) into out/<run name>/oracle_none and returns it.
func scriptedRun(t *testing.T, bench *benchmark.Benchmark, out string, model runmodel.Model) string {
	t.Helper()
	return scriptedControlRun(t, bench, out, model, "")
}

// scriptedControlRun is scriptedRun as the image-control run c of the
// model ("" for the model's own run).
func scriptedControlRun(t *testing.T, bench *benchmark.Benchmark, out string, model runmodel.Model, c results.Control) string {
	t.Helper()
	o := results.RunSpec{Model: model, Oracle: string(protocol.OracleNone), Parse: string(parse.ModeReference), Control: c,
		Now: func() time.Time { return testTime }}
	replies := protocoltest.ScenarioReplies()
	replies[rfKey][0] = protocol.Reply{Text: "<|begin_of_box|>1<|end_of_box|>", Attempts: 1}
	var recs []*results.Record
	var keys []string
	for i, br := range bench.Records {
		s := &protocoltest.Script{Replies: replies[br.KeyID]}
		r := protocol.Run(context.Background(), br, protocol.Options{BenchDir: bench.Dir, Index: i, Oracle: protocol.OracleNone,
			Parse: parse.ModeReference, GLMBoxUnwrap: model.GLMBoxUnwrap, Now: o.Now}, s.Call)
		if r.Status != results.StatusOK {
			t.Fatalf("scripted %s: %s", br.KeyID, *r.Error)
		}
		recs, keys = append(recs, r), append(keys, br.KeyID)
	}
	abs, _ := filepath.Abs(bench.Dir)
	m := results.NewManifest(o, bench, abs, keys)
	dir := rundir.Path(out, m.RunName, o.Oracle, nil)
	if err := WriteRun(nil, dir, m, recs, len(recs), 2.5); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readRecords(t *testing.T, dir string) []*results.Record {
	t.Helper()
	recs, err := rundir.ReadResults(filepath.Join(dir, rundir.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func ruleOf(t *testing.T, recs []*results.Record, key, step string) string {
	t.Helper()
	for _, r := range recs {
		if tn := r.TurnByStep(step); r.KeyID == key && tn != nil && tn.ParseRule != nil {
			return *tn.ParseRule
		}
	}
	t.Fatalf("%s: no parsed %s turn", key, step)
	return ""
}

func TestRescore(t *testing.T) {
	bench := protocoltest.Bench(t)
	later := testTime.Add(time.Hour)
	for _, c := range []struct {
		name   string
		quirks []string
		mode   parse.Mode
		newRun string
		rule   string // the rule of the GLM box reply after rescoring
	}{
		{"glm quirk, reference", []string{registry.QuirkGLMBoxUnwrap}, parse.ModeReference, "opensource_glm-4v_rescored", "A6/B2"},
		{"no quirk, reference", nil, parse.ModeReference, "opensource_glm-4v_rescored", "A7/B3"},
		{"glm quirk, strict", []string{registry.QuirkGLMBoxUnwrap}, parse.ModeStrict, "opensource_glm-4v_strict", "fail:no_marker"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			src := scriptedRun(t, bench, out, glmModel(c.quirks...))
			rep, err := Rescore(context.Background(), src, RescoreOptions{Mode: c.mode, Bench: bench, Now: func() time.Time { return later }})
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(out, c.newRun, "oracle_none")
			if rep.Dir != want || rep.RunName != c.newRun || rep.Records != 4 || rep.Oracle {
				t.Errorf("report %+v, want dir %s", rep, want)
			}
			if got := ruleOf(t, readRecords(t, want), rfKey, benchmark.QDetection.Step()); got != c.rule {
				t.Errorf("GLM box reply parsed by rule %s, want %s", got, c.rule)
			}
			for _, f := range []string{rundir.AllResultsFile, rundir.SummaryFile, rundir.RefSummaryFile} {
				if _, err := os.Stat(filepath.Join(want, f)); err != nil {
					t.Error(err)
				}
			}
			// The manifest is the source's with only the rescore's members
			// changed.
			srcMan, err := rundir.ReadManifest(src)
			if err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs(src)
			srcMan.CreatedAt, srcMan.RunName, srcMan.ParseMode, srcMan.RescoredFrom = later.Format(time.RFC3339), c.newRun, string(c.mode), &abs
			wantBytes, _ := srcMan.Marshal()
			if got, _ := os.ReadFile(filepath.Join(want, rundir.ManifestFile)); !bytes.Equal(got, wantBytes) {
				t.Errorf("rescored manifest:\n%s\nwant\n%s", got, wantBytes)
			}
			if w := rundir.WallTime(want); w != 2.5 {
				t.Errorf("wall time %v, want the source's 2.5", w)
			}
		})
	}
}

// A control run's rescore is named as the control of the model run's
// rescore, so that the report pairs the two again.
func TestRescoreControlRun(t *testing.T) {
	bench := protocoltest.Bench(t)
	out := t.TempDir()
	src := scriptedControlRun(t, bench, out, glmModel(), results.ControlTextOnly)
	if filepath.Base(filepath.Dir(src)) != "opensource_glm-4v_text-only" {
		t.Fatalf("control run in %s", src)
	}
	rep, err := Rescore(context.Background(), src, RescoreOptions{Mode: parse.ModeStrict, Bench: bench})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RunName != "opensource_glm-4v_strict_text-only" {
		t.Errorf("rescored control run %q, want opensource_glm-4v_strict_text-only", rep.RunName)
	}
	m, err := rundir.ReadManifest(rep.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Control != results.ControlTextOnly || m.Kind != results.KindControl {
		t.Errorf("rescored manifest: control %q kind %q", m.Control, m.Kind)
	}
}

func TestRescoreRefusals(t *testing.T) {
	bench := protocoltest.Bench(t)
	out := t.TempDir()
	src := scriptedRun(t, bench, out, glmModel())
	// Shard folders and misnamed folders are not run directories.
	shard := filepath.Join(out, "s", "opensource_glm-4v", "oracle_none", "shard-1-of-2")
	odd := filepath.Join(out, "s", "opensource_glm-4v", "results")
	wrongMode := filepath.Join(out, "w", "opensource_glm-4v", "oracle_explicit")
	long := filepath.Join(out, "l", strings.Repeat("L", 250), "oracle_none") // + "_strict" is too long for a folder
	for _, d := range []string{shard, odd, wrongMode, long} {
		if err := os.CopyFS(d, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := benchtest.Write(other, benchtest.Sample(), false); err != nil {
		t.Fatal(err)
	}
	otherBench, err := benchdir.Load(other)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		dir   string
		mode  parse.Mode
		bench *benchmark.Benchmark
		want  string
	}{
		{"shard folder", shard, parse.ModeStrict, bench, "shard folder"},
		{"not oracle_<mode>", odd, parse.ModeStrict, bench, "oracle_<mode>"},
		{"oracle mode and folder disagree", wrongMode, parse.ModeStrict, bench, `oracle_mode "none" does not match`},
		{"unknown parse mode", src, "lenient", bench, "unknown parse mode"},
		{"other benchmark", src, parse.ModeStrict, otherBench, "dataset.sha256"},
		{"not a run", out, parse.ModeStrict, bench, "oracle_<mode>"},
		{"rescored name too long", long, parse.ModeStrict, bench, "run name LLLL"}, // the rescored name is checked too
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Rescore(context.Background(), c.dir, RescoreOptions{Mode: c.mode, Bench: c.bench}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	// A target that holds a run needs Force.
	if _, err := Rescore(context.Background(), src, RescoreOptions{Mode: parse.ModeStrict, Bench: bench}); err != nil {
		t.Fatal(err)
	}
	if _, err := Rescore(context.Background(), src, RescoreOptions{Mode: parse.ModeStrict, Bench: bench}); !errors.Is(err, ErrRunExists) {
		t.Errorf("second rescore: %v", err)
	}
	if _, err := Rescore(context.Background(), src, RescoreOptions{Mode: parse.ModeStrict, Bench: bench, Force: true}); err != nil {
		t.Errorf("rescore with Force: %v", err)
	}
}

// Rescoring keeps the source's generation settings, including the extra
// request members and seed eval records (a rewrite through a manifest
// type without them would drop them silently).
func TestRescoreKeepsGenerationSettings(t *testing.T) {
	bench := protocoltest.Bench(t)
	out := t.TempDir()
	src := scriptedRun(t, bench, out, glmModel())
	name := filepath.Join(src, rundir.ManifestFile)
	mb := mustReadFile(t, name)
	ins := `"sampling": {"seed": 7, "extra_body": {"top_k": 20, "chat_template_kwargs": {"enable_thinking": false}}`
	if !bytes.Contains(mb, []byte(`"sampling": {}`)) {
		ins += ","
	}
	if err := os.WriteFile(name, bytes.Replace(mb, []byte(`"sampling": {`), []byte(ins), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Rescore(context.Background(), src, RescoreOptions{Mode: parse.ModeStrict, Bench: bench})
	if err != nil {
		t.Fatal(err)
	}
	got := string(mustReadFile(t, filepath.Join(rep.Dir, rundir.ManifestFile)))
	for _, want := range []string{`"seed": 7`, `"top_k": 20`, `"enable_thinking": false`} {
		if !strings.Contains(got, want) {
			t.Errorf("rescored manifest lost %s:\n%s", want, got)
		}
	}
}
