package mask

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"

	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/pngenc"
	"github.com/chexpercept/chexpercept/internal/safefile"
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

// DecodePNG reads a PNG of at most imagefile.MaxFileBytes and binarises
// it (FromImage). The header is checked against imagefile's size limit
// before decoding.
func DecodePNG(r io.Reader) (Mask, error) {
	data, err := io.ReadAll(io.LimitReader(r, imagefile.MaxFileBytes+1))
	if err != nil {
		return Mask{}, err
	}
	if len(data) > imagefile.MaxFileBytes {
		return Mask{}, fmt.Errorf("PNG larger than %d bytes", imagefile.MaxFileBytes)
	}
	return decodePNGBytes(data)
}

func decodePNGBytes(data []byte) (Mask, error) {
	img, err := imagefile.DecodePNG(data)
	if err != nil {
		return Mask{}, err
	}
	return FromImage(img), nil
}

// DecodePNGFile reads and binarises the PNG at path, a file inside a build
// directory (symbolic links are refused); errors name the file.
func DecodePNGFile(path string) (Mask, error) {
	data, err := safefile.ReadFile(path, imagefile.MaxFileBytes, safefile.NoFollow)
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

// fastEncoder is package pngenc at its fastest.
var fastEncoder = &pngenc.Encoder{Fastest: true}

// EncodeFastPNG writes m like EncodePNG but through package pngenc at its
// fastest (rows filtered with Up, klauspost/compress's fastest deflate):
// the same pixels in a larger file, for a fraction of the CPU time of
// image/png even at its fastest level.
func EncodeFastPNG(w io.Writer, m Mask) error {
	return fastEncoder.EncodeGray(w, m.Gray())
}
