package render

import (
	"image"
	"io"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/mask"
)

func benchInputs() (*image.Gray, mask.Mask) {
	g := image.NewGray(image.Rect(0, 0, 1024, 1024))
	m := mask.New(1024, 1024)
	for i := range g.Pix {
		g.Pix[i] = uint8(i % 251)
		if (i%1024-500)*(i%1024-500)+(i/1024-400)*(i/1024-400) < 200*200 {
			m.Pix[i] = 1
		}
	}
	return g, m
}

func BenchmarkOverlay(b *testing.B) {
	g, m := benchInputs()
	for b.Loop() {
		Overlay(g, m)
	}
}

func BenchmarkOverlayInto(b *testing.B) {
	g, m := benchInputs()
	dst := image.NewRGBA(image.Rect(0, 0, 1024, 1024))
	for b.Loop() {
		OverlayInto(dst, g, m)
	}
}

func BenchmarkDrawPoints8(b *testing.B) {
	g, m := benchInputs()
	img := Overlay(g, m)
	var opts []benchmark.PointOption
	for k := 0; k < 8; k++ {
		opts = append(opts, benchmark.PointOption{Point: &[2]int{100 + 100*k, 500}, Color: PaletteName(k + 1)})
	}
	for b.Loop() {
		if err := DrawPoints(img, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodePNG(b *testing.B) {
	g, m := benchInputs()
	img := Overlay(g, m)
	for b.Loop() {
		if err := EncodePNG(io.Discard, img); err != nil {
			b.Fatal(err)
		}
	}
}

// Review images (radiograph and overlay side by side, 2048×1024) with the
// benchmark encoder and the preview encoder the review tools use.
func BenchmarkEncodeReviewImage(b *testing.B) {
	g, m := benchInputs()
	img := ReviewImage(g, m)
	for _, enc := range []struct {
		name   string
		encode func(io.Writer, image.Image) error
	}{{"default", EncodePNG}, {"preview", EncodeFastPNG}} {
		b.Run(enc.name, func(b *testing.B) {
			for b.Loop() {
				if err := enc.encode(io.Discard, img); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
