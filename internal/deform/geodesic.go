package deform

import (
	"math"
	"slices"

	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// smoothstep is S(f) = f²(3 − 2f).
func smoothstep(f float64) float64 { return float64(f*f) * (3 - float64(2*f)) }

// organicNoise is the multi-octave value noise of §8.4 on an n×n square,
// min-max normalised to [0, 1] (a constant field gives 0.5). For each
// octave of cell size z it draws a lattice of L = (n−1) div z + 2 values per
// axis with r.Float64() in row-major order (lattice row outer). The result
// is row-major: index t·n + s for local coordinates (s, t).
//
// Each value is the smoothstep-bilinear blend v = a + f_y·(b − a) of the
// horizontal blends a, b of lattice rows j and j+1 at column s. Those
// horizontal blends depend only on (j, s), so they are computed once per
// lattice row (L·n of them) rather than twice per pixel; every value is
// the same expression on the same operands, so the field is bit-for-bit
// the direct per-pixel evaluation (TestOrganicNoiseMatchesDirect).
func organicNoise(r *rng.RNG, n int, cells []int, weights []float64, buf []float64) []float64 {
	if cap(buf) < n*n {
		buf = make([]float64, n*n)
	}
	field := buf[:n*n]
	clear(field)
	is := make([]int, n)
	fs := make([]float64, n)
	var lat, hb []float64
	for oc, z := range cells {
		if z <= 0 {
			continue
		}
		wgt := 0.0
		if oc < len(weights) {
			wgt = weights[oc]
		}
		L := (n-1)/z + 2
		lat = slices.Grow(lat[:0], L*L)[:L*L]
		for i := range lat {
			lat[i] = r.Float64()
		}
		for s := 0; s < n; s++ {
			gx := float64(s) / float64(z)
			i := int(math.Floor(gx))
			is[s] = i
			fs[s] = smoothstep(gx - float64(i))
		}
		// hb row j: lattice row j blended horizontally at every column.
		hb = slices.Grow(hb[:0], L*n)[:L*n]
		for j := 0; j < L; j++ {
			lr := lat[j*L : (j+1)*L]
			out := hb[j*n : (j+1)*n]
			for s := range out {
				i, fx := is[s], fs[s]
				out[s] = lr[i] + float64(fx*(lr[i+1]-lr[i]))
			}
		}
		for t := 0; t < n; t++ {
			j, fy := is[t], fs[t]
			a := hb[j*n : (j+1)*n]
			b := hb[(j+1)*n : (j+2)*n]
			row := field[t*n : (t+1)*n]
			for s := range row {
				v := a[s] + float64(fy*(b[s]-a[s]))
				row[s] += float64(wgt * v)
			}
		}
	}
	lo, hi := fieldRange(field)
	if !(hi > lo) {
		for i := range field {
			field[i] = 0.5
		}
		return field
	}
	span := hi - lo
	for i, v := range field {
		field[i] = (v - lo) / span
	}
	return field
}

// fieldRange is (min(f), max(f)) as the builtin min and max would fold
// them from (+Inf, −Inf), by plain comparisons, which cost a fraction of
// the builtins' NaN and signed-zero handling. The results are the same
// float64s for the fields it serves: a NaN makes both NaN, as with the
// builtins; and neither field holds −0 (a float sum is −0 only when both
// terms are, and the noise sums start from +0 while a cost is 1 + α·ĝ),
// so the order of −0 and +0, the one case where the builtins and < differ,
// never arises.
func fieldRange(f []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range f {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
		if v != v {
			return v, v
		}
	}
	return lo, hi
}

// directionFactor is e(q) of §8.4: the radius, in direction (dx, dy), of
// the ellipse with semi-axes a (along θ) and b; 1 at the origin.
func directionFactor(dx, dy int, a, b, cosT, sinT float64) float64 {
	if dx == 0 && dy == 0 {
		return 1
	}
	fx, fy := float64(dx), float64(dy)
	u := float64(fx*cosT) + float64(fy*sinT)
	v := float64(-fx*sinT) + float64(fy*cosT)
	ua, vb := u/a, v/b
	return math.Sqrt(float64(fx*fx)+float64(fy*fy)) / math.Sqrt(float64(ua*ua)+float64(vb*vb))
}

// popped is one pixel popped by the geodesic search.
type popped struct {
	i int32
	d float64
}

// ballLog records one prompt point's geodesic ball for the inspect log.
type ballLog struct {
	Point       [2]int  `json:"point"`
	Op          string  `json:"op"`
	DT          float64 `json:"d_T"`
	RhoMax      float64 `json:"rho_max"`
	A           float64 `json:"a"`
	B           float64 `json:"b"`
	Theta       float64 `json:"theta"`
	Pixels      int     `json:"ball_px"`
	Unreachable bool    `json:"point_unreachable,omitempty"`
}

// ball computes Ball(p, T) of §8.4, with T = {q : m(q) = tv}, appending
// the ball's pixel indices (full-frame row-major) to out. ok is false when
// the window is exhausted before T is reached (no RNG draw happens then).
func (e *engine) ball(r *rng.RNG, m mask.Mask, tv uint8, p mask.Point, out []int32) ([]int32, ballLog, bool) {
	bl := ballLog{Point: [2]int{p.X, p.Y}}
	cfg := &e.cfg
	lo, hi := cfg.OrganicAxisRange[0], cfg.OrganicAxisRange[1]
	kr, mu := cfg.GeoRadiusFactor, cfg.OrganicMargin
	var a, b, theta float64
	h, n := 0, 0
	// radius runs once d_T is known: it draws the organic parameters in the
	// spec's order (a, b, θ, then the noise lattices) and returns ρ_max.
	radius := func(dT float64) float64 {
		a = r.Uniform(lo, hi)
		b = r.Uniform(lo, hi)
		theta = r.Uniform(0, math.Pi)
		rhoMax := float64(kr*dT) + float64(max(hi, 1)*mu)
		h = int(math.Ceil(rhoMax))
		n = 2*h + 1
		e.noiseBuf = organicNoise(r, n, cfg.OrganicCells, cfg.OrganicWeights, e.noiseBuf)
		return rhoMax
	}
	var pop []popped
	var dT, rhoMax float64
	var found bool
	if e.search != nil && p.X >= 0 && p.Y >= 0 && p.X < e.w && p.Y < e.h {
		pop, dT, rhoMax, found = e.search.run(p, m.Pix, tv, radius, e.popBuf[:0])
	} else {
		pop, dT, rhoMax, found = e.heapSearch(p, m, tv, radius, e.popBuf[:0])
	}
	e.popBuf = pop
	if !found {
		bl.Unreachable = true
		return out, bl, false
	}
	noise := e.noiseBuf
	base := float64(kr * dT)
	cosT, sinT := math.Cos(theta), math.Sin(theta)
	start := len(out)
	for _, q := range pop {
		if q.d <= base {
			out = append(out, q.i)
			continue
		}
		qx, qy := int(q.i)%e.w, int(q.i)/e.w
		dx, dy := qx-p.X, qy-p.Y
		if dx < -h || dx > h || dy < -h || dy > h {
			continue // only reachable when some cost is below 1
		}
		ef := directionFactor(dx, dy, a, b, cosT, sinT)
		nv := noise[(dy+h)*n+(dx+h)]
		if q.d <= base+float64(float64(mu*ef)*nv) {
			out = append(out, q.i)
		}
	}
	bl.DT, bl.RhoMax, bl.A, bl.B, bl.Theta = dT, rhoMax, a, b, theta
	bl.Pixels = len(out) - start
	return out, bl, true
}

// heapSearch is the same search with mask.Geodesic's heap-ordered
// Dijkstra; used when some cost is below 1 (a negative geo_alpha), where
// the bucket search would not be exact.
func (e *engine) heapSearch(p mask.Point, m mask.Mask, tv uint8, radius func(float64) float64, pop []popped) ([]popped, float64, float64, bool) {
	g, err := mask.NewGeodesic(e.cost, e.w, e.h, p, e.cfg.GeoWindow)
	if err != nil {
		return pop, 0, 0, false
	}
	defer g.Release()
	dT, found := 0.0, false
	for g.Next() {
		x, y, d := g.Pixel()
		i := int32(y*e.w + x)
		pop = append(pop, popped{i, d})
		if m.Pix[i] == tv {
			dT, found = d, true
			break
		}
	}
	if !found {
		return pop, 0, 0, false
	}
	rhoMax := radius(dT)
	for g.Next() {
		x, y, d := g.Pixel()
		if d > rhoMax {
			break
		}
		pop = append(pop, popped{int32(y*e.w + x), d})
	}
	return pop, dT, rhoMax, true
}

// prompt is one prompt point with the side of its anatomy (for clipping).
type prompt struct {
	P    mask.Point
	Side string
}

// deformLog records one Deform call.
type deformLog struct {
	Balls  []ballLog `json:"balls"`
	Failed string    `json:"failed,omitempty"`
}

// smoothMargin is the background kept around a mask when smoothing on a
// crop: the closing dilates by the disc radius, and the following erosion
// must not see the crop's outside (see the crop margins in rings.go).
func (e *engine) smoothMargin() int { return 2*e.cfg.DeformSmoothRadius + 2 }

// deform is Deform(M, E, K, clip) of §8.4. ok is false when a point cannot
// reach its target (point_unreachable); the remaining points are then not
// processed.
func (e *engine) deform(r *rng.RNG, m mask.Mask, E []prompt, K []mask.Point, clip bool) (cropped, deformLog, bool) {
	var dl deformLog
	add := e.addBuf[:0]
	for _, p := range E {
		s := len(add)
		var bl ballLog
		var ok bool
		add, bl, ok = e.ball(r, m, 1, p.P, add)
		bl.Op = "expansion"
		dl.Balls = append(dl.Balls, bl)
		if !ok {
			e.addBuf = add
			dl.Failed = "point_unreachable"
			return cropped{}, dl, false
		}
		if clip {
			lung := e.lungFor(p.Side)
			k := s
			for _, i := range add[s:] {
				if lung.Pix[i] != 0 {
					add[k] = i
					k++
				}
			}
			add = add[:k]
		}
	}
	e.addBuf = add
	rem := e.remBuf[:0]
	for _, q := range K {
		var bl ballLog
		var ok bool
		rem, bl, ok = e.ball(r, m, 0, q, rem)
		bl.Op = "contraction"
		dl.Balls = append(dl.Balls, bl)
		if !ok {
			e.remBuf = rem
			dl.Failed = "point_unreachable"
			return cropped{}, dl, false
		}
	}
	e.remBuf = rem
	// The crop covers M and everything added, plus the smoothing margin.
	b, ok := e.rings.bbox(m)
	for _, i := range add {
		x, y := int(i)%e.w, int(i)/e.w
		if !ok {
			b, ok = box{x, y, x, y}, true
			continue
		}
		b = box{min(b.x0, x), min(b.y0, y), max(b.x1, x), max(b.y1, y)}
	}
	if !ok {
		return cropped{w: e.w, h: e.h}, dl, true
	}
	cb := b.grow(e.smoothMargin(), e.w, e.h)
	c := cropMask(m, cb)
	cw := cb.w()
	for _, i := range add {
		x, y := int(i)%e.w-cb.x0, int(i)/e.w-cb.y0
		c.Pix[y*cw+x] = 1
	}
	for _, i := range rem {
		x, y := int(i)%e.w-cb.x0, int(i)/e.w-cb.y0
		if x >= 0 && y >= 0 && x < cw && y < cb.h() {
			c.Pix[y*cw+x] = 0
		}
	}
	c = mask.Close(c, e.smooth)
	c = mask.Open(c, e.smooth)
	c = mask.FillHoles(c)
	c = mask.DropSmall(c, e.cfg.DeformMinPiecePx)
	return cropped{c: c, b: cb, w: e.w, h: e.h}, dl, true
}

// cropped is a w×h mask held as the crop b: every pixel outside b is off.
// Deformation results stay cropped until they are validated, so rejected
// candidates never cost a full frame.
type cropped struct {
	c    mask.Mask // b.w()×b.h(); empty (W = 0) when the whole mask is off
	b    box
	w, h int
}

func (cr cropped) at(p mask.Point) uint8 {
	if cr.c.W == 0 || p.X < cr.b.x0 || p.X > cr.b.x1 || p.Y < cr.b.y0 || p.Y > cr.b.y1 {
		return 0
	}
	return cr.c.Pix[(p.Y-cr.b.y0)*cr.c.W+p.X-cr.b.x0]
}

// full materialises the w×h mask.
func (cr cropped) full() mask.Mask {
	out := mask.New(cr.w, cr.h)
	if cr.c.W != 0 {
		pasteMask(out, cr.c, cr.b)
	}
	return out
}

// wrapFull views a full-frame mask as a cropped one.
func wrapFull(m mask.Mask) cropped {
	return cropped{c: m, b: box{0, 0, m.W - 1, m.H - 1}, w: m.W, h: m.H}
}

func (e *engine) lungFor(side string) mask.Mask {
	switch side {
	case "right":
		return e.g.LungRight
	case "left":
		return e.g.LungLeft
	}
	return e.lungUnion
}
