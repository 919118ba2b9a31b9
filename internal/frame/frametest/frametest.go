// Package frametest builds synthetic chest frames for tests and Go
// benchmarks: masks painted from ellipses, and one 1024² two-lung chest
// with a lesion or a heart.
//
// The synthetic anatomy (image coordinates, x to the right, y down; the
// patient's right lung is on the image's left, as on a PA radiograph):
//
//   - right lung: ellipse centred (330, 500), semi-axes 150 × 300
//   - left lung: ellipse centred (694, 500), semi-axes 140 × 290
//   - lung-type lesion: ellipse centred (300, 560), semi-axes 80 × 150,
//     wholly inside the right lung's middle and lower thirds
//   - heart (heart-type case): ellipse centred (520, 680), semi-axes
//     150 × 110, between the lungs and overlapping the medial edge of both
//
// The grey image is 200 outside the lungs (a bright body); inside them it
// is a dark field 60 + 20·sin(x/37) crossed by bright slanted rib bands
// (+70 where (y + x/4) mod 70 < 14), so the deformation cost field has
// edges to follow; the lesion or heart adds 40.
//
// The package imports only mask, so the internal (same-package) tests of
// every package but mask may use it without an import cycle. Golden files in
// deform depend on these exact bytes: change the geometry only together
// with them.
package frametest

import (
	"image"
	"math"

	"github.com/chexpercept/chexpercept/internal/mask"
)

// Size is the side of the canonical frame (build.md §1).
const Size = 1024

// PaintEllipse sets the pixels of m where ((x−cx)/rx)² + ((y−cy)/ry)² ≤ 1,
// leaving the others as they are (so several calls paint a union).
func PaintEllipse(m mask.Mask, cx, cy, rx, ry float64) {
	for y := 0; y < m.H; y++ {
		for x := 0; x < m.W; x++ {
			dx, dy := (float64(x)-cx)/rx, (float64(y)-cy)/ry
			if dx*dx+dy*dy <= 1 {
				m.Pix[y*m.W+x] = 1
			}
		}
	}
}

// Ellipse returns a w×h mask holding only the ellipse of PaintEllipse.
func Ellipse(w, h int, cx, cy, rx, ry float64) mask.Mask {
	m := mask.New(w, h)
	PaintEllipse(m, cx, cy, rx, ry)
	return m
}

// Chest is the synthetic Size² case described in the package comment.
type Chest struct {
	Gray        *image.Gray
	Right, Left mask.Mask // lung masks
	// Lesion is the candidate mask: the lung-type lesion, or for a
	// heart-type case the heart.
	Lesion mask.Mask
	Heart  bool
}

// NewChest builds the lung-type chest (heart false) or the heart-type one.
// Every call returns fresh masks and image, so callers may modify them.
func NewChest(heart bool) Chest {
	c := Chest{
		Right: Ellipse(Size, Size, 330, 500, 150, 300),
		Left:  Ellipse(Size, Size, 694, 500, 140, 290),
		Heart: heart,
	}
	if heart {
		c.Lesion = Ellipse(Size, Size, 520, 680, 150, 110)
	} else {
		c.Lesion = Ellipse(Size, Size, 300, 560, 80, 150)
	}
	c.Gray = image.NewGray(image.Rect(0, 0, Size, Size))
	for i := range c.Gray.Pix {
		x, y := i%Size, i/Size
		v := 200.0
		if c.Right.Pix[i] != 0 || c.Left.Pix[i] != 0 {
			v = 60 + 20*math.Sin(float64(x)/37)
			if int(float64(y)+0.25*float64(x))%70 < 14 {
				v += 70
			}
		}
		if c.Lesion.Pix[i] != 0 {
			v += 40
		}
		c.Gray.Pix[i] = uint8(min(255, max(0, v)))
	}
	return c
}
