package pngenc

import (
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"image"
	"image/color"
)

// Format is the pixel format of a stored PNG: the PNG colour type and bit
// depth its rows are written in.
type Format uint8

// The formats, from the narrowest. A wider format holds every image a
// narrower one holds, with the same pixels.
const (
	Gray   Format = iota // 8-bit greyscale (colour type 0)
	RGB                  // 8-bit RGB (colour type 2)
	RGBA                 // 8-bit RGB with alpha, not premultiplied (colour type 6)
	RGBA16               // 16-bit RGB with alpha, not premultiplied (colour type 6)
)

func (f Format) String() string {
	switch f {
	case Gray:
		return "8-bit grey"
	case RGB:
		return "8-bit RGB"
	case RGBA:
		return "8-bit RGBA"
	case RGBA16:
		return "16-bit RGBA"
	}
	return fmt.Sprintf("format %d", uint8(f))
}

// bytesPerPixel, colour type and bit depth of each format.
func (f Format) layout() (bpp int, colourType, depth byte) {
	switch f {
	case Gray:
		return 1, 0, 8
	case RGB:
		return 3, 2, 8
	case RGBA:
		return 4, 6, 8
	default:
		return 8, 6, 16
	}
}

// storedBlock is the length of every stored deflate block but the last:
// the largest a stored block holds.
const storedBlock = 65535

// StoredSize is the length in bytes of the stored PNG of a width×height
// image in format f: it depends on nothing else.
func StoredSize(f Format, width, height int) (int64, error) {
	if f > RGBA16 {
		return 0, fmt.Errorf("pngenc: unknown format %d", uint8(f))
	}
	if width <= 0 || height <= 0 {
		return 0, fmt.Errorf("pngenc: empty image (%dx%d)", width, height)
	}
	bpp, _, _ := f.layout()
	row := int64(width)*int64(bpp) + 1
	raw := row * int64(height)
	if row > 1<<31-1 || raw > 1<<31-1-1<<20 {
		return 0, fmt.Errorf("pngenc: image too large (%dx%d)", width, height)
	}
	blocks := (raw + storedBlock - 1) / storedBlock
	zlen := 2 + 5*blocks + raw + 4 // zlib header, block headers, rows, Adler-32
	return int64(len(signature)) + (12 + 13) + (12 + zlen) + 12, nil
}

// FormatOf is the narrowest format that holds every pixel of img exactly:
// Gray when every pixel is an opaque grey of 8 bits, RGB when every pixel
// is opaque and of 8 bits per channel, RGBA when every channel fits 8
// bits, RGBA16 otherwise.
func FormatOf(img image.Image) Format {
	b := img.Bounds()
	switch m := img.(type) {
	case *image.Gray:
		return Gray
	case *image.RGBA:
		return formatOf8(m.Pix, m.Stride, b, true)
	case *image.NRGBA:
		return formatOf8(m.Pix, m.Stride, b, false)
	}
	f := Gray
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.NRGBA64Model.Convert(img.At(x, y)).(color.NRGBA64)
			for _, v := range []uint16{c.R, c.G, c.B, c.A} {
				if v>>8 != v&0xff {
					return RGBA16
				}
			}
			switch {
			case c.A != 0xffff:
				f = max(f, RGBA)
			case c.R != c.G || c.G != c.B:
				f = max(f, RGB)
			}
		}
	}
	return f
}

// formatOf8 is FormatOf for 8-bit RGBA pixels. A premultiplied pixel that
// is not opaque is RGBA16: its colour is only exact at 16 bits.
func formatOf8(pix []byte, stride int, b image.Rectangle, premultiplied bool) Format {
	f := Gray
	for y := 0; y < b.Dy(); y++ {
		row := pix[y*stride : y*stride+4*b.Dx()]
		for i := 0; i < len(row); i += 4 {
			switch {
			case row[i+3] != 0xff:
				if premultiplied {
					return RGBA16
				}
				f = RGBA
			case f == Gray && (row[i] != row[i+1] || row[i+1] != row[i+2]):
				f = RGB
			}
		}
	}
	return f
}

// EncodeStored writes img as a PNG in format f whose image data is not
// compressed: one IDAT chunk holding a zlib stream of stored deflate
// blocks (BTYPE 00) of 65535 bytes each but the last, rows without
// filtering. Its length (StoredSize) and its chunks — signature, IHDR,
// one IDAT, IEND, nothing else — depend only on f and the image's size:
// two images of one size in one format differ only in their pixel bytes
// and the two checksums over them (Adler-32 and the IDAT CRC). f must hold
// img's pixels (FormatOf(img) <= f), or the error says so.
func EncodeStored(img image.Image, f Format) ([]byte, error) {
	b := img.Bounds()
	size, err := StoredSize(f, b.Dx(), b.Dy())
	if err != nil {
		return nil, err
	}
	if need := FormatOf(img); need > f {
		return nil, fmt.Errorf("pngenc: the image needs %s, not %s", need, f)
	}
	bpp, colourType, depth := f.layout()
	rowLen := b.Dx()*bpp + 1
	raw := make([]byte, rowLen*b.Dy())
	for y := 0; y < b.Dy(); y++ {
		putRow(raw[y*rowLen+1:(y+1)*rowLen], img, b.Min.Y+y, f) // filter byte 0: None
	}

	out := make([]byte, 0, size)
	out = append(out, signature...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(b.Dx()))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(b.Dy()))
	ihdr[8], ihdr[9] = depth, colourType // compression 0, filter 0, no interlace
	out = appendChunk(out, "IHDR", ihdr[:])

	blocks := (len(raw) + storedBlock - 1) / storedBlock
	zlen := 2 + 5*blocks + len(raw) + 4
	out = binary.BigEndian.AppendUint32(out, uint32(zlen))
	start := len(out)
	out = append(out, "IDAT"...)
	out = append(out, 0x78, 0x01) // deflate, 32 KiB window, no dictionary, fastest level
	for p := 0; p < len(raw); p += storedBlock {
		n := min(storedBlock, len(raw)-p)
		final := byte(0)
		if p+n == len(raw) {
			final = 1
		}
		out = append(out, final) // BFINAL, BTYPE 00, then the byte boundary
		out = binary.LittleEndian.AppendUint16(out, uint16(n))
		out = binary.LittleEndian.AppendUint16(out, ^uint16(n))
		out = append(out, raw[p:p+n]...)
	}
	out = binary.BigEndian.AppendUint32(out, adler32.Checksum(raw))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
	out = appendChunk(out, "IEND", nil)
	if int64(len(out)) != size {
		return nil, fmt.Errorf("pngenc: stored PNG of %d bytes, want %d", len(out), size)
	}
	return out, nil
}

// putRow writes row y of img into dst in format f.
func putRow(dst []byte, img image.Image, y int, f Format) {
	b := img.Bounds()
	switch m := img.(type) {
	case *image.Gray:
		src := m.Pix[m.PixOffset(b.Min.X, y):]
		switch f {
		case Gray:
			copy(dst, src[:b.Dx()])
			return
		case RGB:
			for x := 0; x < b.Dx(); x++ {
				dst[3*x], dst[3*x+1], dst[3*x+2] = src[x], src[x], src[x]
			}
			return
		}
	case *image.RGBA:
		if f <= RGB { // opaque: premultiplied and straight alpha agree
			src := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < b.Dx(); x++ {
				if f == Gray {
					dst[x] = src[4*x]
				} else {
					copy(dst[3*x:3*x+3], src[4*x:4*x+3])
				}
			}
			return
		}
	case *image.NRGBA:
		if f <= RGBA {
			src := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < b.Dx(); x++ {
				switch f {
				case Gray:
					dst[x] = src[4*x]
				case RGB:
					copy(dst[3*x:3*x+3], src[4*x:4*x+3])
				default:
					copy(dst[4*x:4*x+4], src[4*x:4*x+4])
				}
			}
			return
		}
	}
	for x := 0; x < b.Dx(); x++ {
		c := color.NRGBA64Model.Convert(img.At(b.Min.X+x, y)).(color.NRGBA64)
		switch f {
		case Gray:
			dst[x] = uint8(c.R >> 8)
		case RGB:
			dst[3*x], dst[3*x+1], dst[3*x+2] = uint8(c.R>>8), uint8(c.G>>8), uint8(c.B>>8)
		case RGBA:
			dst[4*x], dst[4*x+1], dst[4*x+2], dst[4*x+3] = uint8(c.R>>8), uint8(c.G>>8), uint8(c.B>>8), uint8(c.A>>8)
		default:
			for i, v := range []uint16{c.R, c.G, c.B, c.A} {
				binary.BigEndian.PutUint16(dst[8*x+2*i:], v)
			}
		}
	}
}

// appendChunk appends one PNG chunk: length, type, data, CRC-32 of type
// and data.
func appendChunk(out []byte, typ string, data []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	start := len(out)
	out = append(out, typ...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
}
