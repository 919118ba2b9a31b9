package frametest

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"testing"

	"github.com/chexpercept/chexpercept/internal/mask"
)

func TestEllipse(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		w, h                   int
		cx, cy, rx, ry         float64
		count                  int
		minX, minY, maxX, maxY int
	}{
		// Radius 1 about a pixel centre: the pixel and its 4 neighbours
		// (the diagonals lie at distance √2).
		{"unit plus", 9, 9, 4, 4, 1, 1, 5, 3, 3, 5, 5},
		// Below one pixel spacing: only the centre.
		{"single pixel", 9, 9, 4, 4, 0.5, 0.5, 1, 4, 4, 4, 4},
		// Axis ends lie exactly on the boundary and are included.
		{"horizontal 2×1", 9, 9, 4, 4, 2, 1, 7, 2, 3, 6, 5},
		// Clipped by the frame: only the right half fits.
		{"clipped", 9, 9, 0, 4, 2, 2, 9, 0, 2, 2, 6},
		{"outside", 9, 9, -10, -10, 2, 2, 0, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Ellipse(tc.w, tc.h, tc.cx, tc.cy, tc.rx, tc.ry)
			if m.W != tc.w || m.H != tc.h || m.Count() != tc.count {
				t.Fatalf("%d×%d with %d px, want %d×%d with %d", m.W, m.H, m.Count(), tc.w, tc.h, tc.count)
			}
			if tc.count == 0 {
				return
			}
			x0, y0, x1, y1, _ := m.Bounds()
			if x0 != tc.minX || y0 != tc.minY || x1 != tc.maxX || y1 != tc.maxY {
				t.Errorf("bounds %d,%d..%d,%d, want %d,%d..%d,%d", x0, y0, x1, y1, tc.minX, tc.minY, tc.maxX, tc.maxY)
			}
		})
	}
}

func TestEllipseAreaAndUnion(t *testing.T) {
	// A large ellipse covers close to π·rx·ry pixels.
	m := Ellipse(400, 400, 200, 200, 150, 90)
	if want := math.Pi * 150 * 90; math.Abs(float64(m.Count())-want) > 0.002*want {
		t.Errorf("area %d, want ≈ %.0f", m.Count(), want)
	}
	// PaintEllipse adds to what is there: two disjoint discs make a union.
	u := mask.New(100, 20)
	u.Set(99, 19, true)
	PaintEllipse(u, 10, 10, 5, 5)
	PaintEllipse(u, 50, 10, 5, 5)
	disc := Ellipse(100, 20, 10, 10, 5, 5).Count()
	if !u.At(99, 19) || u.Count() != 2*disc+1 {
		t.Errorf("union holds %d px, want %d", u.Count(), 2*disc+1)
	}
}

func digest(b []byte) string {
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:])
}

// TestChestBytes pins the chest: the digests were recorded from the
// near-copies this package replaced (deform and qagen tests), and the
// deform golden file depends on these bytes.
func TestChestBytes(t *testing.T) {
	const (
		right = "2ddc47658534849f5a286ca409377cba5c6254fbffe126de8187c961c6055038"
		left  = "54c99b8b3965e482c48f3b64095e82a8b21f95770f7250579b99585a5544ded4"
	)
	for _, tc := range []struct {
		heart          bool
		gray, lesion   string
		lesionPx       int
		rightPx, leftP int
	}{
		{false, "8c0e9dda11267ad9863fdcfdf310ff31b72b20c84ebb6bfecf23975be4e57422", "0f9eb398f1ca4fbadeda6649249605a0d07e3b7c2e2f8c7dffd180cabfd8f1e1", 37673, 141345, 127509},
		{true, "0d2a613dad1af6cb9b470774d42b52075bb47e11b1103ac346847f2f8aaab71a", "336923bc6d6b95823677050099e6a8b65ea22a2498dfc2ff762d97931868391a", 51805, 141345, 127509},
	} {
		c := NewChest(tc.heart)
		if c.Heart != tc.heart {
			t.Errorf("heart %v: Heart field %v", tc.heart, c.Heart)
		}
		for _, f := range []struct {
			name, got, want string
		}{
			{"gray", digest(c.Gray.Pix), tc.gray},
			{"right", digest(c.Right.Pix), right},
			{"left", digest(c.Left.Pix), left},
			{"lesion", digest(c.Lesion.Pix), tc.lesion},
		} {
			if f.got != f.want {
				t.Errorf("heart %v: %s sha256 %s, want %s", tc.heart, f.name, f.got, f.want)
			}
		}
		if c.Lesion.Count() != tc.lesionPx || c.Right.Count() != tc.rightPx || c.Left.Count() != tc.leftP {
			t.Errorf("heart %v: lesion/right/left %d/%d/%d px", tc.heart, c.Lesion.Count(), c.Right.Count(), c.Left.Count())
		}
	}
}

// TestChestAnatomy checks the promises of the package comment, which the
// tests using the chest rely on.
func TestChestAnatomy(t *testing.T) {
	lung := NewChest(false)
	if x0, y0, x1, y1, _ := lung.Right.Bounds(); x0 != 180 || y0 != 200 || x1 != 480 || y1 != 800 {
		t.Errorf("right lung bounds %d,%d..%d,%d", x0, y0, x1, y1)
	}
	if x0, y0, x1, y1, _ := lung.Left.Bounds(); x0 != 554 || y0 != 210 || x1 != 834 || y1 != 790 {
		t.Errorf("left lung bounds %d,%d..%d,%d", x0, y0, x1, y1)
	}
	if mask.Intersects(lung.Right, lung.Left) {
		t.Error("lungs overlap")
	}
	if mask.CountAnd(lung.Lesion, lung.Right) != lung.Lesion.Count() {
		t.Error("lung-type lesion leaves the right lung")
	}
	if _, y0, _, _, _ := lung.Lesion.Bounds(); y0 < 400 {
		t.Errorf("lesion reaches row %d, in the upper third", y0)
	}
	heart := NewChest(true)
	if !mask.Intersects(heart.Lesion, heart.Right) || !mask.Intersects(heart.Lesion, heart.Left) ||
		mask.CountAnd(heart.Lesion, mask.Or(heart.Right, heart.Left)) == heart.Lesion.Count() {
		t.Error("heart must overlap both lungs and lie partly between them")
	}

	// Grey levels: body, lesion in a dark lung field, rib band.
	for _, tc := range []struct {
		x, y int
		want uint8
	}{
		{0, 0, 200},     // body
		{520, 680, 240}, // heart outside the lungs: body + 40
	} {
		if got := heart.Gray.GrayAt(tc.x, tc.y).Y; got != tc.want {
			t.Errorf("heart chest grey at (%d,%d) = %d, want %d", tc.x, tc.y, got, tc.want)
		}
	}
	// (200, 500): 500 + 200/4 = 550, 550 mod 70 = 60, no rib: the bare
	// field 60 + 20·sin(200/37) ≈ 45. (200, 450): 500 mod 70 = 10 < 14, a
	// rib band, +70. (300, 580), in the lesion: 655 mod 70 = 25, +40.
	for _, tc := range []struct {
		x, y int
		want uint8
	}{
		{200, 500, uint8(60 + 20*math.Sin(200.0/37))},
		{200, 450, uint8(60 + 20*math.Sin(200.0/37) + 70)},
		{300, 580, uint8(60 + 20*math.Sin(300.0/37) + 40)},
	} {
		if got := lung.Gray.GrayAt(tc.x, tc.y).Y; got != tc.want {
			t.Errorf("lung chest grey at (%d,%d) = %d, want %d", tc.x, tc.y, got, tc.want)
		}
	}

	// Each call is fresh: changing one chest leaves the next untouched.
	lung.Right.Pix[0], lung.Gray.Pix[0] = 1, 0
	if again := NewChest(false); again.Right.Pix[0] != 0 || again.Gray.Pix[0] != 200 {
		t.Error("NewChest shares buffers between calls")
	}
}
