package mask

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// parse builds a mask from rows of '#' (on) and '.' (off).
func parse(t testing.TB, rows ...string) Mask {
	t.Helper()
	m := New(len(rows[0]), len(rows))
	for y, r := range rows {
		if len(r) != m.W {
			t.Fatalf("row %d has width %d, want %d", y, len(r), m.W)
		}
		for x, c := range r {
			m.Set(x, y, c == '#')
		}
	}
	return m
}

func format(m Mask) string {
	var sb strings.Builder
	for y := 0; y < m.H; y++ {
		for _, v := range m.Row(y) {
			if v != 0 {
				sb.WriteByte('#')
			} else {
				sb.WriteByte('.')
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func wantMask(t *testing.T, name string, got, want Mask) {
	t.Helper()
	if !Equal(got, want) {
		t.Errorf("%s:\ngot\n%swant\n%s", name, format(got), format(want))
	}
}

// randMask has blobs and speckle so that morphology meets borders, holes
// and thin parts.
func randMask(r *rand.Rand, w, h int, density float64) Mask {
	m := New(w, h)
	for i := range m.Pix {
		if r.Float64() < density {
			m.Pix[i] = 1
		}
	}
	for k := 0; k < 3; k++ {
		cx, cy, rad := r.IntN(w), r.IntN(h), 1+r.IntN(max(1, min(w, h)/3))
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				if (x-cx)*(x-cx)+(y-cy)*(y-cy) <= rad*rad {
					m.Pix[y*w+x] = 1
				}
			}
		}
	}
	return m
}

// bruteMorph applies the definition offset by offset: OR (dilate) or AND
// (erode) of m(p+o), with outside pixels reading border(x, y).
func bruteMorph(m Mask, se SE, erode bool, border func(x, y int) uint8) Mask {
	out := New(m.W, m.H)
	offs := se.Offsets()
	for y := 0; y < m.H; y++ {
		for x := 0; x < m.W; x++ {
			acc := uint8(0)
			if erode {
				acc = 1
			}
			for _, o := range offs {
				qx, qy := x+o.X, y+o.Y
				var v uint8
				if m.In(qx, qy) {
					v = m.Pix[qy*m.W+qx]
				} else {
					v = border(qx, qy)
				}
				if erode {
					acc &= v
				} else {
					acc |= v
				}
			}
			out.Pix[y*m.W+x] = acc
		}
	}
	return out
}

func subset(a, b Mask) bool { return CountAnd(a, b) == a.Count() }
