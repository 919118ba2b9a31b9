package mask

import (
	"encoding/binary"
	"math/bits"
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
// conventions, so one kernel serves both. The kernel complements on the
// fly (it reads runs of background as ¬M's foreground and writes 0 for
// ¬M's dilation on a row that starts all 1), so ¬M and the complemented
// result are never materialised.
//
// The kernel works on horizontal runs. For each source row it builds, once
// per distinct run [a, b] of the element, the row's horizontal dilation
// h[x] = OR of src[x+a … x+b] by stamping each foreground run of the source
// row (cost ∝ the number of runs, independent of their widths). Output row
// y is then the word-wise OR of h_{run(dy)} of source rows y+dy. The h rows
// hold one bit per pixel, so one E32 dilation of a 1024² mask costs about
// 17 stamps per foreground run of a source row plus 32·W/64 word ORs per
// output row, and an output row is written only where its bits are set.

// Dilate returns M dilated iters times by se (iters ≤ 0 returns a copy).
func Dilate(m Mask, se SE, iters int) Mask { return morph(m, se, iters, false) }

// Erode returns M eroded iters times by se with outside pixels counting as
// foreground (nothing erodes in from the image edge).
func Erode(m Mask, se SE, iters int) Mask { return morph(m, se, iters, true) }

// morph applies dilateOnce iters times (iters ≤ 0 returns a copy), the
// first from m itself, then back and forth between two buffers.
func morph(m Mask, se SE, iters int, erode bool) Mask {
	if iters <= 0 {
		return m.Clone()
	}
	out := New(m.W, m.H)
	dilateOnce(m, out, se, erode)
	if iters == 1 {
		return out
	}
	tmp := New(m.W, m.H)
	for i := 1; i < iters; i++ {
		dilateOnce(out, tmp, se, erode)
		out, tmp = tmp, out
	}
	return out
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
	ones  []uint8  // W bytes of 1
	zeros []uint8  // 64 bytes of 0
	runs  [][2]int // source-row foreground runs
	erode bool     // complement source and result (see Erode)
	count []int32  // rectangle path: on h-rows per column in the window
}

var morphPool = sync.Pool{New: func() any { return new(morphWS) }}

func bytesOf(u []uint64) []uint8 {
	if len(u) == 0 {
		return nil
	}
	return unsafe.Slice((*uint8)(unsafe.Pointer(&u[0])), len(u)*8)
}

// dilateOnce writes dilate(src) into dst (same size, distinct buffers), or
// with erode erode(src) = ¬dilate(¬src).
func dilateOnce(src, dst Mask, se SE, erode bool) {
	if erode {
		for i := range dst.Pix {
			dst.Pix[i] = 1
		}
	} else {
		clear(dst.Pix)
	}
	if src.W == 0 || src.H == 0 || se.n == 0 {
		return
	}
	uniq, rowRuns := distinctRuns(se)
	ws := morphPool.Get().(*morphWS)
	defer morphPool.Put(ws)
	ws.erode = erode
	// A full rectangle (one run, every dy present) needs no per-row OR over
	// the element's rows.
	if len(uniq) == 1 && len(se.rows) == se.maxDY-se.minDY+1 {
		d := newDilation(ws, src, se, uniq, (src.W+7)/8)
		d.rectangle(dst)
		return
	}
	d := newDilation(ws, src, se, uniq, (src.W+63)/64)
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
	stride int      // words per row: W bytes (rectangle) or W bits (general)
	slots  int      // ring slots
	ring   []uint64 // slots × len(uniq) rows of stride words
	empty  []bool   // per slot: source row had no foreground
	ws     *morphWS
}

// newDilation sizes the pooled buffers of ws for src and se, with rows of
// stride words.
func newDilation(ws *morphWS, src Mask, se SE, uniq []run, stride int) dilation {
	d := dilation{src: src, se: se, uniq: uniq, ws: ws,
		stride: stride,
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
	if len(ws.zeros) < 64 {
		ws.zeros = make([]uint8, 64)
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

// sourceRuns lists the foreground runs of source row sy in ws.runs (of
// ¬src when eroding). Eight pixels are tested at once where a row is all
// background or all foreground, which is most of a mask.
func (d *dilation) sourceRuns(sy int) [][2]int {
	const ones = 0x0101010101010101
	row := d.src.Row(sy)
	W := len(row)
	// A run is made of fg pixels; as eight pixels, gap holds none of them
	// and full only them (pixels are 0 or 1).
	fg, gap, full := uint8(1), uint64(0), uint64(ones)
	if d.ws.erode {
		fg, gap, full = 0, ones, 0
	}
	runs := d.ws.runs[:0]
	for x := 0; x < W; {
		for x+8 <= W && binary.LittleEndian.Uint64(row[x:]) == gap {
			x += 8
		}
		if x >= W {
			break
		}
		if row[x] != fg {
			x++
			continue
		}
		x0 := x
		for x+8 <= W && binary.LittleEndian.Uint64(row[x:]) == full {
			x += 8
		}
		for x < W && row[x] == fg {
			x++
		}
		runs = append(runs, [2]int{x0, x - 1})
	}
	d.ws.runs = runs
	return runs
}

// fill computes the horizontal dilations of source row sy into its slot,
// one byte per pixel (the rectangle path).
func (d *dilation) fill(sy int) {
	W, ws := d.src.W, d.ws
	s := d.slotOf(sy)
	runs := d.sourceRuns(sy)
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

// fillBits computes the horizontal dilations of source row sy into its
// slot, one bit per pixel (bit x%64 of word x/64; bits ≥ W stay clear).
func (d *dilation) fillBits(sy int) {
	W := d.src.W
	s := d.slotOf(sy)
	runs := d.sourceRuns(sy)
	d.empty[s] = len(runs) == 0
	if d.empty[s] {
		return
	}
	ring, stride := d.ring, d.stride
	base := s * len(d.uniq) * stride
	for k, u := range d.uniq {
		h := ring[base+k*stride : base+(k+1)*stride]
		clear(h)
		for _, sr := range runs {
			// x is on iff [x+a, x+b] meets [s0, s1].
			lo := max(0, sr[0]-u.b)
			hi := min(W-1, sr[1]-u.a)
			if lo <= hi {
				setBits(h, lo, hi)
			}
		}
	}
}

// setBits sets bits lo … hi (inclusive) of h.
func setBits(h []uint64, lo, hi int) {
	wl, wh := lo>>6, hi>>6
	ml := ^uint64(0) << uint(lo&63)
	mh := ^uint64(0) >> uint(63-hi&63)
	if wl == wh {
		h[wl] |= ml & mh
		return
	}
	h[wl] |= ml
	for i := wl + 1; i < wh; i++ {
		h[i] = ^uint64(0)
	}
	h[wh] |= mh
}

// rectangle dilates by a full rectangle: a per-column count of on h-rows
// in the vertical window slides down the image in O(W) per row, so the
// cost does not grow with the element's height (the peripheral band's e×e
// square).
func (d *dilation) rectangle(dst Mask) {
	W, H, se, ws := d.src.W, d.src.H, d.se, d.ws
	on := uint8(1)
	if ws.erode {
		on = 0
	}
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
				row[x] = on
			}
		}
	}
}

// general dilates by any element: output row y is the word-wise OR of the
// horizontal dilations h_{run(dy)} of source rows y+dy.
func (d *dilation) general(dst Mask, rowRuns [][]int) {
	H, se, ws := d.src.H, d.se, d.ws
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
			d.fillBits(next)
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
			if ws.erode {
				unpackBits(dst.Row(y), acc, 0, ws.zeros)
			} else {
				unpackBits(dst.Row(y), acc, 1, ws.ones)
			}
		}
	}
}

// unpackBits sets row[x] = on for every set bit x of acc; row starts all
// ¬on. A full word is a 64-byte copy from fill (≥ 64 bytes of on); other
// words set their bits one by one (they lie on run ends, a few per row).
func unpackBits(row []uint8, acc []uint64, on uint8, fill []uint8) {
	for i, v := range acc {
		if v == 0 {
			continue
		}
		x := i * 64
		if v == ^uint64(0) && x+64 <= len(row) {
			copy(row[x:x+64], fill)
			continue
		}
		for v != 0 {
			row[x+bits.TrailingZeros64(v)] = on
			v &= v - 1
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
