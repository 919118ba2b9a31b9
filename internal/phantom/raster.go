package phantom

import (
	"math"

	"github.com/chexpercept/chexpercept/internal/rng"
)

// size is the side of every image and mask (the canonical frame, build.md §1).
const size = 1024

const npx = size * size

// noiseGrid is smooth value noise: random values on a square lattice,
// interpolated with a smoothstep-weighted bilinear blend.
type noiseGrid struct {
	n    int     // lattice points per side
	cell float64 // lattice spacing in pixels
	v    []float32
}

func newNoise(r *rng.RNG, cell float64) noiseGrid {
	n := int(float64(size)/cell) + 3
	v := make([]float32, n*n)
	for i := range v {
		v[i] = float32(r.Float64())
	}
	return noiseGrid{n: n, cell: cell, v: v}
}

// at returns the noise value in [0, 1] at pixel (x, y).
func (g noiseGrid) at(x, y float64) float64 {
	fx, fy := x/g.cell, y/g.cell
	if fx < 0 {
		fx = 0
	}
	if fy < 0 {
		fy = 0
	}
	ix, iy := int(fx), int(fy)
	if ix > g.n-2 {
		ix = g.n - 2
	}
	if iy > g.n-2 {
		iy = g.n - 2
	}
	tx, ty := fx-float64(ix), fy-float64(iy)
	tx = tx * tx * (3 - 2*tx)
	ty = ty * ty * (3 - 2*ty)
	i := iy*g.n + ix
	a := float64(g.v[i]) + (float64(g.v[i+1])-float64(g.v[i]))*tx
	b := float64(g.v[i+g.n]) + (float64(g.v[i+g.n+1])-float64(g.v[i+g.n]))*tx
	return a + (b-a)*ty
}

func smoothstep(e0, e1, x float64) float64 {
	t := (x - e0) / (e1 - e0)
	if t <= 0 {
		return 0
	}
	if t >= 1 {
		return 1
	}
	return t * t * (3 - 2*t)
}

func clamp(x, lo, hi float64) float64 {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

func clampInt(x, lo, hi int) int {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// boxBlur blurs src in place with a (2r+1)-wide running box filter along
// x then y, using tmp (len npx) as scratch. Edges replicate the border.
// Both passes walk memory row by row.
func boxBlur(src, tmp []float32, r int) {
	if r <= 0 {
		return
	}
	inv := 1 / float32(2*r+1)
	// Horizontal pass: src -> tmp.
	for y := 0; y < size; y++ {
		row := src[y*size : (y+1)*size : (y+1)*size]
		out := tmp[y*size : (y+1)*size : (y+1)*size]
		var acc float32
		for k := -r; k <= r; k++ {
			acc += row[clampInt(k, 0, size-1)]
		}
		x := 0
		for ; x < size && x-r < 0; x++ {
			out[x] = acc * inv
			acc += row[min(x+r+1, size-1)] - row[0]
		}
		for ; x+r+1 < size; x++ {
			out[x] = acc * inv
			acc += row[x+r+1] - row[x-r]
		}
		for ; x < size; x++ {
			out[x] = acc * inv
			acc += row[size-1] - row[max(x-r, 0)]
		}
	}
	// Vertical pass: tmp -> src with one running sum per column.
	var acc [size]float32
	for k := -r; k <= r; k++ {
		row := tmp[clampInt(k, 0, size-1)*size:]
		for x := 0; x < size; x++ {
			acc[x] += row[x]
		}
	}
	for y := 0; y < size; y++ {
		out := src[y*size : (y+1)*size : (y+1)*size]
		add := tmp[clampInt(y+r+1, 0, size-1)*size:][:size:size]
		sub := tmp[clampInt(y-r, 0, size-1)*size:][:size:size]
		for x := 0; x < size; x++ {
			out[x] = acc[x] * inv
			acc[x] += add[x] - sub[x]
		}
	}
}

// maskToField writes m (0/1) as 0/1 floats into f.
func maskToField(m []uint8, f []float32) {
	for i, v := range m {
		f[i] = float32(v)
	}
}

// components labels the 4-connected components of m (non-zero = on).
// labels[i] is 0 for background and k+1 for component k; sizes[k] is its
// pixel count. Components are numbered in row-major order of first pixel.
func components(m []uint8, labels []int32, stack []int32) (sizes []int) {
	for i := range labels {
		labels[i] = 0
	}
	for start, v := range m {
		if v == 0 || labels[start] != 0 {
			continue
		}
		id := int32(len(sizes) + 1)
		n := 0
		stack = append(stack[:0], int32(start))
		labels[start] = id
		for len(stack) > 0 {
			p := int(stack[len(stack)-1])
			stack = stack[:len(stack)-1]
			n++
			x, y := p%size, p/size
			if x > 0 && m[p-1] != 0 && labels[p-1] == 0 {
				labels[p-1] = id
				stack = append(stack, int32(p-1))
			}
			if x < size-1 && m[p+1] != 0 && labels[p+1] == 0 {
				labels[p+1] = id
				stack = append(stack, int32(p+1))
			}
			if y > 0 && m[p-size] != 0 && labels[p-size] == 0 {
				labels[p-size] = id
				stack = append(stack, int32(p-size))
			}
			if y < size-1 && m[p+size] != 0 && labels[p+size] == 0 {
				labels[p+size] = id
				stack = append(stack, int32(p+size))
			}
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// keepComponents clears every component of m smaller than minPx, or all
// but the largest when largestOnly is set. It returns the kept pixel count.
func keepComponents(m []uint8, minPx int, largestOnly bool, labels []int32, stack []int32) int {
	sizes := components(m, labels, stack)
	keep := make([]bool, len(sizes)+1)
	best := -1
	for k, s := range sizes {
		if largestOnly {
			if best < 0 || s > sizes[best] {
				best = k
			}
		} else if s >= minPx {
			keep[k+1] = true
		}
	}
	if largestOnly && best >= 0 && sizes[best] >= minPx {
		keep[best+1] = true
	}
	total := 0
	for i, l := range labels {
		if m[i] != 0 {
			if keep[l] {
				total++
			} else {
				m[i] = 0
			}
		}
	}
	return total
}

// bbox returns the inclusive bounding box of the on pixels of m; ok is
// false for an empty mask.
func bbox(m []uint8) (x0, y0, x1, y1 int, ok bool) {
	x0, y0, x1, y1 = size, size, -1, -1
	for y := 0; y < size; y++ {
		row := m[y*size : (y+1)*size]
		for x, v := range row {
			if v != 0 {
				if x < x0 {
					x0 = x
				}
				if x > x1 {
					x1 = x
				}
				if y < y0 {
					y0 = y
				}
				y1 = y
			}
		}
	}
	return x0, y0, x1, y1, x1 >= 0
}

// touches reports whether some on pixel of a lies within distance d
// (Euclidean, d² compared on integers) of an on pixel of b.
func touches(a, b []uint8, d int) bool {
	for p, v := range a {
		if v == 0 {
			continue
		}
		x, y := p%size, p/size
		for dy := -d; dy <= d; dy++ {
			yy := y + dy
			if yy < 0 || yy >= size {
				continue
			}
			for dx := -d; dx <= d; dx++ {
				xx := x + dx
				if xx < 0 || xx >= size || dx*dx+dy*dy > d*d {
					continue
				}
				if b[yy*size+xx] != 0 {
					return true
				}
			}
		}
	}
	return false
}

// splat adds v·(1−(d/r)²) to f inside a disc of radius r around (cx, cy).
func splat(f []float32, cx, cy, r, v float64) {
	x0, x1 := int(math.Floor(cx-r)), int(math.Ceil(cx+r))
	y0, y1 := int(math.Floor(cy-r)), int(math.Ceil(cy+r))
	x0, y0 = max(x0, 0), max(y0, 0)
	x1, y1 = min(x1, size-1), min(y1, size-1)
	rr := r * r
	for y := y0; y <= y1; y++ {
		dy := float64(y) - cy
		for x := x0; x <= x1; x++ {
			dx := float64(x) - cx
			d2 := dx*dx + dy*dy
			if d2 < rr {
				f[y*size+x] += float32(v * (1 - d2/rr))
			}
		}
	}
}

// gauss returns an approximately standard normal value from one 64-bit
// draw (sum of four 16-bit uniforms, rescaled): cheap enough per pixel.
func gauss(r *rng.RNG) float32 {
	u := r.U64()
	s := float32(u&0xffff) + float32((u>>16)&0xffff) + float32((u>>32)&0xffff) + float32(u>>48)
	// Mean 4·32767.5, variance 4·(65536²−1)/12.
	return (s - 131070) * (1 / 37837.2)
}
