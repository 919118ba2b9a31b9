package pngenc

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/imagefile"
)

// storedInputs are images of every kind image/png decodes to, with the
// narrowest format that holds each.
func storedInputs() []struct {
	name string
	img  image.Image
	want Format
} {
	r := image.Rect(0, 0, 37, 11)
	rng := rand.New(rand.NewPCG(3, 4))
	gray := image.NewGray(r)
	greyRGBA, rgba, nrgba, opaqueNRGBA := image.NewRGBA(r), image.NewRGBA(r), image.NewNRGBA(r), image.NewNRGBA(r)
	gray16, deep := image.NewGray16(r), image.NewNRGBA64(r)
	pal := image.NewPaletted(r, color.Palette{color.NRGBA{0, 0, 0, 255}, color.NRGBA{0, 200, 200, 255}, color.NRGBA{9, 9, 9, 255}})
	for y := 0; y < r.Dy(); y++ {
		for x := 0; x < r.Dx(); x++ {
			v := uint8(rng.IntN(256))
			gray.SetGray(x, y, color.Gray{v})
			greyRGBA.SetRGBA(x, y, color.RGBA{v, v, v, 255})
			rgba.SetRGBA(x, y, color.RGBA{v, v / 2, 255 - v, 255})
			nrgba.SetNRGBA(x, y, color.NRGBA{v, 3, 200, uint8(rng.IntN(256))})
			opaqueNRGBA.SetNRGBA(x, y, color.NRGBA{v, v, v, 255})
			gray16.SetGray16(x, y, color.Gray16{uint16(v) * 0x101})
			deep.SetNRGBA64(x, y, color.NRGBA64{uint16(rng.IntN(65536)), 1, 2, 0xffff})
			pal.SetColorIndex(x, y, uint8(rng.IntN(3)))
		}
	}
	// A sub-image with offset bounds and a wider stride.
	sub := rgba.SubImage(image.Rect(3, 2, 30, 9))
	return []struct {
		name string
		img  image.Image
		want Format
	}{
		{"grey", gray, Gray},
		{"grey as RGBA", greyRGBA, Gray},
		{"colour", rgba, RGB},
		{"colour sub-image", sub, RGB},
		{"alpha", nrgba, RGBA},
		{"opaque grey NRGBA", opaqueNRGBA, Gray},
		{"16-bit grey of 8-bit values", gray16, Gray},
		{"16-bit colour", deep, RGBA16},
		{"palette", pal, RGB},
	}
}

// TestStoredRoundTrip: every kind of image, in its own format and in every
// wider one, is written at exactly StoredSize bytes as a PNG that the
// project's verifier accepts and image/png decodes to the same colours.
func TestStoredRoundTrip(t *testing.T) {
	for _, tc := range storedInputs() {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatOf(tc.img); got != tc.want {
				t.Fatalf("FormatOf = %s, want %s", got, tc.want)
			}
			for f := tc.want; f <= RGBA16; f++ {
				out, err := EncodeStored(tc.img, f)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				b := tc.img.Bounds()
				if size, _ := StoredSize(f, b.Dx(), b.Dy()); int64(len(out)) != size {
					t.Errorf("%s: %d bytes, StoredSize %d", f, len(out), size)
				}
				if err := imagefile.VerifyPNG(out); err != nil {
					t.Fatalf("%s: VerifyPNG: %v", f, err)
				}
				got, err := png.Decode(bytes.NewReader(out))
				if err != nil {
					t.Fatalf("%s: image/png: %v", f, err)
				}
				if got.Bounds().Dx() != b.Dx() || got.Bounds().Dy() != b.Dy() {
					t.Fatalf("%s: size %v, want %v", f, got.Bounds(), b)
				}
				for y := 0; y < b.Dy(); y++ {
					for x := 0; x < b.Dx(); x++ {
						w := color.NRGBA64Model.Convert(tc.img.At(b.Min.X+x, b.Min.Y+y))
						g := color.NRGBA64Model.Convert(got.At(x, y))
						if w != g {
							t.Fatalf("%s: pixel (%d,%d) = %v, want %v", f, x, y, g, w)
						}
					}
				}
			}
		})
	}
}

// TestStoredLayoutIgnoresPixels: two images of one size and format — one
// flat, one noise, the pair whose compressed files differ most — give
// files of one length with the same chunks at the same offsets, the same
// IHDR and IEND and the same zlib and block headers: they differ only in
// pixel bytes and the two checksums over them.
func TestStoredLayoutIgnoresPixels(t *testing.T) {
	for _, size := range [][2]int{{1, 1}, {1024, 64}, {300, 219}, {1024, 1024}} {
		r := image.Rect(0, 0, size[0], size[1])
		flat, noise := image.NewRGBA(r), image.NewRGBA(r)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range flat.Pix {
			flat.Pix[i] = 255
			noise.Pix[i] = uint8(rng.IntN(256))
			if i%4 == 3 {
				noise.Pix[i] = 255
			}
		}
		a, err := EncodeStored(flat, RGB)
		if err != nil {
			t.Fatal(err)
		}
		b, err := EncodeStored(noise, RGB)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != len(b) {
			t.Fatalf("%v: %d and %d bytes", size, len(a), len(b))
		}
		ca, cb := chunks(t, a), chunks(t, b)
		if strings.Join(ca.layout, " ") != "IHDR:13 IDAT IEND:0" || strings.Join(ca.layout, " ") != strings.Join(cb.layout, " ") {
			t.Fatalf("%v: chunks %v and %v", size, ca.layout, cb.layout)
		}
		// Every byte that differs is a pixel byte or a checksum.
		pixel := pixelOffsets(t, a, size[0]*3, size[1])
		for i := range a {
			if a[i] != b[i] && !pixel[i] {
				t.Fatalf("%v: byte %d differs and is no pixel byte", size, i)
			}
		}
	}
}

type chunkList struct {
	layout []string // "TYPE:LEN", or "IDAT" alone
}

func chunks(t *testing.T, data []byte) chunkList {
	t.Helper()
	var c chunkList
	for p := 8; p < len(data); {
		n := int(binary.BigEndian.Uint32(data[p:]))
		typ := string(data[p+4 : p+8])
		if typ == "IDAT" {
			c.layout = append(c.layout, typ)
		} else {
			c.layout = append(c.layout, typ+":"+strconv.Itoa(n))
		}
		p += 12 + n
	}
	return c
}

// pixelOffsets marks the bytes of data that may depend on the pixels: the
// row bytes inside the stored blocks, the Adler-32 and the IDAT's CRC.
func pixelOffsets(t *testing.T, data []byte, rowBytes, rows int) map[int]bool {
	t.Helper()
	m := map[int]bool{}
	p := 8 + 25 // signature, IHDR
	n := int(binary.BigEndian.Uint32(data[p:]))
	z := p + 8
	q := z + 2
	raw := (rowBytes + 1) * rows
	pos := 0
	for pos < raw {
		ln := int(binary.LittleEndian.Uint16(data[q+1:]))
		for i := 0; i < ln; i++ {
			if (pos+i)%(rowBytes+1) != 0 { // not a filter byte
				m[q+5+i] = true
			}
		}
		q += 5 + ln
		pos += ln
	}
	for i := 0; i < 4; i++ {
		m[q+i] = true   // Adler-32
		m[z+n+i] = true // CRC of the IDAT
	}
	if q+4 != z+n {
		t.Fatalf("zlib stream ends at %d, IDAT data at %d", q+4, z+n)
	}
	return m
}

// TestStoredRefusals: a format too narrow for the pixels, an empty image
// and an unknown format are refused with a message.
func TestStoredRefusals(t *testing.T) {
	colour := image.NewRGBA(image.Rect(0, 0, 2, 2))
	colour.Pix[0] = 9
	colour.Pix[3], colour.Pix[7], colour.Pix[11], colour.Pix[15] = 255, 255, 255, 255
	for _, tc := range []struct {
		name string
		img  image.Image
		f    Format
		want string
	}{
		{"colour as grey", colour, Gray, "pngenc: the image needs 8-bit RGB, not 8-bit grey"},
		{"empty", image.NewGray(image.Rect(0, 0, 0, 3)), Gray, "pngenc: empty image (0x3)"},
		{"unknown format", colour, RGBA16 + 1, "pngenc: unknown format 4"},
	} {
		if _, err := EncodeStored(tc.img, tc.f); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// BenchmarkEncodeStored writes a 1024² colour image like a candidate mask
// overlay as the reading app serves it.
func BenchmarkEncodeStored(b *testing.B) {
	img := testImage(image.Rect(0, 0, 1024, 1024), 11, true)
	for b.Loop() {
		if _, err := EncodeStored(img, RGB); err != nil {
			b.Fatal(err)
		}
	}
}
