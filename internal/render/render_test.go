package render

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/goldentest"
	"github.com/chexpercept/chexpercept/internal/mask"
)

// The spec states the exact inside-mask result in closed form with a list
// of exceptions caused by floating-point truncation (build.md §11).
func TestOverlayValueAll256(t *testing.T) {
	exceptions := map[int]bool{73: true, 105: true, 137: true, 139: true, 169: true, 171: true, 201: true, 203: true, 233: true, 235: true}
	for v := 0; v < 256; v++ {
		wantR := uint8(v / 2)
		wantGB := (v + 255) / 2
		if exceptions[v] {
			wantGB--
		}
		got := OverlayValue(uint8(v))
		if got.R != wantR || int(got.G) != wantGB || int(got.B) != wantGB {
			t.Errorf("v=%d: got %v, want (%d,%d,%d)", v, got, wantR, wantGB, wantGB)
		}
	}
	for _, tc := range []struct {
		v    uint8
		want RGB
	}{{73, RGB{R: 36, G: 163, B: 163}}, {125, RGB{R: 62, G: 190, B: 190}}, {0, RGB{R: 0, G: 127, B: 127}}, {255, RGB{R: 127, G: 255, B: 255}}} {
		if got := OverlayValue(tc.v); got != tc.want {
			t.Errorf("v=%d: got %v, want %v", tc.v, got, tc.want)
		}
	}
}

// The cyan overlay changes every grey value it covers, so option images
// over one CXR are the same picture only when their masks cover the same
// pixels: the builder's distinct-distractor rule (qagen) relies on it.
func TestOverlayChangesEveryGrey(t *testing.T) {
	for v := 0; v < 256; v++ {
		if got := OverlayValue(uint8(v)); got == (RGB{R: uint8(v), G: uint8(v), B: uint8(v)}) {
			t.Errorf("grey %d is unchanged by the overlay", v)
		}
	}
}

// overlayTable renders a LUT as text, one line per grey value.
func overlayTable(f func(uint8) RGB) string {
	var b strings.Builder
	for v := 0; v < 256; v++ {
		c := f(uint8(v))
		fmt.Fprintf(&b, "%d %d %d %d\n", v, c.R, c.G, c.B)
	}
	return b.String()
}

func TestOverlayGoldenTables(t *testing.T) {
	goldentest.Check(t, "testdata/overlay_cyan.golden.txt", []byte(overlayTable(OverlayValue)))
	goldentest.Check(t, "testdata/review_red.golden.txt", []byte(overlayTable(ReviewValue)))
}

// gradient is a w×h grey image whose pixel i has value i mod 256.
func gradient(w, h int) *image.Gray {
	g := image.NewGray(image.Rect(0, 0, w, h))
	for i := range g.Pix {
		g.Pix[i] = uint8(i % 256)
	}
	return g
}

func TestOverlayImage(t *testing.T) {
	g := gradient(256, 2)
	m := mask.New(256, 2)
	for x := 0; x < 256; x++ {
		m.Pix[x] = 1 // first row inside, second row outside
	}
	img := Overlay(g, m)
	for x := 0; x < 256; x++ {
		in := OverlayValue(uint8(x))
		o := img.PixOffset(x, 0)
		if got := (RGB{R: img.Pix[o], G: img.Pix[o+1], B: img.Pix[o+2]}); got != in || img.Pix[o+3] != 255 {
			t.Fatalf("inside x=%d: got %v a=%d, want %v", x, got, img.Pix[o+3], in)
		}
		o = img.PixOffset(x, 1)
		if img.Pix[o] != uint8(x) || img.Pix[o+1] != uint8(x) || img.Pix[o+2] != uint8(x) || img.Pix[o+3] != 255 {
			t.Fatalf("outside x=%d: got %v", x, img.Pix[o:o+4])
		}
	}
	// A sub-image (non-tight stride) gives the same result.
	big := gradient(300, 4)
	sub := big.SubImage(image.Rect(10, 1, 266, 3)).(*image.Gray)
	want := Overlay(sub, m)
	ref := image.NewGray(image.Rect(0, 0, 256, 2))
	for y := 0; y < 2; y++ {
		copy(ref.Pix[y*256:], sub.Pix[y*sub.Stride:y*sub.Stride+256])
	}
	if !bytes.Equal(Overlay(ref, m).Pix, want.Pix) {
		t.Error("sub-image overlay differs")
	}
}

func TestReviewImage(t *testing.T) {
	g := gradient(256, 1)
	m := mask.New(256, 1)
	for x := 0; x < 256; x += 2 {
		m.Pix[x] = 1
	}
	img := ReviewImage(g, m)
	if img.Bounds() != image.Rect(0, 0, 512, 1) {
		t.Fatalf("bounds %v", img.Bounds())
	}
	for x := 0; x < 256; x++ {
		l := img.Pix[4*x : 4*x+4]
		if l[0] != uint8(x) || l[1] != uint8(x) || l[2] != uint8(x) || l[3] != 255 {
			t.Fatalf("left x=%d: %v", x, l)
		}
		r := img.Pix[4*(x+256) : 4*(x+256)+4]
		want := RGB{R: uint8(x), G: uint8(x), B: uint8(x)}
		if x%2 == 0 {
			want = ReviewValue(uint8(x))
		}
		if (RGB{R: r[0], G: r[1], B: r[2]}) != want || r[3] != 255 {
			t.Fatalf("right x=%d: %v want %v", x, r, want)
		}
	}
	// Spot checks of the alpha-0.33 formula, values from Python floats
	// (math.trunc((v/255.0*(1.0-0.33) + k*0.33)*255.0)); v=100 truncates to 66.
	for _, tc := range []struct {
		v    uint8
		want RGB
	}{{0, RGB{R: 84, G: 0, B: 0}}, {255, RGB{R: 255, G: 170, B: 170}}, {100, RGB{R: 151, G: 66, B: 66}}} {
		if got := ReviewValue(tc.v); got != tc.want {
			t.Errorf("ReviewValue(%d) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestEncodePNGIsRGB(t *testing.T) {
	img := Gray2RGB(gradient(64, 64))
	for _, tc := range []struct {
		name   string
		encode func(io.Writer, image.Image) error
	}{{"EncodePNG", EncodePNG}, {"EncodeFastPNG", EncodeFastPNG}, {"EncodeBundlePNG", EncodeBundlePNG}} {
		var buf bytes.Buffer
		if err := tc.encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		// IHDR data starts at byte 16: width(4) height(4) depth(1) colour type(1).
		if string(b[12:16]) != "IHDR" || b[24] != 8 || b[25] != 2 {
			t.Fatalf("%s: IHDR %q depth %d colour type %d, want 8-bit RGB (2)", tc.name, b[12:16], b[24], b[25])
		}
		dec, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 64*64; i += 97 {
			r, g, bb, a := dec.At(i%64, i/64).RGBA()
			v := uint32(i%256) * 0x101
			if r != v || g != v || bb != v || a != 0xffff {
				t.Fatalf("%s: pixel %d decoded as %d %d %d %d", tc.name, i, r, g, bb, a)
			}
		}
	}
}

// TestEncodeBundlePNGFallsBack: what package pngenc cannot write as RGB
// (a translucent pixel, another image type) goes to image/png instead of
// losing its alpha or failing the build.
func TestEncodeBundlePNGFallsBack(t *testing.T) {
	translucent := Gray2RGB(gradient(16, 16))
	translucent.Pix[3] = 128
	for _, tc := range []struct {
		name       string
		img        image.Image
		colourType byte
	}{
		{"translucent RGBA", translucent, 6},
		{"gray", gradient(16, 16), 0},
	} {
		var buf bytes.Buffer
		if err := EncodeBundlePNG(&buf, tc.img); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ct := buf.Bytes()[25]; ct != tc.colourType {
			t.Errorf("%s: colour type %d, want %d", tc.name, ct, tc.colourType)
		}
		dec, err := png.Decode(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r, _, _, a := dec.At(0, 0).RGBA(); r>>8 != 0 || (tc.colourType == 6 && a>>8 != 128) {
			t.Errorf("%s: pixel (0,0) decoded as r=%d a=%d", tc.name, r>>8, a>>8)
		}
	}
}

func TestPalette(t *testing.T) {
	want := []struct {
		name string
		c    RGB
	}{{"red", RGB{R: 255, G: 0, B: 0}}, {"orange", RGB{R: 255, G: 128, B: 0}}, {"yellow", RGB{R: 255, G: 255, B: 0}}, {"green", RGB{R: 0, G: 255, B: 0}},
		{"blue", RGB{R: 0, G: 0, B: 255}}, {"purple", RGB{R: 128, G: 0, B: 128}}, {"pink", RGB{R: 255, G: 191, B: 204}}, {"brown", RGB{R: 153, G: 77, B: 0}}}
	for k := 1; k <= 17; k++ {
		w := want[(k-1)%8]
		c, ok := PaletteColour(PaletteName(k))
		if PaletteName(k) != w.name || !ok || c != w.c {
			t.Errorf("option %d: %s %v, want %s %v", k, PaletteName(k), c, w.name, w.c)
		}
	}
	if _, ok := PaletteColour("None"); ok {
		t.Error("None is not a colour")
	}
}

func TestDiscCoverage(t *testing.T) {
	cov := discCoverage()
	c := func(dx, dy int) [2]float64 { return cov[dy+discReach][dx+discReach] }
	for _, tc := range []struct {
		dx, dy int
		f, g   float64
	}{
		{0, 0, 1, 0},    // centre: filled, no ring
		{10, 0, 1, 0},   // well inside
		{17, 0, 0, 0},   // outside both
		{0, -17, 0, 0},  // outside both
		{15, 0, 0.5, 1}, // on the radius: half the samples inside, all on the ring
		{0, 15, 0.5, 1},
	} {
		if got := c(tc.dx, tc.dy); got != [2]float64{tc.f, tc.g} {
			t.Errorf("offset (%d,%d): coverage %v, want [%v %v]", tc.dx, tc.dy, got, tc.f, tc.g)
		}
	}
	// Symmetry under the 8 reflections of the square.
	for dy := -discReach; dy <= discReach; dy++ {
		for dx := -discReach; dx <= discReach; dx++ {
			v := c(dx, dy)
			if c(-dx, dy) != v || c(dx, -dy) != v || c(dy, dx) != v {
				t.Fatalf("coverage not symmetric at (%d,%d)", dx, dy)
			}
		}
	}
}

func pt(x, y int) *[2]int { return &[2]int{x, y} }

func TestDrawPoints(t *testing.T) {
	g := image.NewGray(image.Rect(0, 0, 80, 48))
	for i := range g.Pix {
		g.Pix[i] = 90
	}
	img := Gray2RGB(g)
	opts := []benchmark.PointOption{
		{Point: pt(20, 24), Color: "red"},
		{Point: pt(44, 24), Color: "pink"}, // overlaps red: drawn on top
		{Point: pt(78, 2), Color: "brown"}, // clipped at the corner
		{Point: nil, Color: "None"},
	}
	if err := DrawPoints(img, opts); err != nil {
		t.Fatal(err)
	}
	at := func(x, y int) RGB {
		o := img.PixOffset(x, y)
		return RGB{R: img.Pix[o], G: img.Pix[o+1], B: img.Pix[o+2]}
	}
	if got := at(20, 24); got != (RGB{R: 255, G: 0, B: 0}) {
		t.Errorf("red centre %v", got)
	}
	if got := at(44, 24); got != (RGB{R: 255, G: 191, B: 204}) {
		t.Errorf("pink centre %v", got)
	}
	if got := at(35, 24); got != (RGB{R: 255, G: 191, B: 204}) { // inside both discs: pink on top
		t.Errorf("overlap pixel %v", got)
	}
	if got := at(20, 24-15); got.G < 200 || got.B < 200 { // on the ring: nearly white
		t.Errorf("ring pixel %v", got)
	}
	if got := at(20, 2); got != (RGB{R: 90, G: 90, B: 90}) {
		t.Errorf("background pixel %v", got)
	}
	for i := 3; i < len(img.Pix); i += 4 {
		if img.Pix[i] != 255 {
			t.Fatal("alpha changed")
		}
	}
	var buf bytes.Buffer
	if err := EncodePNG(&buf, img); err != nil {
		t.Fatal(err)
	}
	goldentest.Check(t, "testdata/discs.golden.png", buf.Bytes())

	if err := DrawPoints(img, []benchmark.PointOption{{Point: pt(1, 1), Color: "cyan"}}); err == nil || !strings.Contains(err.Error(), "cyan") {
		t.Errorf("unknown colour: err = %v", err)
	}
}

func TestTokens(t *testing.T) {
	sq := func(x0, y0, x1, y1 int) mask.Mask {
		m := mask.New(32, 32)
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				m.Pix[y*32+x] = 1
			}
		}
		return m
	}
	a, b := sq(4, 4, 10, 10), sq(20, 20, 28, 28)
	right, left := sq(0, 0, 16, 32), sq(16, 0, 32, 32)
	tok := &Tokens{
		Masks:     map[string]mask.Mask{"A": a, "B": b},
		Before:    []string{"A", "B"},
		Lungs:     Lungs{ChexRight: right, ChexLeft: left},
		MorphSize: 5, MorphIterations: 3,
	}
	keep, err := tok.Mask(TokenKeep)
	if err != nil || !mask.Equal(keep, mask.Or(a, b)) {
		t.Fatalf("keep: %v", err)
	}
	// Square(5) grows by 2 px per side and iteration: A (x,y 4..9) → 0..15
	// clipped, B (20..27) → 14..31 clipped; they share 14..15 × 14..15.
	dil, _ := tok.Mask(TokenDilated)
	if dil.Count() != 16*16+18*18-4 || !mask.Equal(dil, mask.Dilate(keep, mask.Square(5), 3)) {
		t.Errorf("dilated token: %d px", dil.Count())
	}
	// Eroding 6 px per side removes both squares.
	ero, _ := tok.Mask(TokenEroded)
	if ero.Count() != 0 {
		t.Errorf("eroded token: %d px", ero.Count())
	}
	tok2 := &Tokens{Masks: map[string]mask.Mask{"S": sq(2, 2, 30, 30)}, Before: []string{"S"}, MorphSize: 5, MorphIterations: 3}
	if e2, _ := tok2.Mask(TokenEroded); e2.Count() != 16*16 {
		t.Errorf("eroded 28×28 square: %d px, want 16×16", e2.Count())
	}
	u, err := tok.Union([]string{"A", LungToken("left", "chex")})
	if err != nil || !mask.Equal(u, mask.Or(a, left)) {
		t.Errorf("union: %v", err)
	}
	if _, err := tok.Mask(LungToken("left", "cxas")); err == nil {
		t.Error("cxas token without a secondary lung source must fail")
	}
	for _, bad := range []string{"C", "default_middle"} {
		if _, err := tok.Mask(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
	if _, err := tok.Union(nil); err == nil {
		t.Error("empty union must fail")
	}
}
