package mrmc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/chexpercept/chexpercept/internal/pycsv"
)

// MaxPilotBytes bounds a pilot analysis (mrmc.json) read by ParsePilot:
// its figures list one number per modality and reader, a few kilobytes
// for any reader study.
const MaxPilotBytes = 16 << 20

// pilotNum is a number of mrmc.json: null (undefined) is NaN, "inf" and
// "-inf" are infinite.
type pilotNum float64

func (x *pilotNum) UnmarshalJSON(b []byte) error {
	switch s := string(b); s {
	case "null", `"NA"`:
		*x = pilotNum(math.NaN())
	case `"inf"`:
		*x = pilotNum(math.Inf(1))
	case `"-inf"`:
		*x = pilotNum(math.Inf(-1))
	default:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%s is not a number", s)
		}
		*x = pilotNum(v)
	}
	return nil
}

// ParsePilot reads the pilot's components from an analysis written by
// `chexpercept mrmc --out` (mrmc.json): the figure of merit, modalities,
// readers and number of cases, the components var, cov1, cov2, cov3 and
// var_tr (or, without it, ms_tr, from which VarTR follows as in
// PilotFromAnalysis), and the modality means, whose first two give the
// observed difference of a two-modality pilot. name labels errors.
func ParsePilot(r io.Reader, name string) (*Pilot, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxPilotBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > MaxPilotBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes: not an analysis of chexpercept mrmc", name, MaxPilotBytes)
	}
	var doc struct {
		FOM        string              `json:"fom"`
		Modalities []string            `json:"modalities"`
		Readers    []string            `json:"readers"`
		NCases     *int                `json:"n_cases"`
		Components map[string]pilotNum `json:"components"`
		Means      map[string]pilotNum `json:"modality_means"`
		Blocks     []struct{}          `json:"blocks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v (want the mrmc.json that chexpercept mrmc writes)", name, err)
	}
	if doc.Components == nil || doc.NCases == nil {
		return nil, fmt.Errorf("%s: no components or n_cases: not an analysis of chexpercept mrmc", name)
	}
	if len(doc.Modalities) < 2 {
		return nil, fmt.Errorf("%s: the pilot has %d modality: a plan needs two to compare (Cov1, Cov3 and VarTR come from them)", name, len(doc.Modalities))
	}
	comp := func(key string) (float64, error) {
		v, ok := doc.Components[key]
		if !ok {
			return 0, fmt.Errorf("%s: components: no %s", name, key)
		}
		return float64(v), nil
	}
	p := &Pilot{Modalities: doc.Modalities, Readers: len(doc.Readers), Cases: pilotCases(*doc.NCases, len(doc.Blocks)), Difference: math.NaN()}
	if doc.FOM != "" {
		f, err := ParseFOM(doc.FOM)
		if err != nil {
			return nil, fmt.Errorf("%s: fom: %w", name, err)
		}
		p.FOM = f
	}
	for _, c := range []struct {
		key string
		to  *float64
	}{{"var", &p.Var}, {"cov1", &p.Cov1}, {"cov2", &p.Cov2}, {"cov3", &p.Cov3}} {
		if *c.to, err = comp(c.key); err != nil {
			return nil, err
		}
	}
	if v, ok := doc.Components["var_tr"]; ok {
		p.VarTR = float64(v)
	} else {
		key := "ms_tr"
		if len(doc.Blocks) > 1 {
			key = "ms_trg" // a split-plot pilot: the interaction within blocks
		}
		msTR, err := comp(key)
		if err != nil {
			return nil, fmt.Errorf("%s (nor var_tr)", err)
		}
		p.VarTR = msTR - p.Var + p.Cov1 + math.Max(p.Cov2-p.Cov3, 0)
	}
	if len(doc.Modalities) == 2 {
		a, okA := doc.Means[doc.Modalities[0]]
		b, okB := doc.Means[doc.Modalities[1]]
		if okA && okB {
			p.Difference = float64(a) - float64(b)
		}
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// Request is what a plan computes: the power of a study of Readers and
// Cases; with a Target power, the smallest Cases for the given Readers or
// the smallest Readers for the given Cases (the other 0); and, with
// Table, the power over a grid of readers and cases (nil grids: the
// defaults).
type Request struct {
	Readers, Cases int
	Target         float64
	Table          bool
	ReadersGrid    []int
	CasesGrid      []int
}

// The default grids of a power table: panels from a few readers to a
// large multi-site study, case sets from a small pilot to a large
// benchmark.
var (
	DefaultReadersGrid = []int{3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30}
	DefaultCasesGrid   = []int{50, 75, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, 2000}
)

// ErrNothingToPlan is a request that asks for nothing.
var ErrNothingToPlan = errors.New("nothing to compute: want the power of a study (readers and cases), the smallest study for a target power (with its readers or its cases), or a power table")

// Plan is the answer to a request: one result per analysis and, when
// asked, the power table.
type Plan struct {
	Pilot *Pilot
	Hypothesis
	Request
	Results []PlanResult // one per analysis, in the order of Analyses
	Table   []PlanResult // per analysis, readers, cases
}

// PlanResult is one analysis' power (of the study asked about, or of the
// smallest study found), or why it has none: the components leave no
// variance (ErrNoVariance) or the target is not reached
// (*UnreachableError).
type PlanResult struct {
	Power
	Err error
}

// Plan answers a request for every analysis.
func (p *Pilot) Plan(h Hypothesis, req Request) (*Plan, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := h.check(); err != nil {
		return nil, err
	}
	pl := &Plan{Pilot: p, Hypothesis: h, Request: req}
	sized := req.Readers > 0 || req.Cases > 0 || req.Target > 0
	switch {
	case !sized && !req.Table:
		return nil, ErrNothingToPlan
	case req.Target > 0 && req.Readers > 0 && req.Cases > 0:
		return nil, errors.New("a target power with both readers and cases: give one, the other is what is computed")
	case req.Target > 0 && req.Readers == 0 && req.Cases == 0:
		return nil, errors.New("a target power needs the readers (to find the cases) or the cases (to find the readers)")
	case req.Target == 0 && sized && (req.Readers == 0 || req.Cases == 0):
		return nil, errors.New("the power of a study needs both its readers and its cases")
	}
	if sized {
		for _, analysis := range Analyses {
			var pw Power
			var err error
			switch {
			case req.Target == 0:
				pw, err = p.Power(analysis, req.Readers, req.Cases, h)
			case req.Readers > 0:
				pw, err = p.SmallestCases(analysis, req.Readers, req.Target, h)
			default:
				pw, err = p.SmallestReaders(analysis, req.Cases, req.Target, h)
			}
			var ue *UnreachableError
			if err != nil && !errors.Is(err, ErrNoVariance) && !errors.As(err, &ue) {
				return nil, err
			}
			if err != nil {
				pw = Power{Analysis: analysis, Readers: req.Readers, Cases: req.Cases, Statistic: "NA",
					Noncentrality: math.NaN(), DF1: math.NaN(), DF2: math.NaN(), Critical: math.NaN(), Power: math.NaN()}
			}
			pl.Results = append(pl.Results, PlanResult{pw, err})
		}
	}
	if req.Table {
		if pl.ReadersGrid == nil {
			pl.ReadersGrid = DefaultReadersGrid
		}
		if pl.CasesGrid == nil {
			pl.CasesGrid = DefaultCasesGrid
		}
		for _, g := range []struct {
			what  string
			grid  []int
			bound int
		}{{"readers", pl.ReadersGrid, MaxPlanReaders}, {"cases", pl.CasesGrid, MaxPlanCases}} {
			if len(g.grid) == 0 {
				return nil, fmt.Errorf("%s grid: empty", g.what)
			}
			for _, n := range g.grid {
				if n < minPlanSize || n > g.bound {
					return nil, fmt.Errorf("%s grid: %d: want %d to %d", g.what, n, minPlanSize, g.bound)
				}
			}
		}
		for _, analysis := range Analyses {
			for _, j := range pl.ReadersGrid {
				for _, k := range pl.CasesGrid {
					pw, err := p.Power(analysis, j, k, h)
					if err != nil && !errors.Is(err, ErrNoVariance) {
						return nil, err
					}
					if err != nil {
						pw = Power{Analysis: analysis, Readers: j, Cases: k, Statistic: "NA", Noncentrality: math.NaN(),
							DF1: math.NaN(), DF2: math.NaN(), Critical: math.NaN(), Power: math.NaN()}
					}
					pl.Table = append(pl.Table, PlanResult{pw, err})
				}
			}
		}
	}
	return pl, nil
}

// modalityPair names the difference: "A − B" of the pilot, or "first −
// second modality".
func (pl *Plan) modalityPair() string {
	if m := pl.Pilot.Modalities; len(m) == 2 {
		return "modality " + m[0] + " − modality " + m[1]
	}
	return "first modality − second"
}

// Text writes the plan for a terminal: its inputs, the answer per
// analysis (power with 8 decimals), and the power table.
func (pl *Plan) Text(w io.Writer, source, effectFrom string) error {
	p, alpha := pl.Pilot, pl.alpha()
	var b strings.Builder
	fom := ""
	if p.FOM != "" {
		fom = fmt.Sprintf("figure of merit %s, ", p.FOM)
	}
	readers := ""
	if p.Readers > 0 {
		readers = plural(p.Readers, "reader") + ", "
	}
	fmt.Fprintf(&b, "Planning a two-modality study from %s (%s%s%s)\n", source, fom, readers, plural(p.Cases, "case"))
	fmt.Fprintf(&b, "  components over %d cases: Var %s, Cov1 %s, Cov2 %s, Cov3 %s, VarTR %s\n", p.Cases,
		num(p.Var, 8), num(p.Cov1, 8), num(p.Cov2, 8), num(p.Cov3, 8), num(p.VarTR, 8))
	for _, n := range p.Constraints() {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	fmt.Fprintf(&b, "  effect %s (%s: %s), alpha %s\n", strconv.FormatFloat(pl.Effect, 'g', 8, 64), pl.modalityPair(), effectFrom, fmtNum(alpha))
	pct := fmtNum(100 * (1 - alpha))
	if pl.Margin > 0 {
		fmt.Fprintf(&b, "  test: non-inferiority by margin %s, shown when the lower limit of the two-sided %s %% interval of %s lies above −%s (one-sided at %s)\n",
			fmtNum(pl.Margin), pct, pl.modalityPair(), fmtNum(pl.Margin), fmtNum(alpha/2))
	} else {
		b.WriteString("  test: equal modalities, two-sided\n")
	}
	if pl.blocks() > 1 {
		fmt.Fprintf(&b, "  design: split-plot, %d blocks: readers and cases split evenly, each block's readers read its cases only\n", pl.blocks())
	}
	if len(pl.Results) > 0 {
		switch {
		case pl.Target == 0:
			fmt.Fprintf(&b, "\nPower with %s and %s\n", plural(pl.Readers, "reader"), plural(pl.Cases, "case"))
		case pl.Readers > 0:
			fmt.Fprintf(&b, "\nSmallest number of cases for power %s with %s\n", fmtNum(pl.Target), plural(pl.Readers, "reader"))
		default:
			fmt.Fprintf(&b, "\nSmallest number of readers for power %s with %s\n", fmtNum(pl.Target), plural(pl.Cases, "case"))
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  analysis\treaders\tcases\tpower\tnoncentrality\ttest")
		size := func(n int) string {
			if n == 0 {
				return "NA"
			}
			return strconv.Itoa(n)
		}
		for _, r := range pl.Results {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", r.Analysis, size(r.Readers), size(r.Cases), num(r.Power.Power, 8), num(r.Noncentrality, 4), testName(r.Power))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, r := range pl.Results {
			if r.Err != nil {
				fmt.Fprintf(&b, "  %s\n", r.Err)
			}
		}
	}
	for i, analysis := range Analyses {
		if len(pl.Table) == 0 {
			break
		}
		fmt.Fprintf(&b, "\nPower table, %s: readers (rows) by cases (columns)\n", analysis)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		cells := []string{"readers"}
		for _, k := range pl.CasesGrid {
			cells = append(cells, strconv.Itoa(k))
		}
		fmt.Fprintf(tw, "  %s\t\n", strings.Join(cells, "\t"))
		n := len(pl.ReadersGrid) * len(pl.CasesGrid)
		rows := pl.Table[i*n : (i+1)*n]
		for r, j := range pl.ReadersGrid {
			cells = []string{strconv.Itoa(j)}
			for c := range pl.CasesGrid {
				cells = append(cells, num(rows[r*len(pl.CasesGrid)+c].Power.Power, 3))
			}
			fmt.Fprintf(tw, "  %s\t\n", strings.Join(cells, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// testName is the test of a power: "F(1, 62.707)", "chi2(1)", "t(62.707)"
// or "normal".
func testName(pw Power) string {
	switch pw.Statistic {
	case "F":
		return fmt.Sprintf("F(1, %s)", dfText(pw.DF2))
	case "chi2":
		return "chi-square(1)"
	case "t":
		return fmt.Sprintf("t(%s), one-sided", dfText(pw.DF2))
	case "z":
		return "normal, one-sided"
	}
	return "NA"
}

// dfText is a df for the text: whole numbers as such, others with 3
// decimals.
func dfText(df float64) string {
	if df == math.Trunc(df) && df < 1e15 {
		return strconv.FormatFloat(df, 'f', 0, 64)
	}
	return num(df, 3)
}

// Files are the files of a plan: plan_power.csv (the answer per
// analysis) and plan_table.csv (the power table), whichever were asked
// for. Columns are in docs/data-dictionary.md; CSV as the project writes
// it (CRLF, NA for an undefined number, inf for an infinite df).
func (pl *Plan) Files() map[string][]byte {
	files := map[string][]byte{}
	head := []string{"analysis", "readers", "cases", "effect", "margin", "alpha", "target_power", "statistic", "noncentrality", "df1", "df2", "critical_value", "power", "note"}
	row := func(r PlanResult, target float64) []string {
		note := ""
		if r.Err != nil {
			note = r.Err.Error()
		}
		size := func(n int) string {
			if n == 0 {
				return "NA"
			}
			return strconv.Itoa(n)
		}
		return []string{designKey(r.Analysis), size(r.Readers), size(r.Cases), planNum(pl.Effect), planNum(pl.Margin), planNum(pl.alpha()),
			planNum(target), r.Statistic, planNum(r.Noncentrality), planNum(r.DF1), planNum(r.DF2), planNum(r.Critical), planNum(r.Power.Power), note}
	}
	if len(pl.Results) > 0 {
		target := math.NaN()
		if pl.Target > 0 {
			target = pl.Target
		}
		rows := [][]string{head}
		for _, r := range pl.Results {
			rows = append(rows, row(r, target))
		}
		files["plan_power.csv"] = pycsv.Rows(rows...)
	}
	if len(pl.Table) > 0 {
		rows := [][]string{head}
		for _, r := range pl.Table {
			rows = append(rows, row(r, math.NaN()))
		}
		files["plan_table.csv"] = pycsv.Rows(rows...)
	}
	return files
}

// planNum formats a number for the plan's CSV files: shortest round-trip
// form, NA when undefined, inf when infinite.
func planNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NA"
	case math.IsInf(x, 1):
		return "inf"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}
