package anatomy

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/frame/frametest"
	"github.com/chexpercept/chexpercept/internal/mask"
)

// fullClean is the §5 step 2 clean-up on the whole frame, the definition
// the cropped implementation must reproduce exactly.
func fullClean(c mask.Mask, r, minPx int) mask.Mask {
	d := mask.Disc(r)
	m := mask.FillHoles(c)
	m = mask.Open(mask.Close(m, d), d)
	return mask.DropSmall(mask.FillHoles(m), minPx)
}

func TestCleanComponentMatchesFullFrame(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 9))
	for trial := 0; trial < 60; trial++ {
		w, h := 40+rnd.IntN(50), 40+rnd.IntN(50)
		m := mask.New(w, h)
		// A few blobs and specks, often against the image border, with holes.
		for k := 0; k < 1+rnd.IntN(4); k++ {
			frametest.PaintEllipse(m, float64(rnd.IntN(w)), float64(rnd.IntN(h)), 3+rnd.Float64()*12, 3+rnd.Float64()*12)
		}
		for k := 0; k < 30; k++ {
			m.Pix[rnd.IntN(len(m.Pix))] ^= 1
		}
		r := rnd.IntN(5)
		minPx := 1 + rnd.IntN(60)
		for i, comp := range mask.Components(m, 4, 1) {
			got := cleanComponent(comp, mask.Disc(r), r, minPx)
			want := fullClean(comp, r, minPx)
			if !mask.Equal(got, want) {
				t.Fatalf("trial %d component %d (r=%d, min=%d): cropped clean-up differs from full frame in %d px",
					trial, i, r, minPx, mask.CountXor(got, want))
			}
		}
	}
}

// twoLungs is a 100×60 frame with the right lung at x 0..19 and the left
// lung at x 80..99.
func twoLungs() (right, left mask.Mask) {
	return rect(100, 60, 0, 0, 19, 59), rect(100, 60, 80, 0, 99, 59)
}

func TestPrepareComponents(t *testing.T) {
	right, left := twoLungs()
	cand := mask.New(100, 60)
	paint(cand, 15, 5, 29, 19)  // A: 15×15 = 225 px, overlaps the right lung
	cand.Set(22, 12, false)     // a hole in A: filled
	paint(cand, 60, 30, 84, 44) // B: 25×15 = 375 px, overlaps the left lung
	paint(cand, 40, 50, 45, 55) // C: 36 px, below min size
	cfg := smallCfg(100, 1, 2)
	p, err := Prepare(cand, right, left, false, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Components) != 2 {
		t.Fatalf("%d components, want 2", len(p.Components))
	}
	// Opening with the 3×3 cross removes the 4 corners of each rectangle.
	wantB := rect(100, 60, 60, 30, 84, 44)
	for _, c := range [][2]int{{60, 30}, {84, 30}, {60, 44}, {84, 44}} {
		wantB.Set(c[0], c[1], false)
	}
	if !mask.Equal(p.Components[0], wantB) {
		t.Errorf("component 0 is not the larger rectangle minus its corners (%d px)", p.Components[0].Count())
	}
	if n := p.Components[1].Count(); n != 225-4 {
		t.Errorf("component 1 has %d px, want 221 (hole filled, corners opened)", n)
	}
	if !p.Components[1].At(22, 12) {
		t.Errorf("hole of component 1 not filled")
	}
	if p.Combined.Count() != 221+371 || p.Combined.At(42, 52) {
		t.Errorf("combined mask wrong: %d px", p.Combined.Count())
	}
	// Augmented lungs: each gets the component touching it, raw lungs stay.
	if !mask.Equal(p.LungRight, mask.Or(right, p.Components[1])) {
		t.Errorf("augmented right lung is not right ∪ component 1")
	}
	if !mask.Equal(p.LungLeft, mask.Or(left, p.Components[0])) {
		t.Errorf("augmented left lung is not left ∪ component 0")
	}
	if !mask.Equal(p.RawRight, right) || !mask.Equal(p.RawLeft, left) {
		t.Errorf("raw lungs changed")
	}
	if cand.Count() != 225-1+375+36 {
		t.Errorf("candidate modified")
	}
}

func TestPrepareTieOrder(t *testing.T) {
	right, left := twoLungs()
	cand := mask.New(100, 60)
	paint(cand, 70, 41, 84, 55) // same size, first pixel later in row-major order
	paint(cand, 15, 40, 29, 54)
	paint(cand, 40, 5, 54, 19) // first in row-major order but touches no lung
	cand2 := cand.Clone()
	paint(cand2, 40, 5, 54, 19)
	for y := 5; y <= 19; y++ { // connect it to the right lung with a wide bridge
		for x := 19; x < 40; x++ {
			cand2.Set(x, y, true)
		}
	}
	p, err := Prepare(cand2, right, left, false, smallCfg(100, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Components) != 3 || !p.Components[0].At(45, 10) || !p.Components[1].At(20, 45) || !p.Components[2].At(75, 45) {
		t.Errorf("component order wrong: want bridge blob, then the two equal squares by first pixel")
	}
	_, err = Prepare(cand, right, left, false, smallCfg(100, 1, 0))
	wantReason(t, err, ReasonOutsideLungs)
}

func TestPrepareFailures(t *testing.T) {
	right, left := twoLungs()
	empty := mask.New(100, 60)
	lesion := rect(100, 60, 10, 10, 30, 30)
	line := rect(100, 60, 5, 30, 94, 30) // 90 px wide, 1 px high: opened away
	tests := []struct {
		name         string
		cand, rl, ll mask.Mask
		reason       string
	}{
		{"no component", empty, right, left, ReasonNoComponent},
		{"all below min size", rect(100, 60, 10, 10, 15, 15), right, left, ReasonNoComponent},
		{"discarded by clean-up", line, right, left, ReasonNoComponent},
		{"right lung empty", lesion, empty, left, ReasonLungEmpty},
		{"left lung empty", lesion, right, empty, ReasonLungEmpty},
		{"both lungs empty", lesion, empty, empty, ReasonLungEmpty},
		{"sides swapped", lesion, left, right, ReasonSidesSwapped},
		{"same centroid", lesion, right, right, ReasonSidesSwapped},
		{"outside lungs", rect(100, 60, 40, 10, 60, 30), right, left, ReasonOutsideLungs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Prepare(tc.cand, tc.rl, tc.ll, false, smallCfg(50, 1, 2))
			wantReason(t, err, tc.reason)
		})
	}
	// Reason order follows the steps: the component check comes first.
	_, err := Prepare(empty, empty, empty, false, smallCfg(50, 1, 2))
	wantReason(t, err, ReasonNoComponent)
	// For the heart the detail says so.
	_, err = Prepare(rect(100, 60, 40, 10, 60, 30), right, left, true, smallCfg(50, 1, 2))
	wantReason(t, err, ReasonOutsideLungs)
	if !strings.Contains(err.Error(), "heart optimal_component_0") {
		t.Errorf("heart detail: %v", err)
	}
	// Size mismatch is a plain error, not a panic.
	if _, err := Prepare(mask.New(10, 10), right, left, false, smallCfg(50, 1, 2)); err == nil {
		t.Errorf("size mismatch accepted")
	}
}

func TestPrepareTouchTolerance(t *testing.T) {
	right, left := twoLungs()
	tests := []struct {
		gap, touch int // lesion starts at x = 19+gap (gap 0 = one column of overlap)
		ok         bool
	}{
		{0, 0, true},
		{1, 0, false}, // adjacent but not overlapping: the reference's exact rule
		{1, 1, true},
		{2, 2, true},
		{3, 2, false},
		{5, 5, true},
	}
	for _, tc := range tests {
		cand := rect(100, 60, 19+tc.gap, 20, 19+tc.gap+14, 34)
		p, err := Prepare(cand, right, left, false, smallCfg(100, 1, tc.touch))
		if !tc.ok {
			wantReason(t, err, ReasonOutsideLungs)
			continue
		}
		if err != nil {
			t.Errorf("gap %d touch %d: %v", tc.gap, tc.touch, err)
			continue
		}
		if !mask.Equal(p.LungRight, mask.Or(right, p.Components[0])) || !mask.Equal(p.LungLeft, left) {
			t.Errorf("gap %d touch %d: lesion not added to the right lung only", tc.gap, tc.touch)
		}
	}
}

func TestPrepareAugmentPerPiece(t *testing.T) {
	right, left := twoLungs()
	// A dumbbell: two squares joined by a 1 px neck, which the opening cuts.
	// One optimal component, two pieces; only the piece touching the right
	// lung joins it. A lesion bridging both lungs joins both.
	cand := mask.New(100, 60)
	paint(cand, 15, 2, 29, 16)
	paint(cand, 30, 9, 44, 9)
	paint(cand, 45, 2, 59, 16)
	bridge := rect(100, 60, 10, 30, 89, 45)
	cand.OrWith(bridge)
	p, err := Prepare(cand, right, left, false, smallCfg(100, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Components) != 2 {
		t.Fatalf("%d components, want 2", len(p.Components))
	}
	if p.Components[1].At(37, 9) || !p.Components[1].At(50, 9) || !p.Components[1].At(20, 9) {
		t.Fatalf("dumbbell not cut into two pieces of one component")
	}
	if p.LungRight.At(50, 9) || !p.LungRight.At(20, 9) || p.LungLeft.At(50, 9) {
		t.Errorf("the free dumbbell piece was added to a lung")
	}
	if !p.LungRight.At(50, 40) || !p.LungLeft.At(50, 40) {
		t.Errorf("the bridging lesion was not added to both lungs")
	}
	if len(p.TouchRight) != 3 {
		t.Errorf("%d pieces recorded, want 3", len(p.TouchRight))
	}
}
