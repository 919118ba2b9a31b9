package mask

import (
	"slices"
	"sync"
	"unsafe"
)

// Morphology gives the results of OpenCV's dilate and erode (build.md §5,
// §8.1), computed by the run-based kernel below:
//
//	dilate(M)(p) = OR  over o ∈ SE of M(p+o), outside pixels are background;
//	erode(M)(p)  = AND over o ∈ SE of M(p+o), outside pixels are foreground.
//
// Erosion is computed as ¬dilate(¬M): complementing swaps the two border
// conventions, so one kernel serves both.
//
// The kernel works on horizontal runs. For each source row it builds, once
// per distinct run [a, b] of the element, the row's horizontal dilation
// h[x] = OR of src[x+a … x+b] by stamping each foreground run of the source
// row (cost ∝ W, independent of the run's width). Output row y is then the
// word-wise OR of h_{run(dy)} of source rows y+dy. One E32 dilation of a
// 1024² mask costs about 17 W-byte stamps per source row plus 32·W/8 word
// ORs per output row.

// Dilate returns M dilated iters times by se (iters ≤ 0 returns a copy).
func Dilate(m Mask, se SE, iters int) Mask {
	out := m.Clone()
	if iters <= 0 {
		return out
	}
	tmp := New(m.W, m.H)
	for i := 0; i < iters; i++ {
		dilateOnce(out, tmp, se)
		out, tmp = tmp, out
	}
	return out
}

// Erode returns M eroded iters times by se with outside pixels counting as
// foreground (nothing erodes in from the image edge).
func Erode(m Mask, se SE, iters int) Mask {
	if iters <= 0 {
		return m.Clone()
	}
	c := Not(m)
	d := Dilate(c, se, iters)
	for i, v := range d.Pix {
		d.Pix[i] = v ^ 1
	}
	return d
}

// ErodeReflect erodes M once by se with OpenCV's BORDER_REFLECT: outside
// pixels mirror the image including the edge pixel (index −1 reads 0, −2
// reads 1, …; index W reads W−1, W+1 reads W−2), as build.md §6 step 2
// prescribes for the peripheral band.
func ErodeReflect(m Mask, se SE) Mask {
	if m.W == 0 || m.H == 0 {
		return m.Clone()
	}
	pl, pr := max(0, -se.minDX), max(0, se.maxDX)
	pt, pb := max(0, -se.minDY), max(0, se.maxDY)
	pw, ph := m.W+pl+pr, m.H+pt+pb
	p := New(pw, ph)
	for y := 0; y < ph; y++ {
		sy := reflectIndex(y-pt, m.H)
		src := m.Row(sy)
		dst := p.Row(y)
		copy(dst[pl:pl+m.W], src)
		for x := 0; x < pl; x++ {
			dst[x] = src[reflectIndex(x-pl, m.W)]
		}
		for x := pl + m.W; x < pw; x++ {
			dst[x] = src[reflectIndex(x-pl, m.W)]
		}
	}
	e := Erode(p, se, 1)
	out := New(m.W, m.H)
	for y := 0; y < m.H; y++ {
		copy(out.Row(y), e.Row(y + pt)[pl:pl+m.W])
	}
	return out
}

// reflectIndex maps an index into 0..n−1 by OpenCV's BORDER_REFLECT
// (fedcba|abcdefgh|hgfedcb), repeating for far indices.
func reflectIndex(p, n int) int {
	if n == 1 {
		return 0
	}
	for p < 0 || p >= n {
		if p < 0 {
			p = -p - 1
		} else {
			p = 2*n - 1 - p
		}
	}
	return p
}

// Close is dilate then erode by se (OpenCV MORPH_CLOSE, one iteration).
func Close(m Mask, se SE) Mask { return Erode(Dilate(m, se, 1), se, 1) }

// Open is erode then dilate by se (OpenCV MORPH_OPEN, one iteration).
func Open(m Mask, se SE) Mask { return Dilate(Erode(m, se, 1), se, 1) }

// morphWS holds the reusable buffers of one dilation.
type morphWS struct {
	ring  []uint64 // slots × nRuns rows of stride words
	empty []bool   // per slot: source row had no foreground
	acc   []uint64 // one output row
	ones  []uint8
	runs  [][2]int // source-row foreground runs
	count []int32  // rectangle path: on h-rows per column in the window
}

var morphPool = sync.Pool{New: func() any { return new(morphWS) }}

func bytesOf(u []uint64) []uint8 {
	if len(u) == 0 {
		return nil
	}
	return unsafe.Slice((*uint8)(unsafe.Pointer(&u[0])), len(u)*8)
}

// dilateOnce writes dilate(src) into dst (same size, distinct buffers).
func dilateOnce(src, dst Mask, se SE) {
	clear(dst.Pix)
	if src.W == 0 || src.H == 0 || se.n == 0 {
		return
	}
	uniq, rowRuns := distinctRuns(se)
	ws := morphPool.Get().(*morphWS)
	defer morphPool.Put(ws)
	d := newDilation(ws, src, se, uniq)
	// A full rectangle (one run, every dy present) needs no per-row OR over
	// the element's rows.
	if len(uniq) == 1 && len(se.rows) == d.slots {
		d.rectangle(dst)
		return
	}
	d.general(dst, rowRuns)
}

// distinctRuns returns the distinct runs of the element and, per element
// row, the indices of its runs among them.
func distinctRuns(se SE) (uniq []run, rowRuns [][]int) {
	rowRuns = make([][]int, len(se.rows))
	for i, r := range se.rows {
		for _, rn := range r.runs {
			k := slices.Index(uniq, rn)
			if k < 0 {
				k = len(uniq)
				uniq = append(uniq, rn)
			}
			rowRuns[i] = append(rowRuns[i], k)
		}
	}
	return uniq, rowRuns
}

// dilation is one dilateOnce in progress: a ring of slots, one per row of
// the element's vertical extent, each holding a source row's horizontal
// dilations by every distinct run.
type dilation struct {
	src    Mask
	se     SE
	uniq   []run
	stride int      // words per row
	slots  int      // ring slots
	ring   []uint64 // slots × len(uniq) rows of stride words
	empty  []bool   // per slot: source row had no foreground
	ws     *morphWS
}

// newDilation sizes the pooled buffers of ws for src and se.
func newDilation(ws *morphWS, src Mask, se SE, uniq []run) dilation {
	d := dilation{src: src, se: se, uniq: uniq, ws: ws,
		stride: (src.W + 7) / 8,
		slots:  se.maxDY - se.minDY + 1,
	}
	need := d.slots * len(uniq) * d.stride
	if cap(ws.ring) < need {
		ws.ring = make([]uint64, need)
	}
	d.ring = ws.ring[:need]
	if cap(ws.empty) < d.slots {
		ws.empty = make([]bool, d.slots)
	}
	d.empty = ws.empty[:d.slots]
	if len(ws.ones) < src.W {
		ws.ones = make([]uint8, src.W)
		for i := range ws.ones {
			ws.ones[i] = 1
		}
	}
	return d
}

func (d *dilation) slotOf(sy int) int {
	s := sy % d.slots
	if s < 0 {
		s += d.slots
	}
	return s
}

// fill computes the horizontal dilations of source row sy into its slot.
func (d *dilation) fill(sy int) {
	W, ws := d.src.W, d.ws
	s := d.slotOf(sy)
	row := d.src.Row(sy)
	runs := ws.runs[:0]
	for x := 0; x < W; {
		if row[x] == 0 {
			x++
			continue
		}
		x0 := x
		for x < W && row[x] != 0 {
			x++
		}
		runs = append(runs, [2]int{x0, x - 1})
	}
	ws.runs = runs
	d.empty[s] = len(runs) == 0
	if d.empty[s] {
		return
	}
	ring, ones, stride := d.ring, ws.ones, d.stride
	base := s * len(d.uniq) * stride
	for k, u := range d.uniq {
		h := bytesOf(ring[base+k*stride : base+(k+1)*stride])
		clear(h)
		for _, sr := range runs {
			// x is on iff [x+a, x+b] meets [s0, s1].
			lo := max(0, sr[0]-u.b)
			hi := min(W-1, sr[1]-u.a)
			if lo <= hi {
				copy(h[lo:hi+1], ones)
			}
		}
	}
}

// rectangle dilates by a full rectangle: a per-column count of on h-rows
// in the vertical window slides down the image in O(W) per row, so the
// cost does not grow with the element's height (the peripheral band's e×e
// square).
func (d *dilation) rectangle(dst Mask) {
	W, H, se, ws := d.src.W, d.src.H, d.se, d.ws
	if cap(ws.count) < W {
		ws.count = make([]int32, W)
	}
	count := ws.count[:W]
	clear(count)
	ring, empty, stride := d.ring, d.empty, d.stride
	add := func(sy int, delta int32) {
		s := d.slotOf(sy)
		if empty[s] {
			return
		}
		h := bytesOf(ring[s*stride : (s+1)*stride])[:W]
		for x, v := range h {
			count[x] += int32(v) * delta
		}
	}
	next := 0
	for y := 0; y < H; y++ {
		if old := y + se.minDY - 1; old >= 0 && old < next {
			add(old, -1) // leaves the window before its slot is reused
		}
		top := min(H-1, y+se.maxDY)
		if next < y+se.minDY {
			next = max(0, y+se.minDY)
		}
		for ; next <= top; next++ {
			d.fill(next)
			add(next, 1)
		}
		row := dst.Row(y)
		for x, c := range count {
			if c > 0 {
				row[x] = 1
			}
		}
	}
}

// general dilates by any element: output row y is the word-wise OR of the
// horizontal dilations h_{run(dy)} of source rows y+dy.
func (d *dilation) general(dst Mask, rowRuns [][]int) {
	W, H, se, ws := d.src.W, d.src.H, d.se, d.ws
	ring, empty, stride, nr := d.ring, d.empty, d.stride, len(d.uniq)
	if cap(ws.acc) < stride {
		ws.acc = make([]uint64, stride)
	}
	acc := ws.acc[:stride]
	next := 0 // next source row to fill
	for y := 0; y < H; y++ {
		top := min(H-1, y+se.maxDY)
		if next < y+se.minDY {
			next = max(0, y+se.minDY)
		}
		for ; next <= top; next++ {
			d.fill(next)
		}
		clear(acc)
		any := false
		for i, r := range se.rows {
			sy := y + r.dy
			if sy < 0 || sy >= H {
				continue
			}
			s := d.slotOf(sy)
			if empty[s] {
				continue
			}
			any = true
			base := s * nr * stride
			for _, k := range rowRuns[i] {
				orInto(acc, ring[base+k*stride:base+(k+1)*stride])
			}
		}
		if any {
			copy(dst.Row(y), bytesOf(acc)[:W])
		}
	}
}

// orInto sets acc |= h word by word (len(h) ≥ len(acc)). Not inlined, so
// this innermost loop gets registers of its own: inlined, its counter is
// spilled to the stack, a store and load on every word.
//
//go:noinline
func orInto(acc, h []uint64) {
	h = h[:len(acc)]
	for j := range acc {
		acc[j] |= h[j]
	}
}
