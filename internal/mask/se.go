package mask

import (
	"math"
	"sort"
)

// SE is a structuring element: a set of offsets (dx, dy) relative to the
// anchor. It is stored as per-row horizontal runs so morphology can work
// run-by-run instead of offset-by-offset.
type SE struct {
	rows         []seRow // sorted by dy
	n            int
	minDX, maxDX int
	minDY, maxDY int
}

type seRow struct {
	dy   int
	runs []run // disjoint, sorted by a
}

type run struct{ a, b int } // inclusive dx range

// NewSE builds a structuring element from a set of offsets; duplicates are
// ignored. An empty offset list gives an empty element, whose dilation is
// empty and whose erosion is full.
func NewSE(offsets []Point) SE {
	pts := append([]Point(nil), offsets...)
	sort.Slice(pts, func(i, j int) bool {
		if pts[i].Y != pts[j].Y {
			return pts[i].Y < pts[j].Y
		}
		return pts[i].X < pts[j].X
	})
	var se SE
	first := true
	for i, p := range pts {
		if i > 0 && p == pts[i-1] {
			continue
		}
		se.n++
		if first {
			se.minDX, se.maxDX, se.minDY, se.maxDY = p.X, p.X, p.Y, p.Y
			first = false
		}
		se.minDX = min(se.minDX, p.X)
		se.maxDX = max(se.maxDX, p.X)
		se.minDY = min(se.minDY, p.Y)
		se.maxDY = max(se.maxDY, p.Y)
		if len(se.rows) == 0 || se.rows[len(se.rows)-1].dy != p.Y {
			se.rows = append(se.rows, seRow{dy: p.Y})
		}
		r := &se.rows[len(se.rows)-1]
		if k := len(r.runs); k > 0 && r.runs[k-1].b == p.X-1 {
			r.runs[k-1].b = p.X
		} else {
			r.runs = append(r.runs, run{p.X, p.X})
		}
	}
	return se
}

// Len is the number of offsets.
func (se SE) Len() int { return se.n }

// Offsets lists the offsets in row-major order (dy, then dx).
func (se SE) Offsets() []Point {
	var pts []Point
	for _, r := range se.rows {
		for _, rn := range r.runs {
			for dx := rn.a; dx <= rn.b; dx++ {
				pts = append(pts, Point{dx, r.dy})
			}
		}
	}
	return pts
}

// Disc is {(dx, dy) : dx²+dy² ≤ r²} (29 offsets for r = 3, 81 for r = 5).
func Disc(r int) SE {
	var pts []Point
	for dy := -r; dy <= r; dy++ {
		for dx := -r; dx <= r; dx++ {
			if dx*dx+dy*dy <= r*r {
				pts = append(pts, Point{dx, dy})
			}
		}
	}
	return NewSE(pts)
}

// Square is the n×n square with OpenCV's default anchor: offsets
// −(n div 2) … n−1−(n div 2) on each axis (n = 4 → −2 … 1), as cv2.dilate
// and cv2.erode place np.ones((n, n)) (build.md §11 default tokens).
func Square(n int) SE { return squareFrom(-(n / 2), n) }

// SkimageSquare is the n×n square as scikit-image's erosion places
// np.ones((n, n)) (build.md §6 step 2): an even-sized footprint is padded
// with a zero row and column at the top/left before scipy's grey_erosion
// centres it, so the offsets are −((n−1) div 2) … n div 2 on each axis
// (n = 4 → −1 … 2). For odd n it equals Square(n).
func SkimageSquare(n int) SE { return squareFrom(-((n - 1) / 2), n) }

// squareFrom is the n×n square of offsets lo … lo+n−1 on each axis.
func squareFrom(lo, n int) SE {
	var pts []Point
	for dy := lo; dy < lo+n; dy++ {
		for dx := lo; dx < lo+n; dx++ {
			pts = append(pts, Point{dx, dy})
		}
	}
	return NewSE(pts)
}

// Ellipse32 is E32 of build.md §8.1: the 32×32 ellipse with anchor (16, 16);
// row i has dy = i−16 and dx = round_half_even(16·sqrt((256−dy²)/256)),
// columns max(16−dx, 0) … min(16+dx, 31). 825 offsets.
func Ellipse32() SE {
	var pts []Point
	for i := 0; i < 32; i++ {
		dy := i - 16
		dx := int(math.RoundToEven(16 * math.Sqrt(float64(256-dy*dy)/256)))
		for c := max(16-dx, 0); c <= min(16+dx, 31); c++ {
			pts = append(pts, Point{c - 16, dy})
		}
	}
	return NewSE(pts)
}
