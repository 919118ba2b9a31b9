package benchmark_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

var update = flag.Bool("update", false, "regenerate testdata/sample")

const sampleDir = "testdata/sample"

// TestGenerateSample regenerates the committed sample benchmark with
// -update; without it, it checks that the committed JSON is what the
// writer produces for benchtest.Sample().
func TestGenerateSample(t *testing.T) {
	if *update {
		os.RemoveAll(sampleDir)
		if err := benchtest.Write(sampleDir, benchtest.Sample(), true); err != nil {
			t.Fatal(err)
		}
	}
	got := benchmark.Marshal(benchtest.Sample())
	want, err := os.ReadFile(filepath.Join(sampleDir, benchmark.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal(Sample()) differs from %s; run go test -run TestGenerateSample -update", sampleDir)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"sample/chexpercept.json", "reformatted.json"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := benchmark.Decode(name, data, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := benchmark.Marshal(recs)
			want := data
			if name == "reformatted.json" {
				// The same records in another layout: the writer must
				// give the §6 form, keeping number literals.
				want, _ = os.ReadFile("testdata/reformatted.golden.json")
			}
			if !bytes.Equal(got, want) {
				t.Errorf("round trip differs:\n%s", firstDiff(got, want))
			}
		})
	}
}

func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-80)
	return "got:  ..." + string(a[lo:min(len(a), i+80)]) + "\nwant: ..." + string(b[lo:min(len(b), i+80)])
}

func TestWriterDetails(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(sampleDir, benchmark.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, want := range []string{
		`"attribute_extraction_qa": null,`,
		`"severity/measurement": {`,
		`"overlap_ratio": 0,`,
		`"overlap_ratio": 1e-05,`,
		`"overlap_ratio": 0.05,`,
		"\"answer_index\": [\n",
		`"answer_index": 2`,
		`"dicom_id": null`,
		`"point": null,`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("written file lacks %q", want)
		}
	}
	if strings.HasSuffix(s, "\n") {
		t.Error("written file ends with a newline")
	}
	// LF key order: detection_qa, pair_id, dicom_id only.
	root, err := ojson.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range root.O[0].Value.O {
		keys = append(keys, m.Key)
	}
	if got := strings.Join(keys, ","); got != "detection_qa,pair_id,dicom_id" {
		t.Errorf("LF key order %s", got)
	}
}

func TestLoadSample(t *testing.T) {
	b, err := benchmark.Load(sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Records) != 7 {
		t.Fatalf("got %d records", len(b.Records))
	}
	sum, err := benchmark.SHA256File(filepath.Join(sampleDir, benchmark.JSONName))
	if err != nil || sum != b.SHA256 {
		t.Fatalf("SHA256 %s vs %s (%v)", b.SHA256, sum, err)
	}
	wantPaths := map[string]benchmark.Path{
		"edema_s50414267_negative_3":        benchmark.LesionFree,
		"pneumonia_s57001234_positive_0":    benchmark.RevisionFree,
		"atelectasis_s56543210_positive_1":  benchmark.RevisionRequired,
		"cardiomegaly_s55123456_positive_0": benchmark.RevisionRequired,
		"cardiomegaly_s55123457_positive_0": benchmark.RevisionFree,
	}
	wantQ := map[string]int{"edema_s50414267_negative_3": 1, "pneumonia_s57001234_positive_0": 6,
		"atelectasis_s56543210_positive_1": 9, "cardiomegaly_s55123456_positive_0": 5, "cardiomegaly_s55123457_positive_0": 2}
	for k, p := range wantPaths {
		r := b.Lookup(k)
		if r == nil {
			t.Fatalf("Lookup(%s) = nil", k)
		}
		if r.Path() != p || r.Questions() != wantQ[k] {
			t.Errorf("%s: path %s questions %d", k, r.Path(), r.Questions())
		}
	}
	if b.Lookup("edema_nope_negative_1") != nil {
		t.Error("Lookup of an absent key found a record")
	}
	rr := b.Lookup("atelectasis_s56543210_positive_1")
	if rr.Contour.Contraction.AnswerIndex[0] != 4 || rr.Attributes.Severity.OverlapRatio == "" {
		t.Errorf("decoded fields wrong: %+v", rr.Contour.Contraction)
	}
	p, err := rr.OptionPath(2)
	if err != nil || p != "contour_qa/contour_revision_qa/option_2_mask_fake.png" {
		t.Errorf("OptionPath(2) = %q, %v", p, err)
	}
	if _, err := os.Stat(b.Abs(rr.KeyID, p)); err != nil {
		t.Error(err)
	}
	if p, err := rr.ContourEvalPath(); err != nil || p != "contour_qa/contour_eval_qa/xray_with_mask.png" {
		t.Errorf("ContourEvalPath = %q, %v", p, err)
	}
	if _, err := rr.OptionPath(5); err == nil {
		t.Error("OptionPath(5) of 4 options succeeded")
	}
	if _, err := b.Lookup("edema_s50414267_negative_3").ContourEvalPath(); err == nil {
		t.Error("ContourEvalPath of an LF record succeeded")
	}
}

func TestDecodeErrors(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(sampleDir, benchmark.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		edit   func(s string) string
		substr string // expected in the error
	}{
		{"truncated", func(s string) string { return s[:len(s)/2] }, "invalid JSON: line"},
		{"non-UTF-8", func(s string) string { return strings.Replace(s, "Look at", "Lo\xffk at", 1) }, "invalid UTF-8"},
		{"trailing data", func(s string) string { return s + "{}" }, "invalid JSON"},
		{"top array", func(s string) string { return "[" + s + "]" }, "top level is not an object"},
		{"empty", func(string) string { return "{}" }, "no records"},
		{"duplicate key_id", func(s string) string {
			i := strings.Index(s, `  "effusion_ph0002_negative_0"`)
			j := strings.Index(s, `  "pneumonia_s57001234`)
			return s[:j] + s[i:j] + s[j:]
		}, `duplicate member "effusion_ph0002_negative_0"`},
		{"duplicate nested", func(s string) string {
			return strings.Replace(s, `"pair_id": "s50414267_negative_3",`, `"pair_id": "s50414267_negative_3", "pair_id": "x",`, 1)
		}, "record edema_s50414267_negative_3 at /edema_s50414267_negative_3/pair_id: duplicate member"},
		// With several, the first in the file is named (ojson.Duplicates'
		// document order), not the first object holding one.
		{"duplicates, first in the file", func(s string) string {
			s = strings.Replace(s, `"pair_id": "s50414267_negative_3",`, `"pair_id": "s50414267_negative_3", "pair_id": "x",`, 1)
			i := strings.Index(s, `  "effusion_ph0002_negative_0"`)
			j := strings.Index(s, `  "pneumonia_s57001234`)
			return s[:j] + s[i:j] + s[j:]
		}, "/edema_s50414267_negative_3/pair_id: duplicate member"},
		{"int index as list", func(s string) string {
			return strings.Replace(s, `"answer_index": 2,`+"\n        \"answer_zones\"", `"answer_index": [2],`+"\n        \"answer_zones\"", 1)
		}, "/attribute_extraction_qa/distribution/answer_index: expected an integer, found an array"},
		{"list index as int", func(s string) string {
			return strings.Replace(s, "\"answer_index\": [\n          2\n        ],", `"answer_index": 2,`, 1)
		}, "location/answer_index: expected a list of integers"},
		{"float index", func(s string) string {
			return strings.Replace(s, `"answer_index": 2`, `"answer_index": 2.0`, 1)
		}, "expected an integer, found 2.0"},
		{"missing field", func(s string) string {
			return strings.Replace(s, `"pair_id": "s57001234_positive_0",`, ``, 1)
		}, `/pneumonia_s57001234_positive_0/pair_id: missing field "pair_id"`},
		{"bad key", func(s string) string {
			return strings.Replace(s, `"edema_s50414267_negative_3"`, `"edema_s5041_4267_negative_3"`, 1)
		},
			"does not match"},
		{"unknown lesion", func(s string) string {
			return strings.Replace(s, `"edema_s50414267_negative_3"`, `"oedema_s50414267_negative_3"`, 1)
		},
			"unknown lesion"},
		{"cardiomegaly attributes", func(s string) string {
			return strings.Replace(s, `"attribute_extraction_qa": null`, `"attribute_extraction_qa": {}`, 1)
		}, "must be null for cardiomegaly"},
		{"severity slash", func(s string) string {
			return strings.Replace(s, `"severity/measurement"`, `"severity_measurement"`, 1)
		}, "/severity~1measurement: missing field"},
		{"point of 3", func(s string) string {
			return strings.Replace(s, "\"point\": [\n", "\"point\": [\n 1,\n", 1)
		}, "expected [x, y], found 3 elements"},
		{"record not object", func(s string) string {
			i := strings.Index(s, `"edema_s50414267_negative_3": {`) + len(`"edema_s50414267_negative_3": `)
			j := strings.Index(s, `  "effusion_ph0002`)
			return s[:i] + "7,\n" + s[j:]
		}, "expected an object, found a number"},
		{"wrong dicom type", func(s string) string {
			return strings.Replace(s, `"dicom_id": null`, `"dicom_id": 5`, 1)
		}, "expected a string or null"},
		{"pair mismatch", func(s string) string {
			return strings.Replace(s, `"pair_id": "s57001234_positive_0",`, `"pair_id": "s57001235_positive_0",`, 1)
		}, "differs from the key's"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.edit(string(good)))
			_, err := benchmark.Decode("dir/chexpercept.json", data, nil)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.substr) || !strings.HasPrefix(msg, "dir/chexpercept.json") || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line starting with the file and containing %q", msg, tc.substr)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := benchmark.Load(dir); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
	target := filepath.Join(dir, "other.json")
	os.WriteFile(target, []byte("{}"), 0o644)
	os.Symlink(target, filepath.Join(dir, benchmark.JSONName))
	if _, err := benchmark.Load(dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("symlink: %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	recs := benchtest.Sample()
	if err := benchmark.WriteFile(nil, dir, recs); err != nil {
		t.Fatal(err)
	}
	if err := benchmark.WriteFile(nil, dir, recs[:1]); err != nil {
		t.Fatal(err)
	}
	b, err := benchmark.Load(dir)
	if err != nil || len(b.Records) != 1 {
		t.Fatalf("reload: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("leftover files: %v", ents)
	}
	if err := benchmark.WriteFile(nil, filepath.Join(dir, "absent"), recs); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

func TestRevisionSequentialKept(t *testing.T) {
	data, _ := os.ReadFile(filepath.Join(sampleDir, benchmark.JSONName))
	s := strings.Replace(string(data), "\n    \"pair_id\": \"s57001234_positive_0\"",
		"\n    \"revision_sequential_qa\": {\"z\": [1, 2.50, {\"a\": null}], \"a\": \"<&>\"},\n    \"pair_id\": \"s57001234_positive_0\"", 1)
	recs, err := benchmark.Decode("x", []byte(s), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := string(benchmark.Marshal(recs))
	want := "\"revision_sequential_qa\": {\n      \"z\": [\n        1,\n        2.50,\n        {\n          \"a\": null\n        }\n      ],\n      \"a\": \"<&>\"\n    },\n    \"pair_id\": \"s57001234_positive_0\""
	if !strings.Contains(out, want) {
		t.Errorf("revision_sequential_qa not re-emitted in order; got\n%s", out[strings.Index(out, "revision_seq")-1:][:300])
	}
}

func TestIDs(t *testing.T) {
	tests := []struct {
		key, lesion, pair string
		ok                bool
	}{
		{"cardiomegaly_s58956720_positive_0", "cardiomegaly", "s58956720_positive_0", true},
		{"effusion_ph0007_negative_12", "effusion", "ph0007_negative_12", true},
		{"effusion_ph.7-a_negative_1", "effusion", "ph.7-a_negative_1", true},
		{"effusion_ph_7_negative_1", "", "", false},
		{"effusion__negative_1", "", "", false},
		{"effusion_-x_negative_1", "", "", false},
		{"pleural_s1_positive_0", "", "", false},
		{"edema_s1_positive_", "", "", false},
		{"edema_s1_positive_0\n", "", "", false},
		{"edema_" + strings.Repeat("a", 65) + "_positive_0", "", "", false},
		{"edema_" + strings.Repeat("a", 64) + "_positive_0", "edema", strings.Repeat("a", 64) + "_positive_0", true},
	}
	for _, tc := range tests {
		l, p, err := benchmark.ParseKeyID(tc.key)
		if (err == nil) != tc.ok || l != tc.lesion || p != tc.pair {
			t.Errorf("ParseKeyID(%q) = %q, %q, %v", tc.key, l, p, err)
		}
	}
	if benchmark.Ordinal(1) != "1st" || benchmark.Ordinal(3) != "3rd" || benchmark.Ordinal(4) != "4th" || benchmark.Ordinal(11) != "11th" {
		t.Error("Ordinal")
	}
	if benchmark.PaletteColour(9).Name != "red" || benchmark.PaletteColour(8).Name != "brown" {
		t.Error("PaletteColour wraps wrongly")
	}
	if !benchmark.IsMIMICPairID("s123_positive_0") || benchmark.IsMIMICPairID("ph1_positive_0") || benchmark.IsMIMICPairID("sx_positive_0") {
		t.Error("IsMIMICPairID")
	}
}

func TestSafeRelPath(t *testing.T) {
	tests := []struct {
		base, rel, want string
		ok              bool
	}{
		{"contour_qa", "contour_eval_qa/xray_with_mask.png", "contour_qa/contour_eval_qa/xray_with_mask.png", true},
		{"a/b", "option_1_mask_fake.png", "a/b/option_1_mask_fake.png", true},
		{"a", "", "", false},
		{"a", "/etc/passwd", "", false},
		{"a", `\x`, "", false},
		{"a", `C:x`, "", false},
		{"a", `x\y`, "", false},
		{"a", "x//y", "", false},
		{"a", "./x", "", false},
		{"a", "x/..", "", false},
		{"a", "../a/x", "", false},
		{"a", "x/", "", false},
		{"a", "x\x00y", "", false},
		{"a", "x\ny", "", false},
		{"a", "x\u0085y", "", false},
		{"a", "é.png", "a/é.png", true},
	}
	for _, tc := range tests {
		got, err := benchmark.SafeRelPath(tc.base, tc.rel)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("SafeRelPath(%q, %q) = %q, %v", tc.base, tc.rel, got, err)
		}
	}
}

func TestQuestionsFor(t *testing.T) {
	total := 0
	for _, r := range benchtest.Full(100) {
		total += r.Questions()
	}
	if total != 10400 {
		t.Errorf("Full(100) has %d questions, want 10400", total)
	}
}

var _ = errors.New
