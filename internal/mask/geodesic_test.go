package mask

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

type popped struct {
	x, y int
	d    float64
}

func runGeodesic(t *testing.T, cost []float64, w, h int, p Point, win int) []popped {
	t.Helper()
	g, err := NewGeodesic(cost, w, h, p, win)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	var out []popped
	for g.Next() {
		x, y, d := g.Pixel()
		out = append(out, popped{x, y, d})
	}
	return out
}

func ones(n int) []float64 {
	c := make([]float64, n)
	for i := range c {
		c[i] = 1
	}
	return c
}

func TestGeodesicUniformOrder(t *testing.T) {
	got := runGeodesic(t, ones(25), 5, 5, Point{2, 2}, 10)
	s2 := math.Sqrt2
	want := []popped{
		{2, 2, 0},
		{2, 1, 1}, {1, 2, 1}, {3, 2, 1}, {2, 3, 1},
		{1, 1, s2}, {3, 1, s2}, {1, 3, s2}, {3, 3, s2},
		{2, 0, 2}, {0, 2, 2}, {4, 2, 2}, {2, 4, 2},
	}
	if len(got) != 25 {
		t.Fatalf("popped %d pixels, want 25", len(got))
	}
	for i, w := range want {
		if got[i].x != w.x || got[i].y != w.y || math.Abs(got[i].d-w.d) > 1e-15 {
			t.Fatalf("pop %d = %+v, want %+v", i, got[i], w)
		}
	}
	// Corner: two diagonal steps.
	for _, p := range got {
		if p.x == 0 && p.y == 0 && p.d != 2*s2 {
			t.Errorf("corner distance %v, want 2√2", p.d)
		}
	}
}

func TestGeodesicWindow(t *testing.T) {
	got := runGeodesic(t, ones(100), 10, 10, Point{0, 5}, 2)
	if len(got) != 3*5 {
		t.Fatalf("popped %d, want 15 (window clipped by the image edge)", len(got))
	}
	for _, p := range got {
		if p.x > 2 || p.y < 3 || p.y > 7 {
			t.Fatalf("popped %+v outside the window", p)
		}
	}
}

func TestGeodesicCostWeights(t *testing.T) {
	// Edge weight ℓ·(c(a)+c(b))/2: from cost 1 into cost 3 costs 2.
	cost := []float64{1, 3, 1}
	got := runGeodesic(t, cost, 3, 1, Point{0, 0}, 5)
	if got[1].x != 1 || got[1].d != 2 || got[2].x != 2 || got[2].d != 4 {
		t.Fatalf("pops %+v", got)
	}
	cost = []float64{1, 9, 9, 3}
	got = runGeodesic(t, cost, 2, 2, Point{0, 0}, 5)
	// (1,1) diagonally: √2·(1+3)/2 = 2√2 beats 5 + 6 via a neighbour.
	last := got[1]
	if last.x != 1 || last.y != 1 || last.d != float64(math.Sqrt2*4)/2 {
		t.Fatalf("pops %+v", got)
	}
}

// bellmanFord is a reference: relax every edge until nothing changes.
func bellmanFord(cost []float64, w, h int, p Point, win int) map[Point]float64 {
	d := map[Point]float64{p: 0}
	in := func(x, y int) bool {
		return x >= 0 && y >= 0 && x < w && y < h && abs(x-p.X) <= win && abs(y-p.Y) <= win
	}
	for changed := true; changed; {
		changed = false
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				da, ok := d[Point{x, y}]
				if !ok || !in(x, y) {
					continue
				}
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						nx, ny := x+dx, y+dy
						if dx == 0 && dy == 0 || !in(nx, ny) {
							continue
						}
						l := 1.0
						if dx != 0 && dy != 0 {
							l = math.Sqrt2
						}
						nd := da + float64(l*(cost[y*w+x]+cost[ny*w+nx]))/2
						if old, ok := d[Point{nx, ny}]; !ok || nd < old {
							d[Point{nx, ny}] = nd
							changed = true
						}
					}
				}
			}
		}
	}
	return d
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func TestGeodesicMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for i := 0; i < 20; i++ {
		w, h := 2+r.IntN(14), 2+r.IntN(14)
		cost := make([]float64, w*h)
		for k := range cost {
			cost[k] = 1 + 4*float64(r.IntN(3))/2 // few values → many distance ties
		}
		p := Point{r.IntN(w), r.IntN(h)}
		win := 1 + r.IntN(8)
		got := runGeodesic(t, cost, w, h, p, win)
		ref := bellmanFord(cost, w, h, p, win)
		if len(got) != len(ref) {
			t.Fatalf("case %d: popped %d, reference reaches %d", i, len(got), len(ref))
		}
		for k, q := range got {
			if rd := ref[Point{q.x, q.y}]; math.Abs(rd-q.d) > 1e-9 {
				t.Fatalf("case %d: (%d,%d) distance %v, reference %v", i, q.x, q.y, q.d, rd)
			}
			if k > 0 {
				a := got[k-1]
				if a.d > q.d || a.d == q.d && (a.y > q.y || a.y == q.y && a.x > q.x) {
					t.Fatalf("case %d: pop %d %+v before %+v breaks (d, y, x) order", i, k, a, q)
				}
			}
		}
		// Pooled buffers give the same sequence again.
		again := runGeodesic(t, cost, w, h, p, win)
		for k := range got {
			if got[k] != again[k] {
				t.Fatalf("case %d: second run differs at pop %d", i, k)
			}
		}
	}
}

func TestGeodesicEarlyStopReuse(t *testing.T) {
	cost := ones(64 * 64)
	g, err := NewGeodesic(cost, 64, 64, Point{10, 10}, 30)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 5 && g.Next(); k++ {
	}
	g.Release()
	if g.Next() {
		t.Error("Next after Release should be false")
	}
	full := runGeodesic(t, cost, 64, 64, Point{40, 40}, 30)
	if len(full) != 54*54 { // x, y in 10..63
		t.Errorf("popped %d after reuse, want %d", len(full), 54*54)
	}
}

func TestGeodesicErrors(t *testing.T) {
	tests := []struct {
		cost []float64
		w, h int
		p    Point
		win  int
		want string
	}{
		{ones(5), 2, 3, Point{0, 0}, 1, "cost field has 5 values, want 2×3"},
		{ones(6), 2, 3, Point{2, 0}, 1, "start (2, 0) outside the 2×3 image"},
		{ones(6), 2, 3, Point{0, 0}, -1, "negative window"},
	}
	for _, tc := range tests {
		_, err := NewGeodesic(tc.cost, tc.w, tc.h, tc.p, tc.win)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}
