package reading

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/yamlerr"
)

// The analyses a plan may name, as chexpercept mrmc's files name them.
var planAnalyses = []string{"rrrc", "frrc", "rrfc"}

// ParsePlan reads an analysis plan (YAML, docs/reading.md) from r, at
// most yamlerr.MaxFileBytes; name labels errors ("PLAN.yaml: field:
// reason"). Left out: figure_of_merit accuracy, analysis rrrc, alpha
// 0.05; design, readers and records are filled in by Init from the
// study when the plan leaves them out.
func ParsePlan(r io.Reader, name string) (*results.StudyPlan, error) {
	data, err := io.ReadAll(io.LimitReader(r, yamlerr.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > yamlerr.MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes: not an analysis plan", name, yamlerr.MaxFileBytes)
	}
	var p results.StudyPlan
	if err := yamlerr.Decode(data, &p, true); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty: want an analysis plan (docs/reading.md)", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if p.FOM == "" {
		p.FOM = "accuracy"
	}
	if p.Analysis == "" {
		p.Analysis = "rrrc"
	}
	if p.Alpha == 0 {
		p.Alpha = 0.05
	}
	if err := checkPlan(&p); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &p, nil
}

// checkPlan checks a plan's fields, each error naming its field.
func checkPlan(p *results.StudyPlan) error {
	path := benchmark.Path(p.Primary.Path)
	if !slices.Contains(benchmark.Paths, path) {
		return fmt.Errorf("primary.path %q: want one of %v", p.Primary.Path, benchmark.Paths)
	}
	if p.Primary.Stage < 1 || p.Primary.Stage > 3 || !benchmark.StageApplies(path, false, benchmark.Stage(p.Primary.Stage)) {
		return fmt.Errorf("primary.stage %d: not a stage of path %s", p.Primary.Stage, path)
	}
	if p.FOM != "accuracy" {
		return fmt.Errorf("figure_of_merit %q: a reading study's figure of merit is accuracy (end-to-end correctness)", p.FOM)
	}
	if !slices.Contains(planAnalyses, p.Analysis) {
		return fmt.Errorf("analysis %q: want rrrc (random readers and cases), frrc or rrfc", p.Analysis)
	}
	if !(p.Alpha > 0 && p.Alpha < 1) {
		return fmt.Errorf("alpha %v: want a level between 0 and 1", p.Alpha)
	}
	switch p.Design {
	case "", "crossed":
		if p.Blocks > 1 {
			return fmt.Errorf("blocks %d: a crossed design has none (design: split-plot)", p.Blocks)
		}
	case DesignSplitPlot:
		if p.Blocks < 1 {
			return fmt.Errorf("blocks %d: a split-plot design needs 1 block or more", p.Blocks)
		}
	default:
		return fmt.Errorf("design %q: want crossed or split-plot", p.Design)
	}
	if p.Readers < 0 || p.Records < 0 {
		return fmt.Errorf("readers %d, records %d: want planned numbers (0: the study's)", p.Readers, p.Records)
	}
	if !(p.Margin >= 0 && p.Margin < 1) {
		return fmt.Errorf("margin %v: want a non-inferiority margin from 0 to below 1", p.Margin)
	}
	return nil
}

// fitPlan fills the plan's design, readers and records from the study
// being made, or says where they differ.
func fitPlan(p *results.StudyPlan, o InitOptions, records int) error {
	design := "crossed"
	if o.Blocks > 0 {
		design = DesignSplitPlot
	}
	if p.Design == "" {
		p.Design, p.Blocks = design, o.Blocks
	}
	if p.Design != design || (design == DesignSplitPlot && p.Blocks != o.Blocks) {
		return fmt.Errorf("plan: design %s with %d block(s), the study %s with %d", p.Design, p.Blocks, design, o.Blocks)
	}
	if p.Readers == 0 {
		p.Readers = o.Readers
	}
	if p.Readers != o.Readers {
		return fmt.Errorf("plan: %d readers planned, the study has %d", p.Readers, o.Readers)
	}
	if p.Records == 0 {
		p.Records = records
	}
	if p.Records != records {
		return fmt.Errorf("plan: %d records planned, the study selects %d", p.Records, records)
	}
	return nil
}

// FormatPlan writes a plan as the YAML ParsePlan reads.
func FormatPlan(p *results.StudyPlan) []byte {
	out, err := yaml.Marshal(p)
	if err != nil {
		panic(err) // strings and numbers only
	}
	return out
}

// planJSON is the plan as stored in the database's meta table.
func planJSON(p *results.StudyPlan) string {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // strings and numbers only
	}
	return string(b)
}
