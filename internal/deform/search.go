package deform

import (
	"math"

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
type bucketSearch struct {
	cost       []float64
	w, h       int
	win        int
	nb         int // circular bucket count > max edge weight + 1
	dist       []float64
	seen, done []uint32
	gen        uint32
	buckets    [][]int32
}

func newBucketSearch(cost []float64, w, h, win int, maxCost float64) *bucketSearch {
	side := 2*win + 1
	n := min(side, w) * min(side, h)
	nb := int(math.Ceil(math.Sqrt2*maxCost)) + 2
	return &bucketSearch{
		cost: cost, w: w, h: h, win: win, nb: nb,
		dist: make([]float64, n), seen: make([]uint32, n), done: make([]uint32, n),
		buckets: make([][]int32, nb),
	}
}

// run searches from p. inT reports whether a full-frame pixel index lies in
// T. After d_T is known, radius(dT) gives ρ_max (and may draw from the
// RNG). All pixels with D ≤ ρ_max are appended to pop (full-frame index and
// distance). found is false when the window is exhausted before T.
func (s *bucketSearch) run(p mask.Point, inT func(i int32) bool, radius func(dT float64) float64, pop []popped) (_ []popped, dT, rhoMax float64, found bool) {
	x0, y0, ww, wh, gen := s.start(p)
	dist, seen, done, cost, W := s.dist, s.seen, s.done, s.cost, s.w
	pending := 1
	limit := math.Inf(1) // relax only while a neighbour could still be ≤ ρ_max
	dT = math.Inf(1)
	for cur := 0; pending > 0; cur++ {
		if float64(cur) > limit {
			break
		}
		slot := cur % s.nb
		b := s.buckets[slot]
		pending -= len(b)
		for _, j := range b {
			if done[j] == gen {
				continue
			}
			done[j] = gen
			d := dist[j]
			lx, ly := int(j)%ww, int(j)/ww
			gx, gy := lx+x0, ly+y0
			gi := int32(gy*W + gx)
			if !found || d <= rhoMax {
				pop = append(pop, popped{gi, d})
			}
			if !found && inT(gi) && d < dT {
				dT = d
			}
			if d+1 > limit {
				continue
			}
			ca := cost[gi]
			for dy := -1; dy <= 1; dy++ {
				ny := ly + dy
				if ny < 0 || ny >= wh {
					continue
				}
				for dx := -1; dx <= 1; dx++ {
					nx := lx + dx
					if dx == 0 && dy == 0 || nx < 0 || nx >= ww {
						continue
					}
					k := int32(ny*ww + nx)
					if done[k] == gen {
						continue
					}
					cb := cost[(ny+y0)*W+nx+x0]
					var step float64
					if dx != 0 && dy != 0 {
						step = float64(math.Sqrt2*(ca+cb)) / 2
					} else {
						step = (ca + cb) / 2
					}
					nd := d + step
					if seen[k] != gen || nd < dist[k] {
						seen[k] = gen
						dist[k] = nd
						ns := int(nd) % s.nb
						s.buckets[ns] = append(s.buckets[ns], k)
						pending++
					}
				}
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
// image (origin and size), empties the buckets, takes a new generation to
// mark this search's seen and done entries, and queues p at distance 0.
func (s *bucketSearch) start(p mask.Point) (x0, y0, ww, wh int, gen uint32) {
	x0, y0 = max(0, p.X-s.win), max(0, p.Y-s.win)
	x1, y1 := min(s.w-1, p.X+s.win), min(s.h-1, p.Y+s.win)
	ww, wh = x1-x0+1, y1-y0+1
	s.gen++
	if s.gen == 0 {
		clear(s.seen)
		clear(s.done)
		s.gen = 1
	}
	for i := range s.buckets {
		s.buckets[i] = s.buckets[i][:0]
	}
	si := int32((p.Y-y0)*ww + (p.X - x0))
	s.dist[si], s.seen[si] = 0, s.gen
	s.buckets[0] = append(s.buckets[0], si)
	return x0, y0, ww, wh, s.gen
}
