package results

import (
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/pycsv"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// The reference-compatible metrics (spec protocol.md §10.1) are computed
// from the all_results.json objects, exactly as the reference analysis
// reads them, including its quirk that a stage recorded as {} is skipped
// without breaking the end-to-end chain.

var refStageKeys = []string{"detection_qa", "contour_evaluation_qa", "contour_revision_qa", "attribute_extraction_qa"}

// RefPath holds the per-stage boolean lists of one path.
type RefPath struct {
	E2E   [4][]bool // per stage: the end-to-end list (stage 1: detection)
	OP    [4][]bool // per stage: the oracle-passed list (stage 1 = E2E[0])
	Depth []int
}

// RefMetrics is the §10.1 computation over one run's records.
type RefMetrics struct {
	Paths map[benchmark.Path]*RefPath // by qa_path
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

// refEntry is what §10.1 reads of one all_results.json entry. It comes
// from the export (refEntryFromExport) or straight from a record
// (refEntryFromRecord), which spares building the whole export.
type refEntry struct {
	key      string
	path     benchmark.Path
	recorded [4]bool // the stage object is not {}
	correct  [4]bool // its "correct", as Python's bool()
	// Sub-questions of stage 3 (expansion, contraction, revision_result)
	// and stage 4 (distribution, location, severity/measurement,
	// comparison): hasSub when the sub-object holds "correct".
	hasSub, sub [4][4]bool
}

// refSubs are the sub-questions per stage (index stage−1) of stages 3 and
// 4, in refEntry order; their names are the export's members.
var refSubs = [4][]benchmark.Question{2: benchmark.StageContourRevision.Questions(),
	3: benchmark.StageAttributeExtraction.Questions()}

func refEntryFromExport(rec *ojson.Value) refEntry {
	var e refEntry
	if p := rec.Get("qa_path"); p != nil {
		e.path = benchmark.Path(p.S)
	}
	if k := rec.Get("key_id"); k != nil {
		e.key = k.S
	}
	for i, s := range refStageKeys {
		st := rec.Get(s)
		if isEmptyObj(st) {
			continue
		}
		e.recorded[i], e.correct[i] = true, truthy(st.Get("correct"))
		for j, q := range refSubs[i] {
			if o := st.Get(q.Name()); o != nil && o.Kind == ojson.KindObject && o.Has("correct") {
				e.hasSub[i][j], e.sub[i][j] = true, truthy(o.Get("correct"))
			}
		}
	}
	return e
}

// refEntryFromRecord is refEntryFromExport(ExportRecord(r, …)): it applies
// the same export rules (turnRecorded, stageKept, turnCorrect) to the
// members the metrics read.
func refEntryFromRecord(r *Record) refEntry {
	strict := r.ParseMode == "strict"
	e := refEntry{key: r.KeyID, path: r.QAPath}
	for i, q := range []benchmark.Question{benchmark.QDetection, benchmark.QContourEval} {
		if t := r.Turn(q); turnRecorded(t, strict) {
			e.recorded[i], e.correct[i] = true, turnCorrect(t)
		}
	}
	stage := func(k benchmark.Stage) {
		i, all := int(k)-1, true
		for j, q := range refSubs[i] {
			c := turnCorrect(r.Turn(q))
			all = all && c
			e.hasSub[i][j], e.sub[i][j] = true, c
		}
		e.recorded[i], e.correct[i] = true, all
	}
	if r.QAPath == benchmark.RevisionRequired && stageKept(r, benchmark.StageContourRevision) {
		stage(benchmark.StageContourRevision)
	}
	if r.QAPath != benchmark.LesionFree && stageKept(r, benchmark.StageAttributeExtraction) {
		stage(benchmark.StageAttributeExtraction)
	}
	return e
}

func newRefMetrics() *RefMetrics {
	m := &RefMetrics{Paths: map[benchmark.Path]*RefPath{}}
	for _, p := range benchmark.Paths {
		m.Paths[p] = &RefPath{}
	}
	return m
}

// refPathStages are the stages counted per path, by index into
// refStageKeys: those that apply to the path's lung-type records (a
// heart-type record's stage 4 is {} and not counted).
var refPathStages = func() map[benchmark.Path][]int {
	m := map[benchmark.Path][]int{}
	for _, p := range benchmark.Paths {
		for _, s := range benchmark.Stages {
			if benchmark.StageApplies(p, false, s) {
				m[p] = append(m[p], int(s)-1)
			}
		}
	}
	return m
}()

// refHeartKey is the reference analysis's heart-type test: the key's
// lesion (its part before the first underscore) is a heart lesion. The
// reference reads it from the key, not from the data, and knows only the
// built-in lesions.
func refHeartKey(key string) bool {
	l, _, ok := strings.Cut(key, "_")
	return ok && benchmark.DefaultLesions().IsHeart(l)
}

// add counts one entry as the reference analysis does.
func (m *RefMetrics) add(e *refEntry) {
	rp := m.Paths[e.path]
	if rp == nil {
		return // not a path the reference tables know
	}
	var e2e, op [4]bool
	valid := true
	for i := range refStageKeys {
		if !e.recorded[i] {
			continue
		}
		c := e.correct[i]
		e2e[i] = c && valid
		if !(c && valid) {
			valid = false
		}
		op[i] = c
	}
	depth, last := 0, 0
	for _, s := range refPathStages[e.path] {
		if s != 0 && !e.recorded[s] {
			continue
		}
		last = s
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
	if refHeartKey(e.key) && e.path != benchmark.LesionFree && e2e[last] {
		depth++
	}
	rp.Depth = append(rp.Depth, depth)

	subs := func(i int, dsts ...*[]bool) {
		if !e.recorded[i] {
			return
		}
		for j, dst := range dsts {
			if e.hasSub[i][j] {
				*dst = append(*dst, e.sub[i][j])
			}
		}
	}
	if e.path == benchmark.RevisionRequired {
		subs(2, &m.Expansion, &m.Contraction, &m.RevisionResult)
	}
	if e.path.Positive() {
		subs(3, &m.Distribution, &m.Location, &m.Severity, &m.Comparison)
	}
}

// RefMetricsFromExport computes §10.1 over all_results.json entries (the
// values of the top-level object) in file order.
func RefMetricsFromExport(entries []*ojson.Value) *RefMetrics {
	m := newRefMetrics()
	for _, rec := range entries {
		e := refEntryFromExport(rec)
		m.add(&e)
	}
	return m
}

// RefMetricsFromRecords computes §10.1 over the ok records (last line per
// key, in index order), as RefMetricsFromExport would over their export,
// without building it (the chat history is most of its cost).
func RefMetricsFromRecords(recs []*Record) *RefMetrics {
	m := newRefMetrics()
	for _, r := range Latest(recs) {
		if r.Status == StatusOK {
			e := refEntryFromRecord(r)
			m.add(&e)
		}
	}
	return m
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
	for _, path := range benchmark.Paths {
		rp := m.Paths[path]
		depth := f(meanInt(rp.Depth))
		for _, setting := range []string{"end_to_end", "oracle_passed"} {
			lists := rp.E2E
			if setting == "oracle_passed" {
				lists = rp.OP
			}
			rows = append(rows, []string{string(path), label, setting,
				f(mean(lists[0])), f(mean(lists[1])), f(mean(lists[2])), f(mean(lists[3])), depth})
		}
	}
	return rows
}

// ContourRows is the one row of the contour-revision detail file.
func (m *RefMetrics) ContourRows(label string) [][]string {
	f := ojson.FormatFloat
	return [][]string{{string(benchmark.RevisionRequired), label, f(mean(m.Expansion)), f(mean(m.Contraction)), f(mean(m.RevisionResult))}}
}

// AttributeRows is the one row of the attribute detail file.
func (m *RefMetrics) AttributeRows(label string) [][]string {
	f := ojson.FormatFloat
	return [][]string{{string(benchmark.RevisionRequired + "+" + benchmark.RevisionFree), label, f(mean(m.Distribution)), f(mean(m.Location)),
		f(mean(m.Severity)), f(mean(m.Comparison))}}
}

// CSV writes rows as Python's csv module does by default: comma
// separated, "\r\n" line ends, a field quoted (with doubled quotes) only
// when it contains a comma, a quote, "\r" or "\n".
func CSV(header []string, rows [][]string) []byte {
	return pycsv.Rows(append([][]string{header}, rows...)...)
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
// atomically; j tracks the temporary files (atomicfile.WriteFile).
func WriteRefCSVs(j *job.Job, dir, label string, m *RefMetrics) error {
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
		if err := atomicfile.WriteFile(j, filepath.Join(dir, f.name), CSV(f.header, f.rows)); err != nil {
			return err
		}
	}
	return nil
}
