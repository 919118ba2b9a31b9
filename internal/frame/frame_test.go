package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/imagefile/imagefiletest"
)

func writePNG(t *testing.T, dir, name string, img image.Image) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Hand-computed values of v8 = (v16·255 + 32767) / 65535.
func TestSixteenBitConversion(t *testing.T) {
	cases := []struct {
		v16 uint16
		v8  uint8
	}{
		{0, 0}, {128, 0}, {129, 1}, {257, 1}, {32767, 127}, {32768, 128},
		{65278, 254}, {65406, 254}, {65407, 255}, {65535, 255},
	}
	img := image.NewGray16(image.Rect(0, 0, len(cases), 1))
	for i, c := range cases {
		img.SetGray16(i, 0, color.Gray16{Y: c.v16})
	}
	// Through a PNG so the decoder's 16-bit path is exercised.
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	dec, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := dec.(*image.Gray16); !ok {
		t.Fatalf("decoded %T, want *image.Gray16", dec)
	}
	got := ToGray(dec)
	for i, c := range cases {
		if got[i] != c.v8 {
			t.Errorf("v16=%d: got %d, want %d", c.v16, got[i], c.v8)
		}
	}
	// 16-bit colour samples use the same rule per channel.
	c64 := image.NewNRGBA64(image.Rect(0, 0, 1, 1))
	c64.SetNRGBA64(0, 0, color.NRGBA64{R: 32768, G: 32768, B: 32768, A: 0})
	if g := ToGray(c64); g[0] != 128 {
		t.Errorf("NRGBA64 grey with alpha 0: got %d, want 128 (alpha ignored)", g[0])
	}
}

func TestLuma(t *testing.T) {
	cases := []struct {
		name string
		px   []color.NRGBA
		want []uint8
	}{
		{"all grey takes R", []color.NRGBA{{7, 7, 7, 255}, {200, 200, 200, 0}}, []uint8{7, 200}},
		// (299·10 + 587·20 + 114·30 + 500)/1000 = 18650/1000 = 18
		// (299·255 + 0 + 0 + 500)/1000 = 76745/1000 = 76
		// (0 + 587·255 + 500)/1000 = 150185/1000 = 150
		// (0 + 0 + 114·255 + 500)/1000 = 29570/1000 = 29
		{"colour uses luma", []color.NRGBA{{10, 20, 30, 255}, {255, 0, 0, 255}, {0, 255, 0, 9}, {0, 0, 255, 255}}, []uint8{18, 76, 150, 29}},
		// one colour pixel switches the whole image to luma; grey pixels
		// keep their value under luma.
		{"mixed", []color.NRGBA{{99, 99, 99, 255}, {1, 2, 3, 255}}, []uint8{99, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := image.NewNRGBA(image.Rect(0, 0, len(c.px), 1))
			for i, p := range c.px {
				img.SetNRGBA(i, 0, p)
			}
			got := ToGray(img)
			if !bytes.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// 2048→1024: every output is the mean of a 2×2 block; the integer
// reference (sum+2)/4 is round-half-up of sum/4.
func TestAreaAveraging2048(t *testing.T) {
	const W, H = 2048, 2048
	pix := make([]uint8, W*H)
	for y := 0; y < H; y++ {
		for x := 0; x < W; x++ {
			pix[y*W+x] = uint8((x*7 + y*13 + (x*y)%5) % 256)
		}
	}
	// Blocks whose sum ≡ 2 mod 4 test the half-away-from-zero rounding.
	pix[0], pix[1], pix[W], pix[W+1] = 1, 1, 0, 0
	g := Resize(pix, W, H, 1024, 1024)
	for y := 0; y < 1024; y++ {
		for x := 0; x < 1024; x++ {
			s := int(pix[2*y*W+2*x]) + int(pix[2*y*W+2*x+1]) + int(pix[(2*y+1)*W+2*x]) + int(pix[(2*y+1)*W+2*x+1])
			if want := uint8((s + 2) / 4); g.Pix[y*1024+x] != want {
				t.Fatalf("(%d,%d): got %d, want %d", x, y, g.Pix[y*1024+x], want)
			}
		}
	}
	if g.Pix[0] != 1 {
		t.Errorf("0.5 rounds away from zero: got %d", g.Pix[0])
	}
}

// A non-integer ratio, computed by hand: 3→2, s = 1.5,
// out0 = (1·0 + 0.5·90)/1.5 = 30, out1 = (0.5·90 + 1·180)/1.5 = 150.
func TestAreaAveragingFractional(t *testing.T) {
	g := Resize([]uint8{0, 90, 180}, 3, 1, 2, 1)
	if g.Pix[0] != 30 || g.Pix[1] != 150 {
		t.Errorf("got %v, want [30 150]", g.Pix)
	}
	// A constant non-square native image stays constant.
	pix := bytes.Repeat([]uint8{77}, 1500*1100)
	c := Resize(pix, 1500, 1100, 1024, 1024)
	for i, v := range c.Pix {
		if v != 77 {
			t.Fatalf("pixel %d: got %d, want 77", i, v)
		}
	}
}

// 512→1024 bilinear: output i samples source (i+0.5)/2−0.5, so interior
// outputs weigh neighbours 3:1 / 1:3 and the borders clamp. The integer
// reference uses quarter weights per axis (sixteenths in 2-D).
func TestBilinear512(t *testing.T) {
	const N = 512
	pix := make([]uint8, N*N)
	for y := 0; y < N; y++ {
		for x := 0; x < N; x++ {
			pix[y*N+x] = uint8((x*3 + y*5 + (x^y)&7) % 256)
		}
	}
	dir := t.TempDir()
	src := image.NewGray(image.Rect(0, 0, N, N))
	copy(src.Pix, pix)
	g, err := LoadGray(writePNG(t, dir, "in.png", src))
	if err != nil {
		t.Fatal(err)
	}
	// axis weights in quarters: (source index, weight) pairs
	w4 := func(i int) [][2]int {
		switch {
		case i == 0:
			return [][2]int{{0, 4}}
		case i == 2*N-1:
			return [][2]int{{N - 1, 4}}
		case i%2 == 1: // c = j + 0.25
			j := (i - 1) / 2
			return [][2]int{{j, 3}, {j + 1, 1}}
		default: // c = j + 0.75
			j := (i - 2) / 2
			return [][2]int{{j, 1}, {j + 1, 3}}
		}
	}
	for y := 0; y < 2*N; y++ {
		for x := 0; x < 2*N; x++ {
			s := 0
			for _, a := range w4(y) {
				for _, b := range w4(x) {
					s += a[1] * b[1] * int(pix[a[0]*N+b[0]])
				}
			}
			if want := uint8((s + 8) / 16); g.Pix[y*1024+x] != want {
				t.Fatalf("(%d,%d): got %d, want %d", x, y, g.Pix[y*1024+x], want)
			}
		}
	}
}

func TestLoadGrayJPEG(t *testing.T) {
	dir := t.TempDir()
	img := image.NewYCbCr(image.Rect(0, 0, 120, 100), image.YCbCrSubsampleRatio420)
	for i := range img.Y {
		img.Y[i] = 100
	}
	for i := range img.Cb {
		img.Cb[i], img.Cr[i] = 128, 128
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "x.jpg")
	os.WriteFile(p, buf.Bytes(), 0o644)
	g, err := LoadGray(p)
	if err != nil {
		t.Fatal(err)
	}
	if g.Rect.Dx() != 1024 || g.Rect.Dy() != 1024 {
		t.Fatalf("size %v", g.Rect)
	}
	if v := g.Pix[512*1024+512]; v < 98 || v > 102 {
		t.Errorf("centre %d, want ≈100", v)
	}
	w, h, err := NativeSize(p)
	if err != nil || w != 120 || h != 100 {
		t.Errorf("NativeSize = %d, %d, %v", w, h, err)
	}
}

// pngHeader returns a PNG signature plus an IHDR chunk claiming w×h.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 0 // 8-bit grey
	binary.Write(&b, binary.BigEndian, uint32(13))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.png")
	os.WriteFile(huge, pngHeader(20000, 100), 0o644)
	junk := filepath.Join(dir, "junk.png")
	os.WriteFile(junk, []byte("not an image"), 0o644)
	trunc := filepath.Join(dir, "trunc.png")
	os.WriteFile(trunc, pngHeader(100, 100), 0o644)
	missing := filepath.Join(dir, "missing.png")
	bomb := filepath.Join(dir, "bomb.png")
	os.WriteFile(bomb, imagefiletest.BombPNG(100000, 100000), 0o644)
	// A FIFO without a writer: a blocking open would hang here for ever.
	fifo := filepath.Join(dir, "fifo.png")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path, want string
	}{
		{huge, "outside 1…16384"},
		{bomb, "outside 1…16384"},
		{junk, "not a decodable"},
		{trunc, "not a decodable PNG"},
		{missing, "no such file"},
		{fifo, "not a regular file (named pipe)"},
		{dir, "not a regular file (directory)"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			if c.path == fifo {
				if _, _, err := NativeSize(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("NativeSize: %v, want %q", err, c.want)
				}
			}
			_, err := LoadGray(c.path)
			var ce *CaseError
			if !errors.As(err, &ce) || ce.Reason != "image_unreadable" {
				t.Fatalf("LoadGray: %v, want image_unreadable", err)
			}
			if !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q should name the file and say %q", err, c.want)
			}
			_, err = LoadMask(c.path)
			if !errors.As(err, &ce) || ce.Reason != "mask_unreadable" || !strings.Contains(err.Error(), c.path) {
				t.Errorf("LoadMask: %v, want mask_unreadable naming the file", err)
			}
		})
	}
}

func TestLoadMask(t *testing.T) {
	dir := t.TempDir()
	// 512×512 grey with a threshold pattern: 127 is off, 128 on.
	g := image.NewGray(image.Rect(0, 0, 512, 512))
	for y := 0; y < 512; y++ {
		for x := 0; x < 512; x++ {
			switch {
			case (x+y)%3 == 0:
				g.Pix[y*512+x] = 128
			case (x+y)%3 == 1:
				g.Pix[y*512+x] = 127
			}
		}
	}
	m, err := LoadMask(writePNG(t, dir, "m.png", g))
	if err != nil {
		t.Fatal(err)
	}
	if m.W != 1024 || m.H != 1024 {
		t.Fatalf("size %d×%d", m.W, m.H)
	}
	for y := 0; y < 1024; y++ {
		for x := 0; x < 1024; x++ {
			want := uint8(0)
			if (x/2+y/2)%3 == 0 {
				want = 1
			}
			if m.Pix[y*1024+x] != want {
				t.Fatalf("(%d,%d) = %d, want %d (exact 2×2 duplication)", x, y, m.Pix[y*1024+x], want)
			}
		}
	}
	// Colour: first channel R decides, alpha ignored.
	c := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	c.SetNRGBA(0, 0, color.NRGBA{200, 0, 0, 0})
	c.SetNRGBA(1, 0, color.NRGBA{100, 255, 255, 255})
	m, err = LoadMask(writePNG(t, dir, "c.png", c))
	if err != nil {
		t.Fatal(err)
	}
	if m.Pix[0] != 1 || m.Pix[1023] != 0 {
		t.Errorf("colour mask: left %d right %d, want 1 0", m.Pix[0], m.Pix[1023])
	}
}

func BenchmarkLoadGrayJPEG(b *testing.B) {
	dir := b.TempDir()
	img := image.NewGray(image.Rect(0, 0, 3000, 2500))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 31)
	}
	var buf bytes.Buffer
	jpeg.Encode(&buf, img, nil)
	p := filepath.Join(dir, "b.jpg")
	os.WriteFile(p, buf.Bytes(), 0o644)
	b.ResetTimer()
	for b.Loop() {
		if _, err := LoadGray(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadGrayPNG1024(b *testing.B) {
	dir := b.TempDir()
	img := image.NewGray(image.Rect(0, 0, 1024, 1024))
	for i := range img.Pix {
		img.Pix[i] = uint8(i*31 + i/1024)
	}
	p := filepath.Join(dir, "b.png")
	var buf bytes.Buffer
	png.Encode(&buf, img)
	os.WriteFile(p, buf.Bytes(), 0o644)
	b.ResetTimer()
	for b.Loop() {
		if _, err := LoadGray(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResize3000(b *testing.B) {
	pix := make([]uint8, 3000*2500)
	for i := range pix {
		pix[i] = uint8(i * 7)
	}
	for b.Loop() {
		Resize(pix, 3000, 2500, 1024, 1024)
	}
}

// TestFailTransient: Fail gives a *CaseError, except when one of its
// arguments is a transient error, which must stop the command.
func TestFailTransient(t *testing.T) {
	for _, tc := range []struct {
		name      string
		arg       any
		transient bool
	}{
		{"text", "no such file", false},
		{"missing", fs.ErrNotExist, false},
		{"emfile", syscall.EMFILE, true},
		{"wrapped eio", fmt.Errorf("read x: %w", &fs.PathError{Op: "read", Path: "x", Err: syscall.EIO}), true},
		{"enomem", syscall.ENOMEM, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Fail("image_unreadable", "image a.png: %v", tc.arg)
			var ce *CaseError
			if errors.As(err, &ce) == tc.transient {
				t.Errorf("%v: a *CaseError is %v, want %v", err, !tc.transient, !tc.transient)
			}
			if IsTransient(err) != tc.transient {
				t.Errorf("IsTransient(%v) = %v", err, !tc.transient)
			}
			if !strings.Contains(err.Error(), "image a.png: ") {
				t.Errorf("%q lost the detail", err)
			}
		})
	}
}

// TestResizeSameSize: at the same size Resize copies the plane, and the
// copy is what §1's arithmetic gives (every tap the sample itself).
func TestResizeSameSize(t *testing.T) {
	const w, h = 61, 47
	pix := make([]uint8, w*h)
	for i := range pix {
		pix[i] = uint8(i*37 + i/w*11)
	}
	got, want := Resize(pix, w, h, w, h), resample(pix, w, h, w, h)
	if !bytes.Equal(got.Pix, pix) || !bytes.Equal(want.Pix, pix) {
		t.Fatal("a same-size resize changed the samples")
	}
	if got.Bounds() != want.Bounds() || got.Stride != want.Stride {
		t.Errorf("bounds %v stride %d, want %v %d", got.Bounds(), got.Stride, want.Bounds(), want.Stride)
	}
}
