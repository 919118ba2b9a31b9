package mask

// Run-based labelling: pixels of one value are grouped into maximal
// horizontal runs, and runs in adjacent rows are joined with union-find
// when they touch (overlap for 4-connectivity, overlap or diagonal contact
// for 8). Work is one scan of the image plus O(runs), which for lung-sized
// masks is far cheaper than a per-pixel flood fill.

type hrun struct{ y, x0, x1 int32 } // inclusive columns

type runLabels struct {
	runs  []hrun
	lab   []int32 // per run: component label 1..n (first-pixel order)
	sizes []int   // per label-1
	first []int   // per label-1: row-major index of the first pixel
}

func findRoot(parent []int32, i int32) int32 {
	for parent[i] != i {
		parent[i] = parent[parent[i]]
		i = parent[i]
	}
	return i
}

// labelRuns labels the connected components of the pixels equal to val.
func labelRuns(m Mask, val uint8, conn int) *runLabels {
	W, H := m.W, m.H
	rl := &runLabels{}
	rowStart := make([]int32, H+1)
	for y := 0; y < H; y++ {
		rowStart[y] = int32(len(rl.runs))
		row := m.Pix[y*W : (y+1)*W]
		for x := 0; x < W; {
			if row[x] != val {
				x++
				continue
			}
			x0 := x
			for x < W && row[x] == val {
				x++
			}
			rl.runs = append(rl.runs, hrun{int32(y), int32(x0), int32(x - 1)})
		}
	}
	rowStart[H] = int32(len(rl.runs))
	parent := make([]int32, len(rl.runs))
	for i := range parent {
		parent[i] = int32(i)
	}
	k := int32(0)
	if conn == 8 {
		k = 1
	}
	for y := 1; y < H; y++ {
		i, iEnd := rowStart[y-1], rowStart[y]
		j, jEnd := rowStart[y], rowStart[y+1]
		for i < iEnd && j < jEnd {
			a, b := rl.runs[i], rl.runs[j]
			if a.x0 <= b.x1+k && b.x0 <= a.x1+k {
				ra, rb := findRoot(parent, i), findRoot(parent, j)
				if ra != rb {
					// Keep the earlier run as root: roots are then first runs.
					if ra < rb {
						parent[rb] = ra
					} else {
						parent[ra] = rb
					}
				}
			}
			// Advance whichever run ends first (with the diagonal reach).
			if a.x1 < b.x1 {
				i++
			} else {
				j++
			}
		}
	}
	rl.lab = make([]int32, len(rl.runs))
	for i := range rl.runs {
		r := findRoot(parent, int32(i))
		if r == int32(i) {
			// Runs come in row-major order, so a component's root (its
			// earliest run) holds its first pixel and labels follow
			// first-pixel order.
			rl.sizes = append(rl.sizes, 0)
			rl.first = append(rl.first, int(rl.runs[i].y)*W+int(rl.runs[i].x0))
			rl.lab[i] = int32(len(rl.sizes))
		} else {
			rl.lab[i] = rl.lab[r]
		}
		rl.sizes[rl.lab[i]-1] += int(rl.runs[i].x1 - rl.runs[i].x0 + 1)
	}
	return rl
}

// fill sets the pixels of every run whose label satisfies keep.
func (rl *runLabels) fill(dst Mask, keep func(l int32) bool) {
	for i, r := range rl.runs {
		if keep(rl.lab[i]) {
			row := dst.Pix[int(r.y)*dst.W:]
			for x := r.x0; x <= r.x1; x++ {
				row[x] = 1
			}
		}
	}
}
