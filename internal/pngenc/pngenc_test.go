package pngenc

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/chexpercept/chexpercept/internal/goldentest"
	"github.com/chexpercept/chexpercept/internal/imagefile"
)

// testImage is opaque and deterministic: a radiograph-like gradient with
// noise and, where coloured is set, coloured dots as overlays draw them.
func testImage(r image.Rectangle, seed uint64, coloured bool) *image.RGBA {
	img := image.NewRGBA(r)
	rng := rand.New(rand.NewPCG(seed, 1))
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			v := uint8((x*3+y*5)/4 + rng.IntN(7))
			c := color.RGBA{v, v, v, 255}
			if coloured && rng.IntN(50) == 0 {
				c = color.RGBA{255, uint8(rng.IntN(256)), 0, 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}

func TestRoundTrip(t *testing.T) {
	sub := testImage(image.Rect(0, 0, 40, 30), 9, true).SubImage(image.Rect(5, 7, 38, 29)).(*image.RGBA)
	for _, tc := range []struct {
		name  string
		img   *image.RGBA
		level int
	}{
		{"1x1", testImage(image.Rect(0, 0, 1, 1), 1, false), 0},
		{"odd sizes", testImage(image.Rect(0, 0, 17, 5), 2, true), 1},
		{"offset bounds", testImage(image.Rect(-3, 4, 20, 19), 3, true), 9},
		{"sub-image with a wider stride", sub, 4},
		{"wider than one IDAT chunk", testImage(image.Rect(0, 0, 1024, 64), 4, true), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := (&Encoder{Level: tc.level}).EncodeRGBA(&buf, tc.img); err != nil {
				t.Fatal(err)
			}
			if err := imagefile.VerifyPNG(buf.Bytes()); err != nil {
				t.Fatalf("VerifyPNG: %v", err)
			}
			got, err := png.Decode(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatalf("image/png: %v", err)
			}
			b := tc.img.Bounds()
			if got.Bounds().Dx() != b.Dx() || got.Bounds().Dy() != b.Dy() {
				t.Fatalf("size %v, want %v", got.Bounds(), b)
			}
			if _, ok := got.(*image.RGBA); !ok {
				t.Fatalf("decoded as %T, want 8-bit RGB (decoded as *image.RGBA)", got)
			}
			for y := 0; y < b.Dy(); y++ {
				for x := 0; x < b.Dx(); x++ {
					if w, g := tc.img.RGBAAt(b.Min.X+x, b.Min.Y+y), got.(*image.RGBA).RGBAAt(x, y); w != g {
						t.Fatalf("pixel (%d,%d) = %v, want %v", x, y, g, w)
					}
				}
			}
		})
	}
}

// TestGolden pins the bytes: a change to the filter, the level or the
// chunking changes every bundle image a build writes, so it must be
// deliberate (go test -update, and say so in docs/performance.md).
func TestGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := (&Encoder{}).EncodeRGBA(&buf, testImage(image.Rect(0, 0, 96, 64), 7, true)); err != nil {
		t.Fatal(err)
	}
	goldentest.Check(t, "testdata/gradient-96x64.png", buf.Bytes())
}

// TestDeterministic: concurrent encodes through one Encoder, reusing its
// pooled state, give the same bytes as a lone encode.
func TestDeterministic(t *testing.T) {
	img := testImage(image.Rect(0, 0, 300, 200), 5, true)
	small := testImage(image.Rect(0, 0, 7, 3), 6, false)
	enc := &Encoder{}
	want := func(img *image.RGBA) []byte {
		var b bytes.Buffer
		if err := (&Encoder{}).EncodeRGBA(&b, img); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	wantBig, wantSmall := want(img), want(small)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			in, w := img, wantBig
			if i%2 == 1 { // alternate sizes so pooled buffers are reused at both
				in, w = small, wantSmall
			}
			var b bytes.Buffer
			if err := enc.EncodeRGBA(&b, in); err != nil {
				t.Error(err)
				return
			}
			if !bytes.Equal(b.Bytes(), w) {
				t.Errorf("encode %d differs from a lone encode", i)
			}
		})
	}
	wg.Wait()
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after < len(p) {
		return 0, errors.New("disk full")
	}
	f.after -= len(p)
	return len(p), nil
}

func TestErrors(t *testing.T) {
	translucent := testImage(image.Rect(0, 0, 8, 8), 1, false)
	translucent.Pix[4*9+3] = 254
	big := testImage(image.Rect(0, 0, 512, 512), 8, true)
	for _, tc := range []struct {
		name    string
		enc     *Encoder
		img     *image.RGBA
		w       *failWriter
		want    string
		wantErr error
	}{
		{"not opaque", &Encoder{}, translucent, &failWriter{after: 1 << 30}, "", ErrNotOpaque},
		{"level too high", &Encoder{Level: 10}, big, &failWriter{after: 1 << 30}, "pngenc: deflate level 10 is outside 1..9", nil},
		{"negative level", &Encoder{Level: -1}, big, &failWriter{after: 1 << 30}, "pngenc: deflate level -1 is outside 1..9", nil},
		{"empty", &Encoder{}, image.NewRGBA(image.Rect(0, 0, 0, 5)), &failWriter{after: 1 << 30}, "pngenc: empty image (0x5)", nil},
		{"writer fails at once", &Encoder{}, big, &failWriter{after: 0}, "disk full", nil},
		{"writer fails midway", &Encoder{}, big, &failWriter{after: 100 << 10}, "disk full", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := tc.w.after
			err := tc.enc.EncodeRGBA(tc.w, tc.img)
			switch {
			case err == nil:
				t.Fatal("no error")
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			case tc.want != "" && err.Error() != tc.want:
				t.Fatalf("error %q, want %q", err, tc.want)
			}
			if tc.wantErr == ErrNotOpaque && tc.w.after != start {
				t.Error("bytes were written before the refusal")
			}
		})
	}
}

// BenchmarkEncode compares this encoder with image/png on a 1024² image
// like a bundle overlay (one core; see docs/performance.md).
func BenchmarkEncode(b *testing.B) {
	img := testImage(image.Rect(0, 0, 1024, 1024), 11, true)
	for _, bc := range []struct {
		name string
		enc  func(*bytes.Buffer) error
	}{
		{"pngenc-level4", func(w *bytes.Buffer) error { return (&Encoder{}).EncodeRGBA(w, img) }},
		{"pngenc-fastest", func(w *bytes.Buffer) error { return (&Encoder{Fastest: true}).EncodeRGBA(w, img) }},
		{"image-png-default", func(w *bytes.Buffer) error { return png.Encode(w, img) }},
		{"image-png-bestspeed", func(w *bytes.Buffer) error {
			return (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(w, img)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := bc.enc(&buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "bytes/file")
		})
	}
}

// TestReuseAfterFailure: an encode that failed half way leaves no state
// behind in the pool; the next encode writes the bytes a new Encoder does.
func TestReuseAfterFailure(t *testing.T) {
	img := testImage(image.Rect(0, 0, 512, 512), 8, true)
	var want bytes.Buffer
	if err := (&Encoder{}).EncodeRGBA(&want, img); err != nil {
		t.Fatal(err)
	}
	enc := &Encoder{}
	for range 3 {
		if err := enc.EncodeRGBA(&failWriter{after: 100 << 10}, img); err == nil {
			t.Fatal("no error from a failing writer")
		}
		var got bytes.Buffer
		if err := enc.EncodeRGBA(&got, img); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatal("the encode after a failure differs from a fresh encoder's")
		}
	}
}

// TestFastestAndGray: the fastest setting (klauspost/compress) and the
// greyscale writer give the same pixels as their input, in PNGs that
// VerifyPNG and image/png accept, the same bytes on every encode through
// one Encoder, and the fastest setting other bytes than level 4's.
func TestFastestAndGray(t *testing.T) {
	rgba := testImage(image.Rect(2, 3, 300, 203), 12, true)
	gray := image.NewGray(image.Rect(-1, 0, 257, 130))
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i*7/5 + i%3)
	}
	for _, enc := range []*Encoder{{}, {Fastest: true}, {Level: 9, Fastest: true}, {Level: 1}} {
		for _, tc := range []struct {
			name   string
			img    image.Image
			encode func(*bytes.Buffer) error
		}{
			{"rgb", rgba, func(b *bytes.Buffer) error { return enc.EncodeRGBA(b, rgba) }},
			{"gray", gray, func(b *bytes.Buffer) error { return enc.EncodeGray(b, gray) }},
		} {
			var first []byte
			for i := range 2 {
				var buf bytes.Buffer
				if err := tc.encode(&buf); err != nil {
					t.Fatalf("%+v %s: %v", enc, tc.name, err)
				}
				if err := imagefile.VerifyPNG(buf.Bytes()); err != nil {
					t.Fatalf("%+v %s: VerifyPNG: %v", enc, tc.name, err)
				}
				if i == 0 {
					first = buf.Bytes()
					continue
				}
				if !bytes.Equal(first, buf.Bytes()) {
					t.Errorf("%+v %s: the second encode differs from the first", enc, tc.name)
				}
			}
			got, err := png.Decode(bytes.NewReader(first))
			if err != nil {
				t.Fatalf("%+v %s: image/png: %v", enc, tc.name, err)
			}
			b := tc.img.Bounds()
			if got.Bounds().Size() != b.Size() {
				t.Fatalf("%+v %s: size %v, want %v", enc, tc.name, got.Bounds(), b)
			}
			if _, isGray := got.(*image.Gray); isGray != (tc.name == "gray") {
				t.Errorf("%+v %s: decoded as %T", enc, tc.name, got)
			}
			for y := 0; y < b.Dy(); y++ {
				for x := 0; x < b.Dx(); x++ {
					if w, g := color.RGBAModel.Convert(tc.img.At(b.Min.X+x, b.Min.Y+y)), color.RGBAModel.Convert(got.At(x, y)); w != g {
						t.Fatalf("%+v %s: pixel (%d,%d) = %v, want %v", enc, tc.name, x, y, g, w)
					}
				}
			}
		}
	}
	var std, fast bytes.Buffer
	if err := (&Encoder{}).EncodeRGBA(&std, rgba); err != nil {
		t.Fatal(err)
	}
	if err := (&Encoder{Fastest: true}).EncodeRGBA(&fast, rgba); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(std.Bytes(), fast.Bytes()) {
		t.Error("the fastest setting writes level 4's bytes")
	}
}
