package review

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestMappedLocation(t *testing.T) {
	tests := []struct {
		hints []string
		heart bool
		want  string
	}{
		{nil, false, "right lung and left lung"},
		{[]string{"left lung"}, false, "left lung"},
		{[]string{"a", "b"}, false, "a and b"},
		{[]string{"a", "b", "a", "c"}, false, "a, b, and c"},
		{[]string{"a", "a"}, false, "a"},
		{[]string{"left lung"}, true, "heart"},
	}
	for _, tc := range tests {
		if got := MappedLocation(tc.hints, tc.heart); got != tc.want {
			t.Errorf("%q heart=%v: %q, want %q", tc.hints, tc.heart, got, tc.want)
		}
	}
}

func TestCSVRows(t *testing.T) {
	got := string(csvRows([][]string{{"a", "b,c", `say "hi"`, "", " lead", "two\nlines"}, {"x"}}))
	want := "a,\"b,c\",\"say \"\"hi\"\"\",, lead,\"two\nlines\"\r\nx\r\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestExportFormats checks the exact bytes of `review export --jsonl` and
// `--csv` for a small database.
func TestExportFormats(t *testing.T) {
	fx := makeFixture(t, []string{"cardiomegaly", "edema"}, 1, 1)
	s, _ := initStore(t, fx, 2, 2)
	ctx := context.Background()
	key := func(i int) string { return fx.Cases[i].KeyID() }
	// cases: 0 cardiomegaly +, 1 cardiomegaly −, 2 edema +, 3 edema −
	decideAs(t, s, key(0), map[string]string{"r1": "accept", "r2": "accept"}) // 03:04:05, :06
	decideAs(t, s, key(2), map[string]string{"r1": "accept", "r2": "reject"}) // :07, :08
	c2, _ := s.CaseByKey(ctx, key(2))
	s.Resolve(ctx, c2, "reject", "mask \"spills\"")           // :09
	decideAs(t, s, key(3), map[string]string{"r2": "unsure"}) // :10
	rv, _ := s.Reviewers(ctx)
	c0, _ := s.CaseByKey(ctx, key(0))
	s.Decide(ctx, rv[0].ID, c0, "accept", "clear, well drawn") // :11, note

	img := func(i int) string { c, _ := s.CaseByKey(ctx, key(i)); return c.ImageSHA256 }
	msk := func(i int) string { c, _ := s.CaseByKey(ctx, key(i)); return *c.MaskSHA256 }
	want := `{"key_id":"` + key(0) + `","decision":"accept","reviewers":["r1","r2"],"time":"2026-01-02T03:04:11Z","image_sha256":"` + img(0) + `","mask_sha256":"` + msk(0) + `","note":"r1: clear, well drawn"}` + "\n" +
		`{"key_id":"` + key(2) + `","decision":"reject","reviewers":["r1","r2","admin"],"time":"2026-01-02T03:04:09Z","image_sha256":"` + img(2) + `","mask_sha256":"` + msk(2) + `","note":"mask \"spills\""}` + "\n" +
		`{"key_id":"` + key(3) + `","decision":"pending","reviewers":["r2"],"time":"2026-01-02T03:04:10Z","image_sha256":"` + img(3) + `","mask_sha256":null}` + "\n"
	out := filepath.Join(t.TempDir(), "reviews.jsonl")
	n, err := s.ExportJSONL(ctx, nil, out)
	if err != nil || n != 3 {
		t.Fatalf("export: %d lines, %v", n, err)
	}
	got, _ := os.ReadFile(out)
	if string(got) != want {
		t.Errorf("jsonl:\n%s\nwant:\n%s", got, want)
	}

	dir := filepath.Join(t.TempDir(), "sheets")
	if err := s.ExportCSV(ctx, nil, dir); err != nil {
		t.Fatal(err)
	}
	stem := func(i int) string { return fx.Cases[i].CaseID[:5] }
	wantPos := "key_id,dicom_id,target,pair_id,mapped_location,segmentation_source,plot_path,optimal?\r\n" +
		key(0) + "," + stem(0) + ",cardiomegaly," + fx.Cases[0].CaseID + ",heart,,,1\r\n" +
		key(2) + "," + stem(2) + ",edema," + fx.Cases[2].CaseID + ",\"left lower lobe and right, upper\",,,\r\n"
	wantNeg := "lesion,key_id,dicom_id,optimal?\r\n" +
		"cardiomegaly," + key(1) + "," + stem(1) + ",\r\n" +
		"edema," + key(3) + "," + stem(3) + ",\r\n"
	if got, _ := os.ReadFile(filepath.Join(dir, "positive.csv")); string(got) != wantPos {
		t.Errorf("positive.csv:\n%q\nwant\n%q", got, wantPos)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "negative.csv")); string(got) != wantNeg {
		t.Errorf("negative.csv:\n%q\nwant\n%q", got, wantNeg)
	}
}
