package mask

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResizeNearest(t *testing.T) {
	m := parse(t,
		"#.",
		".#",
	)
	wantMask(t, "2→4 duplicates", ResizeNearest(m, 4, 4), parse(t,
		"##..", "##..", "..##", "..##"))
	// 4→2 picks source (2x+1)·4 div 4 = 1, 3.
	wantMask(t, "4→2", ResizeNearest(parse(t, "#.#.", ".#.#", "#...", "...#"), 2, 2), parse(t, "##", ".#"))
	// 3→7: src = (2x+1)·3 div 14 = 0,0,1,1,1,2,2.
	wantMask(t, "3→7", ResizeNearest(parse(t, "#.#"), 7, 1), parse(t, "##...##"))

	// 512 → 1024 is an exact 2×2 duplication.
	r := rand.New(rand.NewPCG(1, 1))
	src := randMask(r, 512, 512, 0.1)
	big := ResizeNearest(src, 1024, 1024)
	for y := 0; y < 1024; y++ {
		for x := 0; x < 1024; x++ {
			if big.Pix[y*1024+x] != src.Pix[(y/2)*512+x/2] {
				t.Fatalf("pixel (%d,%d) is not a duplicate", x, y)
			}
		}
	}
	// A non-square native size: check the formula directly.
	src = randMask(r, 37, 1500, 0.3)
	out := ResizeNearest(src, 1024, 1024)
	for _, p := range []Point{{0, 0}, {1023, 1023}, {511, 700}, {13, 1000}} {
		sx := min(36, ((2*p.X+1)*37)/2048)
		sy := min(1499, ((2*p.Y+1)*1500)/2048)
		if out.At(p.X, p.Y) != src.At(sx, sy) {
			t.Errorf("pixel %v does not read (%d,%d)", p, sx, sy)
		}
	}
}

func encode(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodePNGTypes(t *testing.T) {
	// Each image is 2×1: pixel 0 just below the threshold, pixel 1 at it.
	gray := image.NewGray(image.Rect(0, 0, 2, 1))
	gray.Pix = []uint8{127, 128}
	gray16 := image.NewGray16(image.Rect(0, 0, 2, 1))
	gray16.SetGray16(0, 0, color.Gray16{Y: 32767})
	gray16.SetGray16(1, 0, color.Gray16{Y: 32768})
	rgb := image.NewRGBA(image.Rect(0, 0, 2, 1))
	rgb.SetRGBA(0, 0, color.RGBA{127, 255, 255, 255})
	rgb.SetRGBA(1, 0, color.RGBA{128, 0, 0, 255})
	// Alpha is ignored: R is read as stored, not premultiplied.
	nrgba := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	nrgba.SetNRGBA(0, 0, color.NRGBA{127, 255, 255, 255})
	nrgba.SetNRGBA(1, 0, color.NRGBA{200, 0, 0, 1})
	rgb64 := image.NewRGBA64(image.Rect(0, 0, 2, 1))
	rgb64.SetRGBA64(0, 0, color.RGBA64{32767, 65535, 65535, 65535})
	rgb64.SetRGBA64(1, 0, color.RGBA64{32768, 0, 0, 65535})
	nrgba64 := image.NewNRGBA64(image.Rect(0, 0, 2, 1))
	nrgba64.SetNRGBA64(0, 0, color.NRGBA64{32767, 65535, 65535, 65535})
	nrgba64.SetNRGBA64(1, 0, color.NRGBA64{40000, 0, 0, 0})
	pal := image.NewPaletted(image.Rect(0, 0, 2, 1), color.Palette{
		color.RGBA{127, 255, 255, 255}, color.RGBA{128, 0, 0, 255}, color.RGBA{0, 0, 0, 255}})
	pal.Pix = []uint8{0, 1}
	// A two-colour palette is written as a 1-bit PNG.
	bit := image.NewPaletted(image.Rect(0, 0, 2, 1), color.Palette{color.Gray{0}, color.Gray{255}})
	bit.Pix = []uint8{0, 1}
	tests := []struct {
		name string
		img  image.Image
	}{
		{"gray", gray}, {"gray16", gray16}, {"rgb", rgb}, {"nrgba", nrgba},
		{"rgb64", rgb64}, {"nrgba64", nrgba64}, {"paletted", pal}, {"1-bit", bit},
	}
	for _, tc := range tests {
		m, err := DecodePNG(bytes.NewReader(encode(t, tc.img)))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		wantMask(t, tc.name, m, parse(t, ".#"))
		// FromImage on the in-memory image agrees with the decoded file.
		wantMask(t, tc.name+" FromImage", FromImage(tc.img), parse(t, ".#"))
	}
	// Grey+alpha PNGs decode to NRGBA (8-bit) in Go; the grey value counts.
	ga := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	ga.SetNRGBA(0, 0, color.NRGBA{100, 100, 100, 255})
	ga.SetNRGBA(1, 0, color.NRGBA{255, 255, 255, 0})
	wantMask(t, "grey+alpha", FromImage(ga), parse(t, ".#"))
	// Generic fallback (a type image/png never returns).
	ycc := image.NewYCbCr(image.Rect(0, 0, 2, 1), image.YCbCrSubsampleRatio444)
	ycc.Y = []uint8{10, 250}
	ycc.Cb = []uint8{128, 128}
	ycc.Cr = []uint8{128, 128}
	wantMask(t, "ycbcr", FromImage(ycc), parse(t, ".#"))
}

func TestEncodePNGRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	m := randMask(r, 33, 17, 0.4)
	var buf bytes.Buffer
	if err := EncodePNG(&buf, m); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	g, ok := img.(*image.Gray)
	if !ok {
		t.Fatalf("decoded as %T, want 8-bit grey", img)
	}
	for i, v := range g.Pix {
		if v != 0 && v != 255 || (v == 255) != (m.Pix[i] == 1) {
			t.Fatalf("pixel %d = %d", i, v)
		}
	}
	back, err := DecodePNG(bytes.NewReader(buf.Bytes()))
	if err != nil || !Equal(back, m) {
		t.Fatalf("round trip failed: %v", err)
	}
}

// setIHDRSize rewrites the width and height of a PNG header and fixes its CRC.
func setIHDRSize(data []byte, w, h uint32) []byte {
	out := append([]byte(nil), data...)
	// signature (8) + length (4) + "IHDR" (4) → width at 16, height at 20.
	binary.BigEndian.PutUint32(out[16:], w)
	binary.BigEndian.PutUint32(out[20:], h)
	binary.BigEndian.PutUint32(out[29:], crc32.ChecksumIEEE(out[12:29]))
	return out
}

func TestDecodePNGErrors(t *testing.T) {
	dir := t.TempDir()
	good := encode(t, image.NewGray(image.Rect(0, 0, 4, 4)))
	huge := filepath.Join(dir, "huge.png")
	if err := os.WriteFile(huge, setIHDRSize(good, 100000, 100000), 0o644); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.png")
	if err := os.WriteFile(junk, []byte("not a png"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.png")
	if err := os.WriteFile(big, setIHDRSize(good, 16000, 16000), 0o644); err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(dir, "trunc.png")
	if err := os.WriteFile(trunc, good[:len(good)-20], 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want string }{
		{huge, "huge.png: PNG size 100000×100000 outside 1…16384"},
		{big, "big.png: PNG size 16000×16000 exceeds 67108864 pixels"},
		{junk, "junk.png: not a decodable PNG"},
		{trunc, "trunc.png: not a decodable PNG"},
		{filepath.Join(dir, "missing.png"), "missing.png: open"},
	}
	for _, tc := range tests {
		_, err := DecodePNGFile(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodePNGFile(%s) error %v, want it to contain %q", filepath.Base(tc.path), err, tc.want)
		}
	}
	ok := filepath.Join(dir, "ok.png")
	if err := os.WriteFile(ok, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := DecodePNGFile(ok); err != nil || m.W != 4 || m.H != 4 || !m.Empty() {
		t.Errorf("DecodePNGFile(ok) = %v, %v", m, err)
	}
}

func TestDecodeRLE(t *testing.T) {
	m, err := DecodeRLE("1 2 6 3", 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	wantMask(t, "rle", m, parse(t, "##..", ".###", "...."))
	m, err = DecodeRLE("  ", 2, 2)
	if err != nil || !m.Empty() || m.W != 2 || m.H != 2 {
		t.Errorf("blank cell: %v %v", m, err)
	}
	m, err = DecodeRLE("12 1\n1 0", 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	wantMask(t, "last pixel, zero run", m, parse(t, "....", "....", "...#"))
	tests := []struct{ cell, want string }{
		{"1 2 3", "3 numbers"},
		{"0 2", "run 1 (start 0, length 2) leaves"},
		{"5 2 12 2", "run 2 (start 12, length 2) leaves the 12-pixel image"},
		{"1 -1", "run 1 (start 1, length -1)"},
		{"1 x", `run 1 ("1" "x"): not integers`},
		{"1.5 2", "not integers"},
	}
	for _, tc := range tests {
		_, err := DecodeRLE(tc.cell, 3, 4)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeRLE(%q) error %v, want %q", tc.cell, err, tc.want)
		}
	}
	if _, err := DecodeRLE("", 0, 5); err == nil {
		t.Error("zero height accepted")
	}
	if _, err := DecodeRLE("", 100000, 100000); err == nil {
		t.Error("absurd size accepted")
	}
}

func TestRLERoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < 50; i++ {
		m := randMask(r, 1+r.IntN(40), 1+r.IntN(40), r.Float64())
		cell := EncodeRLE(m)
		back, err := DecodeRLE(cell, m.H, m.W)
		if err != nil || !Equal(back, m) {
			t.Fatalf("case %d: round trip failed (%v), cell %q", i, err, cell)
		}
	}
	if EncodeRLE(parse(t, "##..", ".###", "....")) != "1 2 6 3" {
		t.Error("EncodeRLE hand case")
	}
}

// TestEncodeFastPNG: the fast encoding keeps every pixel; only the
// compression differs.
func TestEncodeFastPNG(t *testing.T) {
	m := New(64, 48)
	for y := 0; y < 48; y++ {
		for x := 0; x < 64; x++ {
			m.Set(x, y, (x*7+y*3)%5 == 0 || (x > 20 && x < 40 && y > 10 && y < 30))
		}
	}
	var fast, def bytes.Buffer
	if err := EncodeFastPNG(&fast, m); err != nil {
		t.Fatal(err)
	}
	if err := EncodePNG(&def, m); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(fast.Bytes(), def.Bytes()) {
		t.Error("the fast encoding is byte-identical to the default one: no faster level used")
	}
	got, err := DecodePNG(&fast)
	if err != nil {
		t.Fatal(err)
	}
	if got.W != m.W || got.H != m.H || !bytes.Equal(got.Pix, m.Pix) {
		t.Error("the fast encoding does not decode to the same mask")
	}
}
