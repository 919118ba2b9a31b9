package mask

import (
	"math/rand/v2"
	"testing"
)

func TestComponentsOrderAndConnectivity(t *testing.T) {
	m := parse(t,
		"#.....#",
		".#...##",
		"......#",
		"##.....",
		"##...#.",
		"......#",
		"###...#",
	)
	// 4-connected: {(0,0)} 1, {(1,1)} 1, right column piece 4, left 2×2 block 4,
	// {(5,4)} 1, {(6,5),(6,6)} 2, bottom row 3.
	lb := Label(m, 4)
	if lb.N() != 7 {
		t.Fatalf("4-conn: %d components, want 7", lb.N())
	}
	wantSizes := []int{1, 4, 1, 4, 1, 2, 3} // label order = first-pixel order: (0,0), (6,0), (1,1), (0,3), …
	for i, s := range wantSizes {
		if lb.Sizes[i] != s {
			t.Errorf("label %d size %d, want %d", i+1, lb.Sizes[i], s)
		}
	}
	// Size descending, ties by first pixel: right piece (first (6,0)) before
	// the block (first (0,3)); then 3, 2; then the singles in scan order.
	ord := lb.Order()
	wantOrd := []int{2, 4, 7, 6, 1, 3, 5}
	for i := range wantOrd {
		if ord[i] != wantOrd[i] {
			t.Fatalf("order %v, want %v", ord, wantOrd)
		}
	}
	comps := Components(m, 4, 3)
	if len(comps) != 3 {
		t.Fatalf("Components(min 3) = %d masks, want 3", len(comps))
	}
	wantMask(t, "first component", comps[0], parse(t,
		"......#", ".....##", "......#", ".......", ".......", ".......", "......."))
	// 8-connected: the diagonal pairs join: sizes 2, 4, 4, 3, 3.
	lb8 := Label(m, 8)
	if lb8.N() != 5 {
		t.Errorf("8-conn: %d components, want 5", lb8.N())
	}
	if s := lb8.Sizes[lb8.Order()[2]-1]; s != 3 {
		t.Errorf("8-conn third size %d, want 3", s)
	}
	wantMask(t, "Largest8", Largest8(m), parse(t,
		"......#", ".....##", "......#", ".......", ".......", ".......", "......."))
	// Diagonal links decide the largest 8-component.
	wantMask(t, "Largest8 diagonal", Largest8(parse(t, "#..##", ".#...", "#....")), parse(t, "#....", ".#...", "#...."))
	if !Largest8(New(3, 3)).Empty() {
		t.Error("Largest8 of empty")
	}
}

func TestLargestTie(t *testing.T) {
	m := parse(t,
		"...##",
		"##...",
	)
	wantMask(t, "tie → first pixel first", Largest(m, 4), parse(t, "...##", "....."))
}

func TestDropSmall(t *testing.T) {
	m := parse(t,
		"##..#",
		"##..#",
		"....#",
		"#....",
	)
	wantMask(t, "drop < 3", DropSmall(m, 3), parse(t, "##..#", "##..#", "....#", "....."))
	wantMask(t, "drop < 4", DropSmall(m, 4), parse(t, "##...", "##...", ".....", "....."))
	wantMask(t, "drop < 0", DropSmall(m, 0), m)
}

func TestFillHoles(t *testing.T) {
	tests := []struct {
		name     string
		in, want []string
	}{
		{"closed ring", []string{
			".......",
			".#####.",
			".#...#.",
			".#.#.#.",
			".#...#.",
			".#####.",
			".......",
		}, []string{
			".......",
			".#####.",
			".#####.",
			".#####.",
			".#####.",
			".#####.",
			".......",
		}},
		// A diagonal gap does not connect background 4-wise: still a hole.
		{"diagonal gap", []string{
			".....",
			".##..",
			".#.#.",
			"..##.",
			".....",
		}, []string{
			".....",
			".##..",
			".###.",
			"..##.",
			".....",
		}},
		// Background touching the border is exterior even if enclosed
		// elsewhere; a ring open to the edge has no hole.
		{"open to edge", []string{
			"#.###",
			"#...#",
			"#####",
		}, []string{
			"#.###",
			"#...#",
			"#####",
		}},
		{"ring at the border", []string{
			"###",
			"#.#",
			"###",
		}, []string{
			"###",
			"###",
			"###",
		}},
	}
	for _, tc := range tests {
		wantMask(t, tc.name, FillHoles(parse(t, tc.in...)), parse(t, tc.want...))
	}
}

func TestContour(t *testing.T) {
	tests := []struct {
		name     string
		in, want []string
	}{
		{"square", []string{
			".......",
			".#####.",
			".#####.",
			".#####.",
			".......",
		}, []string{
			".......",
			".#####.",
			".#...#.",
			".#####.",
			".......",
		}},
		// Hole borders and the blob inside the hole are not external.
		{"hole and island", []string{
			".........",
			".#######.",
			".#.....#.",
			".#..#..#.",
			".#.....#.",
			".#######.",
			".........",
		}, []string{
			".........",
			".#######.",
			".#.....#.",
			".#.....#.",
			".#.....#.",
			".#######.",
			".........",
		}},
		// Pixels on the image edge are boundary (outside counts as exterior).
		{"full", []string{
			"####",
			"####",
			"####",
		}, []string{
			"####",
			"#..#",
			"####",
		}},
		// Diagonal-only exterior contact does not count (4-neighbours).
		{"thick", []string{
			".....",
			".###.",
			".###.",
			".###.",
			".....",
		}, []string{
			".....",
			".###.",
			".#.#.",
			".###.",
			".....",
		}},
	}
	for _, tc := range tests {
		m := parse(t, tc.in...)
		wantMask(t, tc.name, ContourMask(m), parse(t, tc.want...))
	}
	pts := Contour(parse(t, ".##", "##."))
	want := []Point{{1, 0}, {2, 0}, {0, 1}, {1, 1}}
	if len(pts) != len(want) {
		t.Fatalf("Contour = %v, want %v", pts, want)
	}
	for i := range want {
		if pts[i] != want[i] {
			t.Fatalf("Contour = %v, want %v (row-major)", pts, want)
		}
	}
}

func TestComponentProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 60; i++ {
		m := randMask(r, 5+r.IntN(50), 5+r.IntN(50), r.Float64()*0.5)
		for _, conn := range []int{4, 8} {
			comps := Components(m, conn, 0)
			union := New(m.W, m.H)
			total := 0
			prev := -1
			for k, c := range comps {
				n := c.Count()
				if k > 0 && n > prev {
					t.Fatalf("case %d conn %d: sizes not descending", i, conn)
				}
				prev = n
				total += n
				union.OrWith(c)
				if len(Components(c, conn, 0)) != 1 {
					t.Fatalf("case %d conn %d: component %d not connected", i, conn, k)
				}
			}
			if total != m.Count() || !Equal(union, m) {
				t.Fatalf("case %d conn %d: components do not partition the mask", i, conn)
			}
		}
		f := FillHoles(m)
		if !subset(m, f) || !Equal(FillHoles(f), f) {
			t.Fatalf("case %d: FillHoles not extensive/idempotent", i)
		}
		// A filled mask has no holes, so all its background is exterior and
		// its contour equals the contour of m plus nothing inside holes.
		if !subset(ContourMask(m), m) {
			t.Fatalf("case %d: contour outside mask", i)
		}
		if !Equal(ContourMask(m), And(ContourMask(f), m)) {
			t.Fatalf("case %d: contour differs from the filled mask's", i)
		}
		d := DropSmall(m, 5)
		for _, c := range Components(d, 4, 0) {
			if c.Count() < 5 {
				t.Fatalf("case %d: DropSmall left a small piece", i)
			}
		}
		if !Equal(Or(d, DropSmall(m, 0)), m) {
			t.Fatalf("case %d: DropSmall(0) changed the mask", i)
		}
	}
}
