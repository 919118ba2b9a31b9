package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/goldentest"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
)

// vanDykePilotDir runs chexpercept mrmc --fom auc --out on the Van Dyke
// study and returns the folder: the pilot of the plan tests.
func vanDykePilotDir(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pilot")
	if _, _, err := runCommand(t, newMrmcCmd(job.Options{}), "--scores", vanDykeScores, "--fom", "auc", "--out", out); err != nil {
		t.Fatal(err)
	}
	return out
}

// powerLine matches a result row of the plan's text: analysis, readers,
// cases, power.
var powerLine = regexp.MustCompile(`(?m)^  (random readers, random cases|fixed readers, random cases|random readers, fixed cases)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s`)

func planRows(t *testing.T, text string) map[string][3]float64 {
	t.Helper()
	rows := map[string][3]float64{}
	for _, m := range powerLine.FindAllStringSubmatch(text, -1) {
		var v [3]float64
		for i := range v {
			f, err := strconv.ParseFloat(m[i+2], 64)
			if err != nil {
				t.Fatal(err)
			}
			v[i] = f
		}
		rows[m[1]] = v
	}
	return rows
}

// TestMrmcPlanVanDyke: mrmc plan on the Van Dyke pilot with 10 readers
// prints RJafroc's three published powers to 1e-7, finds the smallest
// numbers of cases for power 0.8, and prints a power table.
func TestMrmcPlanVanDyke(t *testing.T) {
	t.Parallel()
	pilot := filepath.Join(vanDykePilotDir(t), "mrmc.json")
	for _, want := range []struct {
		analysis string
		cases    string
		power    float64
	}{
		{"random readers, random cases", "165", 0.80541995},
		{"fixed readers, random cases", "131", 0.80091813},
		{"random readers, fixed cases", "53", 0.80496663},
	} {
		stdout, _, err := runCommand(t, newMrmcCmd(job.Options{}), "plan", "--pilot", pilot, "--readers", "10", "--cases", want.cases)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := planRows(t, stdout)[want.analysis]
		if !ok {
			t.Fatalf("no row of %s in\n%s", want.analysis, stdout)
		}
		if d := got[2] - want.power; d > 1e-7 || d < -1e-7 {
			t.Errorf("%s with 10 readers and %s cases: printed power %.8f, want %.8f", want.analysis, want.cases, got[2], want.power)
		}
	}
	stdout, _, err := runCommand(t, newMrmcCmd(job.Options{}), "plan", "--pilot", filepath.Dir(pilot), "--power", "0.8", "--readers", "10")
	if err != nil {
		t.Fatal(err)
	}
	rows := planRows(t, stdout)
	for analysis, cases := range map[string]float64{"random readers, random cases": 163, "fixed readers, random cases": 131, "random readers, fixed cases": 53} {
		if rows[analysis][1] != cases {
			t.Errorf("%s: smallest cases %v, want %v", analysis, rows[analysis][1], cases)
		}
	}
	goldentest.Check(t, "testdata/mrmc_plan_vandyke_cases.txt", []byte(strings.ReplaceAll(stdout, pilot, "PILOT/mrmc.json")))

	stdout, _, err = runCommand(t, newMrmcCmd(job.Options{}), "plan", "--pilot", pilot, "--table")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Power table, random readers, random cases: readers (rows) by cases (columns)",
		"readers     50     75    100    150    200    300    400    500    750   1000   1500   2000",
		"Power table, random readers, fixed cases",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	goldentest.Check(t, "testdata/mrmc_plan_vandyke_table.txt", []byte(strings.ReplaceAll(stdout, pilot, "PILOT/mrmc.json")))
}

// TestMrmcPlanOut: --out writes the answers and the table as CSV (CRLF,
// NA), and a rerun that asks for no table removes the earlier table and
// nothing else.
func TestMrmcPlanOut(t *testing.T) {
	t.Parallel()
	pilot := vanDykePilotDir(t)
	out := filepath.Join(t.TempDir(), "plan")
	if _, _, err := runCommand(t, newMrmcCmd(job.Options{}), "plan", "--pilot", pilot, "--power", "0.95", "--readers", "3", "--table", "--readers-grid", "3,5", "--cases-grid", "100,200,300", "--out", out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "plan_power.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\r\n")
	if len(lines) != 5 || lines[4] != "" {
		t.Fatalf("plan_power.csv: want a header, 3 rows and CRLF line ends:\n%q", b)
	}
	if lines[0] != "analysis,readers,cases,effect,margin,alpha,target_power,statistic,noncentrality,df1,df2,critical_value,power,note" {
		t.Errorf("header %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "rrrc,3,NA,-0.04380032206") || !strings.Contains(lines[1], ",0.95,NA,NA,NA,NA,NA,NA,\"random readers, random cases: power 0.95 is not reached with 3 readers") {
		t.Errorf("unreachable row %q", lines[1])
	}
	if !strings.HasPrefix(lines[2], "frrc,3,343,") || !strings.Contains(lines[2], ",chi2,") || !strings.HasSuffix(lines[2], ",") {
		t.Errorf("fixed-readers row %q", lines[2])
	}
	tb, err := os.ReadFile(filepath.Join(out, "plan_table.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(tb), "\r\n"); n != 1+3*2*3 {
		t.Errorf("plan_table.csv has %d lines, want 19", n)
	}
	if !strings.Contains(string(tb), "\r\nrrfc,5,300,") || !strings.Contains(string(tb), ",NA,F,") {
		t.Errorf("plan_table.csv:\n%s", tb)
	}
	if err := os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCommand(t, newMrmcCmd(job.Options{}), "plan", "--pilot", pilot, "--readers", "6", "--cases", "100", "--out", out); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(out, "plan_table.csv")); err == nil {
		t.Error("the earlier plan's table is still beside the new plan")
	}
	for _, kept := range []string{"notes.txt", "plan_power.csv", planMarker} {
		if !outdir.IsRegular(filepath.Join(out, kept)) {
			t.Errorf("%s is gone", kept)
		}
	}
}

// writePilotJSON writes a hand-made mrmc.json.
func writePilotJSON(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMrmcPlanRefuses(t *testing.T) {
	t.Parallel()
	pilot := vanDykePilotDir(t)
	dir := t.TempDir()
	const comps = `"components": {"ms_tr": 0.0005, "var": 0.0008, "cov1": 0.0003, "cov2": 0.0003, "cov3": 0.0002}`
	noDiff := writePilotJSON(t, dir, "nodiff.json", `{"fom": "auc", "modalities": ["a", "b"], "readers": ["1", "2"], "n_cases": 60, `+comps+`, "modality_means": {"a": 0.8, "b": 0.8}}`)
	naDiff := writePilotJSON(t, dir, "nadiff.json", `{"fom": "auc", "modalities": ["a", "b"], "readers": ["1", "2"], "n_cases": 60, `+comps+`, "modality_means": {"a": null, "b": 0.8}}`)
	three := writePilotJSON(t, dir, "three.json", `{"fom": "auc", "modalities": ["a", "b", "c"], "readers": ["1", "2"], "n_cases": 60, `+comps+`}`)
	one := writePilotJSON(t, dir, "one.json", `{"fom": "auc", "modalities": ["a"], "readers": ["1", "2"], "n_cases": 60, "components": {"var": 0.0008, "cov1": null, "cov2": 0.0003, "cov3": null, "ms_tr": null}}`)
	noVar := writePilotJSON(t, dir, "novar.json", `{"fom": "accuracy", "modalities": ["a", "b"], "readers": ["1", "2"], "n_cases": 60, "components": {"ms_tr": 0, "var": 0, "cov1": 0, "cov2": 0, "cov3": 0}}`)
	notJSON := writePilotJSON(t, dir, "scores.json", "modality,reader,case,truth,score\n")
	other := writePilotJSON(t, dir, "other.json", `{"name": "something else"}`)
	foreign := filepath.Join(dir, "foreign")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	direct := []string{"--var", "0.0008", "--cov1", "0.0003", "--cov2", "0.0003", "--cov3", "0.0002", "--var-tr", "0.0002", "--pilot-cases", "100"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no pilot", []string{"--readers", "5", "--cases", "100"}, "--pilot: a pilot analysis (mrmc.json of chexpercept mrmc --out) or its components"},
		{"pilot and components", []string{"--pilot", pilot, "--var", "0.001", "--readers", "5", "--cases", "100"}, "--pilot and --var: give the pilot analysis or its components, not both"},
		{"components missing", []string{"--var", "0.001", "--cov1", "0.0005", "--effect", "0.05", "--readers", "5", "--cases", "100"}, "--cov2, --cov3, --var-tr, --pilot-cases: missing"},
		{"components without effect", append(slices.Clone(direct), "--readers", "5", "--cases", "100"), "--effect: with the components given directly, give the difference to detect"},
		{"negative Var", []string{"--var", "-0.001", "--cov1", "0", "--cov2", "0", "--cov3", "0", "--var-tr", "0", "--pilot-cases", "50", "--effect", "0.05", "--readers", "5", "--cases", "100"}, "Var -0.001: an error variance must be positive"},
		{"missing file", []string{"--pilot", filepath.Join(dir, "none.json"), "--readers", "5", "--cases", "100"}, "--pilot " + filepath.Join(dir, "none.json")},
		{"not json", []string{"--pilot", notJSON, "--readers", "5", "--cases", "100"}, "want the mrmc.json that chexpercept mrmc writes"},
		{"other json", []string{"--pilot", other, "--readers", "5", "--cases", "100"}, "no components or n_cases: not an analysis of chexpercept mrmc"},
		{"one modality", []string{"--pilot", one, "--readers", "5", "--cases", "100"}, "the pilot has 1 modality: a plan needs two"},
		{"no variance", []string{"--pilot", noVar, "--effect", "0.05", "--readers", "5", "--cases", "100"}, "Var 0: an error variance must be positive"},
		{"zero difference", []string{"--pilot", noDiff, "--readers", "5", "--cases", "100"}, "--effect: the pilot " + noDiff + " observed no difference (0)"},
		{"NA difference", []string{"--pilot", naDiff, "--readers", "5", "--cases", "100"}, "has no observed difference (NA): give the difference to detect"},
		{"three modalities", []string{"--pilot", three, "--readers", "5", "--cases", "100"}, "has 3 modalities: give the difference to detect"},
		{"nothing asked", []string{"--pilot", pilot}, "nothing to compute: give --readers and --cases"},
		{"readers alone", []string{"--pilot", pilot, "--readers", "5"}, "--readers without --cases: give both for the power of that study, or --power P to find the cases"},
		{"cases alone", []string{"--pilot", pilot, "--cases", "50"}, "--cases without --readers"},
		{"power with both", []string{"--pilot", pilot, "--power", "0.8", "--readers", "5", "--cases", "100"}, "--power with both --readers and --cases"},
		{"power alone", []string{"--pilot", pilot, "--power", "0.8"}, "--power: give --readers J (to find the cases) or --cases K"},
		{"power 1", []string{"--pilot", pilot, "--power", "1", "--readers", "5"}, "--power 1: want a target power between 0 and 1"},
		{"one reader", []string{"--pilot", pilot, "--readers", "1", "--cases", "100"}, "--readers 1: want 2 to 1000"},
		{"too many cases", []string{"--pilot", pilot, "--readers", "4", "--cases", "100001"}, "--cases 100001: want 2 to 100000"},
		{"bad grid", []string{"--pilot", pilot, "--cases-grid", "50,1"}, "--cases-grid: 1: want 2 to 100000"},
		{"alpha", []string{"--pilot", pilot, "--alpha", "0", "--readers", "5", "--cases", "100"}, "--alpha 0: want a level between 0 and 1"},
		{"margin", []string{"--pilot", pilot, "--margin", "-0.1", "--readers", "5", "--cases", "100"}, "--margin -0.1"},
		{"effect", []string{"--pilot", pilot, "--effect", "2", "--readers", "5", "--cases", "100"}, "--effect 2: want a difference of figures of merit, between −1 and 1"},
		{"no effect to size", []string{"--pilot", pilot, "--effect", "0", "--power", "0.8", "--readers", "5"}, "effect 0: a test of equal modalities then rejects with probability alpha"},
		{"foreign out", []string{"--pilot", pilot, "--readers", "5", "--cases", "100", "--out", foreign}, "not made by chexpercept mrmc plan"},
		{"out over the pilot", []string{"--pilot", pilot, "--readers", "5", "--cases", "100", "--out", pilot}, "not made by chexpercept mrmc plan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCommand(t, newMrmcCmd(job.Options{}), append([]string{"plan"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line containing %q", err, tt.want)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(foreign, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("a refused directory changed: %q, %v", b, err)
	}
}

// TestMrmcPlanNotes: components given directly, with a negative VarTR and
// Cov2 < Cov3, print the constraints applied; components that leave an
// analysis no variance print NA for it and say why.
func TestMrmcPlanNotes(t *testing.T) {
	t.Parallel()
	stdout, _, err := runCommand(t, newMrmcCmd(job.Options{}), "plan", "--var", "0.0008", "--cov1", "0.0003", "--cov2", "0.0002", "--cov3", "0.00025",
		"--var-tr", "-0.0001", "--pilot-cases", "100", "--effect", "0.05", "--readers", "5", "--cases", "200")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Planning a two-modality study from the components given (100 cases)",
		"note: VarTR -0.0001 is negative: taken as 0",
		"note: Cov2 − Cov3 = -5e-05 is negative: taken as 0 (the OR method's constraint max(Cov2 − Cov3, 0))",
		"effect 0.05 (first modality − second: given), alpha 0.05",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	stdout, _, err = runCommand(t, newMrmcCmd(job.Options{}), "plan", "--var", "0.0008", "--cov1", "0.0008", "--cov2", "0.0003", "--cov3", "0.0003",
		"--var-tr", "0", "--pilot-cases", "100", "--effect", "0.05", "--readers", "5", "--cases", "200")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  fixed readers, random cases   5        200    NA     NA             NA",
		"fixed readers, random cases with 5 readers and 200 cases: no positive variance (the components give the difference a variance of 0)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}
