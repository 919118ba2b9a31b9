package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// identityBench copies the sample benchmark into a new folder and writes
// its SHA256SUMS, as a build does.
func identityBench(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	outdirtest.CopyTree(t, genBench, dir)
	if err := benchtest.WriteSums(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// replaceImage copies the radiograph of another record over the first
// record's, as a careless operator would.
func replaceImage(t *testing.T, bench string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(bench, benchmark.ImagesDir))
	if err != nil || len(entries) < 2 {
		t.Fatalf("sample benchmark: %v", err)
	}
	xray := func(i int) string {
		return filepath.Join(bench, benchmark.ImagesDir, entries[i].Name(), "detection_qa", "xray.png")
	}
	other, err := os.ReadFile(xray(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(xray(0), other, 0o644); err != nil {
		t.Fatal(err)
	}
	return xray(0)
}

// oneLine is the last line of stderr, checked to be the only line that is
// not a warning.
func oneLine(t *testing.T, what, stderr string) string {
	t.Helper()
	var rest []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, "warning:") {
			rest = append(rest, l)
		}
	}
	if len(rest) != 1 {
		t.Errorf("%s: want one line besides warnings, got %q", what, stderr)
		return strings.Join(rest, "\n")
	}
	return rest[0]
}

// TestScriptedBenchmarkIdentity: a study and a run stay on the benchmark
// they began with. After read init and an eval, removing SHA256SUMS and
// copying another radiograph over a record's makes read serve and eval's
// resume refuse, each in one line saying why; SHA256SUMS rewritten to
// match the changed files is another benchmark too, which read serve and
// read export refuse; report refuses runs of two benchmarks side by side
// unless --allow-mixed-benchmarks, and then says so on every table.
func TestScriptedBenchmarkIdentity(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	bench := identityBench(t, "bench")
	db := filepath.Join(tmp, "study.sqlite")
	if _, stderr, code := runCLI(t, "read", "init", "--benchmark", bench, "--db", db, "--readers", "1", "--oracle", "none"); code != 0 {
		t.Fatalf("read init: %d %s", code, stderr)
	}
	out := filepath.Join(tmp, "results")
	evalArgs := []string{"eval", "--benchmark", bench, "--provider", "baseline", "--model", "first", "--oracle", "none", "--out", out, "--no-cache"}
	if _, stderr, code := runCLI(t, evalArgs...); code != 0 {
		t.Fatalf("eval: %d %s", code, stderr)
	}
	// A run cut short (as a killed eval leaves it): one record done.
	runDir := filepath.Join(out, "baseline_first", "oracle_none")
	res := filepath.Join(runDir, rundir.ResultsFile)
	lines, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(lines), "\n")
	if err := os.WriteFile(res, []byte(first+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// SHA256SUMS removed and a radiograph replaced.
	if err := os.Remove(filepath.Join(bench, "SHA256SUMS")); err != nil {
		t.Fatal(err)
	}
	replaceImage(t, bench)
	stderr, code, hung := runCLITimeout(t, 30*time.Second, "read", "serve", "--db", db, "--listen", "127.0.0.1:0", "--quiet")
	line := oneLine(t, "read serve without SHA256SUMS", stderr)
	if hung || code != 2 || !strings.Contains(line, "the study was made on SHA256SUMS ") || !strings.Contains(line, "(SHA256SUMS is gone)") || !strings.Contains(line, "benchmark identity is chexpercept.json ") {
		t.Errorf("read serve without SHA256SUMS: exit %d, %q", code, stderr)
	}
	t.Logf("read serve, SHA256SUMS gone: %s", line)
	_, stderr, code = runCLI(t, evalArgs...)
	line = oneLine(t, "eval resume", stderr)
	if code == 0 || !strings.Contains(line, "was started on benchmark SHA256SUMS ") || !strings.Contains(line, "is chexpercept.json ") || !strings.Contains(line, "refusing to mix two benchmarks in one run") {
		t.Errorf("eval resume without SHA256SUMS: exit %d, %q", code, stderr)
	}
	t.Logf("eval resume, SHA256SUMS gone: %s", line)
	if got, _ := os.ReadFile(res); string(got) != first+"\n" {
		t.Error("the refused resume wrote to results.jsonl")
	}

	// SHA256SUMS rewritten to match the changed files: validate --deep
	// passes, and it is still another benchmark than the study's.
	if err := benchtest.WriteSums(bench); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, "validate", "--deep", bench); code != 0 {
		t.Fatalf("validate --deep of the rewritten benchmark: %d %s", code, stderr)
	}
	stderr, code, hung = runCLITimeout(t, 30*time.Second, "read", "serve", "--db", db, "--listen", "127.0.0.1:0", "--quiet")
	line = oneLine(t, "read serve, SHA256SUMS rewritten", stderr)
	if hung || code != 2 || !strings.Contains(line, "(SHA256SUMS changed)") || !strings.Contains(line, "restore the benchmark the study was made on") {
		t.Errorf("read serve with SHA256SUMS rewritten: exit %d, %q", code, stderr)
	}
	t.Logf("read serve, SHA256SUMS rewritten: %s", line)
	_, stderr, code = runCLI(t, "read", "export", "--db", db, "--out", filepath.Join(tmp, "readers"))
	if line := oneLine(t, "read export", stderr); code != 2 || !strings.Contains(line, "(SHA256SUMS changed)") {
		t.Errorf("read export with SHA256SUMS rewritten: exit %d, %q", code, stderr)
	}
	_, stderr, code = runCLI(t, evalArgs...)
	if line := oneLine(t, "eval resume", stderr); code == 0 || !strings.Contains(line, "refusing to mix two benchmarks in one run") {
		t.Errorf("eval resume with SHA256SUMS rewritten: exit %d, %q", code, stderr)
	}

	// Runs of two benchmarks: the original and the changed one.
	orig := identityBench(t, "orig")
	if _, stderr, code := runCLI(t, "eval", "--benchmark", orig, "--provider", "baseline", "--model", "random", "--oracle", "none", "--out", out, "--no-cache"); code != 0 {
		t.Fatalf("eval on the original: %d %s", code, stderr)
	}
	if err := os.RemoveAll(runDir); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, evalArgs...); code != 0 {
		t.Fatalf("eval on the changed benchmark: %d %s", code, stderr)
	}
	_, stderr, code = runCLI(t, "report", out, "--benchmark", orig, "--out", filepath.Join(tmp, "report"), "--bootstrap", "20")
	line = oneLine(t, "report of mixed benchmarks", stderr)
	if code != 2 || !strings.Contains(line, "runs of different benchmarks") || !strings.Contains(line, "baseline_first (oracle none)") ||
		!strings.Contains(line, "baseline_random (oracle none)") || !strings.Contains(line, "--allow-mixed-benchmarks") {
		t.Errorf("report of two benchmarks: exit %d, %q", code, stderr)
	}
	t.Logf("report, two benchmarks: %s", line)
	if _, err := os.Stat(filepath.Join(tmp, "report", "report.md")); err == nil {
		t.Error("the refused report wrote report.md")
	}
	if _, stderr, code := runCLI(t, "report", out, "--benchmark", orig, "--out", filepath.Join(tmp, "report"), "--bootstrap", "20", "--allow-mixed-benchmarks"); code != 0 {
		t.Fatalf("report --allow-mixed-benchmarks: %d %s", code, stderr)
	}
	md, err := os.ReadFile(filepath.Join(tmp, "report", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	tables := strings.Count(string(md), "\n### ")
	notes := strings.Count(string(md), "\n> Runs of different benchmarks side by side (--allow-mixed-benchmarks): ")
	if tables == 0 || notes != tables || !strings.Contains(string(md), "| baseline_first | SHA256SUMS ") {
		t.Errorf("report.md: %d tables, %d say the benchmarks are mixed; identities shown: %v", tables, notes, strings.Contains(string(md), "| baseline_first | SHA256SUMS "))
	}
	html, err := os.ReadFile(filepath.Join(tmp, "report", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), `<p class="note mixed" role="note">Runs of different benchmarks side by side`); n < tables {
		t.Errorf("index.html: %d tables say the benchmarks are mixed, want every one of %d", n, tables)
	}
	summary, err := os.ReadFile(filepath.Join(tmp, "report", "summary.json"))
	if err != nil || !strings.Contains(string(summary), `"benchmark_identity": {`) || !strings.Contains(string(summary), `"mixed_benchmarks": "Runs of different benchmarks`) {
		t.Errorf("summary.json lacks the identities or the mixed note: %v", err)
	}
}

// TestScriptedAidRefused: read init --aid takes only a finished model run
// of this benchmark whose stored answers are its raw replies': a run
// whose parsed answer was changed, an unfinished run and the oracle
// baseline's run are each refused in one line, and a model's folder is
// answered with the run directories inside it.
func TestScriptedAidRefused(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	bench := identityBench(t, "bench")
	out := filepath.Join(tmp, "results")
	for _, m := range []string{"oracle", "first"} {
		if _, stderr, code := runCLI(t, "eval", "--benchmark", bench, "--provider", "baseline", "--model", m, "--oracle", "none", "--out", out, "--no-cache"); code != 0 {
			t.Fatalf("eval %s: %d %s", m, code, stderr)
		}
	}
	first := filepath.Join(out, "baseline_first", "oracle_none")
	edit := func(name string, f func(dir string)) string {
		dir := filepath.Join(tmp, name, "oracle_none")
		outdirtest.CopyTree(t, first, dir)
		f(dir)
		return dir
	}
	tampered := edit("tampered", func(d string) {
		p := filepath.Join(d, rundir.ResultsFile)
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), `"parsed":[1]`) {
			t.Fatalf("%s: %v", p, err)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), `"parsed":[1]`, `"parsed":[2]`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	unfinished := edit("unfinished", func(d string) {
		if err := rundir.MarkUnfinished(d); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		name, aid string
		extra     []string
		want      []string
	}{
		{"the oracle baseline", filepath.Join(out, "baseline_oracle", "oracle_none"), nil,
			[]string{"the oracle baseline policy's run, not a model's", "--aid-allow-baseline"}},
		{"a parsed answer changed", tampered, []string{"--aid-allow-baseline"},
			[]string{"stores parsed [2], but its raw reply parses as [1] under the run's parse rules (reference)"}},
		{"an unfinished run", unfinished, []string{"--aid-allow-baseline"}, []string{"holds an unfinished run"}},
		{"a model folder", filepath.Join(out, "baseline_first"), nil,
			[]string{"is a model folder, not a run directory; pass one of: " + first}},
	} {
		db := filepath.Join(tmp, strings.ReplaceAll(tc.name, " ", "_")+".sqlite")
		args := append([]string{"read", "init", "--benchmark", bench, "--db", db, "--readers", "1", "--oracle", "none", "--aid", tc.aid}, tc.extra...)
		_, stderr, code := runCLI(t, args...)
		line := oneLine(t, tc.name, stderr)
		for _, w := range tc.want {
			if code != 2 || !strings.HasPrefix(line, "chexpercept: --aid "+tc.aid+": ") || !strings.Contains(line, w) {
				t.Errorf("%s: exit %d, %q, want one line with %q", tc.name, code, stderr, w)
			}
		}
		if _, err := os.Stat(db); err == nil {
			t.Errorf("%s: a refused init left its database", tc.name)
		}
		t.Logf("%s: %s", tc.name, line)
	}
	// Told to, the first policy's run is an aid.
	db := filepath.Join(tmp, "allowed.sqlite")
	if _, stderr, code := runCLI(t, "read", "init", "--benchmark", bench, "--db", db, "--readers", "1", "--oracle", "none", "--aid", first, "--aid-allow-baseline"); code != 0 {
		t.Errorf("read init --aid-allow-baseline: %d %s", code, stderr)
	}
}
