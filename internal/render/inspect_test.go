package render

import (
	"image"
	"image/color"
	"testing"
)

// CloneRGBA copies the pixels inside src's bounds, for a sub-image too
// (whose stride is the parent's), and shares no memory with src.
func TestCloneRGBA(t *testing.T) {
	parent := image.NewRGBA(image.Rect(0, 0, 5, 4))
	for y := range 4 {
		for x := range 5 {
			parent.SetRGBA(x, y, color.RGBA{uint8(x), uint8(y), 7, 255})
		}
	}
	for _, src := range []*image.RGBA{parent, parent.SubImage(image.Rect(1, 1, 4, 3)).(*image.RGBA)} {
		got := CloneRGBA(src)
		if got.Bounds() != src.Bounds() {
			t.Fatalf("bounds %v, want %v", got.Bounds(), src.Bounds())
		}
		b := src.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				if got.RGBAAt(x, y) != src.RGBAAt(x, y) {
					t.Fatalf("%v: pixel (%d,%d) = %v, want %v", b, x, y, got.RGBAAt(x, y), src.RGBAAt(x, y))
				}
			}
		}
		got.SetRGBA(b.Min.X, b.Min.Y, color.RGBA{})
		if src.RGBAAt(b.Min.X, b.Min.Y) == (color.RGBA{}) {
			t.Errorf("%v: the clone shares memory with its source", b)
		}
	}
}
