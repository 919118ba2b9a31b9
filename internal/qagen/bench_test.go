package qagen

import (
	"image"
	"io"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// BenchmarkRenderRecordImages renders the 7 images of one RR record.
func BenchmarkRenderRecordImages(b *testing.B) {
	cfg := buildcfg.Default()
	gray := testGray()
	bc := buildPositive(b, "effusion_ph0003_positive_0", false, cfg)
	b.ResetTimer()
	for b.Loop() {
		if _, err := RenderRecordImages(gray, bc.rec, bc.masks, bc.lungs, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderAndEncodeRecord adds PNG encoding (the floor the build
// budget is measured against) to the rendering.
func BenchmarkRenderAndEncodeRecord(b *testing.B) {
	cfg := buildcfg.Default()
	gray := testGray()
	bc := buildPositive(b, "effusion_ph0003_positive_0", false, cfg)
	b.ResetTimer()
	for b.Loop() {
		imgs, err := RenderRecordImages(gray, bc.rec, bc.masks, bc.lungs, cfg)
		if err != nil {
			b.Fatal(err)
		}
		for _, img := range imgs {
			if err := render.EncodePNG(io.Discard, img); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkEachRecordImageEncode is the streaming path: one reused buffer,
// each image encoded as soon as it is drawn.
func BenchmarkEachRecordImageEncode(b *testing.B) {
	cfg := buildcfg.Default()
	gray := testGray()
	bc := buildPositive(b, "effusion_ph0003_positive_0", false, cfg)
	b.ResetTimer()
	for b.Loop() {
		err := EachRecordImage(gray, bc.rec, bc.masks, bc.lungs, cfg, func(_ string, img *image.RGBA) error {
			return render.EncodePNG(io.Discard, img)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeOnly is the PNG-encoding floor for the same 7 images.
func BenchmarkEncodeOnly(b *testing.B) {
	cfg := buildcfg.Default()
	gray := testGray()
	bc := buildPositive(b, "effusion_ph0003_positive_0", false, cfg)
	imgs, err := RenderRecordImages(gray, bc.rec, bc.masks, bc.lungs, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		for _, img := range imgs {
			if err := render.EncodePNG(io.Discard, img); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPointsAndRevision is §9.4 + §9.5 on a one-component attempt
// in the 1024² frame (run inside every sequential retry).
func BenchmarkPointsAndRevision(b *testing.B) {
	cfg := buildcfg.Default()
	a := rrAttempt()
	ctx := TokenContext{Overlaps: overlaps()}
	for b.Loop() {
		r := rng.New("bench")
		if _, err := NewPointPool(r, a, cfg); err != nil {
			b.Fatal(err)
		}
		if _, err := RevisionOptions(r, a, ctx, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
