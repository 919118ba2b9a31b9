package mask

import (
	"math"
	"testing"
)

func TestBasics(t *testing.T) {
	a := parse(t,
		".......",
		".##....",
		".###...",
		".......",
		"....#..",
	)
	b := parse(t,
		".......",
		"..##...",
		"..##...",
		".......",
		".......",
	)
	if got := a.Count(); got != 6 {
		t.Errorf("Count = %d, want 6", got)
	}
	if a.Empty() || !New(3, 2).Empty() {
		t.Error("Empty wrong")
	}
	if !a.At(4, 4) || a.At(0, 0) || a.At(-1, 0) || a.At(7, 0) {
		t.Error("At wrong")
	}
	tests := []struct {
		name string
		got  Mask
		want Mask
	}{
		{"And", And(a, b), parse(t, ".......", "..#....", "..##...", ".......", ".......")},
		{"Or", Or(a, b), parse(t, ".......", ".###...", ".###...", ".......", "....#..")},
		{"AndNot", AndNot(a, b), parse(t, ".......", ".#.....", ".#.....", ".......", "....#..")},
		{"Not∘Not", Not(Not(a)), a},
	}
	for _, tc := range tests {
		wantMask(t, tc.name, tc.got, tc.want)
	}
	if CountAnd(a, b) != 3 || CountOr(a, b) != 7 || CountXor(a, b) != 4 {
		t.Errorf("counts: and %d or %d xor %d", CountAnd(a, b), CountOr(a, b), CountXor(a, b))
	}
	if got := IoU(a, b); got != 3.0/7.0 {
		t.Errorf("IoU = %v, want 3/7", got)
	}
	if IoU(New(2, 2), New(2, 2)) != 0 {
		t.Error("IoU of empties should be 0")
	}
	if !Intersects(a, b) || Intersects(a, Not(a)) {
		t.Error("Intersects wrong")
	}
	minX, minY, maxX, maxY, ok := a.Bounds()
	if !ok || minX != 1 || minY != 1 || maxX != 4 || maxY != 4 {
		t.Errorf("Bounds = %d %d %d %d %v", minX, minY, maxX, maxY, ok)
	}
	if _, _, _, _, ok := New(3, 3).Bounds(); ok {
		t.Error("Bounds of empty should not be ok")
	}
	cx, cy, ok := a.Centroid()
	// x: 1+2+1+2+3+4 = 13, y: 1+1+2+2+2+4 = 12
	if !ok || cx != 13.0/6 || cy != 2 {
		t.Errorf("Centroid = %v %v", cx, cy)
	}
	if lo, hi, ok := a.RowSpan(2); !ok || lo != 1 || hi != 3 {
		t.Errorf("RowSpan(2) = %d %d %v", lo, hi, ok)
	}
	if _, _, ok := a.RowSpan(3); ok {
		t.Error("RowSpan of empty row should not be ok")
	}
	if a.RowCount(2) != 3 || a.RowCount(9) != 0 {
		t.Error("RowCount wrong")
	}
	if pts := a.Points(); len(pts) != 6 || pts[0] != (Point{1, 1}) || pts[5] != (Point{4, 4}) {
		t.Errorf("Points = %v", pts)
	}
	c := a.Clone()
	c.Set(0, 0, true)
	if a.At(0, 0) {
		t.Error("Clone shares pixels")
	}
	if Dist2(Point{1, 2}, Point{4, 6}) != 25 {
		t.Error("Dist2 wrong")
	}
}

func TestSizeMismatchPanicsWithSizes(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || r.(string) != "mask.CountAnd: size mismatch 2x2 vs 3x2" {
			t.Errorf("panic = %v", r)
		}
	}()
	CountAnd(New(2, 2), New(3, 2))
}

func TestCentroidFloat(t *testing.T) {
	m := New(1024, 1024)
	m.Set(1023, 1023, true)
	m.Set(0, 0, true)
	m.Set(5, 0, true)
	cx, cy, _ := m.Centroid()
	if cx != 1028.0/3 || cy != 341 || math.IsNaN(cx) {
		t.Errorf("Centroid = %v %v", cx, cy)
	}
}
