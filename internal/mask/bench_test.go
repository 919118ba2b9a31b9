package mask

import (
	"math/rand/v2"
	"testing"
)

// lungs1024 is a 1024² mask shaped like a lung pair (two ellipses, ~30% of
// the image) with a hole and a few specks: a realistic worst case for the
// builder's dilations, contours and labelling.
func lungs1024() Mask {
	m := New(1024, 1024)
	for y := 0; y < 1024; y++ {
		for x := 0; x < 1024; x++ {
			dxr, dyr := float64(x-300)/170, float64(y-500)/330
			dxl, dyl := float64(x-724)/170, float64(y-500)/330
			if dxr*dxr+dyr*dyr <= 1 || dxl*dxl+dyl*dyl <= 1 {
				m.Pix[y*1024+x] = 1
			}
			if (x-300)*(x-300)+(y-450)*(y-450) < 400 {
				m.Pix[y*1024+x] = 0
			}
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 200; i++ {
		m.Pix[r.IntN(len(m.Pix))] = 1
	}
	return m
}

func BenchmarkDilateE32(b *testing.B) {
	m, se := lungs1024(), Ellipse32()
	b.ResetTimer()
	for b.Loop() {
		Dilate(m, se, 1)
	}
}

func BenchmarkErodeE32(b *testing.B) {
	m, se := lungs1024(), Ellipse32()
	b.ResetTimer()
	for b.Loop() {
		Erode(m, se, 1)
	}
}

func BenchmarkDilateE32x4(b *testing.B) {
	m, se := lungs1024(), Ellipse32()
	b.ResetTimer()
	for b.Loop() {
		Dilate(m, se, 4)
	}
}

func BenchmarkCloseDisc5(b *testing.B) {
	m, se := lungs1024(), Disc(5)
	b.ResetTimer()
	for b.Loop() {
		Close(m, se)
	}
}

func BenchmarkContour(b *testing.B) {
	m := lungs1024()
	b.ResetTimer()
	for b.Loop() {
		Contour(m)
	}
}

func BenchmarkComponents(b *testing.B) {
	m := lungs1024()
	b.ResetTimer()
	for b.Loop() {
		Components(m, 4, 1000)
	}
}

func BenchmarkFillHoles(b *testing.B) {
	m := lungs1024()
	b.ResetTimer()
	for b.Loop() {
		FillHoles(m)
	}
}

// BenchmarkGeodesic exhausts a full 513×513 window (W = 256) on a noisy cost
// field: the most a single deformation point can cost.
func BenchmarkGeodesic(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 9))
	cost := make([]float64, 1024*1024)
	for i := range cost {
		cost[i] = 1 + 4*r.Float64()
	}
	b.ResetTimer()
	for b.Loop() {
		g, err := NewGeodesic(cost, 1024, 1024, Point{500, 500}, 256)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for g.Next() {
			n++
		}
		g.Release()
		if n != 513*513 {
			b.Fatalf("popped %d", n)
		}
	}
}

// The peripheral band's erosion (build.md §6): an e×e square with e ≈ 150
// on the lung union, reflect border.
func BenchmarkErodeReflectSquare150(b *testing.B) {
	m, se := lungs1024(), Square(150)
	b.ResetTimer()
	for b.Loop() {
		ErodeReflect(m, se)
	}
}
