package render

import (
	"fmt"
	"image"
	"math"
	"sync"

	"github.com/chexpercept/chexpercept/internal/benchmark"
)

// RGB is an 8-bit RGB colour: the one colour type of the overlays, the
// discs and the palette.
type RGB struct{ R, G, B uint8 }

// palette is the point-option palette of format.md §1.1, in order: option
// k (1-based) is drawn in palette[(k-1)%8], and its colour name is what
// chexpercept.json's point option carries.
var palette = [8]struct {
	name string
	rgb  RGB
}{
	{"red", RGB{255, 0, 0}},
	{"orange", RGB{255, 128, 0}},
	{"yellow", RGB{255, 255, 0}},
	{"green", RGB{0, 255, 0}},
	{"blue", RGB{0, 0, 255}},
	{"purple", RGB{128, 0, 128}},
	{"pink", RGB{255, 191, 204}},
	{"brown", RGB{153, 77, 0}},
}

// PaletteName is the colour name of the k-th point option (1-based,
// cyclic; a k below 1 is option 1).
func PaletteName(k int) string {
	if k < 1 {
		k = 1
	}
	return palette[(k-1)%len(palette)].name
}

// PaletteColour returns the RGB value of a palette colour name; ok is
// false for a name that is not the palette's.
func PaletteColour(name string) (c RGB, ok bool) {
	for _, p := range palette {
		if p.name == name {
			return p.rgb, true
		}
	}
	return RGB{}, false
}

// Disc geometry (§11): radius 15 px, white outline 2 pt at 100 dpi
// (2.7778 px wide, so ±1.3889 px around the radius), 4×4 supersampling.
const (
	DiscRadius    = 15.0
	ringHalfWidth = 1.3889
	discReach     = 17 // |offset| beyond which both coverages are 0
	discSide      = 2*discReach + 1
)

// coverage[dy+reach][dx+reach] = (fill, ring) coverage of the pixel at
// offset (dx, dy) from an integer disc centre.
var (
	coverOnce sync.Once
	coverage  [discSide][discSide][2]float64
)

func discCoverage() *[discSide][discSide][2]float64 {
	coverOnce.Do(func() {
		for oy := -discReach; oy <= discReach; oy++ {
			for ox := -discReach; ox <= discReach; ox++ {
				var nf, ng int
				for i := 0; i < 4; i++ {
					sy := float64(oy) + (float64(i)+0.5)/4 - 0.5
					for j := 0; j < 4; j++ {
						sx := float64(ox) + (float64(j)+0.5)/4 - 0.5
						d := math.Sqrt(float64(sx*sx) + float64(sy*sy))
						if d <= DiscRadius {
							nf++
						}
						if math.Abs(d-DiscRadius) <= ringHalfWidth {
							ng++
						}
					}
				}
				coverage[oy+discReach][ox+discReach] = [2]float64{float64(nf) / 16, float64(ng) / 16}
			}
		}
	})
	return &coverage
}

// DrawDisc composites one point disc centred at (x, y) onto img (§11):
// px = px·(1−f) + colour·f, then px = px·(1−g) + 255·g, in float64, rounded
// half away from zero once per disc. Parts outside img are clipped.
func DrawDisc(img *image.RGBA, x, y int, c RGB) {
	cov := discCoverage()
	b := img.Bounds()
	col := [3]float64{float64(c.R), float64(c.G), float64(c.B)}
	for oy := -discReach; oy <= discReach; oy++ {
		py := y + oy
		if py < b.Min.Y || py >= b.Max.Y {
			continue
		}
		for ox := -discReach; ox <= discReach; ox++ {
			px := x + ox
			if px < b.Min.X || px >= b.Max.X {
				continue
			}
			fg := cov[oy+discReach][ox+discReach]
			f, g := fg[0], fg[1]
			if f == 0 && g == 0 {
				continue
			}
			o := img.PixOffset(px, py)
			for ch := 0; ch < 3; ch++ {
				v := float64(img.Pix[o+ch])
				v = float64(v*(1-f)) + float64(col[ch]*f)
				v = float64(v*(1-g)) + float64(255*g)
				img.Pix[o+ch] = uint8(max(0, min(255, math.Round(v))))
			}
		}
	}
}

// DrawPoints draws one disc per non-None option, in option order (later
// discs on top), in the option's palette colour. An unknown colour name is
// an error naming the option.
func DrawPoints(img *image.RGBA, opts []benchmark.PointOption) error {
	for k, o := range opts {
		if o.Point == nil {
			continue
		}
		c, ok := PaletteColour(o.Color)
		if !ok {
			return fmt.Errorf("render: point option %d has unknown colour %q", k+1, o.Color)
		}
		DrawDisc(img, o.Point[0], o.Point[1], c)
	}
	return nil
}
