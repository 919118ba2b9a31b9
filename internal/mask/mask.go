// Package mask is the project's one binary-mask geometry package.
//
// A Mask is a W×H grid of bytes, one per pixel, 0 (background) or 1
// (foreground), stored row-major so that pixel (x, y) is Pix[y*W+x]. Points
// use image coordinates: x = column, y = row, origin top-left (build.md §1).
//
// Everything the builder needs lives here: boolean algebra and overlap
// counts, structuring elements (discs, squares and the 32×32 ellipse E32),
// morphology with OpenCV's border conventions, 4/8-connected components in
// the spec's order, hole filling, external contours, nearest-neighbour
// resizing, PNG decoding/encoding, CheXmask run-length decoding, polygon
// filling and a reusable geodesic (Dijkstra) search. All results are pure
// functions of their inputs; nothing here draws random numbers.
//
// Functions that combine two masks require equal sizes; a size mismatch is
// a programming error and panics with a message naming both sizes.
package mask

import "fmt"

// Mask is a binary image; Pix holds one byte per pixel, 0 or 1, row-major.
// Pix is exported so hot loops elsewhere can read it directly; writers must
// keep every byte 0 or 1.
type Mask struct {
	W, H int
	Pix  []uint8
}

// Point is an integer pixel position (x = column, y = row).
type Point struct{ X, Y int }

// PointF is a real-valued position in pixel units (pixel centres at integers).
type PointF struct{ X, Y float64 }

// New returns an empty w×h mask. Negative sizes are treated as 0.
func New(w, h int) Mask {
	if w < 0 || h < 0 {
		w, h = 0, 0
	}
	return Mask{W: w, H: h, Pix: make([]uint8, w*h)}
}

// Clone returns a deep copy of m.
func (m Mask) Clone() Mask {
	return Mask{W: m.W, H: m.H, Pix: append([]uint8(nil), m.Pix...)}
}

// In reports whether (x, y) lies inside the mask's frame.
func (m Mask) In(x, y int) bool { return x >= 0 && y >= 0 && x < m.W && y < m.H }

// At returns true if (x, y) is inside the frame and on.
func (m Mask) At(x, y int) bool {
	return m.In(x, y) && m.Pix[y*m.W+x] != 0
}

// Set turns (x, y) on or off; positions outside the frame are ignored.
func (m Mask) Set(x, y int, on bool) {
	if !m.In(x, y) {
		return
	}
	var v uint8
	if on {
		v = 1
	}
	m.Pix[y*m.W+x] = v
}

// Count is the number of on pixels.
func (m Mask) Count() int {
	n := 0
	for _, v := range m.Pix {
		n += int(v)
	}
	return n
}

// Empty reports whether no pixel is on.
func (m Mask) Empty() bool {
	for _, v := range m.Pix {
		if v != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether a and b have the same size and pixels.
func Equal(a, b Mask) bool {
	if a.W != b.W || a.H != b.H {
		return false
	}
	for i, v := range a.Pix {
		if v != b.Pix[i] {
			return false
		}
	}
	return true
}

func sameSize(op string, a, b Mask) {
	if a.W != b.W || a.H != b.H {
		panic(fmt.Sprintf("mask.%s: size mismatch %dx%d vs %dx%d", op, a.W, a.H, b.W, b.H))
	}
}

// And returns a ∧ b.
func And(a, b Mask) Mask { c := a.Clone(); c.AndWith(b); return c }

// Or returns a ∨ b.
func Or(a, b Mask) Mask { c := a.Clone(); c.OrWith(b); return c }

// AndNot returns a ∧ ¬b.
func AndNot(a, b Mask) Mask { c := a.Clone(); c.AndNotWith(b); return c }

// Not returns ¬m.
func Not(m Mask) Mask {
	c := New(m.W, m.H)
	for i, v := range m.Pix {
		c.Pix[i] = v ^ 1
	}
	return c
}

// AndWith sets m = m ∧ b in place.
func (m Mask) AndWith(b Mask) {
	sameSize("AndWith", m, b)
	for i, v := range b.Pix {
		m.Pix[i] &= v
	}
}

// OrWith sets m = m ∨ b in place.
func (m Mask) OrWith(b Mask) {
	sameSize("OrWith", m, b)
	for i, v := range b.Pix {
		m.Pix[i] |= v
	}
}

// AndNotWith sets m = m ∧ ¬b in place.
func (m Mask) AndNotWith(b Mask) {
	sameSize("AndNotWith", m, b)
	for i, v := range b.Pix {
		m.Pix[i] &^= v
	}
}

// CountAnd is |a ∧ b|, without allocating.
func CountAnd(a, b Mask) int {
	sameSize("CountAnd", a, b)
	n := 0
	for i, v := range a.Pix {
		n += int(v & b.Pix[i])
	}
	return n
}

// CountOr is |a ∨ b|, without allocating.
func CountOr(a, b Mask) int {
	sameSize("CountOr", a, b)
	n := 0
	for i, v := range a.Pix {
		n += int(v | b.Pix[i])
	}
	return n
}

// CountXor is |a ⊕ b|, without allocating.
func CountXor(a, b Mask) int {
	sameSize("CountXor", a, b)
	n := 0
	for i, v := range a.Pix {
		n += int(v ^ b.Pix[i])
	}
	return n
}

// Intersects reports whether a and b share an on pixel.
func Intersects(a, b Mask) bool {
	sameSize("Intersects", a, b)
	for i, v := range a.Pix {
		if v&b.Pix[i] != 0 {
			return true
		}
	}
	return false
}

// IoU is |a ∧ b| / |a ∨ b| as float64; 0 when both are empty.
func IoU(a, b Mask) float64 {
	sameSize("IoU", a, b)
	inter, union := 0, 0
	for i, v := range a.Pix {
		w := b.Pix[i]
		inter += int(v & w)
		union += int(v | w)
	}
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// Bounds returns the smallest and largest x and y of the on pixels; ok is
// false for an empty mask.
func (m Mask) Bounds() (minX, minY, maxX, maxY int, ok bool) {
	minX, minY, maxX, maxY = m.W, m.H, -1, -1
	for y := 0; y < m.H; y++ {
		row := m.Pix[y*m.W : (y+1)*m.W]
		lo, hi := -1, -1
		for x, v := range row {
			if v != 0 {
				lo = x
				break
			}
		}
		if lo < 0 {
			continue
		}
		for x := m.W - 1; x >= lo; x-- {
			if row[x] != 0 {
				hi = x
				break
			}
		}
		if minY > y {
			minY = y
		}
		maxY = y
		minX = min(minX, lo)
		maxX = max(maxX, hi)
	}
	if maxY < 0 {
		return 0, 0, 0, 0, false
	}
	return minX, minY, maxX, maxY, true
}

// Centroid is the mean x and y of the on pixels; ok is false when empty.
func (m Mask) Centroid() (cx, cy float64, ok bool) {
	var sx, sy, n int
	for y := 0; y < m.H; y++ {
		row := m.Pix[y*m.W : (y+1)*m.W]
		for x, v := range row {
			if v != 0 {
				sx += x
				sy += y
				n++
			}
		}
	}
	if n == 0 {
		return 0, 0, false
	}
	// Integer sums are exact; one division each.
	return float64(sx) / float64(n), float64(sy) / float64(n), true
}

// Row returns row y of the pixel slice (shared, not copied).
func (m Mask) Row(y int) []uint8 { return m.Pix[y*m.W : (y+1)*m.W] }

// RowCount is the number of on pixels in row y (0 outside the frame).
func (m Mask) RowCount(y int) int {
	if y < 0 || y >= m.H {
		return 0
	}
	n := 0
	for _, v := range m.Row(y) {
		n += int(v)
	}
	return n
}

// RowSpan returns the smallest and largest on x in row y; ok is false when
// the row is empty or outside the frame.
func (m Mask) RowSpan(y int) (minX, maxX int, ok bool) {
	if y < 0 || y >= m.H {
		return 0, 0, false
	}
	row := m.Row(y)
	minX = -1
	for x, v := range row {
		if v != 0 {
			minX = x
			break
		}
	}
	if minX < 0 {
		return 0, 0, false
	}
	for x := m.W - 1; ; x-- {
		if row[x] != 0 {
			return minX, x, true
		}
	}
}

// Points lists the on pixels in row-major order.
func (m Mask) Points() []Point {
	var pts []Point
	for y := 0; y < m.H; y++ {
		for x, v := range m.Row(y) {
			if v != 0 {
				pts = append(pts, Point{x, y})
			}
		}
	}
	return pts
}

// Dist2 is the squared Euclidean distance between a and b, exact in integers.
func Dist2(a, b Point) int {
	dx, dy := a.X-b.X, a.Y-b.Y
	return dx*dx + dy*dy
}
