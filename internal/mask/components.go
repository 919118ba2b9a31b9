package mask

import (
	"fmt"
	"sort"
)

// Labeling is a connected-component label image. Lab[i] is 0 for
// background and 1..n for the component containing pixel i; labels are
// assigned in row-major order of each component's first pixel.
type Labeling struct {
	W, H  int
	Lab   []int32
	Sizes []int // Sizes[l-1] = pixels of label l
	First []int // First[l-1] = row-major index of label l's first pixel
}

// Label labels the connected components of m with 4- or 8-connectivity.
// conn must be 4 or 8.
func Label(m Mask, conn int) *Labeling {
	checkConn("Label", conn)
	rl := labelRuns(m, 1, conn)
	lb := &Labeling{W: m.W, H: m.H, Lab: make([]int32, m.W*m.H), Sizes: rl.sizes, First: rl.first}
	for i, r := range rl.runs {
		row := lb.Lab[int(r.y)*m.W:]
		l := rl.lab[i]
		for x := r.x0; x <= r.x1; x++ {
			row[x] = l
		}
	}
	return lb
}

func checkConn(op string, conn int) {
	if conn != 4 && conn != 8 {
		panic(fmt.Sprintf("mask.%s: connectivity %d, want 4 or 8", op, conn))
	}
}

// order returns labels 1..n sorted by size descending, ties by label
// (= first-pixel order), the spec's component order (build.md §5).
func order(sizes []int) []int {
	ord := make([]int, len(sizes))
	for i := range ord {
		ord[i] = i + 1
	}
	sort.SliceStable(ord, func(i, j int) bool { return sizes[ord[i]-1] > sizes[ord[j]-1] })
	return ord
}

// N is the number of components.
func (lb *Labeling) N() int { return len(lb.Sizes) }

// Order returns the labels in the spec's component order (build.md §5):
// size descending, ties by the row-major index of the first pixel.
func (lb *Labeling) Order() []int { return order(lb.Sizes) }

// Mask returns the pixels of label l as a mask.
func (lb *Labeling) Mask(l int) Mask {
	out := New(lb.W, lb.H)
	for i, v := range lb.Lab {
		if int(v) == l {
			out.Pix[i] = 1
		}
	}
	return out
}

// Components returns the components of m with at least minPx pixels, as
// masks, in component order (size descending, ties by first pixel).
func Components(m Mask, conn, minPx int) []Mask {
	checkConn("Components", conn)
	rl := labelRuns(m, 1, conn)
	var out []Mask
	for _, l := range order(rl.sizes) {
		if rl.sizes[l-1] < minPx {
			break // sizes are descending
		}
		c := New(m.W, m.H)
		rl.fill(c, func(v int32) bool { return int(v) == l })
		out = append(out, c)
	}
	return out
}

// Largest returns the largest component of m under conn (ties: the one
// whose first pixel comes first in row-major order); empty for empty m.
func Largest(m Mask, conn int) Mask {
	checkConn("Largest", conn)
	rl := labelRuns(m, 1, conn)
	out := New(m.W, m.H)
	if len(rl.sizes) > 0 {
		l := int32(order(rl.sizes)[0])
		rl.fill(out, func(v int32) bool { return v == l })
	}
	return out
}

// Largest8 is Largest with 8-connectivity (build.md §6 step 3).
func Largest8(m Mask) Mask { return Largest(m, 8) }

// DropSmall removes the 4-connected pieces of m with fewer than minPx pixels.
func DropSmall(m Mask, minPx int) Mask {
	rl := labelRuns(m, 1, 4)
	out := New(m.W, m.H)
	rl.fill(out, func(l int32) bool { return rl.sizes[l-1] >= minPx })
	return out
}

// exterior marks the background pixels 4-connected, through background, to
// the outside of the image (build.md §5, §8.1): the background components
// that touch the image border.
func exterior(m Mask) Mask {
	rl := labelRuns(m, 0, 4)
	touches := make([]bool, len(rl.sizes)+1)
	W, H := int32(m.W), int32(m.H)
	for i, r := range rl.runs {
		if r.y == 0 || r.y == H-1 || r.x0 == 0 || r.x1 == W-1 {
			touches[rl.lab[i]] = true
		}
	}
	ext := New(m.W, m.H)
	rl.fill(ext, func(l int32) bool { return touches[l] })
	return ext
}

// FillHoles sets every background pixel that is not 4-connected, through
// background, to the outside of the image.
func FillHoles(m Mask) Mask {
	out := exterior(m)
	for i, e := range out.Pix {
		out.Pix[i] = e ^ 1
	}
	return out
}

// Contour returns the outer boundary pixels of m in row-major order
// (build.md §8.1): pixels of m with a 4-neighbour outside the image or in
// the exterior background. Hole borders and blobs inside holes are excluded,
// like OpenCV's external contours.
func Contour(m Mask) []Point {
	W, H := m.W, m.H
	if W == 0 || H == 0 {
		return nil
	}
	ext := exterior(m).Pix
	var pts []Point
	for y := 0; y < H; y++ {
		row := m.Pix[y*W : (y+1)*W]
		var up, down []uint8
		if y > 0 {
			up = ext[(y-1)*W : y*W]
		}
		if y < H-1 {
			down = ext[(y+1)*W : (y+2)*W]
		}
		edgeRow := up == nil || down == nil
		for x := 0; x < W; {
			if row[x] == 0 {
				x++
				continue
			}
			x0 := x
			for x < W && row[x] != 0 {
				x++
			}
			x1 := x - 1
			// Inside a run only the vertical neighbours can be exterior; the
			// run's ends also see the background (or edge) beside them.
			leftOpen := x0 == 0 || ext[y*W+x0-1] != 0
			rightOpen := x1 == W-1 || ext[y*W+x1+1] != 0
			for px := x0; px <= x1; px++ {
				if edgeRow || up[px] != 0 || down[px] != 0 ||
					px == x0 && leftOpen || px == x1 && rightOpen {
					pts = append(pts, Point{px, y})
				}
			}
		}
	}
	return pts
}

// ContourMask is Contour as a mask.
func ContourMask(m Mask) Mask {
	out := New(m.W, m.H)
	for _, p := range Contour(m) {
		out.Pix[p.Y*m.W+p.X] = 1
	}
	return out
}
