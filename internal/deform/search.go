package deform

import (
	"math"
	"math/bits"

	"github.com/chexpercept/chexpercept/internal/mask"
)

// bucketSearch is the geodesic search of §8.4 specialised for cost fields
// with every cost ≥ 1 (always true for c = 1 + α·ĝ with α ≥ 0).
//
// Why it is exact: every edge weighs ≥ 1, so a pixel whose distance lies in
// [k, k+1) can only be reached through predecessors with distance < k.
// When bucket k is processed, all earlier buckets are final, hence every
// entry of bucket k already carries its final distance, computed by the
// same relaxation formula as mask.Geodesic (D(b) = min over settled
// neighbours a of D(a) + ℓ·(c(a)+c(b))/2). The quantities the spec uses —
// d_T (the smallest distance in T) and the set of pixels with D ≤ ρ_max —
// depend only on those distances, not on the order of equal-priority pops,
// so they are identical to the heap-ordered search. TestBucketSearchMatches
// checks this against mask.Geodesic on rough cost fields.
//
// Layout, chosen for the inner loop (eight relaxations per settled pixel):
// the window's pixels live in a grid of fixed stride with a one-pixel
// frame around the clipped window whose cells are marked settled before
// each search, so a neighbour is always one constant offset away and needs
// no bounds test; each queued entry carries both its grid index and its
// full-frame index, so neither is ever recovered by a division; and the
// circular bucket count is a power of two, so a slot is a mask, not a
// remainder. A queued pixel whose distance drops within its bucket keeps
// its one entry (which reads the distance when popped), so buckets hold
// no entries that would only be skipped. TestBucketSearchMatchesReference checks that this layout
// pops the same pixels with the same distances in the same order as the
// plain window-indexed search.
type bucketSearch struct {
	cost    []float64
	w, h    int
	win     int
	stride  int // grid row length: the widest clipped window plus the frame
	nbMask  int // circular bucket count − 1; the count is a power of two > max edge weight + 1
	dist    []float64
	state   []uint32 // 2·gen: queued in this search; 2·gen+1: settled (or frame)
	gen     uint32
	nbr     [8]nbrStep // the eight neighbours in (dy, dx) row-major order
	buckets [][]entry
}

// entry is a queued pixel: k indexes the grid, gi the full frame.
type entry struct{ k, gi int32 }

// nbrStep is one neighbour's offset in the grid and in the full frame.
type nbrStep struct {
	dk, dg int32
	diag   bool
}

func newBucketSearch(cost []float64, w, h, win int, maxCost float64) *bucketSearch {
	side := 2*win + 1
	stride := min(side, w) + 2
	n := stride * (min(side, h) + 2)
	nb := int(math.Ceil(math.Sqrt2*maxCost)) + 2
	nb = 1 << bits.Len(uint(nb-1)) // round up to a power of two
	s := &bucketSearch{
		cost: cost, w: w, h: h, win: win, stride: stride, nbMask: nb - 1,
		dist: make([]float64, n), state: make([]uint32, n),
		buckets: make([][]entry, nb),
	}
	i := 0
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			if dx == 0 && dy == 0 {
				continue
			}
			s.nbr[i] = nbrStep{int32(dy*stride + dx), int32(dy*w + dx), dx != 0 && dy != 0}
			i++
		}
	}
	return s
}

// run searches from p. T is the set of full-frame pixels i with
// tpix[i] == tv. After d_T is known, radius(dT) gives ρ_max (and may draw
// from the RNG). All pixels with D ≤ ρ_max are appended to pop (full-frame
// index and distance). found is false when the window is exhausted before
// T.
func (s *bucketSearch) run(p mask.Point, tpix []uint8, tv uint8, radius func(dT float64) float64, pop []popped) (_ []popped, dT, rhoMax float64, found bool) {
	queued, settled := s.start(p)
	dist, state, cost, nbr := s.dist, s.state, s.cost, &s.nbr
	pending := 1
	limit := math.Inf(1) // relax only while a neighbour could still be ≤ ρ_max
	dT = math.Inf(1)
	for cur := 0; pending > 0; cur++ {
		if float64(cur) > limit {
			break
		}
		slot := cur & s.nbMask
		b := s.buckets[slot]
		pending -= len(b)
		for _, en := range b {
			j, gi := en.k, en.gi
			if state[j] == settled {
				continue
			}
			state[j] = settled
			d := dist[j]
			if !found || d <= rhoMax {
				pop = append(pop, popped{gi, d})
			}
			if !found && tpix[gi] == tv && d < dT {
				dT = d
			}
			if d+1 > limit {
				continue
			}
			ca := cost[gi]
			for _, nb := range nbr {
				k := j + nb.dk
				st := state[k]
				if st == settled {
					continue
				}
				g := gi + nb.dg
				cb := cost[g]
				var step float64
				if nb.diag {
					step = float64(math.Sqrt2*(ca+cb)) / 2
				} else {
					step = (ca + cb) / 2
				}
				nd := d + step
				if st == queued {
					old := dist[k]
					if nd >= old {
						continue
					}
					dist[k] = nd
					if int(nd) == int(old) {
						// Its entry already waits in this bucket and
						// reads dist at its pop; a second entry would
						// only be skipped there.
						continue
					}
				} else {
					state[k] = queued
					dist[k] = nd
				}
				ns := int(nd) & s.nbMask
				s.buckets[ns] = append(s.buckets[ns], entry{k, g})
				pending++
			}
		}
		s.buckets[slot] = b[:0]
		if !found && !math.IsInf(dT, 1) {
			// The whole bucket holding the nearest T pixel is settled.
			found = true
			rhoMax = radius(dT)
			limit = rhoMax
			k := 0
			for _, q := range pop {
				if q.d <= rhoMax {
					pop[k] = q
					k++
				}
			}
			pop = pop[:k]
		}
	}
	return pop, dT, rhoMax, found
}

// start prepares a search from p: it clips the window around p to the
// image, takes a new generation (whose queued and settled marks are
// returned), marks the frame around the clipped window settled so no
// search step leaves it, empties the buckets, and queues p at distance 0.
func (s *bucketSearch) start(p mask.Point) (queued, settled uint32) {
	x0, y0 := max(0, p.X-s.win), max(0, p.Y-s.win)
	x1, y1 := min(s.w-1, p.X+s.win), min(s.h-1, p.Y+s.win)
	ww, wh := x1-x0+1, y1-y0+1
	s.gen++
	if s.gen >= 1<<31 {
		clear(s.state)
		s.gen = 1
	}
	queued, settled = 2*s.gen, 2*s.gen+1
	// Window pixel (lx, ly) sits at grid (lx+1, ly+1).
	S := s.stride
	top, bot := s.state[:ww+2], s.state[(wh+1)*S:(wh+1)*S+ww+2]
	for i := range top {
		top[i], bot[i] = settled, settled
	}
	for ly := 1; ly <= wh; ly++ {
		s.state[ly*S], s.state[ly*S+ww+1] = settled, settled
	}
	for i := range s.buckets {
		s.buckets[i] = s.buckets[i][:0]
	}
	si := int32((p.Y-y0+1)*S + p.X - x0 + 1)
	s.dist[si], s.state[si] = 0, queued
	s.buckets[0] = append(s.buckets[0], entry{si, int32(p.Y*s.w + p.X)})
	return queued, settled
}
