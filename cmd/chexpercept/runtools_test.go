package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/eval"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runs"
)

// The run-directory commands are tested as a user runs them, through
// runCLI (helpers_test.go).

// lastLine is the last line a command printed on stdout (the run dir).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// snapshot hashes every file under dir.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := sha256.Sum256(b)
		out[p] = hex.EncodeToString(s[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// normLines is results.jsonl as the §9.5 equality reads it: lines sorted
// by key_id with the given record and turn fields dropped.
func normLines(t *testing.T, name string, recordDrop, turnDrop []string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimRight(string(mustRead(t, name)), "\n"), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, k := range recordDrop {
			delete(r, k)
		}
		if u, ok := r["usage"].(map[string]any); ok && slices.Contains(recordDrop, "usage.cost_usd") {
			delete(u, "cost_usd")
		}
		for _, tr := range r["turns"].([]any) {
			for _, k := range turnDrop {
				delete(tr.(map[string]any), k)
			}
		}
		b, _ := json.Marshal(r) // sorted keys: a canonical form
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

var timingRecord = []string{"started_at", "finished_at"}
var timingTurn = []string{"latency_ms", "total_ms", "attempts"}

// scriptedRun writes a finished run of the scripted fake model
// (protocoltest.ScenarioReplies: replies in many formats, usage on the
// RR records) as azure gpt-5.4, so that the export carries token_usage.
func scriptedRun(t *testing.T, bench *benchmark.Benchmark, out string, oracle protocol.OracleMode, mode parse.Mode) string {
	t.Helper()
	reg, err := registry.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := eval.ResolveModel(reg, nil, "azure", "gpt-5.4", false)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	replies := protocoltest.ScenarioReplies()
	var recs []*results.Record
	var keys []string
	for i, br := range bench.Records {
		s := &protocoltest.Script{Replies: replies[br.KeyID]}
		r := protocol.Run(context.Background(), br, protocol.Options{BenchDir: bench.Dir, Index: i, Oracle: oracle, Parse: mode,
			Now: func() time.Time { return at }}, s.Call)
		if r.Status != results.StatusOK {
			t.Fatalf("scripted %s: %s", br.KeyID, *r.Error)
		}
		recs, keys = append(recs, r), append(keys, br.KeyID)
	}
	abs, _ := filepath.Abs(bench.Dir)
	man := results.NewManifest(results.RunSpec{Model: m, Oracle: string(oracle), Parse: string(mode), Now: func() time.Time { return at }}, bench, abs, keys)
	dir := rundir.Path(out, man.RunName, string(oracle), nil)
	if err := runs.WriteRun(nil, dir, man, recs, len(recs), 2.5); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readLines(t *testing.T, name string) []*results.Record {
	t.Helper()
	recs, err := rundir.ReadResults(name)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestRescore(t *testing.T) {
	t.Parallel()
	bench := protocoltest.Bench(t)
	for _, oracle := range []protocol.OracleMode{protocol.OracleNone, protocol.OracleImplicit} {
		t.Run(string(oracle), func(t *testing.T) {
			out := t.TempDir()
			src := scriptedRun(t, bench, out, oracle, parse.ModeReference)
			before := snapshot(t, src)

			stdout, stderr, code := runCLI(t, "rescore", src, "--parse-mode", "strict")
			if code != 0 {
				t.Fatalf("rescore exit %d: %s", code, stderr)
			}
			dst := lastLine(stdout)
			want := filepath.Join(out, "azure_gpt-5.4_strict", "oracle_"+string(oracle))
			if dst != want {
				t.Fatalf("new run dir %s, want %s", dst, want)
			}
			if after := snapshot(t, src); !maps(before, after) {
				t.Fatal("rescore modified the source run")
			}
			for _, f := range []string{rundir.ManifestFile, rundir.ResultsFile, rundir.AllResultsFile, rundir.SummaryFile,
				rundir.RefSummaryFile, rundir.RefContourFile, rundir.RefAttributeFile} {
				if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
					t.Errorf("missing %s: %v", f, err)
				}
			}
			man, err := rundir.ReadManifest(dst)
			if err != nil {
				t.Fatal(err)
			}
			srcAbs, _ := filepath.Abs(src)
			if man.ParseMode != "strict" || man.RescoredFrom == nil || *man.RescoredFrom != srcAbs || man.RunName != "azure_gpt-5.4_strict" {
				t.Errorf("manifest: parse_mode %q rescored_from %v run_name %q", man.ParseMode, man.RescoredFrom, man.RunName)
			}
			var sum results.Summary
			if err := json.Unmarshal(mustRead(t, filepath.Join(dst, rundir.SummaryFile)), &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Run.ParseMode != "strict" || sum.Run.RescoredFrom == nil || sum.Run.Name != "azure_gpt-5.4_strict" {
				t.Errorf("summary run block %+v", sum.Run)
			}
			if !strings.Contains(string(mustRead(t, filepath.Join(dst, rundir.RefSummaryFile))), ",gpt-5.4_strict,") {
				t.Error("reference CSV does not carry the new label")
			}

			// The RF record's T2 "The answer is 2" is right in reference
			// mode and a strict failure.
			olds, news := readLines(t, filepath.Join(src, rundir.ResultsFile)), readLines(t, filepath.Join(dst, rundir.ResultsFile))
			if len(olds) != len(news) {
				t.Fatalf("%d lines rescored into %d", len(olds), len(news))
			}
			var o, n *results.Turn
			for i := range olds {
				if olds[i].KeyID == "pneumonia_s57001234_positive_0" {
					o, n = olds[i].TurnByStep(benchmark.QContourEval.Step()), news[i].TurnByStep(benchmark.QContourEval.Step())
				}
				// The conversation is the source's; only labels change.
				for j := range olds[i].Turns {
					a, b := olds[i].Turns[j], news[i].Turns[j]
					if deref(a.UserText) != deref(b.UserText) || deref(a.FedBack) != deref(b.FedBack) || deref(a.Raw) != deref(b.Raw) {
						t.Errorf("%s %s: conversation changed", olds[i].KeyID, a.Turn)
					}
				}
				if news[i].ParseMode != "strict" {
					t.Errorf("%s: parse_mode %q", news[i].KeyID, news[i].ParseMode)
				}
			}
			if *o.ParseRule != "A7/B1" || !*o.Correct || *n.ParseRule != "fail:no_marker" || *n.Correct {
				t.Errorf("RF T2: reference %s %v, strict %s %v", *o.ParseRule, *o.Correct, *n.ParseRule, *n.Correct)
			}
			if bytes.Equal(mustRead(t, filepath.Join(src, rundir.AllResultsFile)), mustRead(t, filepath.Join(dst, rundir.AllResultsFile))) {
				t.Error("all_results.json did not change under strict parsing")
			}
			isOracle := strings.Contains(stderr, "only the labels changed")
			if isOracle != (oracle != protocol.OracleNone) {
				t.Errorf("oracle note printed=%v for oracle %s: %s", isOracle, oracle, stderr)
			}

			// Refuses to overwrite; --force replaces.
			if _, stderr, code := runCLI(t, "rescore", src, "--parse-mode", "strict"); code != 2 ||
				!strings.Contains(stderr, "already holds a run (manifest.json or results.jsonl exists); pass --force to replace it") {
				t.Errorf("second rescore: exit %d, %s", code, stderr)
			}
			if _, stderr, code := runCLI(t, "rescore", src, "--parse-mode", "strict", "--force"); code != 0 {
				t.Errorf("rescore --force: exit %d, %s", code, stderr)
			}

			// Back to reference: for a none run the labels (and every
			// byte of the record lines and export) are the source's again.
			stdout, stderr, code = runCLI(t, "rescore", dst, "--parse-mode", "reference")
			if code != 0 {
				t.Fatalf("rescore back: exit %d, %s", code, stderr)
			}
			back := lastLine(stdout)
			if filepath.Base(filepath.Dir(back)) != "azure_gpt-5.4_strict_rescored" {
				t.Errorf("back run dir %s", back)
			}
			if oracle == protocol.OracleNone {
				for _, f := range []string{rundir.ResultsFile, rundir.AllResultsFile} {
					if !bytes.Equal(mustRead(t, filepath.Join(src, f)), mustRead(t, filepath.Join(back, f))) {
						t.Errorf("%s differs after rescoring strict → reference", f)
					}
				}
			}
		})
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestRescoreRefusals(t *testing.T) {
	t.Parallel()
	bench := protocoltest.Bench(t)
	out := t.TempDir()
	src := scriptedRun(t, bench, out, protocol.OracleNone, parse.ModeReference)
	other := filepath.Join(t.TempDir(), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := benchtest.Write(other, benchtest.Sample(), false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no parse mode", []string{"rescore", src}, "parse-mode"},
		{"bad parse mode", []string{"rescore", src, "--parse-mode", "lenient"}, "want reference or strict"},
		{"not a run", []string{"rescore", out, "--parse-mode", "strict"}, "manifest.json"},
		{"other benchmark", []string{"rescore", src, "--parse-mode", "strict", "--benchmark", other}, "dataset.sha256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, c.args...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, c.want)
			}
		})
	}
}

func TestImportReferenceRoundTrip(t *testing.T) {
	t.Parallel()
	bench := protocoltest.Bench(t)
	for _, oracle := range []protocol.OracleMode{protocol.OracleNone, protocol.OracleImplicit, protocol.OracleExplicit} {
		for _, mode := range []parse.Mode{parse.ModeReference, parse.ModeStrict} {
			t.Run(string(oracle)+"/"+string(mode), func(t *testing.T) {
				src := scriptedRun(t, bench, t.TempDir(), oracle, mode)
				orig := mustRead(t, filepath.Join(src, rundir.AllResultsFile))
				// As if written on another machine: the image paths carry
				// another benchmark directory. Provider, model, flags and
				// oracle come from the path.
				abs, _ := filepath.Abs(bench.Dir)
				foreign := bytes.ReplaceAll(orig, []byte(jsonString(abs+"/chexpercept/")), []byte(jsonString("/data/ref/CheXpercept/chexpercept/")))
				if bytes.Equal(foreign, orig) {
					t.Fatal("image prefix not found in the export")
				}
				refDir := filepath.Join(t.TempDir(), filepath.Base(filepath.Dir(src)), filepath.Base(src))
				if err := os.MkdirAll(refDir, 0o755); err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(refDir, rundir.AllResultsFile)
				if err := os.WriteFile(file, foreign, 0o644); err != nil {
					t.Fatal(err)
				}
				out := t.TempDir()
				stdout, stderr, code := runCLI(t, "import-reference", file, "--benchmark", bench.Dir, "--out", out)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				if strings.Contains(stderr, "warning:") {
					t.Errorf("warnings importing our own export: %s", stderr)
				}
				dst := lastLine(stdout)
				if want := filepath.Join(out, filepath.Base(filepath.Dir(src)), "oracle_"+string(oracle)); dst != want {
					t.Fatalf("run dir %s, want %s", dst, want)
				}
				if got := mustRead(t, filepath.Join(dst, rundir.AllResultsFile)); !bytes.Equal(got, orig) {
					t.Errorf("all_results.json after export → import → export differs (%d vs %d bytes)", len(got), len(orig))
				}
				// The records are ours again except what the file cannot
				// hold: timing, finish reasons, separate reasoning and the
				// cost of unpriced calls (written as 0.0 by the export).
				rd := append(slices.Clone(timingRecord), "usage.cost_usd")
				td := append(slices.Clone(timingTurn), "finish_reason", "reasoning", "cost_usd")
				a, b := normLines(t, filepath.Join(src, rundir.ResultsFile), rd, td), normLines(t, filepath.Join(dst, rundir.ResultsFile), rd, td)
				if !slices.Equal(a, b) {
					for i := range a {
						if i < len(b) && a[i] != b[i] {
							t.Errorf("record differs:\n ours     %s\n imported %s", a[i], b[i])
							break
						}
					}
				}
				man, err := rundir.ReadManifest(dst)
				if err != nil {
					t.Fatal(err)
				}
				if man.OracleMode != string(oracle) || man.ParseMode != string(mode) || man.Model.Backend != "azure" {
					t.Errorf("manifest oracle %s parse %s backend %s", man.OracleMode, man.ParseMode, man.Model.Backend)
				}
			})
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

func TestImportReferenceErrors(t *testing.T) {
	t.Parallel()
	bench := protocoltest.Bench(t)
	src := scriptedRun(t, bench, t.TempDir(), protocol.OracleNone, parse.ModeReference)
	orig := mustRead(t, filepath.Join(src, rundir.AllResultsFile))
	top, err := ojson.Parse(orig)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(v *ojson.Value)) []byte {
		v, _ := ojson.Parse(orig)
		f(v)
		return ojson.MarshalASCII(v)
	}
	firstKey := top.O[0].Key
	cases := []struct {
		name string
		data []byte
		args []string
		want []string
	}{
		{"unknown key", edit(func(v *ojson.Value) {
			v.O = append(v.O, ojson.Member{Key: "edema_s99999999_negative_0", Value: v.O[0].Value})
		}), nil, []string{"edema_s99999999_negative_0", "not in the benchmark"}},
		{"chat_history not a list", edit(func(v *ojson.Value) {
			for i, m := range v.O[0].Value.O {
				if m.Key == "chat_history" {
					v.O[0].Value.O[i].Value = ojson.Str("oops")
				}
			}
		}), nil, []string{firstKey, "chat_history is a string"}},
		{"image outside its record", edit(func(v *ojson.Value) {
			v.O[0].Value.Get("chat_history").A[0].A[1].A[0] = ojson.Str("/x/chexpercept/" + firstKey + "/../other/xray.png")
		}), nil, []string{firstKey, "leaves its record folder"}},
		{"wrong path", edit(func(v *ojson.Value) {
			for i, m := range v.O[0].Value.O {
				if m.Key == "qa_path" {
					v.O[0].Value.O[i].Value = ojson.Str("revision_required")
				}
			}
		}), nil, []string{firstKey, "qa_path"}},
		{"turns missing", edit(func(v *ojson.Value) {
			h := v.O[1].Value.Get("chat_history")
			h.A = h.A[:1]
		}), nil, []string{top.O[1].Key, "chat_history has 1 turn(s)"}},
		{"not JSON", []byte(`{"a": [1,}`), nil, []string{"all_results.json", "line 1"}},
		{"no provider in path", orig, []string{"--oracle", "none"}, []string{"--provider"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "azure_gpt-5.4", "oracle_none")
			if c.args != nil {
				dir = t.TempDir()
			}
			os.MkdirAll(dir, 0o755)
			file := filepath.Join(dir, rundir.AllResultsFile)
			if err := os.WriteFile(file, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"import-reference", file, "--benchmark", bench.Dir, "--out", t.TempDir()}, c.args...)
			_, stderr, code := runCLI(t, args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (%s)", code, stderr)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("error is not one line: %q", stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
		})
	}

	// A parse disagreement is a warning, not an error: importing a
	// reference-mode export with strict parsing re-derives other answers.
	dir := filepath.Join(t.TempDir(), "azure_gpt-5.4", "oracle_none")
	os.MkdirAll(dir, 0o755)
	file := filepath.Join(dir, rundir.AllResultsFile)
	os.WriteFile(file, orig, 0o644)
	_, stderr, code := runCLI(t, "import-reference", file, "--benchmark", bench.Dir, "--out", t.TempDir(), "--parse-mode", "strict")
	if code != 0 || !strings.Contains(stderr, "warning: the file's parsed response differs from our re-parse") {
		t.Errorf("strict import of a reference export: exit %d, %s", code, stderr)
	}

	// A run directory holding files of no run is refused, untouched.
	out := t.TempDir()
	runDir := filepath.Join(out, "azure_gpt-5.4", "oracle_none")
	os.MkdirAll(runDir, 0o755)
	os.WriteFile(filepath.Join(runDir, rundir.SummaryFile), []byte("my summary"), 0o644)
	before := outdirtest.Snapshot(t, out)
	_, stderr, code = runCLI(t, "import-reference", file, "--benchmark", bench.Dir, "--out", out, "--force")
	if code != 2 || !strings.Contains(stderr, runDir+" is not empty and holds no run") {
		t.Errorf("import into a foreign run directory: exit %d, %s", code, stderr)
	}
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, out))
}

// shardBench writes a small valid benchmark (7 lesions × LF, RF, RR).
func shardBench(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := benchtest.Write(dir, benchtest.Full(1), false); err != nil {
		t.Fatal(err)
	}
	return dir
}

// baselineRun evaluates the random baseline in process through the
// runner (shard nil: unsharded).
func baselineRun(t *testing.T, bench, out string, shard *results.Shard, seed int64) string {
	t.Helper()
	reg, err := registry.Load()
	if err != nil {
		t.Error(err)
		return ""
	}
	m, _, err := eval.ResolveModel(reg, nil, "baseline", "random", false)
	if err != nil {
		t.Error(err)
		return ""
	}
	sum, err := eval.Run(context.Background(), eval.Options{BenchDir: bench, OutDir: out, Model: m, Oracle: protocol.OracleImplicit,
		PolicySeed: seed, NoCache: true, Concurrency: 4, Selection: results.Selection{Shard: shard}})
	if err != nil {
		t.Error(err)
		return ""
	}
	return sum.RunDir
}

func TestMergeShardsEqualsUnsharded(t *testing.T) {
	t.Parallel()
	bench := shardBench(t)
	sharded, plain := t.TempDir(), t.TempDir()
	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			baselineRun(t, bench, sharded, &results.Shard{I: i, N: 3}, 7)
		}()
	}
	wg.Add(1)
	var whole string
	go func() { defer wg.Done(); whole = baselineRun(t, bench, plain, nil, 7) }()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	runDir := filepath.Join(sharded, "baseline_random", "oracle_implicit")
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "merge", runDir, "--out", out)
	if code != 0 {
		t.Fatalf("merge exit %d: %s", code, stderr)
	}
	merged := lastLine(stdout)
	if merged != filepath.Join(out, "baseline_random", "oracle_implicit") {
		t.Fatalf("merged into %s", merged)
	}
	// §9.5 equality (same benchmark directory, so the image prefixes
	// already agree).
	if !bytes.Equal(mustRead(t, filepath.Join(merged, rundir.AllResultsFile)), mustRead(t, filepath.Join(whole, rundir.AllResultsFile))) {
		t.Error("merged all_results.json differs from the unsharded run's")
	}
	a, b := normLines(t, filepath.Join(merged, rundir.ResultsFile), timingRecord, timingTurn), normLines(t, filepath.Join(whole, rundir.ResultsFile), timingRecord, timingTurn)
	if !slices.Equal(a, b) || len(a) != 21 {
		t.Errorf("merged results.jsonl (%d lines) differs from the unsharded run's (%d lines)", len(a), len(b))
	}
	// In index order.
	recs := readLines(t, filepath.Join(merged, rundir.ResultsFile))
	if !slices.IsSortedFunc(recs, func(x, y *results.Record) int { return x.Index - y.Index }) {
		t.Error("merged results.jsonl is not in index order")
	}
	// The merged manifest is the unsharded run's but for the creation time.
	mm, err := rundir.ReadManifest(merged)
	if err != nil {
		t.Fatal(err)
	}
	wm, err := rundir.ReadManifest(whole)
	if err != nil {
		t.Fatal(err)
	}
	mm.CreatedAt, wm.CreatedAt = "", ""
	mb, _ := mm.Marshal()
	wb, _ := wm.Marshal()
	if !bytes.Equal(mb, wb) {
		t.Errorf("merged manifest differs from the unsharded one:\n%s\n%s", mb, wb)
	}
	for _, f := range []string{rundir.SummaryFile, rundir.RefSummaryFile, rundir.RefContourFile, rundir.RefAttributeFile} {
		if _, err := os.Stat(filepath.Join(merged, f)); err != nil {
			t.Error(err)
		}
	}
	mc := mustRead(t, filepath.Join(merged, rundir.RefSummaryFile))
	if !bytes.Equal(mc, mustRead(t, filepath.Join(whole, rundir.RefSummaryFile))) {
		t.Error("merged reference CSV differs from the unsharded run's")
	}

	// Merging again needs --force; the shard folders themselves are
	// accepted as inputs too.
	shardDirs := []string{}
	for i := 1; i <= 3; i++ {
		shardDirs = append(shardDirs, filepath.Join(runDir, (&results.Shard{I: i, N: 3}).Dir()))
	}
	if _, stderr, code := runCLI(t, append(append([]string{"merge"}, shardDirs...), "--out", out)...); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("re-merge without --force: exit %d %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, append(append([]string{"merge"}, shardDirs...), "--out", out, "--force", "--benchmark", bench)...); code != 0 {
		t.Errorf("re-merge with --force: exit %d %s", code, stderr)
	}
	// A run directory holding files of no run is refused, with or without
	// --force, and keeps every byte and modification time.
	foreign := t.TempDir()
	fdir := filepath.Join(foreign, "baseline_random", "oracle_implicit")
	if err := os.MkdirAll(fdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fdir, rundir.SummaryFile), []byte("my summary"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := outdirtest.Snapshot(t, foreign)
	for _, force := range [][]string{nil, {"--force"}} {
		_, stderr, code := runCLI(t, append([]string{"merge", runDir, "--out", foreign}, force...)...)
		if code != 2 || !strings.Contains(stderr, fdir+` is not empty and holds no run`) || !strings.Contains(stderr, `"summary.json"`) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("merge %v into a foreign run directory: exit %d %s", force, code, stderr)
		}
	}
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, foreign))

	// On another machine: the benchmark elsewhere. Image paths follow it
	// and the manifest records it; a benchmark with other bytes is refused.
	moved := filepath.Join(t.TempDir(), "moved-bench")
	outdirtest.CopyTree(t, bench, moved)
	out2 := t.TempDir()
	stdout, stderr, code = runCLI(t, "merge", runDir, "--out", out2, "--benchmark", moved)
	if code != 0 {
		t.Fatalf("merge --benchmark: exit %d %s", code, stderr)
	}
	absBench, _ := filepath.Abs(bench)
	absMoved, _ := filepath.Abs(moved)
	got := mustRead(t, filepath.Join(lastLine(stdout), rundir.AllResultsFile))
	want := bytes.ReplaceAll(mustRead(t, filepath.Join(whole, rundir.AllResultsFile)), []byte(absBench+"/"), []byte(absMoved+"/"))
	if !bytes.Equal(got, want) || bytes.Contains(got, []byte(absBench+"/")) {
		t.Error("image paths were not rewritten to the merging machine's benchmark")
	}
	if m, err := rundir.ReadManifest(lastLine(stdout)); err != nil || m.Dataset.Path != absMoved {
		t.Errorf("merged manifest dataset path: %v %v", m, err)
	}
	f, _ := os.OpenFile(filepath.Join(moved, benchmark.JSONName), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\n")
	f.Close()
	if _, stderr, code := runCLI(t, "merge", runDir, "--out", t.TempDir(), "--benchmark", moved); code != 2 || !strings.Contains(stderr, "dataset.sha256") {
		t.Errorf("merge with a different benchmark: exit %d %s", code, stderr)
	}

	t.Run("refusals", func(t *testing.T) {
		mergeRefusals(t, bench, runDir, shardDirs)
	})
}

func mergeRefusals(t *testing.T, bench, runDir string, shardDirs []string) {
	tmp := t.TempDir()
	// the same shard twice, from two folders
	dup := filepath.Join(tmp, "dup", "shard-2-of-3")
	outdirtest.CopyTree(t, shardDirs[1], dup)
	// shard 3 with another policy seed
	seed := filepath.Join(tmp, "seed", "shard-3-of-3")
	outdirtest.CopyTree(t, shardDirs[2], seed)
	man := filepath.Join(seed, rundir.ManifestFile)
	mb := mustRead(t, man)
	mb2 := bytes.Replace(mb, []byte(`"policy_seed": 7`), []byte(`"policy_seed": 8`), 1)
	if bytes.Equal(mb, mb2) {
		t.Fatal("policy_seed not found in the shard manifest")
	}
	os.WriteFile(man, mb2, 0o644)
	// shard 2 also holding a record of shard 1
	over := filepath.Join(tmp, "over", "shard-2-of-3")
	outdirtest.CopyTree(t, shardDirs[1], over)
	first := strings.SplitAfter(string(mustRead(t, filepath.Join(shardDirs[0], rundir.ResultsFile))), "\n")[0]
	f, _ := os.OpenFile(filepath.Join(over, rundir.ResultsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(first)
	f.Close()
	// a shard of a 2-way split
	two := baselineRun(t, bench, filepath.Join(tmp, "two"), &results.Shard{I: 2, N: 2}, 7)
	// a folder whose name and manifest disagree
	renamed := filepath.Join(tmp, "renamed", "shard-1-of-3")
	outdirtest.CopyTree(t, shardDirs[2], renamed)
	// an unsharded run directory
	plain := filepath.Join(tmp, "plainrun")
	os.MkdirAll(plain, 0o755)

	for _, c := range []struct {
		name string
		in   []string
		want string
	}{
		{"missing shard", shardDirs[:2], "shard(s) 3 of 3 missing"},
		{"two missing", shardDirs[1:2], "shard(s) 1, 3 of 3 missing"},
		{"duplicate shard", []string{runDir, dup}, "shard 2/3 is given twice"},
		{"different settings", []string{shardDirs[0], shardDirs[1], seed}, "model.policy_seed: 7 vs 8"},
		{"overlapping keys", []string{shardDirs[0], over, shardDirs[2]}, "is in both shard 1/3"},
		{"different splits", []string{shardDirs[0], shardDirs[1], shardDirs[2], two}, "different splits"},
		{"name and manifest disagree", []string{renamed}, "folder name says shard 1/3 but its manifest says 3/3"},
		{"no shards", []string{plain}, "neither a shard folder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, append(append([]string{"merge"}, c.in...), "--out", t.TempDir())...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, c.want)
			}
		})
	}
}

// rescore and import-reference name the real problem with exit 2.
func TestRunToolsNamedErrors(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "opensource_x", "oracle_none")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	m := `{"dataset":{"path":"../../internal/benchmark/testdata/sample","sha256":"x"},"selection":{"shard":null},"run_name":"opensource_x","model":{"quirks":[]},"oracle_mode":"none","parse_mode":"reference","rescored_from":null}`
	os.WriteFile(filepath.Join(run, "manifest.json"), []byte(m), 0o644)
	os.WriteFile(filepath.Join(run, "results.jsonl"), []byte("not json"), 0o644)
	missing := filepath.Join(t.TempDir(), "nonexist", "all_results.json")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"rescore without a record", []string{"rescore", run, "--parse-mode", "strict", "--benchmark", "../../internal/benchmark/testdata/sample"}, "results.jsonl: line 1"},
		{"import-reference missing file", []string{"import-reference", missing, "--benchmark", genBench, "--out", t.TempDir()}, missing + ": no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLIEnv(t, nil, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, stdout, stderr, tc.want)
			}
		})
	}
}
