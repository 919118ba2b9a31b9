package mask

import (
	"fmt"
	"math"
	"sync"
)

// Geodesic is an incremental Dijkstra search over the 8-connected pixel
// grid (build.md §8.4), restricted to the square window |x−sx| ≤ win,
// |y−sy| ≤ win around the start, intersected with the image. The edge
// between neighbours a and b weighs ℓ·(c(a)+c(b))/2 with ℓ = 1 (4-neighbour)
// or √2 (diagonal). Pixels are popped in order of distance, ties by smaller
// y, then smaller x, so the sequence is fully deterministic. The caller
// pulls pixels one at a time and may stop at any point (e.g. at the first
// pixel of a target set, then later at a radius):
//
//	g, err := mask.NewGeodesic(cost, w, h, p, 256)
//	defer g.Release()
//	for g.Next() { x, y, d := g.Pixel(); … }
//
// Buffers come from a pool and are returned by Release; a Geodesic is not
// safe for concurrent use.
type Geodesic struct {
	cost           []float64
	w              int
	x0, y0, ww, wh int // window origin and size
	ws             *geoWS
	cx, cy         int
	cd             float64
}

type geoEntry struct {
	d float64
	i int32 // window-local row-major index: orders ties by y, then x
}

type geoWS struct {
	dist []float64
	seen []uint32 // == gen: dist valid
	done []uint32 // == gen: popped
	gen  uint32
	heap []geoEntry
}

var geoPool = sync.Pool{New: func() any { return new(geoWS) }}

// NewGeodesic starts a search from start over a w×h cost field (row-major,
// len w·h, costs finite and ≥ 0). win is the window half-size (≥ 0).
func NewGeodesic(cost []float64, w, h int, start Point, win int) (*Geodesic, error) {
	if w <= 0 || h <= 0 || len(cost) != w*h {
		return nil, fmt.Errorf("geodesic: cost field has %d values, want %d×%d", len(cost), w, h)
	}
	if start.X < 0 || start.Y < 0 || start.X >= w || start.Y >= h {
		return nil, fmt.Errorf("geodesic: start (%d, %d) outside the %d×%d image", start.X, start.Y, w, h)
	}
	if win < 0 {
		return nil, fmt.Errorf("geodesic: negative window %d", win)
	}
	g := &Geodesic{cost: cost, w: w}
	g.x0, g.y0 = max(0, start.X-win), max(0, start.Y-win)
	x1, y1 := min(w-1, start.X+win), min(h-1, start.Y+win)
	g.ww, g.wh = x1-g.x0+1, y1-g.y0+1
	n := g.ww * g.wh
	ws := geoPool.Get().(*geoWS)
	if cap(ws.dist) < n {
		ws.dist = make([]float64, n)
		ws.seen = make([]uint32, n)
		ws.done = make([]uint32, n)
		ws.gen = 0
	}
	ws.dist, ws.seen, ws.done = ws.dist[:n], ws.seen[:n], ws.done[:n]
	ws.gen++
	if ws.gen == 0 { // wrapped: stale stamps could alias
		clear(ws.seen[:cap(ws.seen)])
		clear(ws.done[:cap(ws.done)])
		ws.gen = 1
	}
	ws.heap = ws.heap[:0]
	g.ws = ws
	si := (start.Y-g.y0)*g.ww + (start.X - g.x0)
	ws.dist[si] = 0
	ws.seen[si] = ws.gen
	g.push(geoEntry{0, int32(si)})
	return g, nil
}

// Release returns the buffers to the pool; g must not be used afterwards.
func (g *Geodesic) Release() {
	if g.ws != nil {
		geoPool.Put(g.ws)
		g.ws = nil
	}
}

// Pixel is the pixel most recently popped by Next and its distance.
func (g *Geodesic) Pixel() (x, y int, d float64) { return g.cx, g.cy, g.cd }

// Next pops the next pixel in (distance, y, x) order and relaxes its
// neighbours; it returns false when the window is exhausted.
func (g *Geodesic) Next() bool {
	ws := g.ws
	if ws == nil {
		return false
	}
	for len(ws.heap) > 0 {
		e := g.pop()
		i := int(e.i)
		if ws.done[i] == ws.gen || e.d > ws.dist[i] {
			continue // stale entry
		}
		ws.done[i] = ws.gen
		lx, ly := i%g.ww, i/g.ww
		g.cx, g.cy, g.cd = lx+g.x0, ly+g.y0, e.d
		ca := g.cost[g.cy*g.w+g.cx]
		for dy := -1; dy <= 1; dy++ {
			ny := ly + dy
			if ny < 0 || ny >= g.wh {
				continue
			}
			for dx := -1; dx <= 1; dx++ {
				nx := lx + dx
				if dx == 0 && dy == 0 || nx < 0 || nx >= g.ww {
					continue
				}
				j := ny*g.ww + nx
				if ws.done[j] == ws.gen {
					continue
				}
				cb := g.cost[(ny+g.y0)*g.w+nx+g.x0]
				// ℓ·(c(a)+c(b))/2, the product kept out of any fused add.
				var step float64
				if dx != 0 && dy != 0 {
					step = float64(math.Sqrt2*(ca+cb)) / 2
				} else {
					step = (ca + cb) / 2
				}
				nd := e.d + step
				if ws.seen[j] != ws.gen || nd < ws.dist[j] {
					ws.seen[j] = ws.gen
					ws.dist[j] = nd
					g.push(geoEntry{nd, int32(j)})
				}
			}
		}
		return true
	}
	return false
}

func less(a, b geoEntry) bool {
	if a.d != b.d {
		return a.d < b.d
	}
	return a.i < b.i
}

func (g *Geodesic) push(e geoEntry) {
	h := append(g.ws.heap, e)
	k := len(h) - 1
	for k > 0 {
		p := (k - 1) / 2
		if !less(h[k], h[p]) {
			break
		}
		h[k], h[p] = h[p], h[k]
		k = p
	}
	g.ws.heap = h
}

func (g *Geodesic) pop() geoEntry {
	h := g.ws.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	k := 0
	for {
		l := 2*k + 1
		if l >= len(h) {
			break
		}
		c := l
		if r := l + 1; r < len(h) && less(h[r], h[l]) {
			c = r
		}
		if !less(h[c], h[k]) {
			break
		}
		h[k], h[c] = h[c], h[k]
		k = c
	}
	g.ws.heap = h
	return top
}
