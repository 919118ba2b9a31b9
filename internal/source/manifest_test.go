package source

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
)

const okPos = `{"case_id": "ph1_positive_0", "lesion": "edema", "label": "positive", "image": "img/a.png", "image_id": "a", "lesion_masks": ["m/a.png"], "lung_masks": {"right": "l/r.png", "left": "l/l.png"}}`
const okNeg = `{"case_id": "ph2_negative_0", "lesion": "edema", "label": "negative", "image": "img/b.png"}`

func TestLineChecks(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		line  int
		want  string
	}{
		{"bad json", []string{okNeg, `{"case_id": `}, 2, "not valid JSON"},
		{"not object", []string{`[1, 2]`}, 1, "not a JSON object"},
		{"unknown lesion", []string{strings.Replace(okNeg, `"edema"`, `"mass"`, 1)}, 1, `lesion "mass" is not a defined lesion`},
		{"bad case_id", []string{okNeg, strings.Replace(okNeg, "ph2_negative_0", "ph_2_negative_0", 1)}, 2, `case_id "ph_2_negative_0" does not match`},
		{"case_id too long", []string{strings.Replace(okNeg, "ph2", strings.Repeat("a", 65), 1)}, 1, "does not match"},
		{"polarity", []string{strings.Replace(okNeg, `"label": "negative"`, `"label": "positive"`, 1)}, 1, `is a negative id but label is "positive"`},
		{"bad label", []string{strings.Replace(okNeg, `"label": "negative"`, `"label": "neg"`, 1)}, 1, `label "neg" is not`},
		{"duplicate key", []string{okNeg, okPos, okNeg}, 3, "key_id edema_ph2_negative_0 repeats line 1"},
		{"missing image", []string{`{"case_id": "a_negative_0", "lesion": "edema", "label": "negative"}`}, 1, `missing required field "image"`},
		{"wrong type", []string{strings.Replace(okNeg, `"img/b.png"`, `7`, 1)}, 1, "image is number, want a path string"},
		{"positive without masks", []string{strings.Replace(okPos, `"lesion_masks": ["m/a.png"], `, "", 1)}, 1, "needs lesion_masks"},
		{"positive without lungs", []string{strings.Replace(okPos, `, "lung_masks": {"right": "l/r.png", "left": "l/l.png"}`, "", 1)}, 1, "needs a lung source"},
		{"escaping path", []string{strings.Replace(okNeg, "img/b.png", "../b.png", 1)}, 1, `image "../b.png" leaves the manifest's directory`},
		{"control char", []string{strings.Replace(okNeg, "img/b.png", `img/\u0000b.png`, 1)}, 1, "image contains a control character"},
		{"unknown field", []string{strings.Replace(okNeg, `"image"`, `"lesion_mask": [], "image"`, 1)}, 1, `unknown field "lesion_mask"`},
		{"duplicate field", []string{strings.Replace(okNeg, `"image"`, `"lesion": "edema", "image"`, 1)}, 1, `field "lesion" appears twice`},
		{"half lung pair", []string{strings.Replace(okPos, `"left": "l/l.png"`, `"top": "x"`, 1)}, 1, `lung_masks has unknown field "top"`},
		{"chexmask without id", []string{strings.Replace(okNeg, `"image"`, `"chexmask": {"csv": "c.csv"}, "image"`, 1)}, 1, `chexmask needs "csv" and "id"`},
		{"bad rank", []string{strings.Replace(okNeg, `"image"`, `"rank": -1, "image"`, 1)}, 1, "rank must be a non-negative integer"},
		{"bad source_type", []string{strings.Replace(okNeg, `"image"`, `"source_type": "x", "image"`, 1)}, 1, "source_type must be"},
		{"empty file", []string{"", "  "}, 0, "no lines"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "manifest.jsonl")
			os.WriteFile(p, []byte(strings.Join(c.lines, "\n")+"\n"), 0o644)
			_, _, err := ReadSource(p, buildcfg.Default())
			if err == nil {
				t.Fatal("no error")
			}
			le, ok := err.(*LineError)
			if !ok || le.File != p || le.Line != c.line || !strings.Contains(le.Msg, c.want) {
				t.Fatalf("got %v; want %s:%d: …%s…", err, p, c.line, c.want)
			}
			prefix := p + ":"
			if c.line > 0 {
				prefix = p + ":" + strconv.Itoa(c.line) + ": "
			}
			if !strings.HasPrefix(err.Error(), prefix) || strings.Contains(err.Error(), "\n") {
				t.Errorf("message %q should be one line starting with %q", err, prefix)
			}
		})
	}
}

func TestReadSourceAndRoundTrip(t *testing.T) {
	dir := t.TempDir()
	abs := "/data/elsewhere/x.png"
	lines := []string{
		okPos,
		okNeg,
		`{"case_id": "s9_positive_1", "lesion": "cardiomegaly", "label": "positive", "image": "` + abs + `", "lesion_masks": ["m/h.png", "m/h2.png"], "chexmask": {"csv": "cm.csv", "id": "d9", "size_check": false}, "heart_mask": "", "report": "r", "report_path": "r.txt", "location_hints": ["heart"], "source": {"z": 1, "a": [true, null]}}`,
		`{"case_id": "ph3_negative_0", "lesion": "opacity", "label": "negative", "image": "img/c.png"}`,
	}
	p := filepath.Join(dir, "manifest.jsonl")
	os.WriteFile(p, []byte(strings.Join(lines, "\r\n")), 0o644) // CRLF and no final newline
	cfg := buildcfg.Default()
	cfg.Lesions = []string{"edema", "cardiomegaly"}
	cases, isCand, err := ReadSource(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if isCand || len(cases) != 3 {
		t.Fatalf("isCandidates %v, %d cases (opacity filtered out)", isCand, len(cases))
	}
	c0, c2 := cases[0], cases[2]
	if c0.Image != filepath.Join(dir, "img/a.png") || c0.LungMasks.Left != filepath.Join(dir, "l/l.png") || c0.Line != 1 || *c0.ImageID != "a" {
		t.Errorf("case 0 %+v", c0)
	}
	if c2.Image != abs || c2.Chexmask.SizeCheck || c2.Chexmask.CSV != filepath.Join(dir, "cm.csv") || c2.HeartMask != "" ||
		string(c2.Source) != `{"z":1,"a":[true,null]}` || c2.ReportPath != filepath.Join(dir, "r.txt") || c2.Line != 3 {
		t.Errorf("case 2 %+v", c2)
	}
	// Write candidates and read them back: a candidates file, same cases.
	out := filepath.Join(dir, "candidates.jsonl")
	cands, _, _ := Sample(context.Background(), cases, cfg, 5)
	if err := WriteCandidates(nil, out, cands); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	// Field order: the §2.4 table, then rank, source_type, sample_seed;
	// paths inside the output's directory are relative, others absolute.
	wantFirst := `{"case_id":"s9_positive_1","lesion":"cardiomegaly","label":"positive","image":"/data/elsewhere/x.png","lesion_masks":["m/h.png","m/h2.png"],"chexmask":{"csv":"cm.csv","id":"d9","size_check":false},"report":"r","report_path":"r.txt","location_hints":["heart"],"source":{"z":1,"a":[true,null]},"rank":0,"source_type":"manifest","sample_seed":5}`
	if got[0] != wantFirst {
		t.Errorf("first line\n got %s\nwant %s", got[0], wantFirst)
	}
	back, isCand, err := ReadSource(out, cfg)
	if err != nil || !isCand || len(back) != len(cands) {
		t.Fatalf("re-read: %v candidates=%v n=%d", err, isCand, len(back))
	}
	if string(MarshalCandidates(back, dir)) != string(data) {
		t.Errorf("round trip changed the file:\n%s\nvs\n%s", MarshalCandidates(back, dir), data)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*.tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// TestNonRegularInputs: a FIFO named as the manifest, as an image or as a
// CheXmask CSV is refused at once with a one-line error naming it (a
// blocking open would hang this test), and an endless line is cut off.
func TestNonRegularInputs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "not a regular file (named pipe)") ||
			strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line naming %s as not a regular file", what, err, fifo)
		}
	}
	_, _, err := ReadSource(fifo, buildcfg.Default())
	check("manifest", err)
	_, err = ImageSHA256(&Case{Image: fifo})
	check("image digest", err)
	_, err = ReadChexmask(fifo, map[string]bool{"x": true}, "")
	check("CheXmask CSV", err)
	_, err = readChexmaskCached(nil, fifo, map[string]bool{"x": true}, "", dir)
	check("CheXmask CSV (cached)", err)
	_, _, err = ReadSource("/dev/zero", buildcfg.Default())
	if err == nil || !strings.Contains(err.Error(), "not a regular file (character device)") {
		t.Errorf("/dev/zero as manifest: %v", err)
	}
	long := filepath.Join(dir, "long.jsonl")
	os.WriteFile(long, []byte(okPos+"\n"+strings.Repeat(" ", MaxLineBytes+1)), 0o644)
	_, _, err = ReadSource(long, buildcfg.Default())
	if err == nil || !strings.Contains(err.Error(), long+":2: line longer than") {
		t.Errorf("long line: %v", err)
	}
}
