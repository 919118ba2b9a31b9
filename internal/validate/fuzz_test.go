package validate

import (
	"os"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
)

// structural are the codes that make a file unloadable by
// benchmark.Decode (bad_options and attribute_keys cover shapes Decode
// rejects, such as a point that is not [x, y] or a missing attribute).
var structural = map[string]bool{
	"invalid_json": true, "not_object": true, "duplicate_key": true, "empty_benchmark": true,
	"unknown_lesion": true, "bad_key_id": true, "pair_id_mismatch": true, "missing_field": true,
	"type_mismatch": true, "cardiomegaly_attributes": true,
}

// FuzzValidateJSON runs the validator's JSON layer on arbitrary bytes. It
// must not panic, every finding must be one line, and it must agree with
// the loader: Decode succeeds exactly when the validator reports none of
// the structural codes (bad_options and attribute_keys aside, which the
// loader only partly enforces).
func FuzzValidateJSON(f *testing.F) {
	sample, err := os.ReadFile(sampleDir + "/chexpercept.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample)
	f.Add(sample[:len(sample)/2])
	s := string(sample)
	for _, edit := range [][2]string{
		{`"answer_index": 2`, `"answer_index": [2]`},
		{`"attribute_extraction_qa": null`, `"attribute_extraction_qa": {}`},
		{`"severity/measurement"`, `"severity"`},
		{`"color": "None"`, `"color": "none"`},
		{`"point": null`, `"point": [1, 2]`},
		{`"answer": "Yes"`, `"answer": "Maybe"`},
		{`"relative_path": "option_1_mask_answer.png"`, `"relative_path": "../x"`},
		{`"pair_id": "s50414267_negative_3",`, `"pair_id": "s50414267_negative_3", "pair_id": 1,`},
	} {
		f.Add([]byte(strings.Replace(s, edit[0], edit[1], 1)))
	}
	f.Add([]byte(`{"edema_s1_positive_0": {"detection_qa": {"question": "", "answer_options": ["Yes", "No"], "answer": "Yes", "answer_index": 1}, "contour_qa": {"contour_revision_qa_expansion": {"answer_options": [{"point": [1], "color": "red"}]}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var top sink
		recs := checkData(data, &top, nil)
		codes := map[string]bool{}
		all := top.f
		for _, r := range recs {
			all = append(all, r.json.f...)
		}
		for _, fd := range all {
			if strings.ContainsAny(fd.String(), "\n\r") {
				t.Fatalf("multi-line finding %q", fd.String())
			}
			codes[fd.Code] = true
		}
		hard := false
		for c := range codes {
			hard = hard || structural[c]
		}
		_, derr := benchmark.Decode("f", data, nil)
		if derr == nil && hard {
			t.Fatalf("Decode accepts what the validator rejects: %v", codes)
		}
		if derr != nil && !hard && !codes["bad_options"] && !codes["attribute_keys"] {
			t.Fatalf("Decode rejects (%v) what the validator accepts: %v", derr, codes)
		}
	})
}
