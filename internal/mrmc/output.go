package mrmc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// designKey is a design's short name in files: rrrc, frrc, rrfc.
func designKey(name string) string {
	switch name {
	case RRRC:
		return "rrrc"
	case FRRC:
		return "frrc"
	}
	return "rrfc"
}

func statName(t Test) string {
	if t.Chi2 {
		return "chi2"
	}
	return "F"
}

// statLabel is the statistic's name in the text output.
func statLabel(t Test) string {
	if t.Chi2 {
		return "chi-square"
	}
	return "F"
}

// num formats a number for the text output; NaN is NA and +Inf inf.
func num(x float64, prec int) string {
	switch {
	case math.IsNaN(x):
		return "NA"
	case math.IsInf(x, 1):
		return "inf"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// Text writes the analysis for a terminal: the figures per modality and
// reader, the variance components, and each design's test, differences
// and means.
func (a *Analysis) Text(w io.Writer) error {
	pct := int(math.Round(100 * (1 - a.Alpha)))
	var b strings.Builder
	fmt.Fprintf(&b, "Obuchowski–Rockette MRMC analysis, figure of merit %s: %d modalities, %d readers, %d cases\n", a.FOM, len(a.Modalities), len(a.Readers), a.NCases)
	if a.Blocks != nil {
		fmt.Fprintf(&b, "Design: %s (%s); covariances estimated within blocks\n", a.DesignName(), a.blockSizes())
	}
	b.WriteString("\n")
	b.WriteString("Figure of merit per reader (rows) and modality (columns)\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  reader\t%s\n", strings.Join(a.Modalities, "\t"))
	for j, r := range a.Readers {
		cells := make([]string, len(a.Modalities))
		for i := range a.Modalities {
			cells[i] = num(a.Theta[i][j], 8)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", r, strings.Join(cells, "\t"))
	}
	cells := make([]string, len(a.Modalities))
	for i := range a.Modalities {
		cells[i] = num(a.ModalityMeans[i], 8)
	}
	fmt.Fprintf(tw, "  mean\t%s\n", strings.Join(cells, "\t"))
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\nVariance components\n")
	for _, c := range []struct {
		name string
		v    float64
	}{{"MS(T)", a.MST}, {"MS(R)", a.MSR}, {"MS(T×R)", a.MSTR}, {"MS(T×R(G))", a.MSTRG}, {"Var", a.Var}, {"Cov1", a.Cov1}, {"Cov2", a.Cov2}, {"Cov3", a.Cov3}} {
		if c.name == "MS(T×R(G))" && a.Blocks == nil {
			continue
		}
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, num(c.v, 8))
	}
	for _, d := range a.Designs {
		fmt.Fprintf(&b, "\n%s%s\n", strings.ToUpper(d.Name[:1]), d.Name[1:])
		switch {
		case len(a.Modalities) < 2:
		case d.Test.NA != "":
			fmt.Fprintf(&b, "  test of equal modalities: %s NA, p NA (%s)\n", statLabel(d.Test), d.Test.NA.Explain())
		case d.Test.Chi2:
			fmt.Fprintf(&b, "  test of equal modalities: chi-square %s on %s df, p %s\n", num(d.Test.Stat, 5), num(d.Test.DF1, 0), num(d.Test.P, 4))
		default:
			fmt.Fprintf(&b, "  test of equal modalities: F %s on %s and %s df, p %s\n", num(d.Test.Stat, 2), num(d.Test.DF1, 0), num(d.Test.DF2, 2), num(d.Test.P, 4))
		}
		for _, x := range d.Diffs {
			if x.NA != "" {
				fmt.Fprintf(&b, "  %s − %s: %s, SE %s, no interval, p NA (%s)\n", x.A, x.B, num(x.Estimate, 5), num(x.SE, 5), x.NA.Explain())
				continue
			}
			fmt.Fprintf(&b, "  %s − %s: %s, SE %s, df %s, %d %% CI (%s, %s), p %s\n", x.A, x.B, num(x.Estimate, 5), num(x.SE, 5), num(x.DF, 2), pct, num(x.Lo, 5), num(x.Hi, 5), num(x.P, 4))
		}
		for _, m := range d.Means {
			if m.NA != "" {
				fmt.Fprintf(&b, "  %s alone: %s, SE %s, no interval (%s)\n", m.Modality, num(m.Estimate, 8), num(m.SE, 8), m.NA.Explain())
				continue
			}
			fmt.Fprintf(&b, "  %s alone: %s, SE %s, df %s, %d %% CI (%s, %s)\n", m.Modality, num(m.Estimate, 8), num(m.SE, 8), num(m.DF, 2), pct, num(m.Lo, 5), num(m.Hi, 5))
		}
	}
	for _, sr := range a.Standalone {
		if sr.Modality == a.Modalities[0] {
			fmt.Fprintf(&b, "\nAlgorithm %s against the %d readers (random readers, random cases; the algorithm without reader variance)\n", sr.Algorithm, sr.NReaders)
		}
		if sr.NA != "" {
			fmt.Fprintf(&b, "  %s: algorithm %s − readers %s = %s, SE %s, no interval, p NA (%s)\n", sr.Modality, num(sr.Model, 5), num(sr.Readers, 5),
				num(sr.Estimate, 5), num(sr.SE, 5), sr.NA.Explain())
			continue
		}
		fmt.Fprintf(&b, "  %s: algorithm %s − readers %s = %s, SE %s, df %s, %d %% CI (%s, %s), p %s", sr.Modality, num(sr.Model, 5), num(sr.Readers, 5),
			num(sr.Estimate, 5), num(sr.SE, 5), num(sr.DF, 2), pct, num(sr.Lo, 5), num(sr.Hi, 5), num(sr.P, 4))
		if sr.Margin > 0 {
			// The level mrmc plan sizes a non-inferiority study for:
			// one-sided at α/2, the lower limit of the two-sided
			// interval above −margin.
			verdict := "not shown"
			if sr.PNonInferior < a.Alpha/2 {
				verdict = "shown"
			}
			fmt.Fprintf(&b, "; non-inferiority by %s: one-sided p %s, %s at one-sided level %s (the %d %% interval's lower limit above −%s)",
				num(sr.Margin, 4), num(sr.PNonInferior, 4), verdict, strconv.FormatFloat(a.Alpha/2, 'g', -1, 64), pct, num(sr.Margin, 4))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// DesignName is the study's design in words: "fully crossed", or
// "split-plot, B blocks".
func (a *Analysis) DesignName() string {
	if a.Blocks == nil {
		return "fully crossed"
	}
	return "split-plot, " + plural(len(a.Blocks), "block")
}

// blockSizes lists the blocks' readers and cases: "block 1: 4 readers,
// 50 cases; ...".
func (a *Analysis) blockSizes() string {
	parts := make([]string, len(a.Blocks))
	for b, name := range a.Blocks {
		parts[b] = fmt.Sprintf("block %s: %s, %s", name, plural(a.BlockReaders[b], "reader"), plural(a.BlockCases[b], "case"))
	}
	return strings.Join(parts, "; ")
}

// csvNum formats a number for the CSV files: shortest round-trip form,
// NA when undefined, inf for an infinite df.
func csvNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NA"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	case x == 0:
		return "0" // never "-0"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// csvReason is a reason's code, NA when there is none.
func csvReason(r Reason) string {
	if r == "" {
		return "NA"
	}
	return string(r)
}

// writeCSV writes the project's CSV dialect (the one Python's csv module
// writes by default, and every other CSV of chexpercept): "\r\n" after
// each row, a field quoted only when it holds a comma, a double quote or a
// line break, quotes doubled. Written here, not borrowed, so that the
// package stays self-contained.
func writeCSV(header []string, rows [][]string) []byte {
	var b bytes.Buffer
	for _, row := range append([][]string{header}, rows...) {
		for i, f := range row {
			if i > 0 {
				b.WriteByte(',')
			}
			if strings.ContainsAny(f, ",\"\r\n") {
				b.WriteByte('"')
				b.WriteString(strings.ReplaceAll(f, `"`, `""`))
				b.WriteByte('"')
			} else {
				b.WriteString(f)
			}
		}
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// jnum is a number in mrmc.json: null when undefined, "inf" when infinite.
type jnum float64

func (x jnum) MarshalJSON() ([]byte, error) {
	switch f := float64(x); {
	case math.IsNaN(f):
		return []byte("null"), nil
	case math.IsInf(f, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-inf"`), nil
	default:
		return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
	}
}

type jInterval struct {
	Estimate jnum    `json:"estimate"`
	SE       jnum    `json:"se"`
	DF       jnum    `json:"df"`
	Lo       jnum    `json:"ci_low"`
	Hi       jnum    `json:"ci_high"`
	P        jnum    `json:"p_value"`
	NA       *Reason `json:"na_reason"`
}

func jiv(iv Interval) jInterval {
	return jInterval{jnum(iv.Estimate), jnum(iv.SE), jnum(iv.DF), jnum(iv.Lo), jnum(iv.Hi), jnum(iv.P), jreason(iv.NA)}
}

// jreason is a reason in mrmc.json: null when there is none.
func jreason(r Reason) *Reason {
	if r == "" {
		return nil
	}
	return &r
}

// margin is the non-inferiority margin, NaN (NA) when none was given.
func margin(m float64) float64 {
	if m > 0 {
		return m
	}
	return math.NaN()
}

// Files are the analysis as mrmc.json and the CSV files mrmc_fom.csv,
// mrmc_tests.csv and mrmc_intervals.csv (docs/mrmc.md).
func (a *Analysis) Files() map[string][]byte {
	var fom, tests, ivs [][]string
	for i, m := range a.Modalities {
		for j, r := range a.Readers {
			fom = append(fom, []string{m, r, csvNum(a.Theta[i][j])})
		}
	}
	type jDiff struct {
		A string `json:"modality_a"`
		B string `json:"modality_b"`
		jInterval
	}
	type jMean struct {
		Modality string `json:"modality"`
		jInterval
	}
	type jDesign struct {
		Analysis  string  `json:"analysis"`
		Name      string  `json:"name"`
		Statistic string  `json:"statistic"`
		Value     jnum    `json:"value"`
		DF1       jnum    `json:"df1"`
		DF2       jnum    `json:"df2"`
		P         jnum    `json:"p_value"`
		NA        *Reason `json:"na_reason"`
		Diffs     []jDiff `json:"differences"`
		Means     []jMean `json:"means"`
	}
	type jStandalone struct {
		Modality  string `json:"modality"`
		Algorithm string `json:"algorithm"`
		NReaders  int    `json:"n_readers"`
		Model     jnum   `json:"algorithm_fom"`
		Readers   jnum   `json:"readers_mean"`
		jInterval
		Margin       jnum `json:"margin"`
		PNonInferior jnum `json:"p_noninferiority"`
	}
	type jBlock struct {
		Name    string `json:"name"`
		Readers int    `json:"n_readers"`
		Cases   int    `json:"n_cases"`
	}
	type jFOM struct {
		Modality string `json:"modality"`
		Reader   string `json:"reader"`
		FOM      jnum   `json:"fom"`
	}
	doc := struct {
		FOM        string          `json:"fom"`
		Alpha      float64         `json:"alpha"`
		Modalities []string        `json:"modalities"`
		Readers    []string        `json:"readers"`
		NCases     int             `json:"n_cases"`
		Figures    []jFOM          `json:"figures"`
		Components map[string]jnum `json:"components"`
		Designs    []jDesign       `json:"analyses"`
		Means      map[string]jnum `json:"modality_means"`
		Standalone []jStandalone   `json:"standalone,omitempty"`
		Design     string          `json:"design,omitempty"`
		Blocks     []jBlock        `json:"blocks,omitempty"`
	}{FOM: string(a.FOM), Alpha: a.Alpha, Modalities: a.Modalities, Readers: a.Readers, NCases: a.NCases,
		Components: map[string]jnum{"ms_t": jnum(a.MST), "ms_r": jnum(a.MSR), "ms_tr": jnum(a.MSTR), "var": jnum(a.Var), "cov1": jnum(a.Cov1), "cov2": jnum(a.Cov2), "cov3": jnum(a.Cov3),
			"var_r": jnum(a.VarR), "var_tr": jnum(a.VarTR)},
		Means: map[string]jnum{}}
	if a.Blocks != nil {
		// Only a split-plot study says its design: the files of a fully
		// crossed one are as they always were.
		doc.Design = "split-plot"
		doc.Components["ms_trg"] = jnum(a.MSTRG)
		for b, name := range a.Blocks {
			doc.Blocks = append(doc.Blocks, jBlock{name, a.BlockReaders[b], a.BlockCases[b]})
		}
	}
	for i, m := range a.Modalities {
		doc.Means[m] = jnum(a.ModalityMeans[i])
		for j, r := range a.Readers {
			doc.Figures = append(doc.Figures, jFOM{m, r, jnum(a.Theta[i][j])})
		}
	}
	for _, d := range a.Designs {
		k := designKey(d.Name)
		tests = append(tests, []string{k, statName(d.Test), csvNum(d.Test.Stat), csvNum(d.Test.DF1), csvNum(d.Test.DF2), csvNum(d.Test.P), csvReason(d.Test.NA)})
		jd := jDesign{Analysis: k, Name: d.Name, Statistic: statName(d.Test), Value: jnum(d.Test.Stat), DF1: jnum(d.Test.DF1), DF2: jnum(d.Test.DF2), P: jnum(d.Test.P), NA: jreason(d.Test.NA)}
		for _, x := range d.Diffs {
			ivs = append(ivs, append(append([]string{k, "difference", x.A, x.B}, ivCells(x.Interval)...), csvReason(x.NA)))
			jd.Diffs = append(jd.Diffs, jDiff{x.A, x.B, jiv(x.Interval)})
		}
		for _, m := range d.Means {
			ivs = append(ivs, append(append([]string{k, "mean", m.Modality, "NA"}, ivCells(m.Interval)...), csvReason(m.NA)))
			jd.Means = append(jd.Means, jMean{m.Modality, jiv(m.Interval)})
		}
		doc.Designs = append(doc.Designs, jd)
	}
	var standalone [][]string
	var jst []jStandalone
	for _, sr := range a.Standalone {
		standalone = append(standalone, append([]string{sr.Modality, sr.Algorithm, strconv.Itoa(sr.NReaders), csvNum(sr.Model), csvNum(sr.Readers)},
			append(ivCells(sr.Interval), csvNum(margin(sr.Margin)), csvNum(sr.PNonInferior), csvReason(sr.NA))...))
		jst = append(jst, jStandalone{sr.Modality, sr.Algorithm, sr.NReaders, jnum(sr.Model), jnum(sr.Readers), jiv(sr.Interval), jnum(margin(sr.Margin)), jnum(sr.PNonInferior)})
	}
	doc.Standalone = jst
	js, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // the document holds only strings and jnum
	}
	files := map[string][]byte{
		"mrmc.json":          append(js, '\n'),
		"mrmc_fom.csv":       writeCSV([]string{"modality", "reader", "fom"}, fom),
		"mrmc_tests.csv":     writeCSV([]string{"analysis", "statistic", "value", "df1", "df2", "p_value", "na_reason"}, tests),
		"mrmc_intervals.csv": writeCSV([]string{"analysis", "kind", "modality_a", "modality_b", "estimate", "se", "df", "ci_low", "ci_high", "p_value", "na_reason"}, ivs),
	}
	if len(a.Standalone) > 0 {
		files["mrmc_standalone.csv"] = writeCSV([]string{"modality", "algorithm", "n_readers", "algorithm_fom", "readers_mean", "estimate", "se", "df", "ci_low", "ci_high", "p_value", "margin", "p_noninferiority", "na_reason"}, standalone)
	}
	return files
}

func ivCells(iv Interval) []string {
	return []string{csvNum(iv.Estimate), csvNum(iv.SE), csvNum(iv.DF), csvNum(iv.Lo), csvNum(iv.Hi), csvNum(iv.P)}
}
