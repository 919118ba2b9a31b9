package source

import (
	"bytes"
	"compress/gzip"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/mask"
)

const chexHeader = "dicom_id,Dice RCA (Max),Dice RCA (Mean),Landmarks,Left Lung,Right Lung,Heart,Height,Width\n"

func TestReadChexmask(t *testing.T) {
	dir := t.TempDir()
	body := chexHeader +
		`a,0.9,0.8,"1,2,3,4",3 2,1 2,,2,4` + "\n" +
		`b,0.9,0.8,"[[1, 2],` + "\n" + ` [3, 4]]",,,,2,4` + "\n" + // quoted newline
		`a,0.1,0.1,,,,,9,9` + "\n" + // duplicate: first row wins
		`c,0.9,0.8,,,,,2,4` + "\n" // not needed
	plain := filepath.Join(dir, "cm.csv")
	os.WriteFile(plain, []byte(body), 0o644)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(body))
	zw.Close()
	packed := filepath.Join(dir, "cm.csv.gz")
	os.WriteFile(packed, gz.Bytes(), 0o644)
	need := map[string]bool{"a": true, "b": true, "z": true}
	for _, p := range []string{plain, packed} {
		tb, err := ReadChexmask(p, need, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(tb.Rows) != 2 || tb.Rows["a"].Height != "2" || tb.Rows["a"].Line != 2 || tb.Rows["b"].Line != 3 ||
			tb.Rows["b"].Landmarks != "[[1, 2],\n [3, 4]]" || len(tb.Duplicates) != 1 {
			t.Errorf("%s: rows %+v dups %v", p, tb.Rows, tb.Duplicates)
		}
		m, err := tb.Rows["a"].decodePart("right", 4, 2)
		if err != nil || string(m.Pix) != "\x01\x01\x00\x00\x00\x00\x00\x00" {
			t.Errorf("RLE right: %v %v", m.Pix, err)
		}
		m, _ = tb.Rows["a"].decodePart("left", 4, 2)
		if string(m.Pix) != "\x00\x00\x01\x01\x00\x00\x00\x00" {
			t.Errorf("RLE left: %v", m.Pix)
		}
	}

	bad := []struct{ name, body, col, want string }{
		{"missing column", "dicom_id,Left Lung,Right Lung,Height\n", "", `:1: missing column "Width"`},
		{"no id column", "id,Left Lung,Right Lung,Height,Width\n", "", ":1: no id column"},
		{"configured id", "id,Left Lung,Right Lung,Height,Width\n", "ImageID", `:1: missing column "ImageID"`},
		{"ragged row", chexHeader + "a,1,1,,,,,2,2\nb,1,1\n", "", ":3: CSV: wrong number of fields"},
		{"bare quote", chexHeader + "a,1,1,x\"y,,,,2,2\n", "", ":2: CSV: bare \" in non-quoted-field"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "bad.csv")
			os.WriteFile(p, []byte(c.body), 0o644)
			_, err := ReadChexmask(p, need, c.col)
			if err == nil || !strings.HasPrefix(err.Error(), p+c.want) {
				t.Errorf("got %v, want %s%s", err, p, c.want)
			}
		})
	}
	if _, err := ReadChexmask(filepath.Join(dir, "none.csv"), need, ""); err == nil || !strings.Contains(err.Error(), "cannot open the CheXmask CSV") {
		t.Errorf("missing file: %v", err)
	}
	// ImageID is the second choice of the default rule.
	p := filepath.Join(dir, "img.csv")
	os.WriteFile(p, []byte("ImageID,image_id,Left Lung,Right Lung,Height,Width\nb,a,,,1,1\n"), 0o644)
	if tb, err := ReadChexmask(p, need, ""); err != nil || tb.Rows["b"] == nil {
		t.Errorf("ImageID column: %v %+v", err, tb)
	}
}

func TestLandmarks(t *testing.T) {
	for _, cell := range []string{"0,0,4,0,4,4,0,4", "[[0.0, 0], [4, 0.0], [4e0, 4], [0, 4]]", "0 0 4 0 4 4 0 4"} {
		pts := landmarks(cell)
		if len(pts) != 4 || pts[2] != (mask.PointF{X: 4, Y: 4}) {
			t.Errorf("%q → %v", cell, pts)
		}
	}
	// 44 right-lung points, then 50 left, then the heart.
	var sb strings.Builder
	for i := 0; i < 44+50+3; i++ {
		x := 1
		if i >= 44 {
			x = 5
		}
		if i >= 94 {
			x = 9
		}
		// each part is a degenerate "polygon" at one x: a vertical segment
		sb.WriteString(strings.Repeat(" ", 1) + itoa3(x) + "," + itoa3(i%2*6))
	}
	r := &ChexRow{Landmarks: sb.String()}
	for part, x := range map[string]int{"right": 1, "left": 5, "heart": 9} {
		m, err := r.decodePart(part, 12, 8)
		if err != nil {
			t.Fatal(err)
		}
		if !m.At(x, 3) || m.Count() != 7 {
			t.Errorf("%s: count %d, on at x=%d: %v", part, m.Count(), x, m.At(x, 3))
		}
	}
}

func itoa3(i int) string { return string(rune('0' + i)) }

func writeMaskPNG(t *testing.T, path string, m mask.Mask) {
	t.Helper()
	var buf bytes.Buffer
	if err := mask.EncodePNG(&buf, m); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func rect(w, h, x0, y0, x1, y1 int) mask.Mask {
	m := mask.New(w, h)
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			m.Pix[y*w+x] = 1
		}
	}
	return m
}

func TestLoadLungsSources(t *testing.T) {
	dir := t.TempDir()
	// 8×4 native image; lungs as rectangles.
	img := image.NewGray(image.Rect(0, 0, 8, 4))
	var ib bytes.Buffer
	png.Encode(&ib, img)
	imgPath := filepath.Join(dir, "cxr.png")
	os.WriteFile(imgPath, ib.Bytes(), 0o644)
	chexR, chexL := rect(8, 4, 0, 0, 3, 4), rect(8, 4, 5, 0, 8, 4)
	heart := rect(8, 4, 3, 2, 5, 4)
	csv := chexHeader +
		"d1,0.9,0.80,," + mask.EncodeRLE(chexL) + "," + mask.EncodeRLE(chexR) + "," + mask.EncodeRLE(heart) + ",4,8\n" +
		"d2,0.9,0.80,,,,,5,8\n" + // wrong size
		"d3,0.9,0.10,,,,,4,8\n" + // low quality
		"d4,0.9,0.80,,1 999,,,4,8\n" // RLE leaves the image
	csvPath := filepath.Join(dir, "cm.csv")
	os.WriteFile(csvPath, []byte(csv), 0o644)
	pngR, pngL := rect(1024, 1024, 0, 512, 512, 1024), rect(1024, 1024, 512, 512, 1024, 1024)
	writeMaskPNG(t, filepath.Join(dir, "r.png"), pngR)
	writeMaskPNG(t, filepath.Join(dir, "l.png"), pngL)
	ref := func(id string, check bool) *ChexmaskRef { return &ChexmaskRef{CSV: csvPath, ID: id, SizeCheck: check} }
	pair := &LungPaths{Right: filepath.Join(dir, "r.png"), Left: filepath.Join(dir, "l.png")}
	mkc := func(id string, cm *ChexmaskRef, lp *LungPaths) *Case {
		return &Case{CaseID: id + "_positive_0", Lesion: "edema", Label: "positive", Image: imgPath, Chexmask: cm, LungMasks: lp}
	}
	cases := []*Case{
		mkc("both", ref("d1", true), pair),
		mkc("chex", ref("d1", true), nil),
		mkc("png", nil, pair),
		mkc("size", ref("d2", true), nil),
		mkc("nocheck", ref("d2", false), nil),
		mkc("rca", ref("d3", true), nil),
		mkc("missing", ref("zz", true), nil),
		mkc("rle", ref("d4", true), nil),
		mkc("nopng", nil, &LungPaths{Right: filepath.Join(dir, "none.png"), Left: filepath.Join(dir, "l.png")}),
	}
	cfg := buildcfg.Default()
	cfg.ChexmaskMinRCA = 0.5
	var warn bytes.Buffer
	work := filepath.Join(dir, "work")
	l, err := NewLoader(nil, cases, cfg, work, &warn)
	if err != nil {
		t.Fatal(err)
	}
	cR, cL := frame.CanonicalMask(chexR), frame.CanonicalMask(chexL)
	want := map[string]string{
		"size":    "chexmask_size_mismatch",
		"rca":     "low_lung_mask_quality",
		"missing": "chexmask_row_missing",
		"rle":     "mask_unreadable",
		"nopng":   "mask_unreadable",
	}
	for _, c := range cases {
		lu, err := l.LoadLungs(c)
		name := strings.TrimSuffix(c.CaseID, "_positive_0")
		if reason, bad := want[name]; bad {
			var ce *frame.CaseError
			if !errors.As(err, &ce) || ce.Reason != reason {
				t.Errorf("%s: got %v, want %s", name, err, reason)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch name {
		case "both":
			if !lu.HasSecondary || !mask.Equal(lu.Right, mask.And(cR, pngR)) || !mask.Equal(lu.Left, mask.And(cL, pngL)) ||
				!mask.Equal(lu.ChexRight, cR) || !mask.Equal(lu.CxasLeft, pngL) {
				t.Errorf("both: wrong resolution")
			}
			if lu.Heart == nil || !mask.Equal(*lu.Heart, frame.CanonicalMask(heart)) {
				t.Errorf("both: heart not from the CheXmask row")
			}
		case "chex":
			if lu.HasSecondary || !mask.Equal(lu.Right, cR) || !mask.Equal(lu.ChexLeft, cL) || lu.CxasRight.Pix != nil {
				t.Errorf("chex only: wrong resolution")
			}
		case "png":
			if lu.HasSecondary || !mask.Equal(lu.Right, pngR) || !mask.Equal(lu.ChexLeft, pngL) || lu.Heart != nil {
				t.Errorf("png only: wrong resolution")
			}
		case "nocheck":
			if lu.Right.W != 1024 || !lu.Right.Empty() {
				t.Errorf("nocheck: %d×%d", lu.Right.W, lu.Right.H)
			}
		}
	}
	if strings.Count(warn.String(), "warning") != 1 {
		t.Errorf("size-check warning printed %d times", strings.Count(warn.String(), "warning"))
	}
	// The cache: a second loader reads the kept rows from work/chexmask.
	caches, _ := filepath.Glob(filepath.Join(work, "chexmask", "*.json"))
	if len(caches) != 1 {
		t.Fatalf("cache files %v", caches)
	}
	data, _ := os.ReadFile(caches[0])
	os.WriteFile(caches[0], bytes.Replace(data, []byte(`"rca_mean":"0.10"`), []byte(`"rca_mean":"0.60"`), 1), 0o644)
	l2, err := NewLoader(nil, cases, cfg, work, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l2.LoadLungs(cases[5]); err != nil {
		t.Errorf("cached row not used: %v", err)
	}
	// Digests.
	d1, _ := l.LungSourceSHA256(cases[0])
	d2, _ := l.LungSourceSHA256(cases[1])
	if len(d1) != 64 || d1 == d2 {
		t.Errorf("lung digests %s %s", d1, d2)
	}
	if _, err := ImageSHA256(&Case{Image: filepath.Join(dir, "none.png")}); err == nil {
		t.Error("ImageSHA256 of a missing file")
	}
	if MaskSHA256(mask.New(1024, 1024)) != "30e14955ebf1352266dc2ff8067e68104607e750abb9d3b36582b8af909fcb58" {
		t.Errorf("MaskSHA256 of the empty canonical mask: %s", MaskSHA256(mask.New(1024, 1024)))
	}
}

// TestReadChexmaskCaps: a record over MaxChexmaskRecordBytes, plain or
// gzip-compressed (a small .csv.gz expanding to one huge line), is a
// one-line error naming the file and the record's line, read no further
// than the cap.
func TestReadChexmaskCaps(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("9", MaxChexmaskRecordBytes+10)
	cases := []struct{ name, body string }{
		{"long line", chexHeader + "a,0.9,0.8,,,,,2,4\nb,0.9,0.8,," + long + ",,,2,4\n"},
		{"long quoted record over lines", chexHeader + "a,0.9,0.8,,,,,2,4\nb,0.9,0.8,\"" + strings.Repeat("1,2\n", MaxChexmaskRecordBytes/4+10) + "\",,,,2,4\n"},
	}
	for _, c := range cases {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write([]byte(c.body))
		zw.Close()
		for _, f := range []struct {
			name string
			data []byte
		}{{"cm.csv", []byte(c.body)}, {"cm.csv.gz", gz.Bytes()}} {
			p := filepath.Join(dir, f.name)
			os.WriteFile(p, f.data, 0o644)
			_, err := ReadChexmask(p, map[string]bool{"b": true}, "")
			want := p + ":3: record longer than 4194304 bytes"
			if err == nil || err.Error() != want {
				t.Errorf("%s %s: err %v, want %q", c.name, f.name, err, want)
			}
		}
	}
}
