package anatomy

import (
	"math/rand/v2"
	"testing"

	"github.com/chexpercept/chexpercept/internal/mask"
)

func TestLungRegionNames(t *testing.T) {
	want := []string{
		"right costophrenic angle", "left costophrenic angle",
		"right medial lung & right upper zone lung", "right medial lung & right mid zone lung", "right medial lung & right lung base",
		"left medial lung & left upper zone lung", "left medial lung & left mid zone lung", "left medial lung & left lung base",
		"right lateral lung & right upper zone lung", "right lateral lung & right mid zone lung", "right lateral lung & right lung base",
		"left lateral lung & left upper zone lung", "left lateral lung & left mid zone lung", "left lateral lung & left lung base",
		"right peripheral lung & right upper zone lung", "right peripheral lung & right mid zone lung", "right peripheral lung & right lung base",
		"left peripheral lung & left upper zone lung", "left peripheral lung & left mid zone lung", "left peripheral lung & left lung base",
	}
	for i, n := range LungRegionNames {
		if n != want[i] {
			t.Errorf("region %d = %q, want %q", i, n, want[i])
		}
	}
}

// rectLungs is a 70×50 frame with rectangular lungs, right x 10..29, left
// x 40..59, both rows 10..39. Everything below is computed by hand.
func rectLungs() *Prepared {
	r, l := rect(70, 50, 10, 10, 29, 39), rect(70, 50, 40, 10, 59, 39)
	return &Prepared{LungRight: r, LungLeft: l, RawRight: r, RawLeft: l}
}

// union of inclusive rectangles on a 70×50 frame.
func rects(rs ...[4]int) mask.Mask {
	m := mask.New(70, 50)
	for _, r := range rs {
		paint(m, r[0], r[1], r[2], r[3])
	}
	return m
}

func TestBuildRegionsRectangles(t *testing.T) {
	reg, err := BuildRegions(rectLungs(), false)
	if err != nil {
		t.Fatal(err)
	}
	// H = 30: b1 = 10 + 10, b2 = 10 + 20; mid_x = (10+29) div 2, (40+59) div 2;
	// CPA cut = 10 + floor(0.75·29) = 31.
	gr, gl := reg.Right, reg.Left
	if gr.Y0 != 10 || gr.Y1 != 39 || gr.B1 != 20 || gr.B2 != 30 || gr.MidX != 19 || gr.CPACut != 31 {
		t.Errorf("right geometry %+v", gr)
	}
	if gl.B1 != 20 || gl.B2 != 30 || gl.MidX != 49 || gl.CPACut != 31 {
		t.Errorf("left geometry %+v", gl)
	}
	// e = (20 + 20) div 4 = 10; the 10×10 square spans −4..5 (scikit-image's
	// placement of an even square), so the cores are x 14..24 / 44..54, rows
	// 14..34.
	if reg.Erosion != 10 {
		t.Errorf("erosion %d, want 10", reg.Erosion)
	}
	if !mask.Equal(gr.Core, rects([4]int{14, 14, 24, 34})) || !mask.Equal(gl.Core, rects([4]int{44, 14, 54, 34})) {
		t.Errorf("cores wrong")
	}
	if gr.Top != (mask.Point{X: 14, Y: 14}) || gr.Bottom != (mask.Point{X: 14, Y: 34}) {
		t.Errorf("right top/bottom %v %v", gr.Top, gr.Bottom)
	}
	// Left: top ties to max x, bottom ties to min x (the reference's asymmetry).
	if gl.Top != (mask.Point{X: 54, Y: 14}) || gl.Bottom != (mask.Point{X: 44, Y: 34}) {
		t.Errorf("left top/bottom %v %v", gl.Top, gl.Bottom)
	}
	wantRightBand := rects([4]int{10, 10, 14, 14}, [4]int{10, 15, 13, 33}, [4]int{10, 34, 14, 39})
	wantLeftBand := rects([4]int{54, 10, 59, 14}, [4]int{55, 15, 59, 33}, [4]int{44, 34, 59, 39})
	if !mask.Equal(gr.Peripheral, wantRightBand) {
		t.Errorf("right band: %d px, want %d", gr.Peripheral.Count(), wantRightBand.Count())
	}
	if !mask.Equal(gl.Peripheral, wantLeftBand) {
		t.Errorf("left band: %d px, want %d", gl.Peripheral.Count(), wantLeftBand.Count())
	}
	if !mask.Equal(gr.CPA, rects([4]int{10, 31, 13, 33}, [4]int{10, 34, 14, 39})) {
		t.Errorf("right CPA wrong (%d px)", gr.CPA.Count())
	}
	if !mask.Equal(gl.CPA, rects([4]int{55, 31, 59, 33}, [4]int{44, 34, 59, 39})) {
		t.Errorf("left CPA wrong (%d px)", gl.CPA.Count())
	}

	wantZones := []mask.Mask{
		rects([4]int{10, 10, 29, 20}), rects([4]int{10, 21, 29, 30}), rects([4]int{10, 31, 29, 39}),
		rects([4]int{40, 10, 59, 20}), rects([4]int{40, 21, 59, 30}), rects([4]int{40, 31, 59, 39}),
	}
	for i, z := range reg.Zones {
		if z.Name != ZoneNames[i] || !mask.Equal(z.Mask, wantZones[i]) || z.Area != wantZones[i].Count() {
			t.Errorf("zone %d (%s) wrong", i, z.Name)
		}
	}
	if len(reg.LungRegions) != 20 {
		t.Fatalf("%d lung regions", len(reg.LungRegions))
	}
	checks := map[string]mask.Mask{
		"right costophrenic angle":                      gr.CPA,
		"right medial lung & right upper zone lung":     rects([4]int{19, 10, 29, 20}),
		"right lateral lung & right mid zone lung":      rects([4]int{10, 21, 18, 30}),
		"left medial lung & left lung base":             rects([4]int{40, 31, 48, 39}),
		"left lateral lung & left lung base":            rects([4]int{49, 31, 59, 39}),
		"left peripheral lung & left upper zone lung":   rects([4]int{54, 10, 59, 14}, [4]int{55, 15, 59, 20}),
		"right peripheral lung & right mid zone lung":   rects([4]int{10, 21, 13, 30}),
		"right peripheral lung & right lung base":       rects([4]int{10, 31, 13, 33}, [4]int{10, 34, 14, 39}),
		"left peripheral lung & left mid zone lung":     rects([4]int{55, 21, 59, 30}),
		"right peripheral lung & right upper zone lung": rects([4]int{10, 10, 14, 14}, [4]int{10, 15, 13, 20}),
	}
	for i, lr := range reg.LungRegions {
		if lr.Name != LungRegionNames[i] {
			t.Errorf("lung region %d named %q", i, lr.Name)
		}
		if want, ok := checks[lr.Name]; ok && (!mask.Equal(lr.Mask, want) || lr.Area != want.Count()) {
			t.Errorf("%s: %d px, want %d", lr.Name, lr.Mask.Count(), want.Count())
		}
	}
	if z, ok := reg.Lookup("left lung base"); !ok || z.Area != 180 {
		t.Errorf("Lookup(left lung base) = %v, %v", z.Area, ok)
	}
	wantDesc := "right lung: rows 10..39, zone rows upper ≤ 20 < mid ≤ 30 < base, columns 10..29, mid_x 19, band core 231 px from (14, 14) to (14, 34), band 131 px, CPA rows ≥ 31 (42 px)\n" +
		"left lung: rows 10..39, zone rows upper ≤ 20 < mid ≤ 30 < base, columns 40..59, mid_x 49, band core 231 px from (54, 14) to (44, 34), band 221 px, CPA rows ≥ 31 (111 px)\n" +
		"peripheral band erosion: 10×10 square (from the right lung's widths), offsets -4 … 5 on each axis (scikit-image: even sizes reach one pixel further down/right), image edges reflected\n"
	if d := reg.Describe(); d != wantDesc {
		t.Errorf("Describe:\n%s", d)
	}
	if _, ok := reg.Lookup("nowhere"); ok {
		t.Errorf("Lookup found an unknown name")
	}
}

func TestBuildRegionsHeartType(t *testing.T) {
	p := rectLungs()
	p.LungRight = rect(70, 50, 10, 10, 13, 39) // too thin for a band: irrelevant for the heart
	reg, err := BuildRegions(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.Zones) != 6 || reg.LungRegions != nil || reg.Erosion != 0 {
		t.Errorf("heart-type regions: %d zones, %d lung regions, e = %d", len(reg.Zones), len(reg.LungRegions), reg.Erosion)
	}
	if _, err := BuildRegions(p, false); err == nil {
		t.Errorf("thin right lung accepted for a lung-type lesion")
	}
}

func TestBuildRegionsFailures(t *testing.T) {
	tests := []struct {
		name        string
		right, left mask.Mask
		reason      string
	}{
		// w1 = w2 = 5 → e = 2 < 3.
		{"thin right lung", rect(70, 50, 10, 10, 14, 39), rect(70, 50, 40, 10, 59, 39), ReasonLungDegenerate},
		// e = 3 is allowed.
		{"e = 3", rect(70, 50, 10, 10, 15, 39), rect(70, 50, 40, 10, 59, 39), ""},
		// e = 10 from the right lung erases a 6 px wide left lung.
		{"thin left lung", rect(70, 50, 10, 10, 29, 39), rect(70, 50, 40, 10, 45, 39), ReasonLungCoreEmpty},
		{"empty left lung", rect(70, 50, 10, 10, 29, 39), mask.New(70, 50), ReasonLungEmpty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BuildRegions(&Prepared{LungRight: tc.right, LungLeft: tc.left}, false)
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantReason(t, err, tc.reason)
		})
	}
}

func TestCoreLargestTie(t *testing.T) {
	// The left lung is two equal 20×12 blocks joined by a 2 px wide strip
	// that the 10×10 erosion removes: two equal cores, the upper one (first
	// pixel in row-major order) is kept.
	p := rectLungs()
	p.LungLeft = rects([4]int{40, 2, 59, 13}, [4]int{40, 30, 59, 41}, [4]int{49, 14, 50, 29})
	reg, err := BuildRegions(p, false)
	if err != nil {
		t.Fatal(err)
	}
	// Erosion of a 20×12 block by x −4..5, y −4..5: x 44..54, rows y0+4..y1−5.
	if !mask.Equal(reg.Left.Core, rects([4]int{44, 6, 54, 8})) {
		t.Errorf("left core is not the upper block's core (%d px)", reg.Left.Core.Count())
	}
	// Rows below the core's bottom keep x ≥ bottom.x: the whole lower block
	// and strip from x 44 on, the upper block's lateral band above.
	if !reg.Left.Peripheral.At(44, 40) || reg.Left.Peripheral.At(43, 40) || !reg.Left.Peripheral.At(49, 20) {
		t.Errorf("left band rows below the core not cut at bottom.x")
	}
}

// naiveErodeReflect is the e×e erosion of §6 step 2 written from the spec's
// words, pixel by pixel: offsets −((e−1) div 2) … e div 2, outside pixels
// mirrored (BORDER_REFLECT).
func naiveErodeReflect(m mask.Mask, e int) mask.Mask {
	refl := func(i, n int) int {
		for i < 0 || i >= n {
			if i < 0 {
				i = -i - 1
			} else {
				i = 2*n - 1 - i
			}
		}
		return i
	}
	out := mask.New(m.W, m.H)
	lo, hi := -((e - 1) / 2), e/2 // scikit-image's placement (§6 step 2)
	for y := 0; y < m.H; y++ {
		for x := 0; x < m.W; x++ {
			on := uint8(1)
			for dy := lo; dy <= hi && on == 1; dy++ {
				for dx := lo; dx <= hi; dx++ {
					if m.Pix[refl(y+dy, m.H)*m.W+refl(x+dx, m.W)] == 0 {
						on = 0
						break
					}
				}
			}
			out.Pix[y*m.W+x] = on
		}
	}
	return out
}

// TestErodeReflectMatchesSpec checks the mask package's reflect erosion, on
// which the band depends, against the definition, border cases included.
func TestErodeReflectMatchesSpec(t *testing.T) {
	rnd := rand.New(rand.NewPCG(11, 5))
	for trial := 0; trial < 80; trial++ {
		w, h := 5+rnd.IntN(30), 5+rnd.IntN(30)
		m := mask.New(w, h)
		for k := 0; k < 1+rnd.IntN(3); k++ {
			paint(m, rnd.IntN(w)-3, rnd.IntN(h)-3, rnd.IntN(w+3), rnd.IntN(h+3))
		}
		for k := 0; k < rnd.IntN(6); k++ {
			m.Pix[rnd.IntN(len(m.Pix))] ^= 1
		}
		e := 1 + rnd.IntN(12)
		got := mask.ErodeReflect(m, mask.SkimageSquare(e))
		if want := naiveErodeReflect(m, e); !mask.Equal(got, want) {
			t.Fatalf("trial %d (%dx%d, e = %d): ErodeReflect differs from BORDER_REFLECT in %d px",
				trial, w, h, e, mask.CountXor(got, want))
		}
	}
}

// TestPeripheralBandEvenOdd pins the placement of the band's e×e square
// (§6 step 2, scikit-image): offsets −((e−1) div 2) … e div 2, so for even
// e the square reaches one pixel further down/right than up/left (e = 4 →
// −1 … 2; OpenCV's −2 … 1 would move the core one pixel down/right and
// widen the upper and lower band rows). Each picture is the input frame and
// the expected bands at once: R/r = right lung, L/l = left lung, lower case
// = in that side's peripheral band.
func TestPeripheralBandEvenOdd(t *testing.T) {
	tests := []struct {
		name              string
		e                 int
		rightCore         [4]int // x0, y0, x1, y1
		rightCPA, leftCPA int
		picture           []string
	}{
		{
			// Right lung 8 px wide: e = (8+8) div 4 = 4, offsets −1 … 2.
			// Cores: right x 3..7, left x 14..19, rows 3..11. CPA rows ≥ 2+⌊0.75·11⌋ = 10.
			name: "e = 4", e: 4, rightCore: [4]int{3, 3, 7, 11}, rightCPA: 7, leftCPA: 26,
			picture: []string{
				"........................",
				"........................",
				"..rrRRRRRR...LLLLLLlll..",
				"..rrRRRRRR...LLLLLLlll..",
				"..rRRRRRRR...LLLLLLLll..",
				"..rRRRRRRR...LLLLLLLll..",
				"..rRRRRRRR...LLLLLLLll..",
				"..rRRRRRRR...LLLLLLLll..",
				"..rRRRRRRR...LLLLLLLll..",
				"..rRRRRRRR...LLLLLLLll..",
				"..rRRRRRRR...LLLLLLLll..",
				"..rrRRRRRR...Lllllllll..",
				"..rrRRRRRR...Lllllllll..",
				"..rrRRRRRR...Lllllllll..",
				"........................",
				"........................",
			},
		},
		{
			// Right lung 10 px wide: e = 5, offsets −2 … 2 (as OpenCV).
			// Cores: right x 4..9, left x 17..23, rows 4..13. CPA rows ≥ 2+⌊0.75·13⌋ = 11.
			name: "e = 5", e: 5, rightCore: [4]int{4, 4, 9, 13}, rightCPA: 13, leftCPA: 31,
			picture: []string{
				"............................",
				"............................",
				"..rrrRRRRRRR...LLLLLLLLlll..",
				"..rrrRRRRRRR...LLLLLLLLlll..",
				"..rrrRRRRRRR...LLLLLLLLlll..",
				"..rrRRRRRRRR...LLLLLLLLLll..",
				"..rrRRRRRRRR...LLLLLLLLLll..",
				"..rrRRRRRRRR...LLLLLLLLLll..",
				"..rrRRRRRRRR...LLLLLLLLLll..",
				"..rrRRRRRRRR...LLLLLLLLLll..",
				"..rrRRRRRRRR...LLLLLLLLLll..",
				"..rrRRRRRRRR...LLLLLLLLLll..",
				"..rrRRRRRRRR...LLLLLLLLLll..",
				"..rrrRRRRRRR...LLlllllllll..",
				"..rrrRRRRRRR...LLlllllllll..",
				"..rrrRRRRRRR...LLlllllllll..",
				"............................",
				"............................",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, h := len(tc.picture[0]), len(tc.picture)
			right, left := mask.New(w, h), mask.New(w, h)
			rightBand, leftBand := mask.New(w, h), mask.New(w, h)
			for y, row := range tc.picture {
				for x, c := range row {
					switch c {
					case 'r':
						rightBand.Set(x, y, true)
						right.Set(x, y, true)
					case 'R':
						right.Set(x, y, true)
					case 'l':
						leftBand.Set(x, y, true)
						left.Set(x, y, true)
					case 'L':
						left.Set(x, y, true)
					}
				}
			}
			reg, err := BuildRegions(&Prepared{LungRight: right, LungLeft: left, RawRight: right, RawLeft: left}, false)
			if err != nil {
				t.Fatal(err)
			}
			if reg.Erosion != tc.e {
				t.Fatalf("erosion size %d, want %d", reg.Erosion, tc.e)
			}
			c := tc.rightCore
			if want := rect(w, h, c[0], c[1], c[2], c[3]); !mask.Equal(reg.Right.Core, want) {
				t.Errorf("right core differs from x %d..%d, rows %d..%d in %d px", c[0], c[2], c[1], c[3], mask.CountXor(reg.Right.Core, want))
			}
			if !mask.Equal(reg.Right.Peripheral, rightBand) {
				t.Errorf("right band differs from the picture in %d px:\n%s", mask.CountXor(reg.Right.Peripheral, rightBand), picture(reg.Right.Peripheral))
			}
			if !mask.Equal(reg.Left.Peripheral, leftBand) {
				t.Errorf("left band differs from the picture in %d px:\n%s", mask.CountXor(reg.Left.Peripheral, leftBand), picture(reg.Left.Peripheral))
			}
			if reg.Right.CPA.Count() != tc.rightCPA || reg.Left.CPA.Count() != tc.leftCPA {
				t.Errorf("CPAs %d and %d px, want %d and %d", reg.Right.CPA.Count(), reg.Left.CPA.Count(), tc.rightCPA, tc.leftCPA)
			}
		})
	}
}

// picture draws m as rows of '#' (on) and '.' (off).
func picture(m mask.Mask) string {
	var b []byte
	for y := 0; y < m.H; y++ {
		for x := 0; x < m.W; x++ {
			if m.At(x, y) {
				b = append(b, '#')
			} else {
				b = append(b, '.')
			}
		}
		b = append(b, '\n')
	}
	return string(b)
}
