package report

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// domainPolicy answers the truth except: model j of its group gets T1
// wrong on every record whose index is j modulo 5 (so every model has the
// same stage-1 accuracy, on different records), and with badStage3 the
// expansion turn (T3) is always wrong.
func domainPolicy(index map[string]int, j int, badStage3 bool) analysistest.Policy {
	return func(rec *benchmark.Record, t protocol.PlannedTurn) string {
		switch {
		case t.Q == benchmark.QDetection && index[rec.KeyID]%5 == j:
			return "Answer: " + strconv.Itoa(t.GT[0]%t.NOptions+1)
		case badStage3 && t.Q == benchmark.QExpansion:
			if len(t.GT) == 1 && t.GT[0] == t.NOptions {
				return "Answer: 1"
			}
			return "Answer: " + strconv.Itoa(t.NOptions)
		}
		return analysistest.Oracle(rec, t)
	}
}

func readCSV(t *testing.T, name string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(string(read(t, name)))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// findingsReport writes three general and three medical synthetic models
// (grouped by a domains file) over a scaled benchmark, medical clearly
// worse on stage 3 and equal on stage 1, and returns the report dir: one
// report for the package, which its tests only read.
func findingsReport(t *testing.T) string {
	t.Helper()
	return shared.findings.get(t, "findings", func(t *testing.T, tmp string) string { return writeFindingsReport(t, tmp, 0) })
}

// findingsReportWorkers is the findings report written afresh by workers
// workers, in a directory of the test's own.
func findingsReportWorkers(t *testing.T, workers int) string {
	t.Helper()
	return writeFindingsReport(t, t.TempDir(), workers)
}

// writeFindingsReport writes the findings report under tmp.
func writeFindingsReport(t *testing.T, tmp string, workers int) string {
	t.Helper()
	recs := benchtest.Full(4)
	index := map[string]int{}
	for i, r := range recs {
		index[r.KeyID] = i
	}
	var runs []*analysistest.Run
	var domains strings.Builder
	for g, group := range []string{"general", "medical"} {
		for j := 0; j < 3; j++ {
			label := group[:3] + strconv.Itoa(j)
			runs = append(runs, &analysistest.Run{Provider: "opensource", Label: label, Oracle: "none", Policy: domainPolicy(index, j, g == 1)})
			domains.WriteString(label + ": " + group + "\n")
		}
	}
	runs = append(runs, baselineRuns()[0]) // a baseline is never grouped
	// A control is never grouped either; it answers option 1 without the
	// image, and the image section compares it with gen0's run.
	runs = append(runs, &analysistest.Run{Provider: "opensource", Label: "gen0", Oracle: "none", Policy: analysistest.First, Control: results.ControlTextOnly})
	dir := fixture(t, tmp, recs, runs...)
	df := filepath.Join(tmp, "domains.yaml")
	if err := os.WriteFile(df, []byte(domains.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, DomainsFile: df,
		Analysis: analysis.Options{Bootstrap: 400, Workers: workers}, Report: Options{Workers: workers}}); err != nil {
		t.Fatal(err)
	}
	return out
}

// The Done-when test: medical − general excludes 0 at stage 3 and
// includes it at stage 1, in ext_domain_diff.csv.
func TestFindingsDomainDifference(t *testing.T) {
	t.Parallel()
	out := findingsReport(t)
	rows := readCSV(t, filepath.Join(out, "ext_domain_diff.csv"))
	if got := strings.Join(rows[0], ","); got != "comparison,oracle_mode,path,stage,difference,ci_low,ci_high,p_value" {
		t.Fatalf("header %s", got)
	}
	seen := 0
	for _, r := range rows[1:] {
		if r[0] != "medical-general" || r[2] != "revision_required" {
			continue
		}
		d, _ := strconv.ParseFloat(r[4], 64)
		lo, _ := strconv.ParseFloat(r[5], 64)
		hi, _ := strconv.ParseFloat(r[6], 64)
		switch r[3] {
		case "1":
			seen++
			if !(lo <= 0 && 0 <= hi) {
				t.Errorf("stage 1: %v [%v, %v] excludes 0", d, lo, hi)
			}
		case "3":
			seen++
			if !(hi < 0) {
				t.Errorf("stage 3: %v [%v, %v] does not lie below 0", d, lo, hi)
			}
			// 3 vs 3 models: 20 relabelings, exact; the smallest p is 2/20.
			if r[7] != "0.100000" {
				t.Errorf("stage 3 p %s, want 0.100000", r[7])
			}
		}
	}
	if seen != 2 {
		t.Fatalf("medical-general rows for revision_required stages 1 and 3 missing:\n%v", rows)
	}
	groups := readCSV(t, filepath.Join(out, "ext_domain.csv"))
	if got := strings.Join(groups[0], ","); got != "group,oracle_mode,path,stage,n_models,n_records,accuracy,ci_low,ci_high" {
		t.Errorf("ext_domain.csv header %s", got)
	}
	names := map[string]bool{}
	for _, r := range groups[1:] {
		names[r[0]] = true
		if r[0] != "all" && r[4] != "3" {
			t.Errorf("group %s has %s models, want 3", r[0], r[4])
		}
	}
	if len(names) != 3 || !names["general"] || !names["medical"] || !names["all"] {
		t.Errorf("groups %v (the baseline must not be one)", names)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, want := range []string{"## Findings", "**Claim 2 (Medical vs general).**", "Medical − general", "Depth decay", "plot_domain_groups_oracle_none.png",
		// 3 vs 3: the smallest p (0.1) cannot reach 0.05.
		"- Oracle none: **undecided at this sample size**. 3 medical and 3 general model(s): the permutation test's smallest p is 0.100"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, f := range []string{"plot_domain_groups_oracle_none.png", "plot_domain_groups_oracle_none.svg", "ext_domain_decay.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// One model per group (the registry's domains and base): the findings
// say "undecided", and the matched pair shows its discordant counts.
func TestFindingsOneModelPerGroup(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	recs := benchtest.Full(2)
	index := map[string]int{}
	for i, r := range recs {
		index[r.KeyID] = i
	}
	dir := fixture(t, tmp, recs,
		&analysistest.Run{Provider: "opensource", Label: "gemma3", Oracle: "none", Policy: domainPolicy(index, 0, false)},
		&analysistest.Run{Provider: "opensource", Label: "medgemma", Oracle: "none", Policy: domainPolicy(index, 1, true)},
	)
	out := filepath.Join(tmp, "report")
	if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 200}}); err != nil {
		t.Fatal(err)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	for _, want := range []string{
		"- Oracle none: **undecided at this sample size**. 1 medical and 1 general model(s)",
		"Matched pairs", "| opensource_medgemma | opensource_gemma3 | revision_required | 3 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(md, "**supported**") || strings.Contains(md, "**not supported**") {
		t.Error("a conclusion drawn from one model per group")
	}
	found := false
	for _, r := range readCSV(t, filepath.Join(out, "ext_domain_diff.csv")) {
		if r[0] == "pair:opensource_medgemma:opensource_gemma3" && r[2] == "revision_required" && r[3] == "3" {
			found = true
			if r[7] == NA || r[4] == NA {
				t.Errorf("pair row %v", r)
			}
		}
	}
	if !found {
		t.Error("no matched-pair row in ext_domain_diff.csv")
	}
}

// The findings files are the same bytes at any worker count.
func TestFindingsDeterministic(t *testing.T) {
	t.Parallel()
	a, b := findingsReportWorkers(t, 1), findingsReportWorkers(t, 4)
	for _, f := range []string{"ext_domain.csv", "ext_domain_diff.csv", "ext_domain_decay.csv", ImageControlFile, "report.md", "plot_domain_groups_oracle_none.svg", "plot_domain_groups_oracle_none.png"} {
		if string(read(t, filepath.Join(a, f))) != string(read(t, filepath.Join(b, f))) {
			t.Errorf("%s differs between 1 and 4 workers", f)
		}
	}
}

// Runs whose models have no domain still give the findings: claim 1 is
// assessed on the models pooled (the group "all" alone), and claim 2 says
// it is not assessed and how to give groups; no warning.
func TestFindingsWithoutDomains(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dir := fixture(t, tmp, benchtest.Sample(), &analysistest.Run{Provider: "opensource", Label: "some--raw-model", Oracle: "none", Policy: analysistest.Oracle})
	out := filepath.Join(tmp, "report")
	res, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Analysis: analysis.Options{Bootstrap: 50}})
	if err != nil {
		t.Fatal(err)
	}
	md := string(read(t, filepath.Join(out, "report.md")))
	if !strings.Contains(md, "## Findings") || !strings.Contains(md, "**Claim 1 (Depth decay).**") || len(res.Warnings) != 0 ||
		!regexp.MustCompile(`- Oracle none: \*\*(supported|not supported|undecided at this sample size)\*\*\. `).MatchString(md) ||
		!strings.Contains(md, "- Oracle none: claim 2 (medical vs general): not assessed — pass --domains") {
		t.Errorf("warnings %q; report.md:\n%.2000s", res.Warnings, md)
	}
	for _, row := range readCSV(t, filepath.Join(out, "ext_domain.csv"))[1:] {
		if row[0] != "all" {
			t.Errorf("ext_domain.csv has a row of group %q without any domain", row[0])
		}
	}
	if rows := readCSV(t, filepath.Join(out, "ext_domain_diff.csv")); len(rows) != 1 {
		t.Errorf("ext_domain_diff.csv has %d rows, want the header only", len(rows))
	}
	html := string(read(t, filepath.Join(out, "index.html")))
	if !strings.Contains(html, "claim 2 (medical vs general): not assessed — pass --domains") {
		t.Error("index.html does not say that claim 2 is not assessed")
	}
}

// BenchmarkReport14x2100Findings is BenchmarkReport14x2100 with the 14
// runs grouped (7 general, 7 medical by a domains file), so that the
// findings' bootstraps run too: compare the two cpu-s/op figures. The
// fixture directory (CHX_BENCH_FIXTURE) is shared with that benchmark.
func BenchmarkReport14x2100Findings(b *testing.B) {
	tmp := b.TempDir()
	var runs []*analysistest.Run
	var domains strings.Builder
	for i := 0; i < 14; i++ {
		label := fmt.Sprintf("vision-model-%02d", i)
		runs = append(runs, &analysistest.Run{Provider: "openai", Label: label, Oracle: "none", Policy: analysistest.Random(i)})
		fmt.Fprintf(&domains, "%s: %s\n", label, []string{"general", "medical"}[i%2])
	}
	root := os.Getenv("CHX_BENCH_FIXTURE")
	if root == "" {
		root = tmp
	}
	dir := filepath.Join(root, "results")
	if _, err := os.Stat(filepath.Join(dir, "openai_vision-model-13")); err != nil {
		dir = fixture(b, root, benchtest.Full(100), runs...)
	}
	df := filepath.Join(tmp, "domains.yaml")
	if err := os.WriteFile(df, []byte(domains.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		n++
		res, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: filepath.Join(tmp, fmt.Sprintf("report-%d", n)), DomainsFile: df})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Domains.Groups) == 0 || len(res.Warnings) != 0 {
			b.Fatalf("groups %d warnings %q", len(res.Domains.Groups), res.Warnings)
		}
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(n), "cpu-s/op")
}
