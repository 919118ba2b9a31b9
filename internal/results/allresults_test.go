package results_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/goldentest"

	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/protocol/protocoltest"
	"github.com/chexpercept/chexpercept/internal/results"
)

// scenarioRecords runs the four fixture records through the engine with
// the scripted replies of protocoltest.ScenarioReplies.
func scenarioRecords(t *testing.T, o protocol.OracleMode, m parse.Mode) []*results.Record {
	t.Helper()
	dir := t.TempDir()
	recs := protocoltest.Records()
	if err := protocoltest.WriteImages(dir, recs); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC) }
	var out []*results.Record
	for i, rec := range recs {
		s := &protocoltest.Script{Replies: protocoltest.ScenarioReplies()[rec.KeyID]}
		r := protocol.Run(context.Background(), rec, protocol.Options{BenchDir: dir, Index: i, Oracle: o, Parse: m, Now: now}, s.Call)
		if r.Status != results.StatusOK {
			t.Fatalf("%s: %v", rec.KeyID, *r.Error)
		}
		out = append(out, r)
	}
	return out
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, filepath.Join("testdata", "allresults", name), got)
}

func TestGolden(t *testing.T) {
	for _, o := range []protocol.OracleMode{protocol.OracleNone, protocol.OracleImplicit, protocol.OracleExplicit} {
		for _, m := range []parse.Mode{parse.ModeReference, parse.ModeStrict} {
			t.Run(fmt.Sprintf("%s_%s", o, m), func(t *testing.T) {
				recs := scenarioRecords(t, o, m)
				golden(t, fmt.Sprintf("all_results_%s_%s.json", o, m), results.MarshalAllResults(recs, "/data/bench/", "azure", "gpt-5.4"))
				var lines []byte
				for _, r := range recs {
					b, err := r.MarshalLine()
					if err != nil {
						t.Fatal(err)
					}
					lines = append(lines, b...)
				}
				golden(t, fmt.Sprintf("results_%s_%s.jsonl", o, m), lines)
			})
		}
	}
}

// TestRoundTrip: a line read back and written again is byte-identical.
func TestRoundTrip(t *testing.T) {
	for _, m := range []parse.Mode{parse.ModeReference, parse.ModeStrict} {
		for _, r := range scenarioRecords(t, protocol.OracleImplicit, m) {
			a, err := r.MarshalLine()
			if err != nil {
				t.Fatal(err)
			}
			back, err := results.UnmarshalLine(a)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := back.MarshalLine()
			if string(a) != string(b) {
				t.Errorf("round trip differs:\n%s\n%s", a, b)
			}
			if strings.Count(string(a), "\n") != 1 || !strings.HasSuffix(string(a), "\n") {
				t.Errorf("a line must hold exactly one trailing newline")
			}
		}
	}
	// Every golden line survives a read and re-write byte for byte.
	files, _ := filepath.Glob(filepath.Join("testdata", "allresults", "*.jsonl"))
	if len(files) != 6 {
		t.Fatalf("found %d golden jsonl files", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n") {
			r, err := results.UnmarshalLine([]byte(line))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			b, _ := r.MarshalLine()
			if strings.TrimSuffix(line, "\n") != strings.TrimSuffix(string(b), "\n") {
				t.Errorf("%s: line %s does not round-trip", f, r.KeyID)
			}
		}
	}
	// Names match exactly and appear once: encoding/json, which read these
	// lines before, took the last duplicate and matched names in any case.
	for _, bad := range []string{`{"key_id":"x","extra":1}`, `{"key_id":"x"} {}`, `{"lesion":"edema"}`, `[1]`,
		`{"key_id":"x","key_id":"y"}`, `{"KEY_ID":"x"}`, `{"key_id":"x","Lesion":"edema"}`} {
		if _, err := results.UnmarshalLine([]byte(bad)); err == nil {
			t.Errorf("UnmarshalLine(%s) must fail", bad)
		}
	}
}

// exported parses the export of the scenario for one oracle/parse mode.
func exported(t *testing.T, o protocol.OracleMode, m parse.Mode, backend string) map[string]*ojson.Value {
	t.Helper()
	v, err := ojson.Parse(results.MarshalAllResults(scenarioRecords(t, o, m), "/b", backend, "m"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ojson.Value{}
	for _, mem := range v.O {
		out[mem.Key] = mem.Value
	}
	return out
}

func keys(v *ojson.Value) string {
	var ks []string
	for _, m := range v.O {
		ks = append(ks, m.Key)
	}
	return strings.Join(ks, ",")
}

func TestExportRules(t *testing.T) {
	ref := exported(t, protocol.OracleImplicit, parse.ModeReference, "azure")
	strict := exported(t, protocol.OracleImplicit, parse.ModeStrict, "azure")
	lf, rf, rr, cm := "edema_s50414267_negative_3", "pneumonia_s57001234_positive_0", "atelectasis_s56543210_positive_1", "cardiomegaly_s55123456_positive_0"
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"LF reference: empty parse leaves detection {} and no index", keys(ref[lf]), "key_id,qa_path,detection_qa,contour_evaluation_qa,contour_revision_qa,attribute_extraction_qa,chat_history"},
		{"LF strict: detection recorded, index created", keys(strict[lf]), "key_id,qa_path,detection_qa,contour_evaluation_qa,contour_revision_qa,attribute_extraction_qa,_chat_history_idx,chat_history"},
		{"LF strict response is empty on failure", string(ojson.MarshalCompact(strict[lf].Get("detection_qa"))), `{"response":"","ground_truth":2,"correct":false}`},
		{"RF reference: T1 not indexed, T2 at position 1", string(ojson.MarshalCompact(ref[rf].Get("_chat_history_idx"))), `{"contour_evaluation_qa":1,"attribute_extraction_qa_distribution":2,"attribute_extraction_qa_location":3,"attribute_extraction_qa_severity/measurement":4,"attribute_extraction_qa_comparison":5}`},
		{"RF has no stage 3", string(ojson.MarshalCompact(ref[rf].Get("contour_revision_qa"))), `{}`},
		{"RF attribute key order", keys(ref[rf].Get("attribute_extraction_qa")), "responses,ground_truth,correct,distribution,severity/measurement,comparison,location"},
		{"RR stage 3 keys", keys(ref[rr].Get("contour_revision_qa")), "ground_truth,responses,correct,expansion,contraction,revision_result"},
		{"RR stage 3 ground truth unsorted lists", string(ojson.MarshalCompact(ref[cm].Get("contour_revision_qa").Get("ground_truth"))), `{"expansion":[4],"contraction":[3,2],"revision_result":1}`},
		{"cardiomegaly has no stage 4", string(ojson.MarshalCompact(ref[cm].Get("attribute_extraction_qa"))), `{}`},
		{"patched turn has 4 elements", string(ojson.MarshalCompact(ref[rr].Get("chat_history").A[1].A[2])) + fmt.Sprint(len(ref[rr].Get("chat_history").A[1].A)), `"Answer: 1"4`},
		{"unpatched turn has 3 elements", fmt.Sprint(len(ref[rr].Get("chat_history").A[0].A)), "3"},
		{"absolute image paths", ref[rr].Get("chat_history").A[0].A[1].A[0].S, "/b/chexpercept/" + rr + "/detection_qa/xray.png"},
		{"token_usage for azure", keys(ref[rr].Get("token_usage")), "model_id,num_calls,input_tokens,cached_input_tokens,output_tokens,thinking_tokens,total_tokens,estimated_cost_usd,per_call"},
		{"no token_usage without reported usage", fmt.Sprint(ref[rf].Has("token_usage")), "false"},
		{"reference response is the layer-A string", ref[rr].Get("attribute_extraction_qa").Get("responses").Get("severity/measurement").S, "2"},
		{"strict response canonical", strict[rr].Get("attribute_extraction_qa").Get("responses").Get("comparison").S, "2"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, tc.got, tc.want)
		}
	}
	vllm := exported(t, protocol.OracleNone, parse.ModeReference, "vllm")
	if vllm[rr].Has("token_usage") {
		t.Error("vllm backend must not write token_usage")
	}
	// RF reference implicit: the D2 patch attempt creates the index even
	// though T1 had none; in none mode it is created by T2 being asked.
	if !ref[rf].Has("_chat_history_idx") {
		t.Error("RF must have _chat_history_idx")
	}
}

func TestMarshalAllResultsFiltersAndOrders(t *testing.T) {
	recs := scenarioRecords(t, protocol.OracleNone, parse.ModeReference)
	// Reverse the order, add an error record and a superseded line.
	errRec := *recs[1]
	errRec.Status = results.StatusError
	older := *recs[2]
	older.KeyID = recs[3].KeyID
	in := []*results.Record{&older, recs[3], recs[2], &errRec, recs[0]}
	v, err := ojson.Parse(results.MarshalAllResults(in, "/b", "vllm", ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(v); got != recs[0].KeyID+","+recs[2].KeyID+","+recs[3].KeyID {
		t.Errorf("keys %s", got)
	}
	if v.Get(recs[3].KeyID).Get("qa_path").S != "revision_required" || v.Get(recs[3].KeyID).Get("attribute_extraction_qa").Has("responses") {
		t.Error("last line per key must win")
	}
}
