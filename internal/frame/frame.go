package frame

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"math"

	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// LoadGray reads a PNG or JPEG radiograph and returns it in the canonical
// frame: 1024×1024 8-bit grey (build.md §1). Failures are *CaseError with
// reason image_unreadable and a detail naming the file. The file is read
// and decoded through imagefile (regular files only, bounded, header
// checked first).
func LoadGray(path string) (*image.Gray, error) {
	data, err := safefile.ReadFile(path, imagefile.MaxFileBytes, safefile.Follow)
	if err != nil {
		return nil, Fail("image_unreadable", "image %s: %v", path, safefile.Reason(err))
	}
	g, err := DecodeGray(data)
	if err != nil {
		return nil, Fail("image_unreadable", "image %s: %v", path, err)
	}
	return g, nil
}

// DecodeGray decodes PNG or JPEG bytes and brings them into the canonical
// frame (grey conversion, then the separable resize of §1).
func DecodeGray(data []byte) (*image.Gray, error) {
	img, _, err := imagefile.Decode(data)
	if err != nil {
		return nil, err
	}
	return Canonical(img), nil
}

// NativeSize returns the width and height stored in the image header of a
// PNG or JPEG file without decoding the pixels (for the CheXmask size check).
func NativeSize(path string) (w, h int, err error) {
	_, w, h, err = imagefile.CheckHeader(path)
	if err != nil {
		return 0, 0, fmt.Errorf("image %s: %w", path, safefile.Reason(err))
	}
	return w, h, nil
}

// Canonical converts a decoded image to grey (§1) and resizes it to
// Size×Size.
func Canonical(img image.Image) *image.Gray {
	b := img.Bounds()
	return Resize(ToGray(img), b.Dx(), b.Dy(), Size, Size)
}

// to8 is §1's 16-bit → 8-bit rule.
func to8(v uint32) uint8 { return uint8((v*255 + 32767) / 65535) }

// ToGray converts an image to 8-bit grey at its native size and returns the
// samples row-major (len = W·H). 16-bit samples are first reduced by §1's
// rule; colour images whose R = G = B everywhere give R, others the integer
// luma (299R + 587G + 114B + 500) / 1000. Alpha is ignored: stored,
// non-premultiplied samples are read.
func ToGray(img image.Image) []uint8 {
	b := img.Bounds()
	W, H := b.Dx(), b.Dy()
	out := make([]uint8, W*H)
	switch im := img.(type) {
	case *image.Gray:
		for y := 0; y < H; y++ {
			copy(out[y*W:(y+1)*W], im.Pix[y*im.Stride:y*im.Stride+W])
		}
		return out
	case *image.Gray16:
		for y := 0; y < H; y++ {
			row := im.Pix[y*im.Stride:]
			for x := 0; x < W; x++ {
				out[y*W+x] = to8(uint32(row[2*x])<<8 | uint32(row[2*x+1]))
			}
		}
		return out
	}
	// Colour: gather 8-bit planes, then decide between R and luma.
	r := make([]uint8, W*H)
	g := make([]uint8, W*H)
	bl := make([]uint8, W*H)
	at := func(x, y int) (uint8, uint8, uint8) {
		switch im := img.(type) {
		case *image.RGBA:
			p := im.Pix[y*im.Stride+4*x:]
			return p[0], p[1], p[2]
		case *image.NRGBA:
			p := im.Pix[y*im.Stride+4*x:]
			return p[0], p[1], p[2]
		case *image.RGBA64:
			p := im.Pix[y*im.Stride+8*x:]
			return to8(uint32(p[0])<<8 | uint32(p[1])), to8(uint32(p[2])<<8 | uint32(p[3])), to8(uint32(p[4])<<8 | uint32(p[5]))
		case *image.NRGBA64:
			p := im.Pix[y*im.Stride+8*x:]
			return to8(uint32(p[0])<<8 | uint32(p[1])), to8(uint32(p[2])<<8 | uint32(p[3])), to8(uint32(p[4])<<8 | uint32(p[5]))
		case *image.YCbCr:
			yi := im.YOffset(b.Min.X+x, b.Min.Y+y)
			ci := im.COffset(b.Min.X+x, b.Min.Y+y)
			return color.YCbCrToRGB(im.Y[yi], im.Cb[ci], im.Cr[ci])
		case *image.CMYK:
			p := im.Pix[y*im.Stride+4*x:]
			return color.CMYKToRGB(p[0], p[1], p[2], p[3])
		case *image.Paletted:
			if k := int(im.Pix[y*im.Stride+x]); k < len(im.Palette) {
				return paletteRGB(im.Palette[k])
			}
			return 0, 0, 0
		}
		return paletteRGB(img.At(b.Min.X+x, b.Min.Y+y))
	}
	equal := true
	for y := 0; y < H; y++ {
		for x := 0; x < W; x++ {
			i := y*W + x
			r[i], g[i], bl[i] = at(x, y)
			if r[i] != g[i] || r[i] != bl[i] {
				equal = false
			}
		}
	}
	if equal {
		return r
	}
	for i := range out {
		out[i] = uint8((299*uint32(r[i]) + 587*uint32(g[i]) + 114*uint32(bl[i]) + 500) / 1000)
	}
	return out
}

// paletteRGB returns the stored (non-premultiplied) 8-bit RGB of a colour.
func paletteRGB(c color.Color) (uint8, uint8, uint8) {
	switch p := c.(type) {
	case color.RGBA:
		if p.A == 0xff {
			return p.R, p.G, p.B
		}
	case color.NRGBA:
		return p.R, p.G, p.B
	case color.Gray:
		return p.Y, p.Y, p.Y
	}
	n := color.NRGBA64Model.Convert(c).(color.NRGBA64)
	return to8(uint32(n.R)), to8(uint32(n.G)), to8(uint32(n.B))
}

// taps is a one-axis resampling kernel: output i is
// Σ_k w[i][k]·src[start[i]+k].
type taps struct {
	start []int
	w     [][]float64
}

// axisTaps builds §1's kernel for one axis: area averaging when src > dst,
// bilinear otherwise (the identity when src = dst).
func axisTaps(src, dst int) taps {
	t := taps{start: make([]int, dst), w: make([][]float64, dst)}
	s := float64(src) / float64(dst)
	for i := 0; i < dst; i++ {
		if src > dst {
			lo, hi := float64(i)*s, float64(i+1)*s
			j0 := int(math.Floor(lo))
			j1 := min(src, int(math.Ceil(hi)))
			ws := make([]float64, 0, j1-j0)
			for j := j0; j < j1; j++ {
				cov := math.Min(hi, float64(j+1)) - math.Max(lo, float64(j))
				ws = append(ws, cov/s)
			}
			t.start[i], t.w[i] = j0, ws
			continue
		}
		c := (float64(i)+0.5)*s - 0.5
		c = math.Max(0, math.Min(float64(src-1), c))
		x0 := int(math.Floor(c))
		f := c - float64(x0)
		if x0+1 >= src || f == 0 {
			t.start[i], t.w[i] = x0, []float64{1}
			continue
		}
		t.start[i], t.w[i] = x0, []float64{1 - f, f}
	}
	return t
}

// Resize resamples a w×h grey plane to dw×dh by §1: separable, x then y,
// float64 with an unrounded intermediate, then rounded half away from zero
// and clamped to 0..255. At the same size every tap is the sample itself
// with weight 1, so the plane is copied as it is (the same bytes, without
// the arithmetic).
func Resize(pix []uint8, w, h, dw, dh int) *image.Gray {
	if w == dw && h == dh {
		out := image.NewGray(image.Rect(0, 0, dw, dh))
		copy(out.Pix, pix[:w*h])
		return out
	}
	return resample(pix, w, h, dw, dh)
}

// resample is Resize's arithmetic, at any sizes.
func resample(pix []uint8, w, h, dw, dh int) *image.Gray {
	tx, ty := axisTaps(w, dw), axisTaps(h, dh)
	tmp := make([]float64, dw*h)
	for y := 0; y < h; y++ {
		row := pix[y*w : (y+1)*w]
		dst := tmp[y*dw : (y+1)*dw]
		for i := range dst {
			var acc float64
			j := tx.start[i]
			for k, wt := range tx.w[i] {
				acc += float64(wt * float64(row[j+k]))
			}
			dst[i] = acc
		}
	}
	out := image.NewGray(image.Rect(0, 0, dw, dh))
	acc := make([]float64, dw)
	for i := 0; i < dh; i++ {
		clear(acc)
		j := ty.start[i]
		for k, wt := range ty.w[i] {
			src := tmp[(j+k)*dw : (j+k+1)*dw]
			for x, v := range src {
				acc[x] += float64(wt * v)
			}
		}
		dst := out.Pix[i*out.Stride : i*out.Stride+dw]
		for x, v := range acc {
			dst[x] = uint8(math.Max(0, math.Min(255, math.Round(v))))
		}
	}
	return out
}

// LoadMask reads a mask PNG, binarises it by §1 (first channel ≥ half the
// type's maximum) and resizes it by nearest neighbour to Size×Size.
// Failures are *CaseError with reason mask_unreadable naming the file.
func LoadMask(path string) (mask.Mask, error) {
	data, err := safefile.ReadFile(path, imagefile.MaxFileBytes, safefile.Follow)
	if err != nil {
		return mask.Mask{}, Fail("mask_unreadable", "mask %s: %v", path, safefile.Reason(err))
	}
	m, err := mask.DecodePNG(bytes.NewReader(data))
	if err != nil {
		return mask.Mask{}, Fail("mask_unreadable", "mask %s: %v", path, err)
	}
	return CanonicalMask(m), nil
}

// CanonicalMask brings a binary mask of any size to Size×Size (§1 nearest
// neighbour with pixel-centre mapping).
func CanonicalMask(m mask.Mask) mask.Mask {
	if m.W == Size && m.H == Size {
		return m
	}
	return mask.ResizeNearest(m, Size, Size)
}
