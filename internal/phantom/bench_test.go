package phantom

import (
	"bytes"
	"image"
	"testing"
)

// BenchmarkCase measures one full case: drawing, rendering and encoding
// the image and its masks as PNG (what one worker does per case).
func BenchmarkCase(b *testing.B) {
	s := newScratch()
	var enc encoder
	specs := plan(nil, 1, 1)
	var buf bytes.Buffer
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		cs := specs[i%len(specs)]
		cd, err := makeCase(1, cs, s)
		if err != nil {
			b.Fatal(err)
		}
		for _, pix := range [][]uint8{cd.img, cd.right, cd.left, cd.heart} {
			buf.Reset()
			if err := enc.Encode(&buf, &image.Gray{Pix: pix, Stride: size, Rect: image.Rect(0, 0, size, size)}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkMakeCase measures drawing and rendering only.
func BenchmarkMakeCase(b *testing.B) {
	s := newScratch()
	specs := plan(nil, 1, 1)
	for i := 0; b.Loop(); i++ {
		if _, err := makeCase(1, specs[i%len(specs)], s); err != nil {
			b.Fatal(err)
		}
	}
}
