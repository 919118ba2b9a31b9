package analysis

import (
	"math"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

// mkRec builds a record whose applicable turns are asked, with the given
// correctness in turn order; "-" marks an unasked (skipped) turn. Its
// stored stages say which apply, as the protocol writes them
// (cardiomegaly is heart-type).
func mkRec(idx int, key string, path benchmark.Path, marks string) *results.Record {
	lesion := key[:len(key)-2]
	heart := lesion == "cardiomegaly" && path != benchmark.LesionFree
	r := &results.Record{KeyID: key, Lesion: lesion, QAPath: path, Index: idx, Status: results.StatusOK}
	r.Stages.Detection.Applicable = benchmark.StageApplies(path, heart, benchmark.StageDetection)
	r.Stages.ContourEvaluation.Applicable = benchmark.StageApplies(path, heart, benchmark.StageContourEvaluation)
	r.Stages.ContourRevision.Applicable = benchmark.StageApplies(path, heart, benchmark.StageContourRevision)
	r.Stages.AttributeExtraction.Applicable = benchmark.StageApplies(path, heart, benchmark.StageAttributeExtraction)
	i := 0
	for _, q := range benchmark.Questions {
		if !benchmark.Applies(path, heart, q) {
			continue
		}
		t := results.Turn{Turn: q.Turn(), Step: q.Step(), Status: results.TurnAsked}
		switch marks[i] {
		case '1':
			c := true
			t.Correct = &c
		case '0':
			c := false
			t.Correct = &c
		default:
			t.Status = results.TurnSkipped
		}
		i++
		r.Turns = append(r.Turns, t)
	}
	if i != len(marks) {
		panic("mkRec: marks do not match the applicable turns of " + key)
	}
	return r
}

const (
	RR = benchmark.RevisionRequired
	RF = benchmark.RevisionFree
	LF = benchmark.LesionFree
)

func TestScoreDepth(t *testing.T) {
	tests := []struct {
		name, key string
		path      benchmark.Path
		marks     string
		depth     int
		cor       [4]bool
	}{
		{"LF correct", "edema_1", LF, "1", 1, [4]bool{true}},
		{"LF wrong", "edema_1", LF, "0", 0, [4]bool{}},
		{"RR all correct", "edema_1", RR, "111111111", 4, [4]bool{true, true, true, true}},
		{"RR stage 3 wrong", "edema_1", RR, "111101111", 2, [4]bool{true, true, false, true}},
		{"RR detection wrong", "edema_1", RR, "011111111", 0, [4]bool{false, true, true, true}},
		{"RF all correct", "edema_1", RF, "111111", 3, [4]bool{true, true, false, true}},
		{"RF attribute wrong", "edema_1", RF, "111110", 2, [4]bool{true, true, false, false}},
		{"RF skipped contour eval", "edema_1", RF, "1-1111", 1, [4]bool{true, false, false, true}},
		{"cardiomegaly RR all correct: +1", "cardiomegaly_1", RR, "11111", 4, [4]bool{true, true, true, false}},
		{"cardiomegaly RR stage 3 wrong: no bonus", "cardiomegaly_1", RR, "11110", 2, [4]bool{true, true, false, false}},
		{"cardiomegaly RF all correct: +1", "cardiomegaly_1", RF, "11", 3, [4]bool{true, true, false, false}},
		{"cardiomegaly LF: no bonus", "cardiomegaly_1", LF, "1", 1, [4]bool{true}},
	}
	for _, tc := range tests {
		s, ok := ScoreRecord(mkRec(0, tc.key, tc.path, tc.marks), false)
		if !ok {
			t.Fatalf("%s: not scored", tc.name)
		}
		if s.Depth != tc.depth || s.Cor != tc.cor {
			t.Errorf("%s: depth %d cor %v, want %d %v", tc.name, s.Depth, s.Cor, tc.depth, tc.cor)
		}
	}
}

func TestErrorPolicy(t *testing.T) {
	r := mkRec(0, "edema_1", RF, "111111")
	msg := "HTTP 500"
	r.Status, r.Error = results.StatusError, &msg
	if _, ok := ScoreRecord(r, false); ok {
		t.Error("exclude: error record scored")
	}
	s, ok := ScoreRecord(r, true)
	if !ok || s.Depth != 0 || s.Cor != [4]bool{} || s.QCor[0] {
		t.Errorf("wrong: %+v", s)
	}
}

func runOf(name string, recs ...*results.Record) *RunResult {
	rr := &RunResult{Run: &Run{Name: name, OracleMode: "none"}, Scored: true}
	for _, r := range recs {
		s, _ := ScoreRecord(r, false)
		rr.Scores = append(rr.Scores, s)
	}
	runs := []*Run{{Records: recs}}
	lesions := lesionList(nil, runs)
	rr.cells(heartLesions(nil, runs, lesions), lesions)
	return rr
}

func TestCellsHandComputed(t *testing.T) {
	// Four RR edema records and one RR cardiomegaly record.
	rr := runOf("m",
		mkRec(0, "edema_1", RR, "111111111"),    // all correct
		mkRec(1, "edema_2", RR, "110111111"),    // stage 3 wrong
		mkRec(2, "edema_3", RR, "011111111"),    // detection wrong
		mkRec(3, "edema_4", RR, "111111110"),    // stage 4 wrong
		mkRec(4, "cardiomegaly_1", RR, "11111"), // all correct
	)
	type want struct {
		n, k int
	}
	check := func(what string, p Prop, w want) {
		t.Helper()
		if p.N != w.n || p.K != w.k || !p.Valid {
			t.Errorf("%s: %d/%d valid=%v, want %d/%d", what, p.K, p.N, p.Valid, w.k, w.n)
		}
	}
	c := rr.Stage(RR, "all", 1)
	check("e2e1", c.E2E, want{5, 4})
	check("cond1", c.Cond, want{5, 4})
	c = rr.Stage(RR, "all", 3)
	check("e2e3", c.E2E, want{5, 3})
	check("op3", c.OP, want{5, 4})
	check("cond3", c.Cond, want{4, 3}) // 4 records pass 1..2; 3 of them pass 3
	c = rr.Stage(RR, "all", 4)         // cardiomegaly drops out
	check("e2e4", c.E2E, want{4, 1})
	check("op4", c.OP, want{4, 3})
	check("cond4", c.Cond, want{2, 1}) // edema_1 and edema_4 pass 1..3
	c = rr.Stage(RR, "cardiomegaly", 4)
	if c.Applicable || c.E2E.Valid {
		t.Errorf("cardiomegaly stage 4 should be N/A: %+v", c)
	}
	if c := rr.Stage(LF, "all", 2); c.Applicable {
		t.Error("LF stage 2 should be N/A")
	}
	if c := rr.Stage(RF, "all", 1); !c.Applicable || c.E2E.Valid || c.E2E.N != 0 {
		t.Errorf("RF without records: %+v", c)
	}
	d := rr.DepthOf(RR, "all")
	// depths: 4, 2, 0, 3, 4 (cardiomegaly 3 + 1)
	if d.N != 5 || d.Mean != 13.0/5 || d.Max != 4 {
		t.Errorf("depth %+v", d)
	}
	if d := rr.DepthOf(RF, "all"); d.Valid {
		t.Errorf("empty depth cell valid: %+v", d)
	}
	sub := rr.SubOf(RR, "all", benchmark.QExpansion)
	check("expansion", sub.Acc, want{5, 4})
	pooled := rr.SubOf(PooledPath, "all", benchmark.QComparison)
	check("pooled comparison", pooled.Acc, want{4, 3})
	if s := rr.SubOf(RR, "all", benchmark.QDetection); s.Jaccard == s.Jaccard {
		t.Error("single-choice question has a Jaccard mean")
	}
	if s := rr.SubOf(RR, "all", benchmark.QLocation); math.IsNaN(s.Jaccard) {
		t.Error("location has no Jaccard mean")
	}
}

// TestHeartTypeFromStoredStages: a results record's stored stages, not its
// lesion name, say whether it is heart-type (no stage 4, depth +1), and
// the lesion cells follow the records.
func TestHeartTypeFromStoredStages(t *testing.T) {
	asHeart := func(r *results.Record) *results.Record {
		r.Stages.AttributeExtraction.Applicable = false
		r.Turns = r.Turns[:5]
		return r
	}
	asLung := func(r *results.Record, marks string) *results.Record {
		l := mkRec(r.Index, "edema_9", r.QAPath, marks)
		l.KeyID, l.Lesion = r.KeyID, r.Lesion
		return l
	}
	heartEdema := asHeart(mkRec(0, "edema_1", RR, "111111111"))
	lungCM := asLung(mkRec(1, "cardiomegaly_1", RR, "11111"), "111111110")
	for _, tc := range []struct {
		r     *results.Record
		depth int
		app4  bool
	}{{heartEdema, 4, false}, {lungCM, 3, true}} {
		s, ok := ScoreRecord(tc.r, false)
		if !ok || s.Depth != tc.depth || s.App[3] != tc.app4 {
			t.Errorf("%s: depth %d stage 4 applicable %v, want %d %v", tc.r.KeyID, s.Depth, s.App[3], tc.depth, tc.app4)
		}
	}
	rr := runOf("m", heartEdema, lungCM)
	if c := rr.Stage(RR, "edema", 4); c.Applicable {
		t.Errorf("edema written as heart-type: stage 4 cell applicable: %+v", c)
	}
	if c := rr.Stage(RR, "cardiomegaly", 4); !c.Applicable || c.E2E.N != 1 {
		t.Errorf("cardiomegaly written as lung-type: stage 4 cell %+v", c)
	}
	// A lesion without records has no cells.
	if c := rr.Stage(RR, "effusion", 4); c != nil {
		t.Errorf("effusion without records: stage 4 cell %+v", c)
	}
	if h := heartLesions(nil, nil, append([]string{allLesions}, benchmark.DefaultLesions().Names()...)); !h["cardiomegaly"] || h["edema"] {
		t.Errorf("default heart lesions %v", h)
	}
}
