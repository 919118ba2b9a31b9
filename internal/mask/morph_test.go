package mask

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

func TestSESizes(t *testing.T) {
	tests := []struct {
		name     string
		se       SE
		n        int
		min, max Point
	}{
		{"Disc(0)", Disc(0), 1, Point{0, 0}, Point{0, 0}},
		{"Disc(1)", Disc(1), 5, Point{-1, -1}, Point{1, 1}},
		{"Disc(2)", Disc(2), 13, Point{-2, -2}, Point{2, 2}},
		{"Disc(3)", Disc(3), 29, Point{-3, -3}, Point{3, 3}},
		{"Disc(5)", Disc(5), 81, Point{-5, -5}, Point{5, 5}},
		{"Square(1)", Square(1), 1, Point{0, 0}, Point{0, 0}},
		{"Square(2)", Square(2), 4, Point{-1, -1}, Point{0, 0}},
		{"Square(4)", Square(4), 16, Point{-2, -2}, Point{1, 1}},
		{"Square(5)", Square(5), 25, Point{-2, -2}, Point{2, 2}},
		// scikit-image pads an even footprint at the top/left: checked
		// against skimage.morphology.erosion (0.19 and 0.25 sources).
		{"SkimageSquare(1)", SkimageSquare(1), 1, Point{0, 0}, Point{0, 0}},
		{"SkimageSquare(2)", SkimageSquare(2), 4, Point{0, 0}, Point{1, 1}},
		{"SkimageSquare(4)", SkimageSquare(4), 16, Point{-1, -1}, Point{2, 2}},
		{"SkimageSquare(5)", SkimageSquare(5), 25, Point{-2, -2}, Point{2, 2}},
		{"SkimageSquare(6)", SkimageSquare(6), 36, Point{-2, -2}, Point{3, 3}},
		{"Ellipse32", Ellipse32(), 825, Point{-16, -16}, Point{15, 15}},
	}
	for _, tc := range tests {
		if tc.se.Len() != tc.n || len(tc.se.Offsets()) != tc.n {
			t.Errorf("%s: %d offsets, want %d", tc.name, tc.se.Len(), tc.n)
		}
		got := [2]Point{{tc.se.minDX, tc.se.minDY}, {tc.se.maxDX, tc.se.maxDY}}
		if got != [2]Point{tc.min, tc.max} {
			t.Errorf("%s: extent %v, want %v..%v", tc.name, got, tc.min, tc.max)
		}
	}
}

// The golden file was generated independently (Python's round is
// round-half-even) from the formula of build.md §8.1.
func TestEllipse32Golden(t *testing.T) {
	data, err := os.ReadFile("testdata/e32.golden")
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := parse(t, rows...)
	got := New(32, 32)
	for _, o := range Ellipse32().Offsets() {
		got.Set(o.X+16, o.Y+16, true)
	}
	wantMask(t, "E32", got, want)
	// The spec's own spot checks.
	if lo, hi, _ := got.RowSpan(0); lo != 16 || hi != 16 {
		t.Errorf("row 0 = %d..%d, want 16..16", lo, hi)
	}
	if lo, hi, _ := got.RowSpan(1); lo != 10 || hi != 22 {
		t.Errorf("row 1 = %d..%d, want 10..22", lo, hi)
	}
	for y := 13; y <= 19; y++ {
		if got.RowCount(y) != 32 {
			t.Errorf("row %d has %d px, want 32", y, got.RowCount(y))
		}
	}
}

func TestMorphHandCases(t *testing.T) {
	dot := parse(t,
		".......",
		".......",
		".......",
		"...#...",
		".......",
		".......",
		".......",
	)
	corner := parse(t,
		"###....",
		"###....",
		"###....",
		".......",
		".......",
		".......",
		".......",
	)
	tests := []struct {
		name string
		got  Mask
		want []string
	}{
		{"dilate dot Square(3)", Dilate(dot, Square(3), 1), []string{
			".......", ".......", "..###..", "..###..", "..###..", ".......", "......."}},
		// Square(2) has offsets {−1, 0}²: p is on iff p+o hits the dot, so the
		// block grows to the right and down.
		{"dilate dot Square(2)", Dilate(dot, Square(2), 1), []string{
			".......", ".......", ".......", "...##..", "...##..", ".......", "......."}},
		{"dilate dot Disc(1) x2", Dilate(dot, Disc(1), 2), []string{
			".......", "...#...", "..###..", ".#####.", "..###..", "...#...", "......."}},
		// Outside counts as background for dilation: the corner block just grows.
		{"dilate corner Square(3)", Dilate(corner, Square(3), 1), []string{
			"####...", "####...", "####...", "####...", ".......", ".......", "......."}},
		// Outside counts as foreground for erosion: only the inner edge erodes.
		{"erode corner Square(3)", Erode(corner, Square(3), 1), []string{
			"##.....", "##.....", ".......", ".......", ".......", ".......", "......."}},
		{"erode full Disc(3)", Erode(Not(New(7, 7)), Disc(3), 5), []string{
			"#######", "#######", "#######", "#######", "#######", "#######", "#######"}},
		{"erode dot", Erode(dot, Disc(1), 1), []string{
			".......", ".......", ".......", ".......", ".......", ".......", "......."}},
		{"zero iterations", Dilate(dot, Disc(3), 0), []string{
			".......", ".......", ".......", "...#...", ".......", ".......", "......."}},
		{"close gap", Close(parse(t,
			".........", ".........", "..##.##..", "..##.##..", ".........", ".........", "........."), Square(3)), []string{
			".........", ".........", "..#####..", "..#####..", ".........", ".........", "........."}},
		// Near the edge the dilation reaches the border and the erosion, which
		// reads outside pixels as foreground, keeps it there (OpenCV).
		{"close at border", Close(parse(t,
			".......", ".##.##.", ".##.##.", ".......", ".......", ".......", "......."), Square(3)), []string{
			"#######", "#######", "#######", ".......", ".......", ".......", "......."}},
		{"open removes spur", Open(parse(t,
			"###....", "###....", "####...", ".......", ".......", ".......", "......."), Square(3)), []string{
			"###....", "###....", "###....", ".......", ".......", ".......", "......."}},
	}
	for _, tc := range tests {
		wantMask(t, tc.name, tc.got, parse(t, tc.want...))
	}
}

func TestErodeReflect(t *testing.T) {
	m := parse(t, "#.##")
	tests := []struct {
		name string
		se   SE
		want string
	}{
		// out(x) = m(x−2): x=0 reads −2 → 1 ('.'), x=1 reads −1 → 0 ('#').
		{"left", NewSE([]Point{{-2, 0}}), ".##."},
		// out(x) = m(x+2): x=2 reads 4 → 3 ('#'), x=3 reads 5 → 2 ('#').
		{"right", NewSE([]Point{{2, 0}}), "####"},
		// Vertical reflection on a 1-row image reads row 0 again.
		{"vertical", NewSE([]Point{{0, -3}, {0, 2}}), "#.##"},
		// Far reflections repeat: x=0 reads −6 → 5 → 2 ('#').
		{"far", NewSE([]Point{{-6, 0}}), "####"},
		// x=0 reads −7 → 6 → 1 ('.'); x=1 reads −6 → 2 ('#').
		{"far2", NewSE([]Point{{-7, 0}}), ".###"},
	}
	for _, tc := range tests {
		wantMask(t, tc.name, ErodeReflect(m, tc.se), parse(t, tc.want))
	}
	// Against the foreground border the results differ.
	wantMask(t, "left, fg border", Erode(m, NewSE([]Point{{-2, 0}}), 1), parse(t, "###."))
}

func TestReflectIndex(t *testing.T) {
	tests := []struct{ p, n, want int }{
		{-1, 5, 0}, {-2, 5, 1}, {-5, 5, 4}, {-6, 5, 4}, {5, 5, 4}, {6, 5, 3},
		{10, 5, 0}, {0, 1, 0}, {-3, 1, 0}, {3, 5, 3},
	}
	for _, tc := range tests {
		if got := reflectIndex(tc.p, tc.n); got != tc.want {
			t.Errorf("reflectIndex(%d, %d) = %d, want %d", tc.p, tc.n, got, tc.want)
		}
	}
}

func randSE(r *rand.Rand) SE {
	var pts []Point
	k := 1 + r.IntN(12)
	for i := 0; i < k; i++ {
		pts = append(pts, Point{r.IntN(9) - 4, r.IntN(9) - 4})
	}
	return NewSE(pts)
}

// The run-based kernel must equal the offset-by-offset definition, borders
// included, for every element shape.
func TestMorphMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	zero := func(int, int) uint8 { return 0 }
	one := func(int, int) uint8 { return 1 }
	for i := 0; i < 150; i++ {
		w, h := 1+r.IntN(45), 1+r.IntN(45)
		m := randMask(r, w, h, r.Float64()*0.3)
		var se SE
		switch i % 5 {
		case 0:
			se = Ellipse32()
		case 1:
			se = Disc(r.IntN(6))
		case 2:
			se = Square(1 + r.IntN(6))
		default:
			se = randSE(r)
		}
		if got, want := Dilate(m, se, 1), bruteMorph(m, se, false, zero); !Equal(got, want) {
			t.Fatalf("case %d dilate %dx%d differs\nmask\n%sgot\n%swant\n%s", i, w, h, format(m), format(got), format(want))
		}
		if got, want := Erode(m, se, 1), bruteMorph(m, se, true, one); !Equal(got, want) {
			t.Fatalf("case %d erode %dx%d differs", i, w, h)
		}
		refl := func(x, y int) uint8 { return m.Pix[reflectIndex(y, h)*w+reflectIndex(x, w)] }
		if got, want := ErodeReflect(m, se), bruteMorph(m, se, true, refl); !Equal(got, want) {
			t.Fatalf("case %d erode-reflect %dx%d differs", i, w, h)
		}
		// Iterations are successive applications.
		if got, want := Dilate(m, se, 2), bruteMorph(bruteMorph(m, se, false, zero), se, false, zero); !Equal(got, want) {
			t.Fatalf("case %d dilate x2 differs", i)
		}
		if got, want := Erode(m, se, 2), bruteMorph(bruteMorph(m, se, true, one), se, true, one); !Equal(got, want) {
			t.Fatalf("case %d erode x2 differs", i)
		}
	}
}

// Rows wider than one 64-bit word: the kernel packs each row's horizontal
// dilations one bit per pixel, so runs that start, end or are clipped on
// and across word boundaries, full words and long all-foreground rows must
// all give the definition's result.
func TestMorphWideMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	zero := func(int, int) uint8 { return 0 }
	one := func(int, int) uint8 { return 1 }
	for i := 0; i < 60; i++ {
		w, h := 50+r.IntN(230), 1+r.IntN(30)
		m := randMask(r, w, h, r.Float64()*0.2)
		if i%4 == 3 { // long runs: whole rows and bands of foreground
			for y := 0; y < h; y += 1 + r.IntN(4) {
				x0 := r.IntN(w)
				for x := x0; x < min(w, x0+64+r.IntN(2*w)); x++ {
					m.Pix[y*w+x] = 1
				}
			}
		}
		var se SE
		switch i % 3 {
		case 0:
			se = Ellipse32()
		case 1:
			se = Disc(r.IntN(8))
		default:
			se = randSE(r)
		}
		if got, want := Dilate(m, se, 1), bruteMorph(m, se, false, zero); !Equal(got, want) {
			t.Fatalf("case %d: dilate %dx%d differs", i, w, h)
		}
		if got, want := Erode(m, se, 1), bruteMorph(m, se, true, one); !Equal(got, want) {
			t.Fatalf("case %d: erode %dx%d differs", i, w, h)
		}
		if got, want := Dilate(m, se, 2), bruteMorph(bruteMorph(m, se, false, zero), se, false, zero); !Equal(got, want) {
			t.Fatalf("case %d: dilate x2 %dx%d differs", i, w, h)
		}
	}
}

func TestMorphProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	// Every element here contains the origin.
	ses := []SE{Disc(3), Disc(5), Square(5), Square(4), Ellipse32()}
	for i := 0; i < 40; i++ {
		m := randMask(r, 20+r.IntN(60), 20+r.IntN(60), 0.05)
		se := ses[i%len(ses)]
		e, d := Erode(m, se, 1), Dilate(m, se, 1)
		if !subset(e, m) || !subset(m, d) {
			t.Fatalf("case %d: erosion ⊆ mask ⊆ dilation violated", i)
		}
		if i%len(ses) >= 3 {
			// Square(4) and E32 are not symmetric (offsets −2…1, dy −16…15):
			// with OpenCV's p+o convention their close/open are not
			// extensive/anti-extensive, so only symmetric elements go on.
			continue
		}
		o, c := Open(m, se), Close(m, se)
		if !subset(o, m) || !subset(m, c) {
			t.Fatalf("case %d: open ⊆ mask ⊆ close violated", i)
		}
		if !Equal(Open(o, se), o) || !Equal(Close(c, se), c) {
			t.Fatalf("case %d: open/close not idempotent", i)
		}
	}
}

func TestMorphEmptyAndDegenerate(t *testing.T) {
	if got := Dilate(New(0, 0), Disc(3), 2); got.W != 0 || len(got.Pix) != 0 {
		t.Error("dilate of 0×0")
	}
	m := parse(t, "#.", "..")
	if !Dilate(m, NewSE(nil), 1).Empty() {
		t.Error("dilation by the empty element should be empty")
	}
	if Erode(m, NewSE(nil), 1).Count() != 4 {
		t.Error("erosion by the empty element should be full")
	}
}

// Pooled workspaces must not leak state between concurrent callers.
func TestMorphConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	ms := make([]Mask, 8)
	want := make([]Mask, 8)
	for i := range ms {
		ms[i] = randMask(r, 60+i*7, 50+i*3, 0.05)
		want[i] = Dilate(ms[i], Ellipse32(), 2)
	}
	done := make(chan error, len(ms))
	for i := range ms {
		go func() {
			for k := 0; k < 5; k++ {
				if !Equal(Dilate(ms[i], Ellipse32(), 2), want[i]) {
					done <- fmt.Errorf("mask %d differs under concurrency", i)
					return
				}
			}
			done <- nil
		}()
	}
	for range ms {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// Rectangles take the sliding-count path; check it against the definition
// with elements larger than the image and anchors outside the element.
func TestMorphRectangles(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	zero := func(int, int) uint8 { return 0 }
	one := func(int, int) uint8 { return 1 }
	for i := 0; i < 60; i++ {
		w, h := 1+r.IntN(30), 1+r.IntN(30)
		m := randMask(r, w, h, r.Float64()*0.2)
		x0, y0 := r.IntN(21)-10, r.IntN(21)-10
		var pts []Point
		rw, rh := 1+r.IntN(25), 1+r.IntN(25)
		for dy := 0; dy < rh; dy++ {
			for dx := 0; dx < rw; dx++ {
				pts = append(pts, Point{x0 + dx, y0 + dy})
			}
		}
		se := NewSE(pts)
		if got, want := Dilate(m, se, 1), bruteMorph(m, se, false, zero); !Equal(got, want) {
			t.Fatalf("case %d: rect dilate differs", i)
		}
		if got, want := Erode(m, se, 2), bruteMorph(bruteMorph(m, se, true, one), se, true, one); !Equal(got, want) {
			t.Fatalf("case %d: rect erode x2 differs", i)
		}
		refl := func(x, y int) uint8 { return m.Pix[reflectIndex(y, h)*w+reflectIndex(x, w)] }
		if got, want := ErodeReflect(m, se), bruteMorph(m, se, true, refl); !Equal(got, want) {
			t.Fatalf("case %d: rect erode-reflect differs", i)
		}
	}
}
