package phantom

import (
	"errors"
	"math"

	"github.com/chexpercept/chexpercept/internal/rng"
)

// dome is one hemidiaphragm: a parabola whose apex is (peakX, peakY). It
// falls by depth at halfSpan on the lateral side (the costophrenic angle)
// and more gently medially, where the heart rests on it.
type dome struct {
	peakX, peakY, depth, halfSpan float64
	lat                           float64 // −1: lateral is small x (right side); +1: large x
}

func (d dome) y(x float64) float64 {
	u := (x - d.peakX) / d.halfSpan
	if (x-d.peakX)*d.lat < 0 {
		u *= 0.55
	}
	return d.peakY + d.depth*u*u
}

// anatomy holds one patient's geometry in pixels. The patient's right
// side is on the image left (small x).
type anatomy struct {
	cx    float64 // body midline
	W     float64 // midline to the lateral lung margin at the base
	apexY float64 // top of the lung apices
	H     float64 // apex to costophrenic angle (right side)
	mwU   float64 // half width of the upper mediastinum
	domeR dome
	domeL dome

	// Heart: a tilted ellipse, clipped by the diaphragm.
	hx, hy, ha, hb, tilt float64
	cosT, sinT           float64

	knobX, knobY, knobR float64 // aortic knob (left of the mediastinum)
	shoulderY           float64
	bodyW               float64 // chest wall half width at lung level
	neckW               float64
	shoulderW           float64
}

// sampleAnatomy draws a normal adult chest; ctr is the target
// cardiothoracic ratio.
func sampleAnatomy(r *rng.RNG) anatomy {
	var a anatomy
	a.cx = 512 + r.Uniform(-22, 22)
	a.W = r.Uniform(318, 392)
	a.apexY = r.Uniform(105, 165)
	a.H = math.Min(r.Uniform(575, 675), 905-a.apexY)
	a.mwU = a.W * r.Uniform(0.11, 0.15)
	depthR := r.Uniform(45, 80)
	cpaR := a.apexY + a.H
	a.domeR = dome{peakX: a.cx - a.W*r.Uniform(0.45, 0.55), peakY: cpaR - depthR, depth: depthR, halfSpan: a.W * 0.52, lat: -1}
	depthL := r.Uniform(45, 80)
	cpaL := cpaR + r.Uniform(8, 30) // the left hemidiaphragm sits lower
	a.domeL = dome{peakX: a.cx + a.W*r.Uniform(0.45, 0.55), peakY: cpaL - depthL, depth: depthL, halfSpan: a.W * 0.52, lat: 1}
	a.hx = a.cx + a.W*r.Uniform(0.08, 0.14)
	a.tilt = r.Uniform(0.35, 0.6)
	a.hb = r.Uniform(0.68, 0.8) // aspect for now; setHeart scales it
	a.knobR = a.W * r.Uniform(0.05, 0.065)
	a.knobX = a.cx + a.mwU + a.knobR*0.35
	a.knobY = a.apexY + a.H*r.Uniform(0.22, 0.27)
	a.shoulderY = a.apexY - r.Uniform(10, 45)
	a.bodyW = a.W + r.Uniform(45, 75)
	a.neckW = a.W * r.Uniform(0.28, 0.36)
	a.shoulderW = a.W + r.Uniform(120, 170)
	return a
}

// setHeart sizes the heart so that its horizontal extent is about ctr of
// the thoracic width (2W), keeping the aspect ratio stored in hb on the
// first call.
func (a *anatomy) setHeart(ctr, aspect float64) {
	hw := ctr * a.W // half of ctr·2W
	c, s := math.Cos(a.tilt), math.Sin(a.tilt)
	a.cosT, a.sinT = c, s
	a.ha = hw / math.Sqrt(c*c+aspect*aspect*s*s)
	a.hb = a.ha * aspect
	vh := math.Sqrt(a.ha*a.ha*s*s + a.hb*a.hb*c*c)
	a.hy = a.diaphragm(a.hx) - 0.72*vh
}

// diaphragm is the height of the hemidiaphragm under column x.
func (a *anatomy) diaphragm(x float64) float64 {
	if x < a.cx {
		return a.domeR.y(x)
	}
	return a.domeL.y(x)
}

func (a *anatomy) inHeart(x, y float64) bool {
	if y > a.diaphragm(x) {
		return false
	}
	dx, dy := x-a.hx, y-a.hy
	u := (dx*a.cosT + dy*a.sinT) / a.ha
	v := (-dx*a.sinT + dy*a.cosT) / a.hb
	return u*u+v*v <= 1
}

// lungRow returns the raw extent [xl, xm] of a lung on row y (right lung:
// side = -1; left: +1), before the heart and diaphragm are cut out; ok is
// false above the apex.
func (a *anatomy) lungRow(y float64, side float64) (lo, hi float64, ok bool) {
	if y < a.apexY {
		return 0, 0, false
	}
	t := (y - a.apexY) / a.H
	lat := a.W * (0.80 + 0.20*smoothstep(0, 0.75, t))
	// Medially the mediastinum narrows where the heart takes over, so the
	// heart overlaps both raw lungs and, once cut out, touches them.
	med := a.mwU * (1 - 0.85*smoothstep(0.35, 0.6, t))
	apexC := a.W * 0.47
	rt := 1.0
	const ta = 0.17
	if t < ta {
		u := 1 - t/ta
		rt = math.Sqrt(1 - u*u)
	}
	// Distances from the midline, then rounded towards the apex centre.
	dl := apexC + (lat-apexC)*rt
	dm := apexC - (apexC-med)*rt
	if side < 0 {
		return a.cx - dl, a.cx - dm, true
	}
	return a.cx + dm, a.cx + dl, true
}

// masks rasterises right lung, left lung and heart (0/1) into the given
// buffers and checks that the heart touches both lungs within 2 px.
func (a *anatomy) masks(right, left, heart []uint8, labels []int32, stack []int32) error {
	clear(right)
	clear(left)
	clear(heart)
	for y := 0; y < size; y++ {
		fy := float64(y)
		if fy >= a.hy-a.ha-1 && fy <= a.hy+a.ha+1 {
			for x := max(0, int(a.hx-a.ha-1)); x <= min(size-1, int(a.hx+a.ha+1)); x++ {
				if a.inHeart(float64(x), fy) {
					heart[y*size+x] = 1
				}
			}
		}
		for _, side := range []float64{-1, 1} {
			lo, hi, ok := a.lungRow(fy, side)
			if !ok {
				continue
			}
			m := right
			d := a.domeR
			if side > 0 {
				m, d = left, a.domeL
			}
			for x := max(0, int(math.Ceil(lo))); x <= min(size-1, int(math.Floor(hi))); x++ {
				fx := float64(x)
				if fy > d.y(fx) || heart[y*size+x] != 0 {
					continue
				}
				if side > 0 {
					kx, ky := fx-a.knobX, fy-a.knobY
					if kx*kx+ky*ky <= a.knobR*a.knobR {
						continue
					}
				}
				m[y*size+x] = 1
			}
		}
	}
	if keepComponents(heart, 1, true, labels, stack) == 0 {
		return errors.New("empty heart")
	}
	if keepComponents(right, 20000, true, labels, stack) == 0 || keepComponents(left, 20000, true, labels, stack) == 0 {
		return errors.New("lung too small")
	}
	if !touches(heart, right, 2) || !touches(heart, left, 2) {
		return errors.New("heart does not touch both lungs")
	}
	return nil
}

// ctrOf measures the cardiothoracic ratio on the masks: heart width over
// the distance from the right lung's lateral edge to the left lung's.
func ctrOf(right, left, heart []uint8) float64 {
	hx0, _, hx1, _, ok := bbox(heart)
	rx0, _, _, _, ok1 := bbox(right)
	_, _, lx1, _, ok2 := bbox(left)
	if !ok || !ok1 || !ok2 || lx1 <= rx0 {
		return 0
	}
	return float64(hx1-hx0+1) / float64(lx1-rx0+1)
}
