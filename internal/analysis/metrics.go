package analysis

import (
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/results"
)

// Questions are the nine question types in turn order, by the short names
// our tables use.
var Questions = []string{"detection", "contour_evaluation", "expansion", "contraction", "revision_result",
	"distribution", "location", "severity/measurement", "comparison"}

// questionStage is the stage (1..4) of each question type.
var questionStage = [9]int{1, 2, 3, 3, 3, 4, 4, 4, 4}

// IsMultiQuestion reports whether question q (index into Questions) is
// multi-select.
func IsMultiQuestion(q int) bool { return q == 2 || q == 3 || q == 6 }

// Paths in report order, and the lesions of a cell: "all" then the seven.
var (
	Paths   = []string{results.PathRR, results.PathRF, results.PathLF}
	Lesions = append([]string{"all"}, benchmark.Lesions...)
)

// PathMax is the maximum depth of each path.
func PathMax(path string) int {
	switch path {
	case results.PathRR:
		return 4
	case results.PathRF:
		return 3
	}
	return 1
}

func pathIndex(p string) int {
	for i, x := range Paths {
		if x == p {
			return i
		}
	}
	return -1
}

func lesionIndex(l string) int {
	for i, x := range benchmark.Lesions {
		if x == l {
			return i + 1
		}
	}
	return -1
}

// StageApplies reports whether stage k (1..4) applies to a record of the
// path and lesion (format.md §5): the path and lesion alone decide.
func StageApplies(path, lesion string, k int) bool {
	switch k {
	case 1:
		return pathIndex(path) >= 0
	case 2:
		return path == results.PathRR || path == results.PathRF
	case 3:
		return path == results.PathRR
	case 4:
		return (path == results.PathRR || path == results.PathRF) && lesion != "cardiomegaly"
	}
	return false
}

// QuestionApplies reports whether question q applies to the path and lesion.
func QuestionApplies(path, lesion string, q int) bool {
	return StageApplies(path, lesion, questionStage[q])
}

// Score is one record's outcome under our semantics (§10.3).
type Score struct {
	Index  int // position in the benchmark (records are kept in this order)
	Key    string
	Path   int // index into Paths
	Lesion int // index into Lesions (1..7)
	OK     bool
	// Stage applicability and correctness, stages 1..4 at 0..3.
	App, Cor [4]bool
	// Per question: applicable, correct, and the Jaccard index for
	// multi-select questions (0 when not asked).
	QApp, QCor [9]bool
	Jac        [9]float64
	Depth      int
}

// Chain reports whether every applicable stage 1..k is correct.
func (s *Score) Chain(k int) bool {
	for j := 0; j < k; j++ {
		if s.App[j] && !s.Cor[j] {
			return false
		}
	}
	return true
}

// ScoreRecord scores one record. With countErrors, an error record is
// scored as all-incorrect (--error-policy wrong); without, ok is false
// for error records and the caller leaves them out.
func ScoreRecord(r *results.Record, countErrors bool) (Score, bool) {
	s := Score{Index: r.Index, Key: r.KeyID, Path: pathIndex(r.QAPath), Lesion: lesionIndex(r.Lesion), OK: r.Status == results.StatusOK}
	if s.Path < 0 || s.Lesion < 0 {
		return s, false
	}
	if !s.OK && !countErrors {
		return s, false
	}
	path, lesion := Paths[s.Path], Lesions[s.Lesion]
	for k := 1; k <= 4; k++ {
		s.App[k-1] = StageApplies(path, lesion, k)
		s.Cor[k-1] = s.App[k-1]
	}
	for q, step := range protocol.Steps {
		if !QuestionApplies(path, lesion, q) {
			continue
		}
		s.QApp[q] = true
		var c bool
		if s.OK {
			if t := r.TurnByStep(step); t != nil && t.Status == results.TurnAsked {
				c = t.Correct != nil && *t.Correct
				if t.Jaccard != nil {
					s.Jac[q] = *t.Jaccard
				}
			}
		}
		s.QCor[q] = c
		if !c {
			s.Cor[questionStage[q]-1] = false
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
	if s.Lesion == lesionIndex("cardiomegaly") && s.Path != pathIndex(results.PathLF) && s.Chain(4) {
		s.Depth++
	}
	return s, true
}

// isParseFailure is the parse-failure test of §10.3: reference mode
// parse_ok false, strict mode a fail:* rule.
func isParseFailure(t *results.Turn) bool {
	if t.ParseOK != nil && !*t.ParseOK {
		return true
	}
	return t.ParseRule != nil && strings.HasPrefix(*t.ParseRule, "fail:")
}

// questionOf returns the question index of a step key, or -1.
func questionOf(step string) int {
	for i, s := range protocol.Steps {
		if s == step {
			return i
		}
	}
	return -1
}
