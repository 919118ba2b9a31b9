// Package render draws the builder's benchmark images (spec build.md §11,
// §4, §12): the grey CXR as RGB, the cyan mask overlay, the coloured point
// discs, the 2048×1024 review image, the option images built from mask
// names and default tokens, and labelled contact sheets for the inspect
// view.
//
// Every function writes the Pix slices of *image.RGBA directly (no
// image.At/Set in pixel loops) and uses per-grey-value lookup tables
// computed once from the spec's exact floating-point formula, so a full RR
// record's seven images cost little more than their PNG encoding. All output
// images are opaque; EncodePNG therefore writes 8-bit RGB (colour type 2).
package render

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"sync"

	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/pngenc"
)

// Cyan is the benchmark overlay colour; Red the review overlay colour.
var (
	Cyan = RGB{R: 0, G: 255, B: 255}
	Red  = RGB{R: 255, G: 0, B: 0}
)

// lut maps a grey value to the overlaid RGB value inside the mask.
type lut [256][3]uint8

// overlayLUT evaluates the §11 / §4 formula for every grey value v:
// t = v/255; o = float64(t·(1−α)) + float64(k·α) with k ∈ {0, 1} the
// channel's colour; clamp to [0, 1]; out = trunc(float64(o·255)). Each
// product is wrapped in float64() so the compiler never fuses it into an
// FMA (which would change the truncated result on some platforms).
func overlayLUT(alpha float64, c RGB) *lut {
	var t lut
	a := float64(1.0 - alpha)
	ks := [3]float64{float64(c.R) / 255, float64(c.G) / 255, float64(c.B) / 255}
	for v := 0; v < 256; v++ {
		tv := float64(v) / 255.0
		for ch := 0; ch < 3; ch++ {
			o := float64(tv*a) + float64(ks[ch]*alpha)
			o = max(0, min(1, o))
			t[v][ch] = uint8(math.Trunc(float64(o * 255.0)))
		}
	}
	return &t
}

var (
	cyanOnce, redOnce sync.Once
	cyanLUT, redLUT   *lut
)

func cyanTable() *lut {
	cyanOnce.Do(func() { cyanLUT = overlayLUT(0.5, Cyan) })
	return cyanLUT
}

func redTable() *lut {
	redOnce.Do(func() { redLUT = overlayLUT(0.33, Red) })
	return redLUT
}

// OverlayValue is the overlaid RGB value of grey value v inside the cyan
// mask (§11); outside the mask a pixel stays (v, v, v).
func OverlayValue(v uint8) RGB {
	e := cyanTable()[v]
	return RGB{R: e[0], G: e[1], B: e[2]}
}

// ReviewValue is the review overlay value of grey v inside the red mask (§4).
func ReviewValue(v uint8) RGB {
	e := redTable()[v]
	return RGB{R: e[0], G: e[1], B: e[2]}
}

// grey returns the grey image's pixels as a tight w·h slice.
func grey(g *image.Gray) (pix []uint8, w, h int) {
	b := g.Bounds()
	w, h = b.Dx(), b.Dy()
	if g.Stride == w && len(g.Pix) >= w*h {
		return g.Pix[:w*h], w, h
	}
	pix = make([]uint8, w*h)
	for y := 0; y < h; y++ {
		copy(pix[y*w:(y+1)*w], g.Pix[y*g.Stride:y*g.Stride+w])
	}
	return pix, w, h
}

// Gray2RGB returns the grey image as an opaque RGBA image with R = G = B.
func Gray2RGB(gray *image.Gray) *image.RGBA {
	b := gray.Bounds()
	img := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	Gray2RGBInto(img, gray)
	return img
}

// Gray2RGBInto is Gray2RGB writing into dst (same size, origin (0, 0)).
func Gray2RGBInto(dst *image.RGBA, gray *image.Gray) {
	src, w, h := grey(gray)
	if dst.Bounds() != image.Rect(0, 0, w, h) || dst.Stride != 4*w {
		panic(fmt.Sprintf("render.Gray2RGBInto: destination %v, image %dx%d", dst.Bounds(), w, h))
	}
	p := dst.Pix[:4*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint32(p[4*i:], uint32(v)*0x010101|0xff<<24)
	}
}

// Overlay returns the CXR with m overlaid in cyan at alpha 0.5 (§11, exact).
// m must have the image's size; a mismatch is a programming error.
func Overlay(gray *image.Gray, m mask.Mask) *image.RGBA {
	src, w, h := grey(gray)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	overlayInto(img.Pix, src, m, w, h, cyanTable())
	return img
}

// OverlayInto is Overlay writing into dst (reused across option images);
// dst must be w×h with its origin at (0, 0).
func OverlayInto(dst *image.RGBA, gray *image.Gray, m mask.Mask) {
	src, w, h := grey(gray)
	if dst.Bounds() != image.Rect(0, 0, w, h) || dst.Stride != 4*w {
		panic(fmt.Sprintf("render.OverlayInto: destination %v, image %dx%d", dst.Bounds(), w, h))
	}
	overlayInto(dst.Pix, src, m, w, h, cyanTable())
}

func overlayInto(dst, src []uint8, m mask.Mask, w, h int, t *lut) {
	if m.W != w || m.H != h || len(m.Pix) != w*h {
		panic(fmt.Sprintf("render: mask %dx%d on image %dx%d", m.W, m.H, w, h))
	}
	// One 32-bit store per pixel from two 256-entry tables (inside and
	// outside the mask); the slicing lets the compiler drop bounds checks.
	var in, out [256]uint32
	for v := 0; v < 256; v++ {
		e := t[v]
		in[v] = uint32(e[0]) | uint32(e[1])<<8 | uint32(e[2])<<16 | 0xff<<24
		out[v] = uint32(v) | uint32(v)<<8 | uint32(v)<<16 | 0xff<<24
	}
	mp := m.Pix[:len(src)]
	dst = dst[:4*len(src)]
	for i, v := range src {
		px := out[v]
		if mp[i] != 0 {
			px = in[v]
		}
		binary.LittleEndian.PutUint32(dst[4*i:], px)
	}
}

// ReviewImage is the positive review image of §4: 2W×H, the CXR on the
// left and the CXR with m overlaid in red at alpha 0.33 on the right.
func ReviewImage(gray *image.Gray, m mask.Mask) *image.RGBA {
	src, w, h := grey(gray)
	if m.W != w || m.H != h || len(m.Pix) != w*h {
		panic(fmt.Sprintf("render.ReviewImage: mask %dx%d on image %dx%d", m.W, m.H, w, h))
	}
	img := image.NewRGBA(image.Rect(0, 0, 2*w, h))
	t := redTable()
	for y := 0; y < h; y++ {
		row := img.Pix[y*img.Stride:]
		for x := 0; x < w; x++ {
			i := y*w + x
			v := src[i]
			j := 4 * x
			row[j], row[j+1], row[j+2], row[j+3] = v, v, v, 255
			k := 4 * (x + w)
			if m.Pix[i] != 0 {
				e := &t[v]
				row[k], row[k+1], row[k+2] = e[0], e[1], e[2]
			} else {
				row[k], row[k+1], row[k+2] = v, v, v
			}
			row[k+3] = 255
		}
	}
	return img
}

// pngEncoder shares compression buffers between encodes (safe for
// concurrent use); compression stays image/png's default.
var pngEncoder = &png.Encoder{CompressionLevel: png.DefaultCompression, BufferPool: &bufPool{}}

type bufPool struct{ p sync.Pool }

func (b *bufPool) Get() *png.EncoderBuffer {
	if v, ok := b.p.Get().(*png.EncoderBuffer); ok {
		return v
	}
	return nil
}
func (b *bufPool) Put(e *png.EncoderBuffer) { b.p.Put(e) }

// fastEncoder trades size for speed: about a third of the default's CPU
// time for files about a fifth larger, the same pixels.
var fastEncoder = &png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &bufPool{}}

// EncodePNG writes img with image/png's default compression. Opaque
// *image.RGBA images (all of this package's output) become 8-bit RGB PNGs.
func EncodePNG(w io.Writer, img image.Image) error { return encode(pngEncoder, w, img) }

// EncodeFastPNG writes img like EncodePNG but with image/png's fastest
// compression: for images shown to people (review packs, the review app).
func EncodeFastPNG(w io.Writer, img image.Image) error { return encode(fastEncoder, w, img) }

// bundleEncoder is chexpercept's own PNG writer (package pngenc: every
// row filtered with Up, deflate level 4).
var bundleEncoder = &pngenc.Encoder{}

// EncodeBundlePNG writes img as the build writes a bundle's images by
// default: an opaque *image.RGBA through package pngenc (about a quarter
// of EncodePNG's CPU time, files about 7 % larger, the same pixels),
// anything else like EncodePNG.
func EncodeBundlePNG(w io.Writer, img image.Image) error {
	if rgba, ok := img.(*image.RGBA); ok {
		if err := bundleEncoder.EncodeRGBA(w, rgba); !errors.Is(err, pngenc.ErrNotOpaque) {
			return err
		}
	}
	return EncodePNG(w, img)
}

// fastBundleEncoder is package pngenc with klauspost/compress's fastest
// deflate (pngenc.Encoder.Fastest).
var fastBundleEncoder = &pngenc.Encoder{Fastest: true}

// EncodeFastBundlePNG writes img as a build with bundle_png_compression:
// fast writes a bundle's images: an opaque *image.RGBA through package
// pngenc at its fastest (about a third of EncodeBundlePNG's CPU time,
// files about 13 % larger, the same pixels; image/png's fastest level
// takes almost four times as long for files about as large), anything
// else like EncodeFastPNG.
func EncodeFastBundlePNG(w io.Writer, img image.Image) error {
	if rgba, ok := img.(*image.RGBA); ok {
		if err := fastBundleEncoder.EncodeRGBA(w, rgba); !errors.Is(err, pngenc.ErrNotOpaque) {
			return err
		}
	}
	return EncodeFastPNG(w, img)
}

func encode(enc *png.Encoder, w io.Writer, img image.Image) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := enc.Encode(bw, img); err != nil {
		return err
	}
	return bw.Flush()
}
