package render

import (
	"image"
	"image/color"
	"image/draw"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/chexpercept/chexpercept/internal/benchmark"
)

// Text metrics of the fixed 7×13 bitmap font used by the inspect view.
const (
	glyphW = 7
	lineH  = 13
)

var (
	textColour = image.NewUniform(color.RGBA{255, 255, 255, 255})
	textBack   = image.NewUniform(color.RGBA{0, 0, 0, 255})
)

// DrawLabel writes s with its top-left corner at (x, y) on a black box so
// it stays legible over any image content.
func DrawLabel(img *image.RGBA, x, y int, s string) {
	w := glyphW*len([]rune(s)) + 4
	draw.Draw(img, image.Rect(x, y, x+w, y+lineH+2), textBack, image.Point{}, draw.Src)
	d := font.Drawer{
		Dst:  img,
		Src:  textColour,
		Face: basicfont.Face7x13,
		Dot:  fixed.P(x+2, y+1+basicfont.Face7x13.Ascent),
	}
	d.DrawString(s)
}

// LabelledPoints is the inspect view's points.png: a copy of base with the
// option discs drawn (as in the benchmark image) and labels[k] written next
// to option k's disc (e.g. "1 red GT-exp"). Options without a point are
// skipped.
func LabelledPoints(base *image.RGBA, opts []benchmark.PointOption, labels []string) (*image.RGBA, error) {
	img := CloneRGBA(base)
	if err := DrawPoints(img, opts); err != nil {
		return nil, err
	}
	b := img.Bounds()
	for k, o := range opts {
		if o.Point == nil || k >= len(labels) {
			continue
		}
		x := o.Point[0] + int(DiscRadius) + 4
		if x+glyphW*len(labels[k])+4 > b.Max.X {
			x = o.Point[0] - int(DiscRadius) - 8 - glyphW*len(labels[k])
		}
		y := o.Point[1] - lineH/2
		DrawLabel(img, max(b.Min.X, x), max(b.Min.Y, min(y, b.Max.Y-lineH-2)), labels[k])
	}
	return img, nil
}

// OptionSheet is the inspect view's revision_options.png: the option
// images halved in size, side by side, each with its caption lines below
// (e.g. the option's type and mask names).
func OptionSheet(imgs []*image.RGBA, captions [][]string) *image.RGBA {
	tw, th := 0, 0
	for _, im := range imgs {
		tw = max(tw, im.Bounds().Dx()/2)
		th = max(th, im.Bounds().Dy()/2)
	}
	lines := 0
	for _, c := range captions {
		lines = max(lines, len(c))
	}
	capH := lines*(lineH+3) + 4
	sheet := image.NewRGBA(image.Rect(0, 0, max(1, len(imgs)*(tw+8)), th+capH))
	draw.Draw(sheet, sheet.Bounds(), image.NewUniform(color.RGBA{32, 32, 32, 255}), image.Point{}, draw.Src)
	for i, im := range imgs {
		x0 := i * (tw + 8)
		half(sheet, im, x0)
		if i < len(captions) {
			for j, s := range captions[i] {
				if max := tw / glyphW; len(s) > max && max > 3 {
					s = s[:max-3] + "..."
				}
				DrawLabel(sheet, x0, th+2+j*(lineH+3), s)
			}
		}
	}
	return sheet
}

// half box-averages src 2× into dst at (x0, 0).
func half(dst, src *image.RGBA, x0 int) {
	b := src.Bounds()
	w, h := b.Dx()/2, b.Dy()/2
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			o := dst.PixOffset(x0+x, y)
			s0 := src.PixOffset(b.Min.X+2*x, b.Min.Y+2*y)
			s1 := s0 + src.Stride
			for ch := 0; ch < 3; ch++ {
				sum := int(src.Pix[s0+ch]) + int(src.Pix[s0+4+ch]) + int(src.Pix[s1+ch]) + int(src.Pix[s1+4+ch])
				dst.Pix[o+ch] = uint8((sum + 2) / 4)
			}
			dst.Pix[o+3] = 255
		}
	}
}

// CloneRGBA returns a copy of src with its bounds (a sub-image too).
func CloneRGBA(src *image.RGBA) *image.RGBA {
	dst := image.NewRGBA(src.Bounds())
	draw.Draw(dst, dst.Bounds(), src, src.Bounds().Min, draw.Src)
	return dst
}
