package deform

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// refSearch is the bucket search in its plain form: window-local indices
// recovered by division, bounds tests on every neighbour, and a bucket
// slot taken as a remainder. bucketSearch must pop exactly what it pops,
// in the same order.
type refSearch struct {
	cost       []float64
	w, h, win  int
	nb         int
	dist       []float64
	seen, done []bool
	buckets    [][]int32
}

func newRefSearch(cost []float64, w, h, win int, maxCost float64) *refSearch {
	side := 2*win + 1
	n := min(side, w) * min(side, h)
	nb := int(math.Ceil(math.Sqrt2*maxCost)) + 2
	return &refSearch{cost: cost, w: w, h: h, win: win, nb: nb,
		dist: make([]float64, n), seen: make([]bool, n), done: make([]bool, n), buckets: make([][]int32, nb)}
}

func (s *refSearch) run(p mask.Point, tpix []uint8, tv uint8, radius func(float64) float64) (pop []popped, dT, rhoMax float64, found bool) {
	x0, y0 := max(0, p.X-s.win), max(0, p.Y-s.win)
	ww, wh := min(s.w-1, p.X+s.win)-x0+1, min(s.h-1, p.Y+s.win)-y0+1
	clear(s.seen)
	clear(s.done)
	for i := range s.buckets {
		s.buckets[i] = s.buckets[i][:0]
	}
	si := int32((p.Y-y0)*ww + p.X - x0)
	s.dist[si], s.seen[si] = 0, true
	s.buckets[0] = append(s.buckets[0], si)
	pending, limit, dT := 1, math.Inf(1), math.Inf(1)
	for cur := 0; pending > 0 && float64(cur) <= limit; cur++ {
		slot := cur % s.nb
		b := s.buckets[slot]
		pending -= len(b)
		for _, j := range b {
			if s.done[j] {
				continue
			}
			s.done[j] = true
			d := s.dist[j]
			lx, ly := int(j)%ww, int(j)/ww
			gi := int32((ly+y0)*s.w + lx + x0)
			if !found || d <= rhoMax {
				pop = append(pop, popped{gi, d})
			}
			if !found && tpix[gi] == tv && d < dT {
				dT = d
			}
			if d+1 > limit {
				continue
			}
			ca := s.cost[gi]
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					nx, ny := lx+dx, ly+dy
					if dx == 0 && dy == 0 || nx < 0 || nx >= ww || ny < 0 || ny >= wh {
						continue
					}
					k := int32(ny*ww + nx)
					if s.done[k] {
						continue
					}
					cb := s.cost[(ny+y0)*s.w+nx+x0]
					step := (ca + cb) / 2
					if dx != 0 && dy != 0 {
						step = float64(math.Sqrt2*(ca+cb)) / 2
					}
					if nd := d + step; !s.seen[k] || nd < s.dist[k] {
						s.seen[k], s.dist[k] = true, nd
						ns := int(nd) % s.nb
						s.buckets[ns] = append(s.buckets[ns], k)
						pending++
					}
				}
			}
		}
		s.buckets[slot] = b[:0]
		if !found && !math.IsInf(dT, 1) {
			found = true
			rhoMax = radius(dT)
			limit = rhoMax
			pop = slices.DeleteFunc(pop, func(q popped) bool { return q.d > rhoMax })
		}
	}
	return pop, dT, rhoMax, found
}

// TestBucketSearchMatchesReference runs the bucket search and refSearch
// from many points (edges and corners included) over random cost fields,
// windows and targets: the popped pixels, their distances and their order,
// d_T and ρ_max must be identical. One bucketSearch serves all the points
// of a field, so stale marks of earlier searches are exercised too.
func TestBucketSearchMatchesReference(t *testing.T) {
	t.Parallel()
	src := rng.New("bucket-reference")
	for trial := 0; trial < 24; trial++ {
		w, h := 20+int(src.UintN(90)), 20+int(src.UintN(90))
		cost := make([]float64, w*h)
		alpha := []float64{0, 0.5, 4, 30}[trial%4]
		for i := range cost {
			switch trial % 3 {
			case 0: // rough
				cost[i] = 1 + alpha*src.Float64()
			case 1: // plateaus: many equal distances
				cost[i] = 1 + alpha*float64((i/w/5+i%w/7)%3)/2
			default: // quantised: distances land on bucket boundaries
				cost[i] = 1 + float64(src.UintN(3))/2
			}
		}
		maxCost := slices.Max(cost)
		tpix := make([]uint8, w*h)
		for i := range tpix {
			if src.UintN(40) == 0 {
				tpix[i] = 1
			}
		}
		win := []int{0, 1, 3, 9, 25, 200}[trial%6]
		fast := newBucketSearch(cost, w, h, win, maxCost)
		ref := newRefSearch(cost, w, h, win, maxCost)
		for k := 0; k < 40; k++ {
			p := mask.Point{X: int(src.UintN(uint64(w))), Y: int(src.UintN(uint64(h)))}
			switch k % 5 { // edges and corners
			case 1:
				p.X = 0
			case 2:
				p.Y = h - 1
			case 3:
				p.X, p.Y = w-1, 0
			}
			tv := uint8(k % 2)
			rad := func(dT float64) float64 { return 1.25*dT + float64(k%7) }
			label := fmt.Sprintf("trial %d (%dx%d, win %d) point %v tv %d", trial, w, h, win, p, tv)
			p1, d1, r1, f1 := fast.run(p, tpix, tv, rad, nil)
			p2, d2, r2, f2 := ref.run(p, tpix, tv, rad)
			if f1 != f2 || d1 != d2 || r1 != r2 {
				t.Fatalf("%s: found=%v d_T=%v ρ=%v, reference found=%v d_T=%v ρ=%v", label, f1, d1, r1, f2, d2, r2)
			}
			if !slices.Equal(p1, p2) {
				t.Fatalf("%s: popped %d pixels, reference %d, or in another order", label, len(p1), len(p2))
			}
		}
	}
}
