package imagefile

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/imagefile/imagefiletest"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func write(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckHeader(t *testing.T) {
	dir := t.TempDir()
	gray := image.NewGray(image.Rect(0, 0, 30, 20))
	var jb bytes.Buffer
	if err := jpeg.Encode(&jb, image.NewRGBA(image.Rect(0, 0, 7, 5)), nil); err != nil {
		t.Fatal(err)
	}
	okPNG := write(t, dir, "ok.png", encodePNG(t, gray))
	okJPEG := write(t, dir, "ok.jpg", jb.Bytes())
	tests := []struct {
		name, path, format string
		w, h               int
		want               string
	}{
		{"png", okPNG, PNG, 30, 20, ""},
		{"jpeg", okJPEG, JPEG, 7, 5, ""},
		{"bomb", write(t, dir, "bomb.png", imagefiletest.BombPNG(100000, 100000)), "", 0, 0, "PNG size 100000×100000 outside 1…16384 per side"},
		{"pixels", write(t, dir, "px.png", imagefiletest.BombPNG(16384, 16384)), "", 0, 0, "PNG size 16384×16384 exceeds 67108864 pixels"},
		{"rgba bytes", write(t, dir, "rgba2.png", imagefiletest.BombPNG(16384, 4096)), "", 0, 0, ""},
		{"junk", write(t, dir, "junk.png", []byte("not an image")), "", 0, 0, "not a decodable PNG or JPEG: unknown signature"},
		{"truncated", write(t, dir, "trunc.png", encodePNG(t, gray)[:20]), "", 0, 0, "not a decodable PNG"},
		{"empty", write(t, dir, "empty.png", nil), "", 0, 0, "not a decodable PNG or JPEG"},
	}
	tests[4].format, tests[4].w, tests[4].h = PNG, 16384, 4096 // exactly 256 MiB as RGBA: accepted
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, w, h, err := CheckHeader(tc.path)
			if tc.want == "" {
				if err != nil || f != tc.format || w != tc.w || h != tc.h {
					t.Errorf("CheckHeader = %q %d×%d, %v; want %q %d×%d", f, w, h, err, tc.format, tc.w, tc.h)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("CheckHeader error %v, want it to name the file and say %q", err, tc.want)
			}
		})
	}
}

func TestCheckSize(t *testing.T) {
	tests := []struct {
		format string
		w, h   int
		model  color.Model
		ok     bool
	}{
		{PNG, 1024, 1024, color.RGBAModel, true},
		{PNG, 0, 10, color.GrayModel, false},
		{PNG, 16384, 16384, color.GrayModel, false}, // pixels
		{PNG, 8192, 8192, color.GrayModel, true},    // 64 MiB
		{PNG, 8192, 8192, color.RGBAModel, true},    // 256 MiB
		{PNG, 8192, 8192, color.RGBA64Model, false}, // 512 MiB
		{PNG, 8192, 8192, color.Palette{color.Black}, true},
		{PNG, 8192, 8192, nil, false},
		{JPEG, 7000, 7000, color.GrayModel, true},     // 49 Mpx × 5 B
		{JPEG, 4000, 3000, color.YCbCrModel, true},    // 12 Mpx × 15 B
		{JPEG, 5000, 4000, color.YCbCrModel, false},   // 20 Mpx × 15 B
		{JPEG, 8000, 8000, color.GrayModel, false},    // 64 Mpx × 5 B
		{JPEG, 16385, 1, color.GrayModel, false},      // side
		{PNG, 100000, 100000, color.RGBAModel, false}, // the bomb
	}
	for _, tc := range tests {
		err := CheckSize(tc.format, tc.w, tc.h, tc.model)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, safefile.ErrTooLarge)) {
			t.Errorf("CheckSize(%s %d×%d %T) = %v, want ok=%v", tc.format, tc.w, tc.h, tc.model, err, tc.ok)
		}
	}
}

func TestDecode(t *testing.T) {
	gray := image.NewGray(image.Rect(0, 0, 3, 2))
	gray.Pix[1] = 200
	data := encodePNG(t, gray)
	img, f, err := Decode(data)
	if err != nil || f != PNG || img.Bounds().Dx() != 3 || img.(*image.Gray).Pix[1] != 200 {
		t.Fatalf("Decode = %v, %q, %v", img, f, err)
	}
	if _, err := DecodePNG(data); err != nil {
		t.Fatal(err)
	}
	var jb bytes.Buffer
	jpeg.Encode(&jb, gray, nil)
	if _, f, err := Decode(jb.Bytes()); err != nil || f != JPEG {
		t.Errorf("Decode(jpeg) = %q, %v", f, err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		png  bool
		want string
	}{
		{"jpeg as png", jb.Bytes(), true, "not a decodable PNG: unknown signature"},
		{"bomb", imagefiletest.BombPNG(100000, 100000), false, "outside 1…16384 per side"},
		{"bomb png", imagefiletest.BombPNG(100000, 100000), true, "outside 1…16384 per side"},
		{"truncated", data[:len(data)-16], false, "not a decodable PNG"},
		{"truncated png", data[:len(data)-16], true, "not a decodable PNG"},
	} {
		var err error
		if tc.png {
			_, err = DecodePNG(tc.data)
		} else {
			_, _, err = Decode(tc.data)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// BenchmarkDecodeBomb shows the bomb is refused without allocating its
// pixels (compare B/op with the header's w·h·4 bytes).
func BenchmarkDecodeBomb(b *testing.B) {
	data := imagefiletest.BombPNG(100000, 100000)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(data); err == nil {
			b.Fatal("bomb decoded")
		}
	}
}
