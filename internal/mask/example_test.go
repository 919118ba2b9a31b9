package mask_test

import (
	"fmt"

	"github.com/chexpercept/chexpercept/internal/mask"
)

// A geodesic ball as in build.md §8.4: search from p until the first pixel
// of the target T, then keep popping up to a radius.
func ExampleGeodesic() {
	const w, h = 9, 5
	cost := make([]float64, w*h)
	for i := range cost {
		cost[i] = 1
	}
	target := mask.New(w, h)
	target.Set(6, 2, true)

	g, err := mask.NewGeodesic(cost, w, h, mask.Point{X: 2, Y: 2}, 256)
	if err != nil {
		panic(err)
	}
	defer g.Release()
	dT := -1.0
	var ball []mask.Point
	for g.Next() {
		x, y, d := g.Pixel()
		if dT < 0 && target.At(x, y) {
			dT = d
		}
		if dT >= 0 && d > 1.25*dT {
			break
		}
		ball = append(ball, mask.Point{X: x, Y: y})
	}
	fmt.Println("d_T =", dT, "ball pixels:", len(ball))
	// Output: d_T = 4 ball pixels: 36
}

func ExampleContour() {
	m := mask.New(5, 5)
	for y := 1; y <= 3; y++ {
		for x := 1; x <= 3; x++ {
			m.Set(x, y, true)
		}
	}
	fmt.Println(mask.Contour(m))
	// Output: [{1 1} {2 1} {3 1} {1 2} {3 2} {1 3} {2 3} {3 3}]
}
