package source

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
)

// testJPEG and testPNG are small valid images (headers are all that is read).
func testJPEG(t testing.TB) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, 40, 30)), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func testPNG(t testing.TB) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 32, 32))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngHeader is a PNG signature and IHDR claiming w×h, with no image data.
func pngHeader(t testing.TB, w, h int) []byte {
	full := testPNG(t)
	hdr := append([]byte(nil), full[:33]...) // signature + IHDR chunk
	put := func(off, v int) {
		hdr[off], hdr[off+1], hdr[off+2], hdr[off+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	}
	put(16, w)
	put(20, h)
	// The CRC covers the chunk type and data; DecodeConfig does not check
	// it, but keep the header honest anyway.
	crc := crc32IEEE(hdr[12:29])
	put(29, int(crc))
	return hdr
}

func TestCheckInputs(t *testing.T) {
	dir := t.TempDir()
	jpg, pngb := testJPEG(t), testPNG(t)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.jpg", jpg)
	goodPNG := write("good.png", pngb)
	mask := write("mask.png", pngb)
	lr, ll := write("r.png", pngb), write("l.png", pngb)
	csv := write("chex.csv", []byte("dicom_id\n"))
	link := filepath.Join(dir, "link.jpg")
	os.Symlink(good, link)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	dirLink := filepath.Join(dir, "dirlink.png")
	os.Symlink(sub, dirLink)
	missing := filepath.Join(dir, "missing.jpg")

	pos := func(id, img string, masks ...string) *Case {
		return &Case{CaseID: id + "_positive_0", Lesion: "edema", Label: "positive", Image: img, LesionMasks: masks,
			LungMasks: &LungPaths{Right: lr, Left: ll}, Chexmask: &ChexmaskRef{CSV: csv, ID: "x"}}
	}
	neg := func(id, img string) *Case {
		return &Case{CaseID: id + "_negative_0", Lesion: "edema", Label: "negative", Image: img}
	}
	tests := []struct {
		name  string
		cases []*Case
		want  []string // substrings of the error; none: no error
	}{
		{"all good, links to regular files followed", []*Case{pos("a", good, mask), neg("b", goodPNG), neg("c", link)}, nil},
		{"missing image", []*Case{neg("a", missing)}, []string{"1 of the 1 input files", "image " + missing + " (case edema_a_negative_0): no such file"}},
		{"directory", []*Case{neg("a", sub)}, []string{"not a regular file (directory)"}},
		{"link to a directory", []*Case{neg("a", dirLink)}, []string{"not a regular file (directory)"}},
		{"text file", []*Case{neg("a", write("x.png", []byte("not an image at all")))}, []string{"not a decodable PNG or JPEG"}},
		{"empty file", []*Case{neg("a", write("empty.jpg", nil))}, []string{"not a decodable PNG or JPEG"}},
		{"truncated PNG", []*Case{neg("a", write("trunc.png", pngb[:20]))}, []string{"not a decodable PNG"}},
		{"JPEG as a mask", []*Case{pos("a", good, good)}, []string{"lesion mask " + good, "a JPEG file, not a PNG"}},
		{"50000×50000 header", []*Case{neg("a", write("huge.png", pngHeader(t, 50000, 50000)))}, []string{"PNG size 50000×50000 outside 1…16384 per side"}},
		{"missing lung mask and CSV", []*Case{{CaseID: "a_positive_0", Lesion: "edema", Label: "positive", Image: good, LesionMasks: []string{mask},
			LungMasks: &LungPaths{Right: lr, Left: missing}, Chexmask: &ChexmaskRef{CSV: filepath.Join(dir, "no.csv")}}},
			[]string{"2 of the 5 input files", "left lung mask " + missing, "CheXmask CSV " + filepath.Join(dir, "no.csv")}},
		{"first five named, the rest counted", func() []*Case {
			var cs []*Case
			for i := 0; i < 8; i++ {
				cs = append(cs, neg(fmt.Sprintf("n%d", i), filepath.Join(dir, fmt.Sprintf("gone%d.jpg", i))))
			}
			return cs
		}(), []string{"8 of the 8 input files", "gone0.jpg", "gone4.jpg", "; and 3 more"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckInputs(context.Background(), tc.cases)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "gone5.jpg") {
				t.Errorf("error is not one line naming at most five files: %q", err)
			}
		})
	}
}

// TestMIMICRootOrFiles: --mimic-cxr accepts the MIMIC-CXR-JPG root and its
// files/ directory, with identical cases; anything else is refused by name.
func TestMIMICRootOrFiles(t *testing.T) {
	read := func(dir string) ([]*Case, error) {
		cs, _, err := FromMIMIC(context.Background(), dir, fx+"/mimic_ils_instruction_answer.json", fx+"/lesion_mask", fx+"/chexmask_mimic.csv", "", buildcfg.Default())
		return cs, err
	}
	root, err := read(fx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := read(fx + "/files")
	if err != nil {
		t.Fatal(err)
	}
	if len(root) != len(files) || len(root) == 0 {
		t.Fatalf("%d cases from the root, %d from files/", len(root), len(files))
	}
	for i := range root {
		if root[i].Image != files[i].Image {
			t.Fatalf("case %s: image %s from the root, %s from files/", root[i].KeyID(), root[i].Image, files[i].Image)
		}
	}
	if err := CheckInputs(context.Background(), files); err != nil {
		t.Errorf("images found from files/ do not check: %v", err)
	}
	wrong := fx + "/lesion_mask"
	if _, err := read(wrong); err == nil || !strings.Contains(err.Error(), "neither a MIMIC-CXR-JPG root") {
		t.Errorf("a directory without files/ or p10 … p19: %v", err)
	}
}

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
