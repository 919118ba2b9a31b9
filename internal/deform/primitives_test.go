package deform

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame/frametest"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
)

func TestGaussKernel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sigma  float64
		radius int
	}{{2.0, 6}, {1.0, 3}, {0.5, 2}, {1.3, 4}} {
		k := gaussKernel(tc.sigma)
		if len(k) != 2*tc.radius+1 {
			t.Errorf("σ=%v: %d taps, want %d", tc.sigma, len(k), 2*tc.radius+1)
		}
		sum := 0.0
		for i, v := range k {
			sum += v
			if v != k[len(k)-1-i] {
				t.Errorf("σ=%v: kernel not symmetric at %d", tc.sigma, i)
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("σ=%v: sum %v, want 1", tc.sigma, sum)
		}
		// Hand check: ratio of neighbouring weights is exp(−(2k+1)/(2σ²)).
		r := len(k) / 2
		if got, want := k[r+1]/k[r], math.Exp(-1/(2*tc.sigma*tc.sigma)); math.Abs(got-want) > 1e-12 {
			t.Errorf("σ=%v: k1/k0 = %v, want %v", tc.sigma, got, want)
		}
	}
}

func TestBlurConstantAndReplicate(t *testing.T) {
	t.Parallel()
	// A constant image stays constant (replicate border, weights sum to 1).
	w, h := 9, 7
	src := make([]float64, w*h)
	for i := range src {
		src[i] = 0.25
	}
	for i, v := range blur(src, w, h, gaussKernel(2)) {
		if math.Abs(v-0.25) > 1e-12 {
			t.Fatalf("pixel %d = %v, want 0.25", i, v)
		}
	}
	// A vertical step edge: Sobel /8 of a unit step is 0.5 on both columns
	// beside it (weights 1,2,1 over 8, times the unit jump... (1+2+1)/8).
	step := make([]float64, w*h)
	for y := 0; y < h; y++ {
		for x := 5; x < w; x++ {
			step[y*w+x] = 1
		}
	}
	mag := sobelMag(step, w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			want := 0.0
			if x == 4 || x == 5 {
				want = 0.5
			}
			if got := mag[y*w+x]; math.Abs(got-want) > 1e-12 {
				t.Fatalf("sobel (%d,%d) = %v, want %v", x, y, got, want)
			}
		}
	}
}

func TestPercentileIndex(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q    float64
		n    int
		want int
	}{
		{0.99, 0, -1}, {0.99, 1, 0}, {0.99, 2, 0}, {0.99, 100, 98}, {0.99, 101, 99},
		{0.99, 1001, 990}, {0.5, 11, 5}, {1, 10, 9}, {0, 10, 0},
	} {
		if got := percentileIndex(tc.q, tc.n); got != tc.want {
			t.Errorf("percentileIndex(%v, %d) = %d, want %d", tc.q, tc.n, got, tc.want)
		}
	}
}

func TestSelectKMatchesSort(t *testing.T) {
	t.Parallel()
	src := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := 1 + src.IntN(300)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(src.IntN(20)) / 7 // many duplicates
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		k := src.IntN(n)
		if got := selectK(slices.Clone(xs), k); got != sorted[k] {
			t.Fatalf("trial %d: selectK(k=%d) = %v, want %v", trial, k, got, sorted[k])
		}
	}
}

func TestOrganicNoise(t *testing.T) {
	t.Parallel()
	cells, weights := []int{32, 16, 8}, []float64{1, 0.5, 0.25}
	for _, n := range []int{1, 7, 49, 129} {
		r := rng.New("noise")
		f := organicNoise(r, n, cells, weights, nil)
		// Exactly Σ L² Float64 draws, L = (n−1) div z + 2.
		ref := rng.New("noise")
		for _, z := range cells {
			L := (n-1)/z + 2
			for i := 0; i < L*L; i++ {
				ref.U64()
			}
		}
		if r.U64() != ref.U64() {
			t.Errorf("n=%d: wrong number of RNG draws", n)
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range f {
			lo, hi = min(lo, v), max(hi, v)
		}
		if n == 1 {
			if f[0] != 0.5 {
				t.Errorf("n=1: constant field gives %v, want 0.5", f[0])
			}
			continue
		}
		if lo != 0 || hi != 1 {
			t.Errorf("n=%d: range [%v, %v], want [0, 1]", n, lo, hi)
		}
	}
	// Lattice corners are hit exactly: with one octave of cell z the value
	// at s = t = 0 is the first lattice value, normalised.
	r := rng.New("corner")
	f := organicNoise(r, 33, []int{32}, []float64{1}, nil)
	ref := rng.New("corner")
	var lat [9]float64 // L = 32/32 + 2 = 3
	for i := range lat {
		lat[i] = ref.Float64()
	}
	// The square spans exactly one lattice cell (s, t ≤ 32), and a
	// smoothstep-bilinear blend stays within its corners, so min and max
	// over it are those of the four corner values.
	mn := slices.Min([]float64{lat[0], lat[1], lat[3], lat[4]})
	mx := slices.Max([]float64{lat[0], lat[1], lat[3], lat[4]})
	if got, w := f[0], (lat[0]-mn)/(mx-mn); math.Abs(got-w) > 1e-12 {
		t.Errorf("corner value %v, want %v", got, w)
	}
	if got, w := f[32], (lat[1]-mn)/(mx-mn); math.Abs(got-w) > 1e-12 {
		t.Errorf("corner (32,0) value %v, want %v", got, w)
	}
	if got, w := f[32*33+32], (lat[4]-mn)/(mx-mn); math.Abs(got-w) > 1e-12 {
		t.Errorf("corner (32,32) value %v, want %v", got, w)
	}
	// Zero weights: constant field → 0.5.
	f = organicNoise(rng.New("c"), 9, []int{4}, []float64{0}, nil)
	for _, v := range f {
		if v != 0.5 {
			t.Fatalf("constant field gives %v, want 0.5", v)
		}
	}
}

func TestSmoothstep(t *testing.T) {
	t.Parallel()
	for _, tc := range [][2]float64{{0, 0}, {1, 1}, {0.5, 0.5}, {0.25, 0.15625}} {
		if got := smoothstep(tc[0]); math.Abs(got-tc[1]) > 1e-15 {
			t.Errorf("S(%v) = %v, want %v", tc[0], got, tc[1])
		}
	}
}

func TestDirectionFactor(t *testing.T) {
	t.Parallel()
	a, b := 1.4, 0.6
	c0, s0 := math.Cos(0), math.Sin(0)
	cases := []struct {
		dx, dy     int
		cosT, sinT float64
		want       float64
	}{
		{0, 0, c0, s0, 1},
		{10, 0, c0, s0, a}, {-3, 0, c0, s0, a},
		{0, 7, c0, s0, b}, {0, -1, c0, s0, b},
		// 45°: 1/sqrt((1/a² + 1/b²)/2)
		{5, 5, c0, s0, 1 / math.Sqrt((1/(a*a)+1/(b*b))/2)},
		// θ = π/2 swaps the axes.
		{10, 0, 0, 1, b}, {0, 10, 0, 1, a},
	}
	for _, tc := range cases {
		if got := directionFactor(tc.dx, tc.dy, a, b, tc.cosT, tc.sinT); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("e(%d,%d) = %v, want %v", tc.dx, tc.dy, got, tc.want)
		}
	}
}

func TestCenterRoundHalfEven(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pts  []mask.Point
		want mask.Point
	}{
		{[]mask.Point{pt(0, 0), pt(1, 1)}, pt(0, 0)},                     // 0.5 → 0
		{[]mask.Point{pt(1, 3), pt(2, 4)}, pt(2, 4)},                     // 1.5 → 2, 3.5 → 4
		{[]mask.Point{pt(0, 0), pt(0, 0), pt(1, 2)}, pt(0, 1)},           // 0.33, 0.67
		{[]mask.Point{pt(5, 6), pt(6, 7), pt(7, 8), pt(8, 9)}, pt(6, 8)}, // 6.5 → 6, 7.5 → 8
	} {
		if got := center(tc.pts); got != tc.want {
			t.Errorf("center(%v) = %v, want %v", tc.pts, got, tc.want)
		}
	}
}

// testMasks returns small masks exercising the crop logic: interior blobs,
// blobs touching each image edge, a mask with a hole, and an empty mask.
func testMasks(w, h int) map[string]mask.Mask {
	ms := map[string]mask.Mask{}
	ms["interior"] = frametest.Ellipse(w, h, 100, 90, 30, 20)
	m := frametest.Ellipse(w, h, 5, 60, 40, 30)
	frametest.PaintEllipse(m, 150, 150, 60, 25)
	ms["edges"] = m
	m = frametest.Ellipse(w, h, 100, 100, 60, 50)
	m.AndNotWith(frametest.Ellipse(w, h, 100, 100, 25, 20))
	frametest.PaintEllipse(m, 100, 100, 6, 6) // island inside the hole
	ms["hole"] = m
	m = mask.New(w, h)
	for i := range m.Pix {
		m.Pix[i] = 1
	}
	ms["full"] = m
	ms["empty"] = mask.New(w, h)
	return ms
}

func TestRingsMatchFullFrame(t *testing.T) {
	t.Parallel()
	se := mask.Ellipse32()
	for name, m := range testMasks(200, 180) {
		for _, order := range [][]int{{1, 2, 3, 4}, {4, 2, 3, 1, 5}, {3, 6}} {
			rc := newRingCache(se)
			for _, kind := range []morphKind{dilateKind, erodeKind} {
				for _, iters := range order {
					var full mask.Mask
					if kind == dilateKind {
						full = mask.Dilate(m, se, iters)
					} else {
						full = mask.Erode(m, se, iters)
					}
					want := mask.Contour(full)
					got := rc.ring(m, kind, iters)
					if !slices.Equal(got, want) {
						t.Errorf("%s kind %d iters %d: crop ring differs (%d vs %d points)", name, kind, iters, len(got), len(want))
					}
					if again := rc.ring(m, kind, iters); len(got) > 0 && &again[0] != &got[0] {
						t.Errorf("%s: ring not cached", name)
					}
				}
			}
		}
	}
}

// fullDeform is Deform computed on the full frame, without crops, from the
// same ball pixel lists, to check the engine's crop logic.
func fullSmooth(m mask.Mask, add, rem []int32, cfg buildcfg.Config) mask.Mask {
	n := m.Clone()
	for _, i := range add {
		n.Pix[i] = 1
	}
	for _, i := range rem {
		n.Pix[i] = 0
	}
	d := mask.Disc(cfg.DeformSmoothRadius)
	n = mask.Open(mask.Close(n, d), d)
	return mask.DropSmall(mask.FillHoles(n), cfg.DeformMinPiecePx)
}

func TestDeformMatchesFullFrame(t *testing.T) {
	t.Parallel()
	cfg := buildcfg.Default()
	cfg.DeformMinPiecePx = 50
	w, h := 200, 180
	for name, m := range testMasks(w, h) {
		if m.Empty() {
			continue
		}
		g := &Geometry{Gray: synthGray(w, h), LungRight: fullMask(w, h), LungLeft: mask.New(w, h), Regions: map[string]mask.Mask{}}
		e, err := newEngine(g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Points: one outside (expansion) near the boundary and one inside.
		var E []prompt
		var K []mask.Point
		ring := e.rings.ring(m, dilateKind, 1)
		if len(ring) > 0 {
			E = append(E, prompt{ring[len(ring)/3], "right"})
		}
		in := e.rings.ring(m, erodeKind, 1)
		if len(in) > 0 {
			K = append(K, in[len(in)/2])
		}
		r1 := rng.New("deform-" + name)
		gotc, dl, ok := e.deform(r1, m, E, K, true)
		got := gotc.full()
		if name == "full" {
			// No background anywhere: a contraction point cannot reach it.
			if ok || dl.Failed != "point_unreachable" {
				t.Errorf("full mask: got ok=%v failed=%q, want point_unreachable", ok, dl.Failed)
			}
			continue
		}
		if !ok {
			t.Fatalf("%s: deform failed: %+v", name, dl)
		}
		// Recompute balls with the same draws for the full-frame check.
		r2 := rng.New("deform-" + name)
		var add, rem []int32
		for _, p := range E {
			add, _, _ = e.ball(r2, m, 1, p.P, add)
		}
		for _, q := range K {
			rem, _, _ = e.ball(r2, m, 0, q, rem)
		}
		want := fullSmooth(m, add, rem, cfg)
		if !mask.Equal(got, want) {
			t.Errorf("%s: cropped deform differs from full frame (%d px)", name, mask.CountXor(got, want))
		}
	}
}

func fullMask(w, h int) mask.Mask {
	m := mask.New(w, h)
	for i := range m.Pix {
		m.Pix[i] = 1
	}
	return m
}

func synthGray(w, h int) *imageGray {
	g := newGray(w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			g.Pix[y*w+x] = uint8((x*7 + y*3) % 256)
			if (x/20+y/20)%2 == 0 {
				g.Pix[y*w+x] /= 2
			}
		}
	}
	return g
}

// organicNoiseDirect is organicNoise evaluated per pixel: both horizontal
// blends and the vertical blend for every (s, t).
func organicNoiseDirect(r *rng.RNG, n int, cells []int, weights []float64) []float64 {
	field := make([]float64, n*n)
	for oc, z := range cells {
		if z <= 0 {
			continue
		}
		wgt := 0.0
		if oc < len(weights) {
			wgt = weights[oc]
		}
		L := (n-1)/z + 2
		lat := make([]float64, L*L)
		for i := range lat {
			lat[i] = r.Float64()
		}
		for t := 0; t < n; t++ {
			gy := float64(t) / float64(z)
			j := int(math.Floor(gy))
			fy := smoothstep(gy - float64(j))
			for s := 0; s < n; s++ {
				gx := float64(s) / float64(z)
				i := int(math.Floor(gx))
				fx := smoothstep(gx - float64(i))
				r0, r1 := lat[j*L:], lat[(j+1)*L:]
				a := r0[i] + float64(fx*(r0[i+1]-r0[i]))
				b := r1[i] + float64(fx*(r1[i+1]-r1[i]))
				v := a + float64(fy*(b-a))
				field[t*n+s] += float64(wgt * v)
			}
		}
	}
	lo, hi := slices.Min(field), slices.Max(field)
	for i, v := range field {
		if hi > lo {
			field[i] = (v - lo) / (hi - lo)
		} else {
			field[i] = 0.5
		}
	}
	return field
}

// TestOrganicNoiseMatchesDirect compares organicNoise, which blends each
// lattice row horizontally once, with the per-pixel evaluation over many
// sizes, cell lists and weights (odd cells, cells larger than the square,
// a zero cell, negative weights): every value must be the same float64,
// and both must leave the RNG at the same place.
func TestOrganicNoiseMatchesDirect(t *testing.T) {
	t.Parallel()
	src := rng.New("noise-direct")
	var buf []float64
	for trial := 0; trial < 60; trial++ {
		n := 1 + int(src.UintN(140))
		var cells []int
		var weights []float64
		for k := 0; k < 1+int(src.UintN(4)); k++ {
			cells = append(cells, int(src.UintN(50)))
			weights = append(weights, src.Float64()*2-0.5)
		}
		seed := fmt.Sprintf("noise-direct/%d", trial)
		r1, r2 := rng.New(seed), rng.New(seed)
		buf = organicNoise(r1, n, cells, weights, buf)
		want := organicNoiseDirect(r2, n, cells, weights)
		for i := range want {
			if math.Float64bits(buf[i]) != math.Float64bits(want[i]) {
				t.Fatalf("n=%d cells %v weights %v: value %d is %v, direct %v", n, cells, weights, i, buf[i], want[i])
			}
		}
		if r1.U64() != r2.U64() {
			t.Fatalf("n=%d cells %v: RNG consumption differs", n, cells)
		}
	}
}

// blurDirect is blur with one sum per output pixel, tap by tap.
func blurDirect(src []float64, w, h int, k []float64) []float64 {
	r := len(k) / 2
	at := func(f []float64, x, y int) float64 { return f[min(max(y, 0), h-1)*w+min(max(x, 0), w-1)] }
	tmp := make([]float64, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			s := 0.0
			for j := -r; j <= r; j++ {
				s += float64(k[j+r] * at(src, x+j, y))
			}
			tmp[y*w+x] = s
		}
	}
	dst := make([]float64, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			s := 0.0
			for j := -r; j <= r; j++ {
				s += float64(k[j+r] * at(tmp, x, y+j))
			}
			dst[y*w+x] = s
		}
	}
	return dst
}

// TestBlurMatchesDirect compares blur with the per-pixel sums on random
// images of many widths (below, at and above the four-wide blocks and
// the kernel's reach) and kernels: every value must be the same float64.
func TestBlurMatchesDirect(t *testing.T) {
	t.Parallel()
	src := rng.New("blur-direct")
	for trial := 0; trial < 40; trial++ {
		w, h := 1+int(src.UintN(37)), 1+int(src.UintN(23))
		img := make([]float64, w*h)
		for i := range img {
			img[i] = float64(src.UintN(256)) / 255
		}
		k := gaussKernel([]float64{0, 0.4, 1, 2, 3.3}[trial%5])
		got, want := blur(img, w, h, k), blurDirect(img, w, h, k)
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%dx%d, kernel of %d: pixel %d is %v, direct %v", w, h, len(k), i, got[i], want[i])
			}
		}
	}
}

// TestSobelMagMatchesDirect compares sobelMag with the clamped per-pixel
// formula on random fields, widths and heights 1 to 3 included.
func TestSobelMagMatchesDirect(t *testing.T) {
	t.Parallel()
	src := rng.New("sobel-direct")
	for trial := 0; trial < 40; trial++ {
		w, h := 1+int(src.UintN(20)), 1+int(src.UintN(12))
		g := make([]float64, w*h)
		for i := range g {
			g[i] = src.Float64()
		}
		at := func(x, y int) float64 { return g[min(max(y, 0), h-1)*w+min(max(x, 0), w-1)] }
		got := sobelMag(g, w, h)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				a, b, c := at(x-1, y-1), at(x, y-1), at(x+1, y-1)
				d, f := at(x-1, y), at(x+1, y)
				gg, hh, ii := at(x-1, y+1), at(x, y+1), at(x+1, y+1)
				gx := ((c + float64(2*f) + ii) - (a + float64(2*d) + gg)) / 8
				gy := ((gg + float64(2*hh) + ii) - (a + float64(2*b) + c)) / 8
				want := math.Sqrt(float64(gx*gx) + float64(gy*gy))
				if math.Float64bits(got[y*w+x]) != math.Float64bits(want) {
					t.Fatalf("%dx%d: (%d,%d) is %v, direct %v", w, h, x, y, got[y*w+x], want)
				}
			}
		}
	}
}
