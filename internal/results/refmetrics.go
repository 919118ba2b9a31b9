package results

import (
	"bytes"
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// The reference-compatible metrics (spec protocol.md §10.1) are computed
// from the all_results.json objects, exactly as the reference analysis
// reads them, including its quirk that a stage recorded as {} is skipped
// without breaking the end-to-end chain.

// Path names as written in qa_path and the reference CSVs.
const (
	PathRR = "revision_required"
	PathRF = "revision_free"
	PathLF = "lesion_free"
)

var refStageKeys = []string{"detection_qa", "contour_evaluation_qa", "contour_revision_qa", "attribute_extraction_qa"}

// RefPath holds the per-stage boolean lists of one path.
type RefPath struct {
	E2E   [4][]bool // per stage: the end-to-end list (stage 1: detection)
	OP    [4][]bool // per stage: the oracle-passed list (stage 1 = E2E[0])
	Depth []int
}

// RefMetrics is the §10.1 computation over one run's records.
type RefMetrics struct {
	Paths map[string]*RefPath // by qa_path
	// Detail lists: RR for the contour-revision sub-questions, RR and RF
	// concatenated for the attributes.
	Expansion, Contraction, RevisionResult       []bool
	Distribution, Location, Severity, Comparison []bool
}

func isEmptyObj(v *ojson.Value) bool {
	return v == nil || v.Kind != ojson.KindObject || len(v.O) == 0
}

// truthy is Python's bool() of a JSON value as the reference reads it.
func truthy(v *ojson.Value) bool {
	if v == nil {
		return false
	}
	switch v.Kind {
	case ojson.KindBool:
		return v.B
	case ojson.KindNumber:
		return strings.Trim(v.N, "-0.eE+") != ""
	case ojson.KindString:
		return v.S != ""
	case ojson.KindArray:
		return len(v.A) > 0
	case ojson.KindObject:
		return len(v.O) > 0
	}
	return false
}

// RefMetricsFromExport computes §10.1 over all_results.json entries (the
// values of the top-level object) in file order.
func RefMetricsFromExport(entries []*ojson.Value) *RefMetrics {
	m := &RefMetrics{Paths: map[string]*RefPath{PathRR: {}, PathRF: {}, PathLF: {}}}
	for _, rec := range entries {
		path := ""
		if p := rec.Get("qa_path"); p != nil {
			path = p.S
		}
		rp := m.Paths[path]
		if rp == nil {
			continue // not a path the reference tables know
		}
		var e2e, op [4]bool
		valid := true
		for i, s := range refStageKeys {
			st := rec.Get(s)
			if isEmptyObj(st) {
				continue
			}
			c := truthy(st.Get("correct"))
			e2e[i] = c && valid
			if !(c && valid) {
				valid = false
			}
			op[i] = c
		}
		var stages []int
		switch path {
		case PathRR:
			stages = []int{0, 1, 2, 3}
		case PathRF:
			stages = []int{0, 1, 3}
		default:
			stages = []int{0}
		}
		var counted []int
		for _, s := range stages {
			if s == 0 || !isEmptyObj(rec.Get(refStageKeys[s])) {
				counted = append(counted, s)
			}
		}
		depth := 0
		for _, s := range counted {
			rp.E2E[s] = append(rp.E2E[s], e2e[s])
			if s == 0 {
				rp.OP[0] = append(rp.OP[0], e2e[0])
			} else {
				rp.OP[s] = append(rp.OP[s], op[s])
			}
			if e2e[s] {
				depth++
			}
		}
		key := ""
		if k := rec.Get("key_id"); k != nil {
			key = k.S
		}
		if strings.HasPrefix(key, "cardiomegaly_") && path != PathLF && e2e[counted[len(counted)-1]] {
			depth++
		}
		rp.Depth = append(rp.Depth, depth)

		sub := func(stage *ojson.Value, key string, dst *[]bool) {
			if o := stage.Get(key); o != nil && o.Kind == ojson.KindObject && o.Has("correct") {
				*dst = append(*dst, truthy(o.Get("correct")))
			}
		}
		if path == PathRR {
			if cr := rec.Get("contour_revision_qa"); !isEmptyObj(cr) {
				sub(cr, "expansion", &m.Expansion)
				sub(cr, "contraction", &m.Contraction)
				sub(cr, "revision_result", &m.RevisionResult)
			}
		}
		if path == PathRR || path == PathRF {
			if ae := rec.Get("attribute_extraction_qa"); !isEmptyObj(ae) {
				sub(ae, "distribution", &m.Distribution)
				sub(ae, "location", &m.Location)
				sub(ae, "severity/measurement", &m.Severity)
				sub(ae, "comparison", &m.Comparison)
			}
		}
	}
	return m
}

// RefMetricsFromRecords exports the ok records (last line per key, in
// index order) and computes §10.1 over them. benchAbsDir and backend only
// shape parts of the export that the metrics do not read.
func RefMetricsFromRecords(recs []*Record) *RefMetrics {
	var entries []*ojson.Value
	for _, r := range Latest(recs) {
		if r.Status == StatusOK {
			entries = append(entries, ExportRecord(r, "", ""))
		}
	}
	return RefMetricsFromExport(entries)
}

// mean is the reference accuracy: the mean of the booleans, 0.0 for an
// empty list.
func mean(bs []bool) float64 {
	if len(bs) == 0 {
		return 0
	}
	k := 0
	for _, b := range bs {
		if b {
			k++
		}
	}
	return float64(k) / float64(len(bs))
}

func meanInt(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0
	for _, x := range xs {
		s += x
	}
	return float64(s) / float64(len(xs))
}

// Reference CSV headers (§10.2).
var (
	RefSummaryHeader   = []string{"path", "model", "setting", "acc(stage1)", "acc(stage2)", "acc(stage3)", "acc(stage4)", "depth"}
	RefContourHeader   = []string{"path", "model", "acc(expansion)", "acc(contraction)", "acc(revision_result)"}
	RefAttributeHeader = []string{"path", "model", "acc(distribution)", "acc(location)", "acc(severity/measurement)", "acc(comparison)"}
)

// Per-model reference CSV file names (§9.1).
const (
	RefSummaryFile   = "model_performance_summary.csv"
	RefContourFile   = "model_performance_detail_contour_revision.csv"
	RefAttributeFile = "model_performance_detail_attribute_extraction.csv"
)

// SummaryRows are the six rows of model_performance_summary.csv for one
// model label.
func (m *RefMetrics) SummaryRows(label string) [][]string {
	f := ojson.FormatFloat
	var rows [][]string
	for _, path := range []string{PathRR, PathRF, PathLF} {
		rp := m.Paths[path]
		depth := f(meanInt(rp.Depth))
		for _, setting := range []string{"end_to_end", "oracle_passed"} {
			lists := rp.E2E
			if setting == "oracle_passed" {
				lists = rp.OP
			}
			rows = append(rows, []string{path, label, setting,
				f(mean(lists[0])), f(mean(lists[1])), f(mean(lists[2])), f(mean(lists[3])), depth})
		}
	}
	return rows
}

// ContourRows is the one row of the contour-revision detail file.
func (m *RefMetrics) ContourRows(label string) [][]string {
	f := ojson.FormatFloat
	return [][]string{{PathRR, label, f(mean(m.Expansion)), f(mean(m.Contraction)), f(mean(m.RevisionResult))}}
}

// AttributeRows is the one row of the attribute detail file.
func (m *RefMetrics) AttributeRows(label string) [][]string {
	f := ojson.FormatFloat
	return [][]string{{PathRR + "+" + PathRF, label, f(mean(m.Distribution)), f(mean(m.Location)),
		f(mean(m.Severity)), f(mean(m.Comparison))}}
}

// CSV writes rows as Python's csv module does by default: comma
// separated, "\r\n" line ends, a field quoted (with doubled quotes) only
// when it contains a comma, a quote, "\r" or "\n".
func CSV(header []string, rows [][]string) []byte {
	var b bytes.Buffer
	line := func(fields []string) {
		for i, f := range fields {
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
	line(header)
	for _, r := range rows {
		line(r)
	}
	return b.Bytes()
}

// RefLabel is the reference CSV model label: the run name after its first
// "_" (the provider is dropped, ref).
func RefLabel(runName string) string {
	if _, after, ok := strings.Cut(runName, "_"); ok {
		return after
	}
	return runName
}

// WriteRefCSVs writes the three per-model reference CSVs into dir,
// atomically.
func WriteRefCSVs(dir, label string, m *RefMetrics) error {
	files := []struct {
		name   string
		header []string
		rows   [][]string
	}{
		{RefSummaryFile, RefSummaryHeader, m.SummaryRows(label)},
		{RefContourFile, RefContourHeader, m.ContourRows(label)},
		{RefAttributeFile, RefAttributeHeader, m.AttributeRows(label)},
	}
	for _, f := range files {
		if err := atomicfile.WriteFile(filepath.Join(dir, f.name), CSV(f.header, f.rows)); err != nil {
			return err
		}
	}
	return nil
}
