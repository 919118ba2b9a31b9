package mask

import (
	"math/rand/v2"
	"testing"
)

// floodLabel is a per-pixel flood-fill reference for Label: labels in
// row-major order of first pixels.
func floodLabel(m Mask, val uint8, conn int) []int32 {
	W, H := m.W, m.H
	lab := make([]int32, W*H)
	next := int32(0)
	for i := range m.Pix {
		if m.Pix[i] != val || lab[i] != 0 {
			continue
		}
		next++
		lab[i] = next
		stack := []int{i}
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			x, y := p%W, p/W
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					if dx == 0 && dy == 0 || conn == 4 && dx != 0 && dy != 0 {
						continue
					}
					nx, ny := x+dx, y+dy
					if nx < 0 || ny < 0 || nx >= W || ny >= H {
						continue
					}
					q := ny*W + nx
					if m.Pix[q] == val && lab[q] == 0 {
						lab[q] = next
						stack = append(stack, q)
					}
				}
			}
		}
	}
	return lab
}

// bruteContour applies the §8.1 definition pixel by pixel.
func bruteContour(m Mask) []Point {
	W, H := m.W, m.H
	bg := floodLabel(m, 0, 4)
	ext := map[int32]bool{}
	for y := 0; y < H; y++ {
		for x := 0; x < W; x++ {
			if (x == 0 || y == 0 || x == W-1 || y == H-1) && m.Pix[y*W+x] == 0 {
				ext[bg[y*W+x]] = true
			}
		}
	}
	isExt := func(x, y int) bool {
		if x < 0 || y < 0 || x >= W || y >= H {
			return true
		}
		return m.Pix[y*W+x] == 0 && ext[bg[y*W+x]]
	}
	var pts []Point
	for y := 0; y < H; y++ {
		for x := 0; x < W; x++ {
			if m.Pix[y*W+x] != 0 && (isExt(x-1, y) || isExt(x+1, y) || isExt(x, y-1) || isExt(x, y+1)) {
				pts = append(pts, Point{x, y})
			}
		}
	}
	return pts
}

func TestRunLabellingMatchesFlood(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 200; i++ {
		m := randMask(r, 1+r.IntN(40), 1+r.IntN(40), r.Float64()*0.6)
		for _, conn := range []int{4, 8} {
			lb := Label(m, conn)
			ref := floodLabel(m, 1, conn)
			for p := range ref {
				if lb.Lab[p] != ref[p] {
					t.Fatalf("case %d conn %d: pixel %d label %d, reference %d", i, conn, p, lb.Lab[p], ref[p])
				}
			}
			for l := range lb.Sizes {
				n, first := 0, -1
				for p, v := range ref {
					if int(v) == l+1 {
						if first < 0 {
							first = p
						}
						n++
					}
				}
				if lb.Sizes[l] != n || lb.First[l] != first {
					t.Fatalf("case %d conn %d: label %d size/first %d/%d, want %d/%d", i, conn, l+1, lb.Sizes[l], lb.First[l], n, first)
				}
			}
		}
		got, want := Contour(m), bruteContour(m)
		if len(got) != len(want) {
			t.Fatalf("case %d: contour has %d points, reference %d\n%s", i, len(got), len(want), format(m))
		}
		for k := range got {
			if got[k] != want[k] {
				t.Fatalf("case %d: contour point %d = %v, reference %v", i, k, got[k], want[k])
			}
		}
	}
}
