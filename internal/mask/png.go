package mask

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
)

// Limits on decoded mask images, checked on the header before any pixel
// buffer is allocated: at most MaxSide per side and MaxPixels in total
// (64 Mpx; native chest X-rays are around 9 Mpx).
const (
	MaxSide   = 16384
	MaxPixels = 1 << 26
)

// FromImage binarises an image by build.md §1: take the first channel as
// Go's decoder stores it (grey value, R, R of the palette colour, never
// premultiplied), and a pixel is on iff that value is ≥ half the maximum of
// the decoded type (128 for 8-bit types, 32768 for 16-bit). Alpha is ignored.
func FromImage(img image.Image) Mask {
	b := img.Bounds()
	W, H := b.Dx(), b.Dy()
	m := New(W, H)
	switch im := img.(type) {
	case *image.Gray:
		for y := 0; y < H; y++ {
			row := im.Pix[y*im.Stride : y*im.Stride+W]
			dst := m.Row(y)
			for x, v := range row {
				dst[x] = v >> 7
			}
		}
	case *image.Gray16:
		for y := 0; y < H; y++ {
			row := im.Pix[y*im.Stride : y*im.Stride+2*W]
			dst := m.Row(y)
			for x := range dst {
				dst[x] = row[2*x] >> 7 // high byte ≥ 128 ⇔ value ≥ 32768
			}
		}
	case *image.RGBA:
		firstByte(m, im.Pix, im.Stride, 4)
	case *image.NRGBA:
		firstByte(m, im.Pix, im.Stride, 4)
	case *image.RGBA64:
		firstByte(m, im.Pix, im.Stride, 8)
	case *image.NRGBA64:
		firstByte(m, im.Pix, im.Stride, 8)
	case *image.Paletted:
		on := make([]uint8, len(im.Palette))
		for i, c := range im.Palette {
			on[i] = paletteOn(c)
		}
		for y := 0; y < H; y++ {
			row := im.Pix[y*im.Stride : y*im.Stride+W]
			dst := m.Row(y)
			for x, v := range row {
				if int(v) < len(on) {
					dst[x] = on[v]
				}
			}
		}
	default:
		// Other image types (not produced by image/png): read the
		// non-premultiplied red sample at 16 bits.
		for y := 0; y < H; y++ {
			dst := m.Row(y)
			for x := range dst {
				c := color.NRGBA64Model.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA64)
				if c.R >= 0x8000 {
					dst[x] = 1
				}
			}
		}
	}
	return m
}

// firstByte binarises interleaved samples whose first byte is the high (or
// only) byte of the first channel: ≥ 128 there ⇔ ≥ half the type's maximum.
func firstByte(m Mask, pix []uint8, stride, bpp int) {
	for y := 0; y < m.H; y++ {
		row := pix[y*stride:]
		dst := m.Row(y)
		for x := range dst {
			dst[x] = row[x*bpp] >> 7
		}
	}
}

func paletteOn(c color.Color) uint8 {
	switch p := c.(type) {
	case color.RGBA:
		return p.R >> 7
	case color.NRGBA:
		return p.R >> 7
	case color.Gray:
		return p.Y >> 7
	}
	n := color.NRGBA64Model.Convert(c).(color.NRGBA64)
	return uint8(n.R >> 15)
}

// DecodePNG reads a PNG and binarises it (FromImage). Headers larger than
// MaxSide on either axis are refused before decoding.
func DecodePNG(r io.Reader) (Mask, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Mask{}, err
	}
	return decodePNGBytes(data)
}

func decodePNGBytes(data []byte) (Mask, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Mask{}, fmt.Errorf("not a readable PNG: %w", err)
	}
	if err := checkSize("PNG", cfg.Width, cfg.Height); err != nil {
		return Mask{}, err
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return Mask{}, fmt.Errorf("not a readable PNG: %w", err)
	}
	return FromImage(img), nil
}

// DecodePNGFile reads and binarises the PNG at path; errors name the file.
func DecodePNGFile(path string) (Mask, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Mask{}, fmt.Errorf("mask %s: %w", path, err)
	}
	m, err := decodePNGBytes(data)
	if err != nil {
		return Mask{}, fmt.Errorf("mask %s: %w", path, err)
	}
	return m, nil
}

// Gray returns m as an 8-bit grey image with values 0 and 255.
func (m Mask) Gray() *image.Gray {
	g := image.NewGray(image.Rect(0, 0, m.W, m.H))
	for i, v := range m.Pix {
		g.Pix[i] = -v // 0 → 0, 1 → 255
	}
	return g
}

// EncodePNG writes m as an 8-bit greyscale PNG (0/255) with image/png's
// default compression, the format of every mask the build writes.
func EncodePNG(w io.Writer, m Mask) error {
	return png.Encode(w, m.Gray())
}

func checkSize(what string, w, h int) error {
	if w <= 0 || h <= 0 || w > MaxSide || h > MaxSide {
		return fmt.Errorf("%s size %d×%d outside 1…%d per side", what, w, h, MaxSide)
	}
	if int64(w)*int64(h) > MaxPixels {
		return fmt.Errorf("%s size %d×%d exceeds %d pixels", what, w, h, MaxPixels)
	}
	return nil
}
