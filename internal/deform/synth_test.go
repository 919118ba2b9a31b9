package deform

import (
	"fmt"
	"image"
	"math"
	"testing"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/mask"
)

// synthEllipse paints the ellipse ((x−cx)/rx)² + ((y−cy)/ry)² ≤ 1 into m.
func synthEllipse(m mask.Mask, cx, cy, rx, ry float64) {
	for y := 0; y < m.H; y++ {
		for x := 0; x < m.W; x++ {
			dx, dy := (float64(x)-cx)/rx, (float64(y)-cy)/ry
			if dx*dx+dy*dy <= 1 {
				m.Pix[y*m.W+x] = 1
			}
		}
	}
}

// synthCase is a 1024² chest-like case: two elliptical lungs, dark lung
// fields with bright rib bands (edges for the cost field), a bright body,
// and either an elliptical lesion in the right lung (lung-type) or a heart
// between the lungs (heart-type).
type synthCase struct {
	gray        *image.Gray
	right, left mask.Mask
	lesion      mask.Mask
	heart       bool
}

func makeSynth(heart bool) synthCase {
	const S = 1024
	right, left := mask.New(S, S), mask.New(S, S)
	synthEllipse(right, 330, 500, 150, 300)
	synthEllipse(left, 694, 500, 140, 290)
	lesion := mask.New(S, S)
	if heart {
		synthEllipse(lesion, 520, 680, 150, 110)
	} else {
		synthEllipse(lesion, 300, 560, 80, 150)
	}
	g := image.NewGray(image.Rect(0, 0, S, S))
	for y := 0; y < S; y++ {
		for x := 0; x < S; x++ {
			i := y*S + x
			v := 200.0
			if right.Pix[i] != 0 || left.Pix[i] != 0 {
				v = 60 + 20*math.Sin(float64(x)/37)
				// ribs: bright bands every 70 rows, slanted
				if int(float64(y)+0.25*float64(x))%70 < 14 {
					v += 70
				}
			}
			if lesion.Pix[i] != 0 {
				v += 40
			}
			g.Pix[i] = uint8(min(255, max(0, v)))
		}
	}
	return synthCase{gray: g, right: right, left: left, lesion: lesion, heart: heart}
}

func (s synthCase) input(t testing.TB, cfg buildcfg.Config) *Input {
	t.Helper()
	prep, err := anatomy.Prepare(s.lesion, s.right, s.left, s.heart, cfg)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	regs, err := anatomy.BuildRegions(prep, s.heart)
	if err != nil {
		t.Fatalf("regions: %v", err)
	}
	ov := anatomy.Overlaps(prep, regs, s.heart, cfg)
	return &Input{Gray: s.gray, Prep: prep, Regions: regs, Overlaps: ov, HeartType: s.heart, Cfg: cfg}
}

var synthCache = map[bool]*Input{}

func synthInput(t testing.TB, heart bool) *Input {
	if in, ok := synthCache[heart]; ok {
		return in
	}
	in := makeSynth(heart).input(t, buildcfg.Default())
	synthCache[heart] = in
	return in
}

func describe(res *Result) string {
	s := fmt.Sprintf("possible=%v\n", res.Possible)
	if res.Final == nil {
		return s
	}
	for _, st := range res.Final.Steps() {
		s += fmt.Sprintf("%s %s center=%v fakes=%d fpe=%v fpc=%v\n", st.Name, st.Anatomy, st.Center, len(st.Fakes), st.FakePointsExpansion, st.FakePointsContraction)
	}
	return s
}

type imageGray = image.Gray

func newGray(w, h int) *image.Gray { return image.NewGray(image.Rect(0, 0, w, h)) }

func pt(x, y int) mask.Point { return mask.Point{X: x, Y: y} }

func ptr(x, y int) *mask.Point { p := pt(x, y); return &p }
