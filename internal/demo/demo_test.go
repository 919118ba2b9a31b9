package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/browsertest"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/mrmc"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/report"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runset"
	"github.com/chexpercept/chexpercept/internal/validate"
)

// TestDemoEndToEnd runs the whole demo in a temporary directory, checks
// every promise of the command, then runs it again into the same directory
// and checks that the finished work is reused, not redone.
func TestDemoEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("the full demo takes about a minute; skipped with -short")
	}
	// Nothing may be written to the user's home (response cache, config).
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("OPENAI_API_KEY", "sk-demo-test-secret-must-not-leak")

	// A long output path (at least 80 characters): every line must still
	// fit, the paths standing on lines of their own (checkReadable).
	dir := t.TempDir()
	for len(dir) < 80 {
		dir = filepath.Join(dir, "a-long-output-path")
	}
	dir = filepath.Join(dir, "demo")
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Out: dir, Stdout: &out})
	if err != nil {
		t.Fatalf("demo: %v\noutput:\n%s", err, out.String())
	}
	t.Logf("demo output:\n%s", out.String())

	// The last line is the path of index.html.
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; last != res.IndexHTML || !filepath.IsAbs(last) {
		t.Errorf("last line %q, want the absolute index.html path %q", last, res.IndexHTML)
	}
	checkReadable(t, out.String())
	if words := strings.Fields(fakemodel.AccuracyMeaning); !strings.Contains(strings.Join(strings.Fields(out.String()), " "), strings.Join(words, " ")) {
		t.Errorf("the output does not say what a simulated model's stage accuracy is (%s)", fakemodel.AccuracyMeaning)
	}
	for _, want := range []string{"[1/8] phantom", "[2/8] build", "[3/8] validate", "[4/8] eval in process: baseline oracle",
		"[5/8] eval over HTTP: 5 simulated models", "[6/8] eval in process: baseline random", "[7/8] report", "[8/8] item health",
		"baseline_oracle", "stage1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}

	// The benchmark validates and covers all seven lesions and paths. The
	// demo's own step validated it with --deep (a failure ends the demo);
	// its PASS line is checked here, and the files again without decoding
	// every image a second time.
	if !strings.Contains(out.String(), "validate --deep: PASS, 21 records") {
		t.Errorf("output lacks the deep validation's PASS line:\n%s", out.String())
	}
	rep, err := validate.Run(context.Background(), res.Benchmark, validate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var b bytes.Buffer
		rep.WriteText(&b)
		t.Fatalf("benchmark does not validate:\n%s", b.String())
	}
	for _, l := range benchmark.DefaultLesions().Names() {
		for _, p := range []benchmark.Path{benchmark.LesionFree, benchmark.RevisionFree, benchmark.RevisionRequired} {
			if n := rep.Counts[l][p]; n != perPath {
				t.Errorf("%s %v: %d records, want %d", l, p, n, perPath)
			}
		}
	}

	// It is marked unreviewed.
	var info struct {
		ReviewMode string `json:"review_mode"`
	}
	readJSON(t, filepath.Join(res.Benchmark, "build_info.json"), &info)
	if info.ReviewMode != "accept_all" {
		t.Errorf("build_info.json review_mode %q, want accept_all", info.ReviewMode)
	}
	readme, err := os.ReadFile(filepath.Join(dir, readmeFile))
	if err != nil || !bytes.Contains(readme, []byte("UNREVIEWED")) {
		t.Errorf("README.txt missing or without the unreviewed notice (%v)", err)
	}

	// Seven runs: oracle, the five simulated models over HTTP, random.
	if len(res.RunDirs) != 2+len(simModels) {
		t.Fatalf("run dirs %q, want %d", res.RunDirs, 2+len(simModels))
	}
	oracleRun, httpRun := res.RunDirs[0], res.RunDirs[1]
	if !strings.Contains(httpRun, "openai_"+simModels[0].name) || !strings.Contains(oracleRun, "baseline_oracle") ||
		!strings.Contains(res.RunDirs[len(res.RunDirs)-1], "baseline_random") {
		t.Fatalf("unexpected run dirs %q", res.RunDirs)
	}
	checkFindingsAndFlags(t, out.String(), res)
	checkImageControls(t, out.String(), res)
	checkReadersKeepFlags(t, res)

	// The oracle scores 100 % in every applicable cell of its summary.json.
	var sum results.Summary
	readJSON(t, filepath.Join(oracleRun, rundir.SummaryFile), &sum)
	if c := sum.Counts; c.RecordsOK != 21 || c.RecordsSelected != 21 || c.RecordsError != 0 {
		t.Errorf("oracle counts %+v, want 21 ok of 21", c)
	}
	if len(sum.Accuracy) == 0 {
		t.Error("oracle summary has no accuracy entries")
	}
	for _, a := range sum.Accuracy {
		if a.N == 0 || a.E2E == nil || *a.E2E != 1 || a.OraclePassed == nil || *a.OraclePassed != 1 {
			t.Errorf("oracle %s stage %d: n %d e2e %v op %v, want 100%%", a.Path, a.Stage, a.N, deref(a.E2E), deref(a.OraclePassed))
		}
	}

	// Every record of the HTTP run is ok, and it really went over HTTP
	// with the openai provider.
	recs, err := rundir.ReadResults(filepath.Join(httpRun, rundir.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 21 {
		t.Errorf("HTTP run has %d records, want 21", len(recs))
	}
	for _, r := range recs {
		if r.Status != results.StatusOK {
			t.Errorf("HTTP run record %s: status %s (%v)", r.KeyID, r.Status, deref(r.Error))
		}
	}
	var man struct {
		Model struct {
			Provider  string   `json:"provider"`
			Endpoints []string `json:"endpoints"`
		} `json:"model"`
	}
	readJSON(t, filepath.Join(httpRun, rundir.ManifestFile), &man)
	if man.Model.Provider != "openai" || len(man.Model.Endpoints) != 1 || !strings.HasPrefix(man.Model.Endpoints[0], "http://127.0.0.1:") {
		t.Errorf("HTTP run manifest: provider %q endpoints %q, want openai at a loopback URL", man.Model.Provider, man.Model.Endpoints)
	}

	checkIndex(t, res)
	checkProvenance(t, res)

	// No secret and nothing in the user's home.
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("the demo wrote into HOME: %v", entries)
	}
	// After the look into HOME: Chromium writes its own files there.
	checkTablesFit(t, res.IndexHTML)
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) == ".png" {
			return err
		}
		if data, _ := os.ReadFile(p); bytes.Contains(data, []byte("sk-demo-test-secret")) {
			t.Errorf("%s contains the OPENAI_API_KEY value", p)
		}
		return nil
	})

	// A second run reuses the phantom set and the benchmark and re-asks
	// nothing.
	sums := readFile(t, filepath.Join(res.Benchmark, "SHA256SUMS"))
	httpLines := readFile(t, filepath.Join(httpRun, rundir.ResultsFile))
	out.Reset()
	res2, err := Run(context.Background(), Options{Out: dir, Stdout: &out})
	if err != nil {
		t.Fatalf("second demo: %v\noutput:\n%s", err, out.String())
	}
	if !slices.Equal(res2.Reused, []string{"phantom", "build"}) {
		t.Errorf("second run reused %q, want phantom and build", res2.Reused)
	}
	if !bytes.Equal(sums, readFile(t, filepath.Join(res.Benchmark, "SHA256SUMS"))) {
		t.Error("SHA256SUMS changed on the second run")
	}
	if !bytes.Equal(httpLines, readFile(t, filepath.Join(httpRun, rundir.ResultsFile))) {
		t.Error("the HTTP run's results.jsonl changed on the second run (records re-asked?)")
	}
	if !strings.HasSuffix(strings.TrimSpace(out.String()), res.IndexHTML) {
		t.Errorf("second run does not end with the index.html path:\n%s", out.String())
	}
	checkIndex(t, res2)

	// Runs stamped by another program version are started over, not mixed.
	marker := filepath.Join(dir, markerFile)
	stamps := string(readFile(t, marker))
	i := strings.Index(stamps, "step:eval ")
	if i < 0 {
		t.Fatalf("no eval stamp in %s:\n%s", marker, stamps)
	}
	mustWrite(t, marker, stamps[:i]+"step:eval version=older\n")
	out.Reset()
	if _, err := Run(context.Background(), Options{Out: dir, Stdout: &out}); err != nil {
		t.Fatalf("third demo: %v\noutput:\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "kept from an earlier run") {
		t.Errorf("runs of a stale stamp were resumed instead of started over:\n%s", out.String())
	}
	if m := string(readFile(t, marker)); !strings.Contains(m, "step:eval version=") || strings.Contains(m, "version=older") {
		t.Errorf("eval stamp not renewed:\n%s", readFile(t, marker))
	}
}

// checkFindingsAndFlags: the demo's output and report.md carry the
// findings' verdict lines with their reasons, and at least one item-health
// flag with its reason; the output names the review command for it, and
// the simulated models differ in skill.
func checkFindingsAndFlags(t *testing.T, out string, res *Result) {
	t.Helper()
	// A long line is wrapped onto lines indented two more than its own.
	out = strings.ReplaceAll(out, "\n"+detail+"  ", " ")
	md := string(readFile(t, filepath.Join(res.Report, "report.md")))
	verdict := regexp.MustCompile(`finding \(oracle mode implicit\), claim [12], [a-z ]+: (supported|not supported|undecided at this sample size)\. \S`)
	if n := len(verdict.FindAllString(out, -1)); n != 2 {
		t.Errorf("output has %d findings verdict lines, want 2 (one per claim):\n%s", n, out)
	}
	mdVerdict := regexp.MustCompile(`- Oracle implicit: \*\*(supported|not supported|undecided at this sample size)\*\*\. \S`)
	if n := len(mdVerdict.FindAllString(md, -1)); n != 2 {
		t.Errorf("report.md has %d findings verdict lines, want 2", n)
	}
	if !strings.Contains(md, "## Findings") || strings.Contains(md, "No findings section") {
		t.Error("report.md has no findings section")
	}
	flag := regexp.MustCompile(`flag: \S+, question "[^"]+": \d of \d models answered "[^"]+"; the ground truth is "[^"]+"`)
	if !flag.MatchString(out) {
		t.Errorf("output shows no item-health flag with its reason:\n%s", out)
	}
	mdFlag := regexp.MustCompile(`\| \S+ \| T\d \S+ \| (unanimous_wrong|majority_wrong)[^|]* \| 5 \|`)
	if !mdFlag.MatchString(md) || strings.Contains(md, "Not computed") {
		t.Error("report.md lists no flagged item with its reason")
	}
	// A long path stands on its own line, after its flag and a backslash.
	review := regexp.MustCompile(`chexpercept review init \\\s+--source(?: \\)?\s+\S+manifest\.jsonl \\\s+--only(?: \\)?\s+(\S+) \\\s+--review-db(?: \\)?\s+\S+`)
	if m := review.FindStringSubmatch(out); m == nil {
		t.Errorf("output lacks the review init --only command:\n%s", out)
	} else if m[1] != filepath.Join(res.Report, report.FlaggedItemsFile) || !exists(m[1]) {
		t.Errorf("review init --only %s: want the report's %s", m[1], report.FlaggedItemsFile)
	}
	// The domains file the report took gives every simulated model its group.
	doms := string(readFile(t, res.Domains))
	for _, m := range simModels {
		if !strings.Contains(doms, m.name+": "+m.domain+"\n") {
			t.Errorf("%s does not give %s the group %s", res.Domains, m.name, m.domain)
		}
	}
}

// checkImageControls: the demo ran the text-only control of the model
// that looks and of the one that guesses; its output names the verdict in
// one line, and the report's section shows one model that uses the image
// and one that answers without it.
func checkImageControls(t *testing.T, out string, res *Result) {
	t.Helper()
	if len(res.ControlDirs) != len(controlModels) {
		t.Fatalf("control run dirs %q, want %d", res.ControlDirs, len(controlModels))
	}
	for i, name := range controlModels {
		if want := filepath.Join(res.Results, "openai_"+name+"_text-only", "oracle_implicit"); res.ControlDirs[i] != want {
			t.Errorf("control run %d in %s, want %s", i, res.ControlDirs[i], want)
		}
	}
	if !strings.Contains(out, "\n"+detail+"does the model use the image? sim-general-large: yes; sim-medical-small: no\n") {
		t.Errorf("the output does not name the image controls' verdict in one line:\n%s", out)
	}
	md := string(readFile(t, filepath.Join(res.Report, "report.md")))
	for _, s := range []string{"## Does the model use the image?",
		"openai_sim-general-large (rehearsal — not a model result) uses the image: without the image (text-only control) its accuracy drops reliably at ",
		"openai_sim-medical-small (rehearsal — not a model result) shows no reliable drop at any stage without the image",
		"### Above the no-image level"} {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	if rows := strings.Count(string(readFile(t, filepath.Join(res.Report, report.ImageControlFile))), "\r\n"); rows != 1+2*8 {
		t.Errorf("%s has %d lines, want the header and 8 stage cells for each of the 2 controls", report.ImageControlFile, rows)
	}
}

// checkIndex checks that index.html exists and that every file it refers
// to (plots, item sidecars, images in the benchmark) exists.
// undefinedTerms are codes the demo's terminal output must not use: it
// speaks plain words, or defines a term where it first appears.
var undefinedTerms = regexp.MustCompile(`oracle implicit|oracle explicit|\be2e\b|\bT[1-9]\b|unanimous_wrong|majority_wrong|stage accuracy \[|rejected candidate`)

// lonePath is a line that holds one path and nothing else but its
// indent and a shell continuation: the one kind of line that may be
// longer than MaxLine, when the path alone is.
var lonePath = regexp.MustCompile(`^ *'?/[^ ]*'?( \\)?$`)

// checkReadable: every line of the terminal output fits in MaxLine
// characters, but for a path on a line of its own, and uses none of the
// undefined terms.
func checkReadable(t *testing.T, out string) {
	t.Helper()
	for i, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > MaxLine && !lonePath.MatchString(line) {
			t.Errorf("output line %d is %d characters long (at most %d): %s", i+1, n, MaxLine, line)
		}
		if m := undefinedTerms.FindString(line); m != "" {
			t.Errorf("output line %d uses the undefined term %q: %s", i+1, m, line)
		}
	}
	if !strings.Contains(out, "oracle mode implicit: after a wrong answer") {
		t.Error("the output does not define the oracle mode it names")
	}
}

// checkTablesFit opens the report's index.html in Chromium in a
// 1,400 px window (skipped without Chromium, a failure without it under
// CHEXPERCEPT_BROWSER_TESTS=1): no table shown may be wider than the
// window, scrolling or not.
func checkTablesFit(t *testing.T, index string) {
	t.Run("tables fit a 1400 px window", func(t *testing.T) {
		exe := browsertest.Chromium(t)
		ctx, cancel := browsertest.Start(exe, t.TempDir(), 1400, 1000, 90*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(1400, 1000),
			chromedp.Navigate("file://"+filepath.ToSlash(index)),
			chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)),
		); err != nil {
			t.Fatal(err)
		}
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
			document.querySelectorAll("details").forEach(d => d.open = true);
			const w = document.documentElement.clientWidth;
			return Array.from(document.querySelectorAll("table")).filter(t => t.offsetParent !== null && t.scrollWidth > w)
				.map(t => (t.id || t.closest("[id]").id) + " " + t.scrollWidth + " px"); })()`))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wide {
			t.Errorf("table %s wide, in a 1400 px window", w)
		}
	})
}

// checkProvenance: the demo's report says, where a person reads it,
// that the benchmark is synthetic and unreviewed and that the simulated
// models' runs, answered by serve-baseline, are rehearsals.
func checkProvenance(t *testing.T, res *Result) {
	t.Helper()
	for _, name := range []string{"index.html", "report.md", "summary.json"} {
		page := string(readFile(t, filepath.Join(res.Report, name)))
		if !strings.Contains(page, "Synthetic / unreviewed benchmark") {
			t.Errorf("%s has no synthetic/unreviewed banner", name)
		}
		for _, m := range simModels {
			if !strings.Contains(page, "openai_"+m.name+" ("+analysis.RehearsalNote+")") && name != "summary.json" {
				t.Errorf("%s does not mark the simulated model %s as a rehearsal", name, m.name)
			}
		}
		if !strings.Contains(page, provider.BaselineOwner) {
			t.Errorf("%s does not name the stand-in server", name)
		}
	}
}

func checkIndex(t *testing.T, res *Result) {
	t.Helper()
	html := string(readFile(t, res.IndexHTML))
	if !strings.Contains(html, `"data/c"`) {
		t.Error("index.html does not load the data/c<N>.js sidecars")
	}
	bench, err := benchdir.Load(res.Benchmark)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range bench.Records {
		if !strings.Contains(html, r.KeyID) {
			t.Errorf("index.html does not list item %s", r.KeyID)
		}
		side := filepath.Join(res.Report, filepath.FromSlash(report.DataFile(i)))
		if data, err := os.ReadFile(side); err != nil {
			t.Errorf("item %d: sidecar: %v", i, err)
		} else if !bytes.Contains(data, []byte(r.KeyID)) {
			t.Errorf("item %s is not in its sidecar %s", r.KeyID, side)
		}
	}
	// Item images are relative links into the benchmark.
	m := regexp.MustCompile(`"images":"([^"]*)"`).FindStringSubmatch(html)
	if m == nil {
		t.Error("index.html has no image prefix")
	} else if got := filepath.Join(res.Report, filepath.FromSlash(m[1])); got != res.Benchmark {
		t.Errorf("image prefix %q resolves to %s, want the benchmark %s", m[1], got, res.Benchmark)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"#?:]+)"`).FindAllStringSubmatch(html, -1)
	plots := 0
	for _, m := range refs {
		if _, err := os.Stat(filepath.Join(res.Report, filepath.FromSlash(m[1]))); err != nil {
			t.Errorf("index.html refers to %s: %v", m[1], err)
		}
		if strings.HasPrefix(m[1], "plot_") {
			plots++
		}
	}
	if plots == 0 {
		t.Error("index.html shows no plot")
	}
}

// TestClaimDir checks which output directories the demo accepts.
func TestClaimDir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		setup   func(dir string) string // returns the --out path
		wantErr string
	}{
		{"new directory", func(dir string) string { return filepath.Join(dir, "a", "b") }, ""},
		{"empty directory", func(dir string) string { return dir }, ""},
		{"earlier demo", func(dir string) string {
			mustWrite(t, filepath.Join(dir, markerFile), markerHeader+"\nstep:phantom x\n")
			mustWrite(t, filepath.Join(dir, "other"), "kept")
			return dir
		}, ""},
		{"killed while its marker was renamed into place", func(dir string) string {
			mustWrite(t, filepath.Join(dir, markerFile+".tmp-317187146"), markerHeader+"\n")
			return dir
		}, ""},
		{"killed while its README was renamed into place", func(dir string) string {
			mustWrite(t, filepath.Join(dir, markerFile), markerHeader+"\n")
			mustWrite(t, filepath.Join(dir, readmeFile+".tmp-5"), "half")
			mustWrite(t, filepath.Join(dir, "notes.txt.tmp-6"), "kept")
			return dir
		}, ""},
		{"someone else's directory", func(dir string) string {
			mustWrite(t, filepath.Join(dir, "thesis.tex"), "precious")
			return dir
		}, "is not empty and was not made by chexpercept demo"},
		{"a file", func(dir string) string {
			p := filepath.Join(dir, "f")
			mustWrite(t, p, "x")
			return p
		}, "is not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.setup(t.TempDir())
			st, err := claimDir(nil, out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("claimDir: error %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(tc.name, "else") && !exists(filepath.Join(out, "thesis.tex")) {
					t.Error("a refused directory was modified")
				}
				return
			}
			if err != nil {
				t.Fatalf("claimDir: %v", err)
			}
			if !exists(filepath.Join(out, markerFile)) {
				t.Error("no marker written")
			}
			ents, _ := os.ReadDir(out)
			for _, e := range ents {
				if n := e.Name(); strings.Contains(n, ".tmp-") && n != "notes.txt.tmp-6" {
					t.Errorf("claimDir left %s, a temporary file of the demo's own", n)
				}
			}
			if strings.Contains(tc.name, "README") && !exists(filepath.Join(out, "notes.txt.tmp-6")) {
				t.Error("claimDir removed a file that is not the demo's")
			}
			if tc.name == "earlier demo" && st.get("phantom") != "x" {
				t.Errorf("stamp of the earlier demo lost: %q", st.get("phantom"))
			}
		})
	}
}

// TestStateRoundTrip checks that stamps survive a save and a read, and that
// a reset step is forgotten.
func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), markerFile)
	st := &state{path: p, steps: map[string]string{}}
	if err := st.set("phantom", "version=1 seed=1"); err != nil {
		t.Fatal(err)
	}
	if err := st.set("build", "phantom={version=1 seed=1}"); err != nil {
		t.Fatal(err)
	}
	if err := st.reset("build"); err != nil {
		t.Fatal(err)
	}
	got, err := readState(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if got.get("phantom") != "version=1 seed=1" || got.get("build") != "" {
		t.Errorf("read back %v", got.steps)
	}
	data := readFile(t, p)
	if !bytes.HasPrefix(data, []byte(markerHeader+"\n")) {
		t.Errorf("marker lacks its header: %q", data)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readJSON(t *testing.T, p string, v any) {
	t.Helper()
	if err := json.Unmarshal(readFile(t, p), v); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkReadersKeepFlags: three scripted readers answering at random
// (a reader study of the demo's benchmark, exported beside its runs)
// change none of the demo's item-health flags, which count the models
// only; the readers are shown beside them. Their panel's degrees of
// freedom are finite and at most the engine's bound, or infinite
// (inf): never a number of 10^64 printed as if it were one.
func checkReadersKeepFlags(t *testing.T, res *Result) {
	t.Helper()
	b, err := benchdir.Load(res.Benchmark)
	if err != nil {
		t.Fatal(err)
	}
	readers := filepath.Join(t.TempDir(), "readers")
	for i := 1; i <= 3; i++ {
		name := fmt.Sprint("reader", i)
		run := &analysistest.Run{Provider: "human", Label: name, Oracle: "implicit", Policy: analysistest.Random(i),
			Reading: &results.ReadingArm{Study: "scripted", Reader: name, Arm: results.ArmUnaided}}
		if _, err := run.Write(readers, b); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "report")
	with, err := report.Generate(context.Background(), report.Config{
		Load:        runset.Loader([]string{res.Results, readers}, runset.Options{Benchmark: res.Benchmark}),
		Out:         out,
		DomainsFile: res.Domains,
	})
	if err != nil {
		t.Fatal(err)
	}
	// flagged_items.csv without its last three columns (the readers
	// beside each flag) is the demo's file without them.
	flags := func(dir string) []string {
		data, err := os.ReadFile(filepath.Join(dir, report.FlaggedItemsFile))
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\r\n"), "\r\n") {
			f := strings.Split(l, ",")
			rows = append(rows, strings.Join(f[:len(f)-3], ","))
		}
		return rows
	}
	demo, withReaders := flags(res.Report), flags(out)
	if len(demo) < 2 || !slices.Equal(demo, withReaders) {
		t.Errorf("with readers the flags changed:\n%s\nthe demo's:\n%s", strings.Join(withReaders, "\n"), strings.Join(demo, "\n"))
	}
	for i, h := range with.Health {
		if h.Flagged != res.Analysis.Health[i].Flagged || len(h.Readers) != 3 {
			t.Errorf("oracle %s: %d flags with readers (%v shown beside), %d without", h.Mode, h.Flagged, h.Readers, res.Analysis.Health[i].Flagged)
		}
	}
	if with.Readers == nil || len(with.Readers.Panels) != 1 {
		t.Fatal("no readers' panel")
	}
	for _, r := range with.Readers.MRMC {
		if r.DF > mrmc.MaxFiniteDF && !math.IsInf(r.DF, 1) {
			t.Errorf("%s %s stage %d: df %v", r.Comparison, r.Path, r.Stage, r.DF)
		}
		if r.Valid() && !(r.SE > 0 && r.Lo < r.Estimate && r.Estimate < r.Hi) {
			t.Errorf("%s %s stage %d: an interval [%v, %v] around %v with SE %v", r.Comparison, r.Path, r.Stage, r.Lo, r.Hi, r.Estimate, r.SE)
		}
	}
}
