package analysis

import (
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

// allLesions is the lesion of the cells that pool every lesion.
const allLesions = "all"

// lesionList is the lesions of the cells: "all", then the lesions the
// runs hold (without runs, the benchmark's records), in the benchmark's
// declared order (the built-in seven without a benchmark); a lesion the
// declaration lacks comes last, in byte order.
func lesionList(b *benchmark.Benchmark, runs []*Run) []string {
	var set *benchmark.LesionSet // nil: the built-in seven
	if b != nil {
		set = b.Lesions
	}
	seen := map[string]bool{}
	var out []string
	note := func(l string) {
		if l != "" && l != allLesions && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for _, run := range runs {
		for _, r := range run.Records {
			note(r.Lesion)
		}
	}
	if len(out) == 0 && b != nil {
		for _, r := range b.Records {
			note(r.Lesion)
		}
	}
	set.Sort(out)
	return append([]string{allLesions}, out...)
}

func pathIndex(p benchmark.Path) int { return slices.Index(benchmark.Paths, p) }

// heartSet says which lesions are heart-type (no attribute stage), for
// the per-lesion cells: the data says it where it can, the benchmark's
// declared set (or the built-in one) for lesions without a positive record.
type heartSet map[string]bool

// heartLesions reads the heart-type lesions from the benchmark's positive
// records (a null attribute object) and from the runs' positive records
// (stage 4 stored as not applicable). A lesion is heart-type when every
// positive record seen of it is.
func heartLesions(b *benchmark.Benchmark, runs []*Run, lesions []string) heartSet {
	seen := map[string][2]int{} // lesion → [heart-type, lung-type] counts
	note := func(lesion string, heart bool) {
		c := seen[lesion]
		if heart {
			c[0]++
		} else {
			c[1]++
		}
		seen[lesion] = c
	}
	if b != nil {
		for _, r := range b.Records {
			if r.Path().Positive() {
				note(r.Lesion, r.IsHeartType())
			}
		}
	}
	for _, run := range runs {
		for _, r := range run.Records {
			if r.QAPath.Positive() {
				note(r.Lesion, isHeartRecord(r))
			}
		}
	}
	var declared *benchmark.LesionSet // nil: the built-in seven
	if b != nil {
		declared = b.Lesions
	}
	h := heartSet{}
	for _, l := range lesions[1:] {
		c, ok := seen[l]
		h[l] = (!ok && declared.IsHeart(l)) || (ok && c[1] == 0)
	}
	return h
}

// isHeartRecord reports whether a results record is a heart-type positive:
// its stored stages say the attribute stage does not apply.
func isHeartRecord(r *results.Record) bool {
	return r.QAPath.Positive() && !r.Stages.AttributeExtraction.Applicable
}

// stageApplies reports whether stage s applies to the records of a
// (path, lesion) cell: for "all", to some record of the path.
func (h heartSet) stageApplies(path benchmark.Path, lesion string, s benchmark.Stage) bool {
	return benchmark.StageApplies(path, lesion != allLesions && h[lesion], s)
}

// applies is stageApplies for question q.
func (h heartSet) applies(path benchmark.Path, lesion string, q benchmark.Question) bool {
	return benchmark.Applies(path, lesion != allLesions && h[lesion], q)
}

// Score is one record's outcome under our semantics (§10.3).
type Score struct {
	Index  int // position in the benchmark (records are kept in this order)
	Key    string
	Path   int // index into benchmark.Paths
	Lesion string
	OK     bool
	// Stage applicability and correctness, stages 1..4 at 0..3.
	App, Cor [4]bool
	// Per question (indexed by benchmark.Question): applicable, correct,
	// and the Jaccard index for multi-select questions (0 when not asked).
	QApp, QCor [benchmark.NumQuestions]bool
	Jac        [benchmark.NumQuestions]float64
	Depth      int
}

// chain reports whether every applicable stage 1..k is correct.
func (s *Score) chain(k benchmark.Stage) bool {
	for j := 0; j < int(k); j++ {
		if s.App[j] && !s.Cor[j] {
			return false
		}
	}
	return true
}

// ScoreRecord scores one record. Which stages and questions apply is
// benchmark.Applies's decision for the record's path and heart-type, as
// its stored stages record it. With countErrors, an error record is
// scored as all-incorrect (--error-policy wrong); without, ok is false
// for error records and the caller leaves them out.
func ScoreRecord(r *results.Record, countErrors bool) (Score, bool) {
	s := Score{Index: r.Index, Key: r.KeyID, Path: pathIndex(r.QAPath), Lesion: r.Lesion, OK: r.Status == results.StatusOK}
	if s.Path < 0 || s.Lesion == "" || s.Lesion == allLesions {
		return s, false
	}
	if !s.OK && !countErrors {
		return s, false
	}
	heart := isHeartRecord(r)
	for _, k := range benchmark.Stages {
		s.App[k-1] = benchmark.StageApplies(r.QAPath, heart, k)
		s.Cor[k-1] = s.App[k-1]
	}
	for _, q := range benchmark.Questions {
		if !benchmark.Applies(r.QAPath, heart, q) {
			continue
		}
		s.QApp[q] = true
		var c bool
		if s.OK {
			if t := r.Turn(q); t != nil && t.Status == results.TurnAsked {
				c = t.Correct != nil && *t.Correct
				if t.Jaccard != nil {
					s.Jac[q] = *t.Jaccard
				}
			}
		}
		s.QCor[q] = c
		if !c {
			s.Cor[q.Stage()-1] = false
		}
	}
	for k := 0; k < 4; k++ {
		if !s.App[k] {
			continue
		}
		if !s.Cor[k] {
			break
		}
		s.Depth++
	}
	// A heart-type positive whose applicable stages are all correct
	// gains one (protocol.md §10.3).
	if heart && s.chain(benchmark.StageAttributeExtraction) {
		s.Depth++
	}
	return s, true
}

// IsParseFailure is the parse-failure test of §10.3: reference mode
// parse_ok false, strict mode a fail:* rule.
func IsParseFailure(t *results.Turn) bool {
	if t.ParseOK != nil && !*t.ParseOK {
		return true
	}
	return t.ParseRule != nil && strings.HasPrefix(*t.ParseRule, "fail:")
}
