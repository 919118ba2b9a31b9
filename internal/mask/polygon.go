package mask

import (
	"math"
	"sort"
)

// FillPolygon rasterises the closed polygon pts on a w×h grid: a pixel is
// on iff its centre (integer coordinates) is inside the polygon (even-odd
// rule) or on its boundary (build.md §2.3, CheXmask landmarks). Fewer than
// 3 points, or non-finite coordinates, still mark the boundary points that
// fall exactly on pixel centres; nothing else.
func FillPolygon(pts []PointF, w, h int) Mask {
	m := New(w, h)
	n := len(pts)
	if n == 0 || w <= 0 || h <= 0 {
		return m
	}
	for _, p := range pts {
		if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
			return m
		}
	}
	var xs []float64
	for y := 0; y < h; y++ {
		fy := float64(y)
		xs = xs[:0]
		// Interior: crossings of the row with each edge, half-open in y so
		// a vertex on the row is counted once per passing edge pair.
		for i := 0; i < n; i++ {
			a, b := pts[i], pts[(i+1)%n]
			if (a.Y <= fy && fy < b.Y) || (b.Y <= fy && fy < a.Y) {
				xs = append(xs, a.X+(fy-a.Y)*(b.X-a.X)/(b.Y-a.Y))
			}
		}
		sort.Float64s(xs)
		row := m.Row(y)
		for k := 0; k+1 < len(xs); k += 2 {
			x0 := max(0, int(math.Ceil(xs[k])))
			x1 := min(w-1, int(math.Floor(xs[k+1])))
			for x := x0; x <= x1; x++ {
				row[x] = 1
			}
		}
	}
	// Boundary: pixel centres lying exactly on an edge (vertices at local
	// extremes and horizontal edges escape the half-open crossing rule).
	for i := 0; i < n; i++ {
		a, b := pts[i], pts[(i+1)%n]
		ylo, yhi := math.Min(a.Y, b.Y), math.Max(a.Y, b.Y)
		for y := max(0, int(math.Ceil(ylo))); y <= min(h-1, int(math.Floor(yhi))); y++ {
			fy := float64(y)
			if a.Y == b.Y {
				xlo, xhi := math.Min(a.X, b.X), math.Max(a.X, b.X)
				for x := max(0, int(math.Ceil(xlo))); x <= min(w-1, int(math.Floor(xhi))); x++ {
					m.Pix[y*w+x] = 1
				}
				continue
			}
			var xi float64
			switch fy {
			case a.Y:
				xi = a.X
			case b.Y:
				xi = b.X
			default:
				xi = a.X + (fy-a.Y)*(b.X-a.X)/(b.Y-a.Y)
			}
			if xi == math.Trunc(xi) && xi >= 0 && xi < float64(w) {
				m.Pix[y*w+int(xi)] = 1
			}
		}
	}
	return m
}
