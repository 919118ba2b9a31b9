package deform

import (
	"github.com/chexpercept/chexpercept/internal/mask"
)

// box is an inclusive pixel rectangle.
type box struct{ x0, y0, x1, y1 int }

func (b box) w() int { return b.x1 - b.x0 + 1 }
func (b box) h() int { return b.y1 - b.y0 + 1 }

// grow widens b by k on every side, clipped to a w×h image.
func (b box) grow(k, w, h int) box {
	return box{max(0, b.x0-k), max(0, b.y0-k), min(w-1, b.x1+k), min(h-1, b.y1+k)}
}

func bboxOf(m mask.Mask) (box, bool) {
	x0, y0, x1, y1, ok := m.Bounds()
	return box{x0, y0, x1, y1}, ok
}

// cropMask copies the pixels of b out of m.
func cropMask(m mask.Mask, b box) mask.Mask {
	c := mask.New(b.w(), b.h())
	for y := b.y0; y <= b.y1; y++ {
		copy(c.Row(y-b.y0), m.Pix[y*m.W+b.x0:y*m.W+b.x1+1])
	}
	return c
}

// pasteMask writes c into dst at b (c is b.w()×b.h()).
func pasteMask(dst, c mask.Mask, b box) {
	for y := b.y0; y <= b.y1; y++ {
		copy(dst.Pix[y*dst.W+b.x0:y*dst.W+b.x1+1], c.Row(y-b.y0))
	}
}

// Crop margins. Morphology on a crop equals morphology on the full frame
// when the crop keeps enough background around the mask: a dilation by E32
// grows a mask by at most 16 px per iteration; an erosion never leaves the
// mask, and a background margin wider than the element's reach (16) keeps
// the crop's artificial outside (foreground for erosion) out of every
// foreground pixel's neighbourhood. Contours need one more pixel of
// background so the crop border is exterior background exactly where the
// full frame's is. Where a crop is clipped by the image edge, the crop's
// outside is the image's outside, so the border conventions are unchanged.
const (
	e32Reach    = 16
	erodeMargin = e32Reach + 2
)

type morphKind int

const (
	dilateKind morphKind = iota
	erodeKind
)

type ringKey struct {
	pix   *uint8
	kind  morphKind
	iters int
}

// ringCache memoises contours of morphed masks within one case. Masks are
// identified by their pixel buffer; the engine never mutates a mask once
// it has been handed out, and the cache holds the buffer alive, so a key
// cannot be reused by another mask.
type ringCache struct {
	se    mask.SE
	rings map[ringKey][]mask.Point
	boxes map[*uint8]boxEntry
	// morph keeps, per mask and kind, the most iterated crop computed so
	// far, so a deeper ring continues from it instead of starting over.
	morph  map[morphKey]morphEntry
	counts map[*uint8]int
}

type morphKey struct {
	pix  *uint8
	kind morphKind
}

type morphEntry struct {
	iters int
	b     box
	m     mask.Mask
}

type boxEntry struct {
	b  box
	ok bool
}

func newRingCache(se mask.SE) *ringCache {
	return &ringCache{se: se, rings: map[ringKey][]mask.Point{}, boxes: map[*uint8]boxEntry{}, morph: map[morphKey]morphEntry{}, counts: map[*uint8]int{}}
}

func (rc *ringCache) bbox(m mask.Mask) (box, bool) {
	if len(m.Pix) == 0 {
		return box{}, false
	}
	k := &m.Pix[0]
	if e, ok := rc.boxes[k]; ok {
		return e.b, e.ok
	}
	b, ok := bboxOf(m)
	rc.boxes[k] = boxEntry{b, ok}
	return b, ok
}

// count is m.Count(), memoised per mask.
func (rc *ringCache) count(m mask.Mask) int {
	if len(m.Pix) == 0 {
		return 0
	}
	k := &m.Pix[0]
	if n, ok := rc.counts[k]; ok {
		return n
	}
	n := m.Count()
	rc.counts[k] = n
	return n
}

// ring returns Contour(dilate^iters(m)) or Contour(erode^iters(m)) with
// E32, in row-major order (§8.1). The slice is shared; callers must not
// modify it.
func (rc *ringCache) ring(m mask.Mask, kind morphKind, iters int) []mask.Point {
	if len(m.Pix) == 0 {
		return nil
	}
	key := ringKey{&m.Pix[0], kind, iters}
	if r, ok := rc.rings[key]; ok {
		return r
	}
	r := rc.compute(m, kind, iters)
	rc.rings[key] = r
	return r
}

func (rc *ringCache) compute(m mask.Mask, kind morphKind, iters int) []mask.Point {
	b, ok := rc.bbox(m)
	if !ok {
		return nil
	}
	iters = max(iters, 0)
	margin := erodeMargin
	if kind == dilateKind {
		margin = e32Reach*iters + 2
	}
	cb := b.grow(margin, m.W, m.H)
	mk := morphKey{&m.Pix[0], kind}
	var c mask.Mask
	done := 0
	if ce, ok := rc.morph[mk]; ok && ce.iters <= iters {
		// Continue from the cached result. Its box lies inside cb (margins
		// only grow with iterations), and outside it the full-frame result
		// is background, so pasting into the larger crop is exact.
		if ce.b == cb {
			c = ce.m.Clone()
		} else {
			c = mask.New(cb.w(), cb.h())
			pasteMask(c, ce.m, box{ce.b.x0 - cb.x0, ce.b.y0 - cb.y0, ce.b.x1 - cb.x0, ce.b.y1 - cb.y0})
		}
		done = ce.iters
	} else {
		c = cropMask(m, cb)
	}
	if kind == dilateKind {
		c = mask.Dilate(c, rc.se, iters-done)
	} else {
		c = mask.Erode(c, rc.se, iters-done)
	}
	if ce, ok := rc.morph[mk]; !ok || ce.iters < iters {
		rc.morph[mk] = morphEntry{iters, cb, c}
	}
	pts := mask.Contour(c)
	for i := range pts {
		pts[i].X += cb.x0
		pts[i].Y += cb.y0
	}
	return pts
}

// pointRing is the ring of depth d for §8.3: expansion
// Contour(dilate^(d·i_exp)(M)), contraction Contour(erode^(d·i_con)(M)).
func (e *engine) pointRing(m mask.Mask, op Op, d int) []mask.Point {
	if op == Expansion {
		return e.rings.ring(m, dilateKind, d*e.cfg.RingIterationsExpansion)
	}
	return e.rings.ring(m, erodeKind, d*e.cfg.RingIterationsContraction)
}

// inRegion filters pts (kept in order) to those on in r.
func inRegion(pts []mask.Point, r mask.Mask) []mask.Point {
	out := make([]mask.Point, 0, len(pts)/2)
	for _, p := range pts {
		if r.Pix[p.Y*r.W+p.X] != 0 {
			out = append(out, p)
		}
	}
	return out
}
