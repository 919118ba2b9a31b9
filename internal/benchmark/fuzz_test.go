package benchmark_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
)

// FuzzLoad feeds arbitrary bytes to the chexpercept.json decoder. It must
// never panic, and whatever it accepts must survive a write/read cycle
// unchanged (the writer's output is a fixed point).
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"sample/chexpercept.json", "reformatted.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/3])
	}
	for _, s := range []string{"", "{}", "[]", "null", `{"edema_s1_negative_0": null}`,
		`{"edema_s1_negative_0": {"detection_qa": {"question": "", "answer_options": [], "answer": "No", "answer_index": 2}, "pair_id": "s1_negative_0", "dicom_id": null}}`,
		`{"edema_s1_positive_0": {"detection_qa": {"question": "", "answer_options": [], "answer": "Yes", "answer_index": 1}, "contour_qa": 1}}`,
		`{"a": 1, "a": 2}`, "{\"\xff\": 1}", `{"x": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := benchmark.Decode("fuzz.json", data, nil)
		if err != nil {
			if bytes.ContainsRune([]byte(err.Error()), '\n') {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		out := benchmark.Marshal(recs)
		recs2, err := benchmark.Decode("fuzz.json", out, nil)
		if err != nil {
			t.Fatalf("re-reading written output: %v", err)
		}
		if out2 := benchmark.Marshal(recs2); !bytes.Equal(out, out2) {
			t.Fatalf("writer output is not a fixed point")
		}
	})
}
