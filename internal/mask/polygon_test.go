package mask

import (
	"math/rand/v2"
	"testing"
)

func TestFillPolygonHand(t *testing.T) {
	tests := []struct {
		name string
		pts  []PointF
		w, h int
		want []string
	}{
		{"rectangle, boundary included", []PointF{{1, 1}, {4, 1}, {4, 3}, {1, 3}}, 6, 5, []string{
			"......",
			".####.",
			".####.",
			".####.",
			"......",
		}},
		{"diamond", []PointF{{3, 0}, {6, 3}, {3, 6}, {0, 3}}, 7, 7, []string{
			"...#...",
			"..###..",
			".#####.",
			"#######",
			".#####.",
			"..###..",
			"...#...",
		}},
		// Half-pixel vertices: centres strictly inside only.
		{"half-pixel square", []PointF{{0.5, 0.5}, {3.5, 0.5}, {3.5, 2.5}, {0.5, 2.5}}, 5, 4, []string{
			".....",
			".###.",
			".###.",
			".....",
		}},
		// Clipped to the frame.
		{"clipped", []PointF{{-2, -2}, {2, -2}, {2, 1}, {-2, 1}}, 4, 3, []string{
			"###.",
			"###.",
			"....",
		}},
		{"degenerate segment", []PointF{{0, 1}, {3, 1}}, 4, 3, []string{
			"....",
			"####",
			"....",
		}},
		{"empty", nil, 2, 2, []string{"..", ".."}},
	}
	for _, tc := range tests {
		wantMask(t, tc.name, FillPolygon(tc.pts, tc.w, tc.h), parse(t, tc.want...))
	}
}

// brutePolygon decides each pixel centre exactly in half-pixel integer
// units: on an edge, or inside by the even-odd ray-crossing rule.
func brutePolygon(v [][2]int, w, h int) Mask {
	m := New(w, h)
	n := len(v)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			px, py := 2*x, 2*y
			on, inside := false, false
			for i := 0; i < n; i++ {
				a, b := v[i], v[(i+1)%n]
				cross := (b[0]-a[0])*(py-a[1]) - (b[1]-a[1])*(px-a[0])
				if cross == 0 && min(a[0], b[0]) <= px && px <= max(a[0], b[0]) &&
					min(a[1], b[1]) <= py && py <= max(a[1], b[1]) {
					on = true
				}
				if (a[1] > py) != (b[1] > py) {
					num := (a[0]-px)*(b[1]-a[1]) + (py-a[1])*(b[0]-a[0])
					if (num > 0) == (b[1]-a[1] > 0) && num != 0 {
						inside = !inside
					}
				}
			}
			if on || inside {
				m.Pix[y*w+x] = 1
			}
		}
	}
	return m
}

func TestFillPolygonMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for i := 0; i < 300; i++ {
		w, h := 1+r.IntN(20), 1+r.IntN(20)
		n := 3 + r.IntN(8)
		v := make([][2]int, n)
		pts := make([]PointF, n)
		for k := range v {
			v[k] = [2]int{r.IntN(2*w+6) - 3, r.IntN(2*h+6) - 3}
			pts[k] = PointF{float64(v[k][0]) / 2, float64(v[k][1]) / 2}
		}
		got, want := FillPolygon(pts, w, h), brutePolygon(v, w, h)
		if !Equal(got, want) {
			t.Fatalf("case %d polygon %v:\ngot\n%swant\n%s", i, pts, format(got), format(want))
		}
	}
}
