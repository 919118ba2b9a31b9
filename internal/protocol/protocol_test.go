package protocol_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/goldentest"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/protocol/profile"
	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/results"
)

var (
	oracles = []protocol.OracleMode{protocol.OracleNone, protocol.OracleImplicit, protocol.OracleExplicit}
	modes   = []parse.Mode{parse.ModeReference, parse.ModeStrict}
)

func fixedNow() time.Time { return time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC) }

func bench(t *testing.T, omit ...string) (string, []*benchmark.Record) {
	t.Helper()
	dir := t.TempDir()
	recs := protocoltest.Records()
	if err := protocoltest.WriteImages(dir, recs, omit...); err != nil {
		t.Fatal(err)
	}
	return dir, recs
}

func run(t *testing.T, dir string, rec *benchmark.Record, o protocol.OracleMode, m parse.Mode, s *protocoltest.Script) *results.Record {
	t.Helper()
	return protocol.Run(context.Background(), rec, protocol.Options{BenchDir: dir, Oracle: o, Parse: m, Now: fixedNow}, s.Call)
}

func scenario(key string) *protocoltest.Script {
	return &protocoltest.Script{Replies: protocoltest.ScenarioReplies()[key]}
}

// TestRequestsGolden pins the exact request sequence (texts, images,
// history) of every path × oracle mode × parse mode.
func TestRequestsGolden(t *testing.T) {
	dir, recs := bench(t)
	for _, rec := range recs {
		for _, o := range oracles {
			for _, m := range modes {
				name := fmt.Sprintf("%s_%s_%s", rec.Lesion, o, m)
				t.Run(name, func(t *testing.T) {
					s := scenario(rec.KeyID)
					r := run(t, dir, rec, o, m, s)
					if r.Status != results.StatusOK {
						t.Fatalf("status %s: %v", r.Status, *r.Error)
					}
					if len(s.Requests) != len(s.Replies) {
						t.Fatalf("%d calls, script has %d replies", len(s.Requests), len(s.Replies))
					}
					golden(t, filepath.Join("testdata", "requests", name+".txt"), protocoltest.Transcript(s.Requests))
				})
			}
		}
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	goldentest.Check(t, path, []byte(got))
}

// lastUser is the text of the last (current) user message of call i.
func lastUser(s *protocoltest.Script, i int) protocol.Message {
	msgs := s.Requests[i]
	return msgs[len(msgs)-1]
}

func TestRequestStructure(t *testing.T) {
	dir, recs := bench(t)
	prof := profile.Default()
	lf, rf, rr, cm := recs[0], recs[1], recs[2], recs[3]
	ctx := rr.Contour.InitialContext + "\n\n" + rr.Contour.Expansion.Question
	o5 := "Verified finding: the lesion mask must be revised by expansion at the yellow point.\n" +
		"Verified finding: the lesion mask must be revised by contraction at the red point.\n" + prof.OpsClosing
	o5cm := "Verified finding: no expansion of the lesion mask is required.\n" +
		"Verified finding: the lesion mask must be revised by contraction at the yellow and orange points.\n" + prof.OpsClosing
	tests := []struct {
		name string
		rec  *benchmark.Record
		o    protocol.OracleMode
		m    parse.Mode
		call int    // 0-based call index
		want string // the current user text
	}{
		{"RR none T3 has no oracle text", rr, protocol.OracleNone, parse.ModeReference, 2, ctx},
		{"RR explicit T3 gets O3 before initial_context", rr, protocol.OracleExplicit, parse.ModeReference, 2, prof.O3() + "\n\n" + ctx},
		{"RR implicit T3 unchanged", rr, protocol.OracleImplicit, parse.ModeReference, 2, ctx},
		{"RR explicit T4 never injected", rr, protocol.OracleExplicit, parse.ModeReference, 3, rr.Contour.Contraction.Question},
		{"RR explicit T5 gets O5 with both operations", rr, protocol.OracleExplicit, parse.ModeReference, 4, o5 + "\n\n" + rr.Contour.RevisionResult.Question},
		{"RR explicit T6 gets O6-RR 4th", rr, protocol.OracleExplicit, parse.ModeStrict, 5, prof.O6RR(4) + "\n\n" + rr.Attributes.Distribution.Question},
		{"RR explicit T7 never injected", rr, protocol.OracleExplicit, parse.ModeStrict, 6, rr.Attributes.Location.Question},
		{"RF explicit T2 gets O2", rf, protocol.OracleExplicit, parse.ModeReference, 1, prof.O2() + "\n\n" + rf.Contour.ContourEval.Question},
		{"RF explicit reference T6 no O6 (T2 right)", rf, protocol.OracleExplicit, parse.ModeReference, 2, rf.Attributes.Distribution.Question},
		{"RF explicit strict T6 gets O6-RF (T2 fails strict)", rf, protocol.OracleExplicit, parse.ModeStrict, 2, prof.O6RF() + "\n\n" + rf.Attributes.Distribution.Question},
		{"cardiomegaly explicit T5 O5 with None line", cm, protocol.OracleExplicit, parse.ModeReference, 4, o5cm + "\n\n" + cm.Contour.RevisionResult.Question},
		{"LF single call", lf, protocol.OracleExplicit, parse.ModeReference, 0, lf.Detection.Question},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := scenario(tc.rec.KeyID)
			run(t, dir, tc.rec, tc.o, tc.m, s)
			if got := lastUser(s, tc.call).Text; got != tc.want {
				t.Errorf("call %d user text\n got %q\nwant %q", tc.call+1, got, tc.want)
			}
			for i, msgs := range s.Requests {
				if msgs[0].Role != protocol.RoleSystem || msgs[0].Text != prof.SystemText() {
					t.Errorf("call %d: first message is not the system prompt", i+1)
				}
				if len(msgs) != 2+2*i {
					t.Errorf("call %d has %d messages, want %d", i+1, len(msgs), 2+2*i)
				}
			}
		})
	}
}

func TestImagesPerCall(t *testing.T) {
	dir, recs := bench(t)
	base := func(r *benchmark.Record) string { return "chexpercept/" + r.KeyID + "/" }
	rr := recs[2]
	tests := []struct {
		rec    *benchmark.Record
		counts []int
		total  int
	}{
		{recs[0], []int{1}, 1},
		{recs[1], []int{1, 2, 2, 2, 2, 2}, 11},
		{rr, []int{1, 2, 3, 3, 7, 7, 7, 7, 7}, 44},
		{recs[3], []int{1, 2, 3, 3, 7}, 16},
	}
	for _, tc := range tests {
		s := scenario(tc.rec.KeyID)
		run(t, dir, tc.rec, protocol.OracleImplicit, parse.ModeReference, s)
		var counts []int
		total := 0
		for _, msgs := range s.Requests {
			n := 0
			for _, m := range msgs {
				n += len(m.ImagePaths)
				if m.Role != protocol.RoleUser && len(m.ImagePaths) > 0 {
					t.Errorf("%s: images on a %s message", tc.rec.KeyID, m.Role)
				}
			}
			counts = append(counts, n)
			total += n
		}
		if !reflect.DeepEqual(counts, tc.counts) || total != tc.total {
			t.Errorf("%s: images per call %v (total %d), want %v (%d)", tc.rec.KeyID, counts, total, tc.counts, tc.total)
		}
	}
	// T5's images are the four options in option order, on T5's own message.
	s := scenario(rr.KeyID)
	run(t, dir, rr, protocol.OracleNone, parse.ModeReference, s)
	rev := base(rr) + "contour_qa/contour_revision_qa/"
	want := []string{rev + "option_1_mask_fake.png", rev + "option_2_mask_fake.png", rev + "option_3_mask_fake.png", rev + "option_4_mask_answer.png"}
	if got := lastUser(s, 4).ImagePaths; !reflect.DeepEqual(got, want) {
		t.Errorf("T5 images %v", got)
	}
	// Call 9 resends T1's image on the first user message.
	if got := s.Requests[8][1].ImagePaths; !reflect.DeepEqual(got, []string{base(rr) + "detection_qa/xray.png"}) {
		t.Errorf("call 9 first user images %v", got)
	}
}

// assistant returns the fed-back texts of the history of call i.
func assistant(s *protocoltest.Script, i int) []string {
	var out []string
	for _, m := range s.Requests[i] {
		if m.Role == protocol.RoleAssistant {
			out = append(out, m.Text)
		}
	}
	return out
}

func TestImplicitPatches(t *testing.T) {
	dir, recs := bench(t)
	rf, rr, cm := recs[1], recs[2], recs[3]
	sc := protocoltest.ScenarioReplies()
	raw := func(key string, i int) string { return sc[key][i].Text }
	tests := []struct {
		name string
		rec  *benchmark.Record
		m    parse.Mode
		call int
		want []string
	}{
		// D3: T2 was wrong → "Answer: 1"; the history at T3 shows it.
		{"RR D3 patches T2", rr, parse.ModeReference, 2, []string{"Answer: 1", "Answer: 1"}},
		// D5: only the wrong T4 is patched; T3 stays verbose.
		{"RR D5 patches only T4", rr, parse.ModeReference, 4, []string{"Answer: 1", "Answer: 1", raw(rr.KeyID, 2), "Answer: 1"}},
		// D6-RR: T5 ← revision GT.
		{"RR D6 patches T5", rr, parse.ModeReference, 5, []string{"Answer: 1", "Answer: 1", raw(rr.KeyID, 2), "Answer: 1", "Answer: 4"}},
		// D2 with an empty reference parse of T1: no history index, no-op.
		{"RF reference D2 no-op", rf, parse.ModeReference, 1, []string{raw(rf.KeyID, 0)}},
		// Strict records T1, so the D2 patch applies.
		{"RF strict D2 patches T1", rf, parse.ModeStrict, 1, []string{"Answer: 1"}},
		// Strict: T2 failed, D6-RF patches it to the RF contour GT.
		{"RF strict D6 patches T2", rf, parse.ModeStrict, 2, []string{"Answer: 1", "Answer: 2"}},
		{"RF reference D6 not triggered", rf, parse.ModeReference, 2, []string{raw(rf.KeyID, 0), raw(rf.KeyID, 1)}},
		// Cardiomegaly D5: list GT sorted ascending in the patch.
		{"cardiomegaly D5 sorted list", cm, parse.ModeReference, 4, []string{"Answer: 1", "Answer: 1", "Answer: 4", "Answer: 2,3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := scenario(tc.rec.KeyID)
			run(t, dir, tc.rec, protocol.OracleImplicit, tc.m, s)
			if got := assistant(s, tc.call); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("history at call %d\n got %q\nwant %q", tc.call+1, got, tc.want)
			}
		})
	}
}

func ev(point string, triggered bool, action string, patched []string, noop string) results.Event {
	e := results.Event{Point: point, Triggered: triggered, Action: action, PatchedTurns: patched}
	if e.PatchedTurns == nil {
		e.PatchedTurns = []string{}
	}
	if noop != "" {
		e.NoopReason = &noop
	}
	return e
}

func TestOracleEvents(t *testing.T) {
	dir, recs := bench(t)
	rf, rr, cm := recs[1], recs[2], recs[3]
	tests := []struct {
		rec  *benchmark.Record
		o    protocol.OracleMode
		m    parse.Mode
		want []results.Event
	}{
		{rr, protocol.OracleNone, parse.ModeReference, []results.Event{ev("D2", false, "none", nil, ""), ev("D3", true, "none", nil, ""), ev("D5", true, "none", nil, ""), ev("D6", true, "none", nil, "")}},
		{rr, protocol.OracleImplicit, parse.ModeReference, []results.Event{ev("D2", false, "none", nil, ""), ev("D3", true, "patch", []string{"T2"}, ""), ev("D5", true, "patch", []string{"T4"}, ""), ev("D6", true, "patch", []string{"T5"}, "")}},
		{rr, protocol.OracleExplicit, parse.ModeStrict, []results.Event{ev("D2", false, "none", nil, ""), ev("D3", true, "inject", nil, ""), ev("D5", true, "inject", nil, ""), ev("D6", true, "inject", nil, "")}},
		{rf, protocol.OracleImplicit, parse.ModeReference, []results.Event{ev("D2", true, "patch", nil, "T1 has no history index (empty reference parse)"), ev("D6", false, "none", nil, "")}},
		{rf, protocol.OracleImplicit, parse.ModeStrict, []results.Event{ev("D2", true, "patch", []string{"T1"}, ""), ev("D6", true, "patch", []string{"T2"}, "")}},
		{cm, protocol.OracleImplicit, parse.ModeStrict, []results.Event{ev("D2", false, "none", nil, ""), ev("D3", false, "none", nil, ""), ev("D5", true, "patch", []string{"T4"}, "")}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s_%s_%s", tc.rec.Lesion, tc.o, tc.m), func(t *testing.T) {
			r := run(t, dir, tc.rec, tc.o, tc.m, scenario(tc.rec.KeyID))
			if !reflect.DeepEqual(r.OracleEvents, tc.want) {
				t.Errorf("events\n got %+v\nwant %+v", r.OracleEvents, tc.want)
			}
		})
	}
	// The patched turn keeps its original text and names the point.
	r := run(t, dir, rr, protocol.OracleImplicit, parse.ModeReference, scenario(rr.KeyID))
	t2 := r.TurnByStep(benchmark.QContourEval.Step())
	if *t2.FedBack != "Answer: 1" || *t2.OriginalRaw != "The mask fits well.\nAnswer: 2" || *t2.PatchedAt != "D3" || *t2.Raw != *t2.OriginalRaw {
		t.Errorf("patched T2: fed_back %q original %v patched_at %v", *t2.FedBack, t2.OriginalRaw, t2.PatchedAt)
	}
	if t3 := r.TurnByStep(benchmark.QExpansion.Step()); t3.OriginalRaw != nil || t3.PatchedAt != nil {
		t.Error("correct T3 must not be patched")
	}
}

// TestOraclePolicy: a model answering the ground truth gets every
// applicable stage right and triggers no oracle decision.
func TestOraclePolicy(t *testing.T) {
	dir, recs := bench(t)
	for _, rec := range recs {
		for _, o := range oracles {
			for _, m := range modes {
				replies, err := protocoltest.GTReplies(rec, dir)
				if err != nil {
					t.Fatal(err)
				}
				r := run(t, dir, rec, o, m, protocoltest.Texts(replies...))
				name := fmt.Sprintf("%s/%s/%s", rec.Lesion, o, m)
				if r.Status != results.StatusOK {
					t.Fatalf("%s: status %s", name, r.Status)
				}
				st := r.Stages
				for _, s := range []results.Stage{st.Detection, st.ContourEvaluation,
					{Applicable: st.ContourRevision.Applicable, Asked: st.ContourRevision.Asked, Correct: st.ContourRevision.Correct},
					{Applicable: st.AttributeExtraction.Applicable, Asked: st.AttributeExtraction.Asked, Correct: st.AttributeExtraction.Correct}} {
					if s.Applicable && (s.Correct == nil || !*s.Correct || !s.Asked) {
						t.Errorf("%s: stage not correct: %+v", name, st)
					}
				}
				for _, e := range r.OracleEvents {
					if e.Triggered {
						t.Errorf("%s: %s triggered", name, e.Point)
					}
				}
				for _, tn := range r.Turns {
					if tn.Status != results.TurnAsked || !*tn.Correct || !*tn.ParseOK || !*tn.InRange {
						t.Errorf("%s %s: %+v", name, tn.Turn, tn)
					}
				}
			}
		}
	}
	// Applicability follows path and lesion.
	lf := run(t, dir, recs[0], protocol.OracleNone, parse.ModeStrict, protocoltest.Texts("Answer: 2"))
	if lf.Stages.ContourEvaluation.Applicable || lf.Stages.ContourEvaluation.Correct != nil || lf.Stages.ContourRevision.Expansion != nil {
		t.Errorf("LF stages: %+v", lf.Stages)
	}
}

func TestSkips(t *testing.T) {
	recs := protocoltest.Records()
	rr, rf := recs[2], recs[1]
	base := "chexpercept/" + rr.KeyID + "/"
	rev := base + "contour_qa/contour_revision_qa/"
	type want struct {
		statuses string // one letter per turn: a asked, s skipped
		images   []int  // images on each asked turn's own message
		events   string // "D2:patch,D3:patch…"
		reason   string // a skip reason that must appear
	}
	tests := []struct {
		name string
		rec  *benchmark.Record
		omit []string
		edit func(r *benchmark.Record)
		o    protocol.OracleMode
		want want
	}{
		{"T2 image missing: asked without image", rr, []string{base + "contour_qa/contour_eval_qa/xray_with_mask.png"}, nil, protocol.OracleImplicit,
			want{"aaaaaaaaa", []int{1, 0, 1, 0, 4, 0, 0, 0, 0}, "D2:patch,D3:patch,D5:patch,D6:patch", ""}},
		{"points image missing: T3 skipped, D3 patch still applied", rr, []string{rev + "xray_with_mask_and_points.png"}, nil, protocol.OracleImplicit,
			want{"aasaaaaaa", []int{1, 1, 0, 4, 0, 0, 0, 0}, "D2:patch,D3:patch,D5:patch,D6:patch", "image missing: " + rev + "xray_with_mask_and_points.png"}},
		{"one option image missing: left out", rr, []string{rev + "option_2_mask_fake.png"}, nil, protocol.OracleNone,
			want{"aaaaaaaaa", []int{1, 1, 1, 0, 3, 0, 0, 0, 0}, "D2:none,D3:none,D5:none,D6:none", ""}},
		{"no option image: T5 skipped, D5 reached", rr, []string{rev + "option_1_mask_fake.png", rev + "option_2_mask_fake.png", rev + "option_3_mask_fake.png", rev + "option_4_mask_answer.png"}, nil, protocol.OracleExplicit,
			want{"aaaasaaaa", []int{1, 1, 1, 0, 0, 0, 0, 0}, "D2:inject,D3:inject,D5:inject,D6:inject", "no option image exists"}},
		{"contour folder missing: T2 and stage 3 skipped", rr, nil, func(r *benchmark.Record) {}, protocol.OracleImplicit,
			want{"asssaaaa"[:1] + "ssss" + "aaaa", []int{1, 0, 0, 0, 0}, "D6:patch", results.SkipStagePrefix + "folder missing"}},
		{"xray missing: T1 skipped", rf, []string{"chexpercept/" + rf.KeyID + "/detection_qa/xray.png"}, nil, protocol.OracleImplicit,
			want{"saaaaa", []int{1, 0, 0, 0, 0}, "D2:patch,D6:patch", "image missing: chexpercept/" + rf.KeyID + "/detection_qa/xray.png"}},
		{"attributes null on a lung lesion", rf, nil, func(r *benchmark.Record) { r.Attributes = nil }, protocol.OracleImplicit,
			want{"aassss", []int{1, 1}, "D2:patch", results.SkipStagePrefix + "attribute_extraction_qa is null or absent"}},
		{"distribution missing: no D6", rf, nil, func(r *benchmark.Record) { r.Attributes.Distribution = benchmark.DistributionQA{} }, protocol.OracleImplicit,
			want{"aasaaa", []int{1, 1, 0, 0, 0}, "D2:patch", "distribution missing or empty"}},
		{"contraction empty: T4 skipped", rr, nil, func(r *benchmark.Record) { r.Contour.Contraction = benchmark.PointQA{} }, protocol.OracleImplicit,
			want{"aaasaaaaa", []int{1, 1, 1, 4, 0, 0, 0, 0}, "D2:patch,D3:patch,D5:patch,D6:patch", "contour_revision_qa_contraction missing or empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := cloneRec(tc.rec)
			if tc.edit != nil {
				tc.edit(rec)
			}
			omit := tc.omit
			if strings.HasPrefix(tc.name, "contour folder missing") {
				omit = append(omit, protocoltest.ImagePaths(rec)[1:]...)
			}
			if err := protocoltest.WriteImages(dir, []*benchmark.Record{rec}, omit...); err != nil {
				t.Fatal(err)
			}
			replies := make([]string, 9)
			for i := range replies {
				replies[i] = "I am not sure."
			}
			s := protocoltest.Texts(replies...)
			r := run(t, dir, rec, tc.o, parse.ModeReference, s)
			var st strings.Builder
			var imgs []int
			var reasons []string
			for _, tn := range r.Turns {
				st.WriteByte(tn.Status[0])
				if tn.Status == results.TurnAsked {
					imgs = append(imgs, len(tn.Images))
				} else {
					reasons = append(reasons, *tn.SkipReason)
				}
			}
			if st.String() != tc.want.statuses {
				t.Errorf("statuses %s, want %s (reasons %q)", st.String(), tc.want.statuses, reasons)
			}
			if !reflect.DeepEqual(imgs, tc.want.images) {
				t.Errorf("images per asked turn %v, want %v", imgs, tc.want.images)
			}
			var evs []string
			for _, e := range r.OracleEvents {
				evs = append(evs, e.Point+":"+e.Action)
			}
			if got := strings.Join(evs, ","); got != tc.want.events {
				t.Errorf("events %s, want %s", got, tc.want.events)
			}
			if tc.want.reason != "" && !strings.Contains(strings.Join(reasons, "|"), tc.want.reason) {
				t.Errorf("skip reasons %q lack %q", reasons, tc.want.reason)
			}
			if strings.HasPrefix(tc.name, "points image missing") {
				// D3 patched T2 although T3 was skipped; T4 sees it.
				if got := assistant(s, 2); len(got) != 2 || got[1] != "Answer: 1" {
					t.Errorf("history at T4: %q", got)
				}
			}
			if len(s.Requests) != strings.Count(tc.want.statuses, "a") {
				t.Errorf("%d calls for %d asked turns", len(s.Requests), strings.Count(tc.want.statuses, "a"))
			}
		})
	}
}

// TestHeartTypeFromData: the record's data (a null attribute object), not
// its lesion name, decides whether stage 4 exists, as a build with its own
// heart_lesions writes it.
func TestHeartTypeFromData(t *testing.T) {
	dir, recs := bench(t)
	rf, cm := recs[1], recs[3]
	heartRF := cloneRec(rf) // pneumonia written as heart-type
	heartRF.Attributes, heartRF.AttributesNull = nil, true
	lungCM := cloneRec(cm) // cardiomegaly written as lung-type
	lungCM.Attributes, lungCM.AttributesNull = cloneRec(rf).Attributes, false
	for _, tc := range []struct {
		rec    *benchmark.Record
		turns  int
		stage4 bool
	}{{rf, 6, true}, {heartRF, 2, false}, {cm, 5, false}, {lungCM, 9, true}} {
		replies := make([]string, 9)
		for i := range replies {
			replies[i] = "Answer: 1"
		}
		r := run(t, dir, tc.rec, protocol.OracleNone, parse.ModeReference, protocoltest.Texts(replies...))
		if len(r.Turns) != tc.turns || tc.rec.Questions() != tc.turns || r.Stages.AttributeExtraction.Applicable != tc.stage4 {
			t.Errorf("%s (null attributes %v): %d turns, %d questions, stage 4 applicable %v; want %d, %v",
				tc.rec.KeyID, tc.rec.AttributesNull, len(r.Turns), tc.rec.Questions(), r.Stages.AttributeExtraction.Applicable, tc.turns, tc.stage4)
		}
		for _, tn := range r.Turns {
			if tn.Status != results.TurnAsked {
				t.Errorf("%s %s: %s", tc.rec.KeyID, tn.Turn, tn.Status)
			}
		}
	}
}

func cloneRec(r *benchmark.Record) *benchmark.Record {
	for _, c := range protocoltest.Records() {
		if c.KeyID == r.KeyID {
			return c
		}
	}
	panic("unknown record " + r.KeyID)
}

func TestCallError(t *testing.T) {
	dir, recs := bench(t)
	rr := recs[2]
	s := scenario(rr.KeyID)
	s.Errors = map[int]error{2: errors.New("HTTP 400: bad request")}
	r := run(t, dir, rr, protocol.OracleImplicit, parse.ModeReference, s)
	if r.Status != results.StatusError || r.Error == nil || *r.Error != "T3 (contour_revision_qa_expansion): HTTP 400: bad request" {
		t.Fatalf("status %s error %v", r.Status, r.Error)
	}
	if len(r.Turns) != 3 || r.Turns[2].Status != results.TurnError || *r.Turns[2].Error != "HTTP 400: bad request" {
		t.Fatalf("turns %+v", r.Turns)
	}
	if len(s.Requests) != 3 {
		t.Errorf("%d calls after the error, want none", len(s.Requests)-3)
	}
}

func TestUnsafePaths(t *testing.T) {
	dir, recs := bench(t)
	rr := cloneRec(recs[2])
	rr.Contour.RevisionResult.AnswerOptions[0].RelativePath = "../../../../etc/passwd"
	r := run(t, dir, rr, protocol.OracleNone, parse.ModeReference, protocoltest.Texts())
	if r.Status != results.StatusError || !strings.Contains(*r.Error, "leaves the record folder") {
		t.Fatalf("status %s error %v", r.Status, r.Error)
	}
	plan, err := protocol.Plan(recs[2], dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := protocol.ImagesToSend(plan); len(got) != 7 || got[0] != "chexpercept/"+recs[2].KeyID+"/detection_qa/xray.png" {
		t.Errorf("ImagesToSend = %v", got)
	}
	bad := cloneRec(recs[0])
	bad.KeyID = ".."
	if _, err := protocol.Plan(bad, dir); err == nil {
		t.Error("key_id .. must be refused")
	}
}

// TestRescore: for none runs re-parsing offline equals asking with the
// other mode; for oracle runs only the labels change.
func TestRescore(t *testing.T) {
	dir, recs := bench(t)
	for _, rec := range recs {
		for _, pair := range [][2]parse.Mode{{parse.ModeReference, parse.ModeStrict}, {parse.ModeStrict, parse.ModeReference}} {
			src := run(t, dir, rec, protocol.OracleNone, pair[0], scenario(rec.KeyID))
			direct := run(t, dir, rec, protocol.OracleNone, pair[1], scenario(rec.KeyID))
			got, err := protocol.Rescore(src, rec, pair[1], false)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := got.MarshalLine()
			b, _ := direct.MarshalLine()
			if string(a) != string(b) {
				t.Errorf("%s %s→%s: rescored\n%s\ndirect\n%s", rec.Lesion, pair[0], pair[1], a, b)
			}
		}
	}
	rf := recs[1]
	src := run(t, dir, rf, protocol.OracleImplicit, parse.ModeStrict, scenario(rf.KeyID))
	got, err := protocol.Rescore(src, rf, parse.ModeReference, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.OracleEvents, src.OracleEvents) || *got.Turns[0].FedBack != "Answer: 1" {
		t.Error("rescore must keep the conversation")
	}
	if *got.Turns[1].Correct != true || *src.Turns[1].Correct != false || got.ParseMode != "reference" {
		t.Error("rescore must relabel T2")
	}
}

// TestMissingContourExplicit: an RR record without contour_qa (only with
// --allow-invalid) still runs; D6 cannot name the mask, so nothing is
// injected and the event says why.
func TestMissingContourExplicit(t *testing.T) {
	dir, recs := bench(t)
	rr := cloneRec(recs[2])
	rr.Contour = nil
	s := protocoltest.Texts("Answer: 1", "Answer: 1", "Answer: 1", "Answer: 2", "Answer: 2")
	r := run(t, dir, rr, protocol.OracleExplicit, parse.ModeStrict, s)
	if r.Status != results.StatusOK || len(s.Requests) != 5 {
		t.Fatalf("status %s, %d calls", r.Status, len(s.Requests))
	}
	if len(r.OracleEvents) != 1 || r.OracleEvents[0].Point != "D6" || r.OracleEvents[0].NoopReason == nil ||
		!strings.Contains(*r.OracleEvents[0].NoopReason, "no ground truth") {
		t.Fatalf("events %+v", r.OracleEvents)
	}
	if got := lastUser(s, 1).Text; got != rr.Attributes.Distribution.Question {
		t.Errorf("T6 text %q", got)
	}
	if r.Stages.ContourRevision.Correct == nil || *r.Stages.ContourRevision.Correct || r.Stages.ContourRevision.Asked {
		t.Errorf("stage 3 %+v", r.Stages.ContourRevision)
	}
}

func TestProfileAndCancel(t *testing.T) {
	dir, recs := bench(t)
	p, _, err := profile.Parse([]byte("profile: braces\nsystem_prompt: \"Reply as {{Answer: N}}.\"\n"), "inline")
	if err != nil {
		t.Fatal(err)
	}
	s := protocoltest.Texts("Answer: 2")
	protocol.Run(context.Background(), recs[0], protocol.Options{BenchDir: dir, Oracle: protocol.OracleNone, Parse: parse.ModeStrict, Profile: p}, s.Call)
	if got := s.Requests[0][0].Text; got != "Reply as {Answer: N}." {
		t.Errorf("system text %q", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s = protocoltest.Texts("Answer: 2")
	r := protocol.Run(ctx, recs[0], protocol.Options{BenchDir: dir, Oracle: protocol.OracleNone, Parse: parse.ModeStrict}, s.Call)
	if r.Status != results.StatusError || len(s.Requests) != 0 {
		t.Errorf("cancelled run: status %s, %d calls", r.Status, len(s.Requests))
	}
}
