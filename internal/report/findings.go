package report

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/results"
)

// The paper's two claims, in our words.
var claims = [...]string{
	1: "End-to-end accuracy is adequate only at the first, coarse stage and drops precipitously on the deeper stages of the sequential path.",
	2: "Models adapted to the medical domain perceive lesions no better than general-domain models.",
}

var claimTitle = [...]string{1: "Depth decay", 2: "Medical vs general"}

// domainOptions reads the model registry (embedded, extended by
// modelFiles) and the optional domains file into the analysis options.
func domainOptions(modelFiles []string, domainsFile string) (analysis.DomainOptions, error) {
	var o analysis.DomainOptions
	reg, err := registry.Load(modelFiles...)
	if err != nil {
		return o, err
	}
	o.Registry = map[string]analysis.DomainModel{}
	for _, e := range reg.Entries() {
		o.Registry[e.Alias] = analysis.DomainModel{Domain: e.Domain, Base: e.Base}
	}
	if domainsFile != "" {
		if o.Overrides, err = analysis.ReadDomains(domainsFile); err != nil {
			return o, err
		}
		o.Source = domainsFile
	}
	return o, nil
}

func extDomain(res *analysis.Result) []byte {
	header := []string{"group", "oracle_mode", "path", "stage", "n_models", "n_records", "accuracy", "ci_low", "ci_high"}
	var rows [][]string
	if res.Domains != nil {
		for _, g := range res.Domains.Groups {
			row := []string{g.Group, g.OracleMode, string(g.Path), itoa(int(g.Stage)), itoa(g.NModels), itoa(g.NItems), NA, NA, NA}
			if g.Valid {
				row[6], row[7], row[8] = f6(g.Value), f6(g.Lo), f6(g.Hi)
			}
			rows = append(rows, row)
		}
	}
	return results.CSV(header, rows)
}

func extDomainDiff(res *analysis.Result) []byte {
	header := []string{"comparison", "oracle_mode", "path", "stage", "difference", "ci_low", "ci_high", "p_value"}
	var rows [][]string
	if res.Domains != nil {
		for _, d := range res.Domains.Diffs {
			row := []string{d.Comparison, d.OracleMode, string(d.Path), itoa(int(d.Stage)), NA, NA, NA, NA}
			if d.Valid {
				row[4], row[5], row[6] = f6(d.Diff), f6(d.Lo), f6(d.Hi)
			}
			if d.PValid {
				row[7] = f6(d.P)
			}
			rows = append(rows, row)
		}
	}
	return results.CSV(header, rows)
}

func extDomainDecay(res *analysis.Result) []byte {
	header := []string{"unit", "kind", "oracle_mode", "path", "stage", "n_models", "n_records", "accuracy", "ci_low", "ci_high", "ratio", "ratio_ci_low", "ratio_ci_high", "precipitous"}
	var rows [][]string
	if res.Domains != nil {
		for _, d := range res.Domains.Decay {
			kind := "model"
			if d.Group {
				kind = "group"
			}
			row := []string{d.Unit, kind, d.OracleMode, string(d.Path), itoa(int(d.Stage)), itoa(d.NModels), itoa(d.N), NA, NA, NA, NA, NA, NA, NA}
			if d.AccValid {
				row[7], row[8], row[9] = f6(d.Acc), f6(d.AccLo), f6(d.AccHi)
			}
			if d.RatioValid {
				row[10], row[11], row[12], row[13] = f6(d.Ratio), f6(d.RLo), f6(d.RHi), boolStr(d.Precipitous)
			}
			rows = append(rows, row)
		}
	}
	return results.CSV(header, rows)
}

// findingsDoc is the findings section of report.md and index.html.
type findingsDoc struct {
	Claims []claimDoc
	Notes  []string
	Plots  []plotLink
	Tables []*table
}

type claimDoc struct {
	N               int // the claim's number
	Title, Sentence string
	Verdicts        []analysis.Verdict
}

// hasFindings reports whether the report has model runs (baselines,
// controls and human readers are no models): claim 1 is assessed on
// them, and claim 2 when they have domain groups.
func hasFindings(res *analysis.Result) bool {
	return res.Domains != nil && len(res.Domains.Members) > 0
}

// grouped reports whether some model run has a domain group.
func grouped(res *analysis.Result) bool { return hasFindings(res) && !res.Domains.Ungrouped }

// buildFindings lays out the findings section; nil without a model's run
// and without readers.
func buildFindings(res *analysis.Result) *findingsDoc {
	if !hasFindings(res) {
		if rc := readersClaim(res); rc != nil { // claim 3 needs no domain groups
			return &findingsDoc{Claims: []claimDoc{*rc}, Notes: []string{readersRule(res)}}
		}
		return nil
	}
	dr := res.Domains
	f := &findingsDoc{}
	for c := 1; c <= 2; c++ {
		cd := claimDoc{N: c, Title: claimTitle[c], Sentence: claims[c]}
		for _, v := range dr.Verdict {
			if v.Claim == c {
				cd.Verdicts = append(cd.Verdicts, v)
			}
		}
		f.Claims = append(f.Claims, cd)
	}
	f.Notes = []string{
		fmt.Sprintf("Metric: end-to-end accuracy e2e_k (all of stages 1..k correct), the paper's. A group's accuracy is the mean of its models' accuracies, with a two-level bootstrap 95 %% interval (models resampled within the group, then each resampled model's records; B = %d).", res.Options.Bootstrap),
		fmt.Sprintf("Claim 1 rule: a stage is a precipitous drop when the upper bound of the 95 %% interval of e2e_k / e2e_1 is below %.2f and the stage has at least %d records; the claim is supported when that holds at stage 4 of revision_required for all models pooled, not supported when the lower bound is at least %.2f, and undecided otherwise or with fewer than two models.", analysis.PrecipitousBelow, analysis.MinDecayRecords, analysis.PrecipitousBelow),
		fmt.Sprintf("Claim 2 rule: not supported when some path and stage has medical − general with its interval above 0 and permutation p ≤ 0.05; supported when every interval lies below +%s points; undecided otherwise, with fewer than two models in either group, or when the permutation test cannot reach p ≤ 0.05. The permutation test relabels models (exact enumeration up to %d relabelings, else %d seeded draws). Matched medical/base pairs use McNemar's exact test on the records both runs answered.", pct(analysis.AdvantageMargin), analysis.ExactPermLimit, analysis.PermDraws),
	}
	if rc := readersClaim(res); rc != nil {
		f.Claims = append(f.Claims, *rc)
		f.Notes = append(f.Notes, readersRule(res))
	}
	var unknown []string
	for _, m := range dr.Members {
		if m.Group == "" {
			unknown = append(unknown, m.Run.Run.Name)
		}
	}
	if len(unknown) > 0 && grouped(res) { // ungrouped: claim 2 says so
		f.Notes = append(f.Notes, "Without a domain (left out of the groups, kept in \"all\"): "+strings.Join(unknown, ", ")+".")
	}
	for _, j := range findingsPlotJobs(res) {
		f.Plots = append(f.Plots, newPlotLink(j, res.Runs))
	}
	if res.ImageControl != nil {
		f.Notes = append(f.Notes, "Image controls: where a model has a control run (eval --control), the table \"Above the no-image level\" gives, per path and stage, how much of its end-to-end accuracy is above what it scores without the image (paired over records); the section \""+ImageUseTitle+"\" has the details.")
	}
	for _, mode := range res.Modes() {
		if grouped(res) {
			f.groupTable(dr, mode)
		}
		f.diffTable(dr, mode)
		f.pairTable(dr, mode)
		f.decayTable(dr, mode)
		f.aboveNoImage(res, mode)
	}
	return f
}

func (f *findingsDoc) newTable(title string, header ...string) *table {
	t := &table{Title: title, Header: header, ID: fmt.Sprintf("f-%d", len(f.Tables)+1)}
	f.Tables = append(f.Tables, t)
	return t
}

// cells are the (path, stage) columns of the findings tables.
type cellKey struct {
	path benchmark.Path
	k    benchmark.Stage
}

func stageCells() []cellKey {
	var out []cellKey
	for _, path := range benchmark.Paths {
		for _, k := range benchmark.Stages {
			if benchmark.StageApplies(path, false, k) {
				out = append(out, cellKey{path, k})
			}
		}
	}
	return out
}

func (c cellKey) label() string { return fmt.Sprintf("%s s%d", c.path.Short(), c.k) }

func ciText(valid bool, v, lo, hi float64) string {
	if !valid {
		return NAText
	}
	return fmt.Sprintf("%s [%s–%s]", pct(v), pct(lo), pct(hi))
}

func (f *findingsDoc) groupTable(dr *analysis.DomainResult, mode string) {
	hdr := []string{"Group", "Models"}
	for _, c := range stageCells() {
		hdr = append(hdr, c.label())
	}
	var t *table
	var order []string
	for _, g := range dr.Groups {
		if g.OracleMode == mode && (len(order) == 0 || order[len(order)-1] != g.Group) {
			order = append(order, g.Group)
		}
	}
	for _, name := range order {
		if t == nil {
			t = f.newTable("Domain groups: mean end-to-end accuracy (%), two-level bootstrap 95% CI (oracle "+mode+")", hdr...)
		}
		row := []string{name, ""}
		nm := 0
		for _, c := range stageCells() {
			cell := NAText
			for _, g := range dr.Groups {
				if g.OracleMode == mode && g.Group == name && g.Path == c.path && g.Stage == c.k {
					cell, nm = ciText(g.Valid, g.Value, g.Lo, g.Hi), max(nm, g.NModels)
				}
			}
			row = append(row, cell)
		}
		row[1] = itoa(nm)
		t.row(row...)
	}
}

func signedCI(valid bool, d, lo, hi float64) string {
	if !valid {
		return NAText
	}
	return fmt.Sprintf("%+.1f [%+.1f, %+.1f]", 100*d, 100*lo, 100*hi)
}

func pText(valid bool, p float64) string {
	if !valid {
		return NAText
	}
	return fmt.Sprintf("%.3f", p)
}

func (f *findingsDoc) diffTable(dr *analysis.DomainResult, mode string) {
	var t *table
	for _, d := range dr.Diffs {
		if d.OracleMode != mode || d.Comparison != analysis.ComparisonDomain {
			continue
		}
		if t == nil {
			t = f.newTable("Medical − general, end-to-end accuracy in points (oracle "+mode+")",
				"Path", "Stage", "Medical models", "General models", "Difference [95% CI]", "Permutation p", "Smallest possible p")
		}
		method := "exact"
		if !d.Exact {
			method = "Monte Carlo"
		}
		t.row(string(d.Path), itoa(int(d.Stage)), itoa(d.NA), itoa(d.NB), signedCI(d.Valid, d.Diff, d.Lo, d.Hi),
			pText(d.PValid, d.P)+" ("+method+")", fmt.Sprintf("%.3f", d.MinP))
	}
}

func (f *findingsDoc) pairTable(dr *analysis.DomainResult, mode string) {
	var t *table
	for _, d := range dr.Diffs {
		if d.OracleMode != mode || d.Comparison == analysis.ComparisonDomain {
			continue
		}
		if t == nil {
			t = f.newTable("Matched pairs: medical model A vs its general base B, end-to-end accuracy, paired records (oracle "+mode+"); b: A right and B wrong, c: A wrong and B right",
				"A", "B", "Path", "Stage", "n paired", "A − B (points) [95% CI]", "b", "c", "McNemar exact p")
		}
		t.row(d.ModelA, d.ModelB, string(d.Path), itoa(int(d.Stage)), itoa(d.NPaired), signedCI(d.Valid, d.Diff, d.Lo, d.Hi),
			itoa(d.B), itoa(d.C), pText(d.PValid, d.P))
	}
}

// decayTable lists, per model and group, each stage's accuracy and its
// ratio to stage 1, flagging precipitous drops.
func (f *findingsDoc) decayTable(dr *analysis.DomainResult, mode string) {
	var t *table
	type key struct {
		unit  string
		group bool
		path  benchmark.Path
	}
	var keys []key
	byKey := map[key][]analysis.DecayRow{}
	for _, d := range dr.Decay {
		if d.OracleMode != mode {
			continue
		}
		k := key{d.Unit, d.Group, d.Path}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], d)
	}
	for _, k := range keys {
		if t == nil {
			t = f.newTable("Depth decay: end-to-end accuracy (%) and its ratio to stage 1 [95% CI]; \"drop\" marks a precipitous drop (oracle "+mode+")",
				"Model or group", "Path", "Stage 1", "Stage 2", "Stage 3", "Stage 4")
		}
		name := k.unit
		if k.group {
			name = "*group " + k.unit + "*"
		}
		row := []string{name, string(k.path), NAText, NAText, NAText, NAText}
		for _, d := range byKey[k] {
			row[1+int(d.Stage)] = decayCell(d)
		}
		t.row(row...)
	}
}

func decayCell(d analysis.DecayRow) string {
	if !d.AccValid {
		return NAText
	}
	s := pct(d.Acc) + "%"
	if d.Stage == 1 || !d.RatioValid {
		return s
	}
	s += fmt.Sprintf(", ×%.2f [%.2f–%.2f]", d.Ratio, d.RLo, d.RHi)
	if d.Precipitous {
		s += " drop"
	}
	return s
}

// notAssessed is the line of a claim that is not assessed: "claim 2
// (medical vs general): not assessed — pass --domains …".
func notAssessed(c claimDoc, v analysis.Verdict) string {
	return fmt.Sprintf("claim %d (%s): %s — %s", c.N, strings.ToLower(c.Title), v.Status, v.Reason)
}

// markdown renders the findings section.
func (f *findingsDoc) markdown(b *strings.Builder) {
	b.WriteString("\n## Findings\n")
	for _, c := range f.Claims {
		fmt.Fprintf(b, "\n**Claim %d (%s).** %s\n\n", c.N, c.Title, c.Sentence)
		for _, v := range c.Verdicts {
			scope := ""
			if v.Scope != "" {
				scope = ", " + v.Scope
			}
			if v.Status == analysis.NotAssessed {
				fmt.Fprintf(b, "- Oracle %s%s: %s.\n", v.OracleMode, scope, notAssessed(c, v))
				continue
			}
			fmt.Fprintf(b, "- Oracle %s%s: **%s**. %s.\n", v.OracleMode, scope, v.Status, v.Reason)
		}
	}
	for _, n := range f.Notes {
		b.WriteString("\n" + n + "\n")
	}
	for _, p := range f.Plots {
		fmt.Fprintf(b, "\n![%s](%s)\n", p.Name, p.PNG)
	}
	for _, t := range f.Tables {
		t.markdown(b)
	}
}

// findingsPlotJobs draws, per oracle mode, each group's mean end-to-end
// accuracy at every path and stage with its interval.
func findingsPlotJobs(res *analysis.Result) []plotJob {
	if !grouped(res) {
		return nil
	}
	var jobs []plotJob
	for _, mode := range res.Modes() {
		var groups []string
		for _, g := range res.Domains.Groups {
			if g.OracleMode == mode && (len(groups) == 0 || groups[len(groups)-1] != g.Group) {
				groups = append(groups, g.Group)
			}
		}
		if len(groups) == 0 {
			continue
		}
		jobs = append(jobs, plotJob{name: PlotName("domain_groups", mode, ""), w: 22 * vg.Centimeter, h: 12 * vg.Centimeter,
			make: func() (*plot.Plot, error) { return domainBars(res.Domains, mode, groups) }})
	}
	return jobs
}

func domainBars(dr *analysis.DomainResult, mode string, groups []string) (*plot.Plot, error) {
	cells := stageCells()
	labels := make([]string, len(cells))
	for i, c := range cells {
		labels[i] = c.label()
	}
	var series []barSeries
	for _, name := range groups {
		s := barSeries{name: name}
		for _, c := range cells {
			v, lo, hi := math.NaN(), math.NaN(), math.NaN()
			for _, g := range dr.Groups {
				if g.OracleMode == mode && g.Group == name && g.Path == c.path && g.Stage == c.k && g.Valid {
					v, lo, hi = g.Value, g.Lo, g.Hi
				}
			}
			s.val, s.lo, s.hi = append(s.val, v), append(s.lo, lo), append(s.hi, hi)
		}
		series = append(series, s)
	}
	return groupedBars("Mean end-to-end accuracy by domain group (oracle "+mode+")", "accuracy (two-level bootstrap 95% CI)", labels, series)
}
