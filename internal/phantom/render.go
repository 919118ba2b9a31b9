package phantom

import (
	"fmt"
	"math"

	"github.com/chexpercept/chexpercept/internal/rng"
)

// scratch holds one worker's reusable buffers so that a case allocates
// only its outputs.
type scratch struct {
	d, tmp, tmp2, aux, field []float32
	lungSoft                 []float32
	air                      []float32 // attenuation removed by lung air, per pixel
	labels                   []int32
	stack                    []int32
}

func newScratch() *scratch {
	return &scratch{
		d: make([]float32, npx), tmp: make([]float32, npx), tmp2: make([]float32, npx),
		aux: make([]float32, npx), field: make([]float32, npx), lungSoft: make([]float32, npx),
		air:    make([]float32, npx),
		labels: make([]int32, npx), stack: make([]int32, 0, 1<<16),
	}
}

// caseSpec names one case to generate.
type caseSpec struct {
	imageID  string // e.g. ph0007
	caseID   string // e.g. ph0007_positive_0
	lesion   string
	shape    string // the lesion's phantom shape family
	positive bool
}

// heartFinding reports whether the case's lesion is a finding of the
// heart (drawn as an enlarged cardiac silhouette, not in the lungs).
func (cs caseSpec) heartFinding() bool { return cs.shape == ShapeEnlargedHeart }

// caseData is a generated case: the radiograph and its 0/1 masks.
type caseData struct {
	img                []uint8
	right, left, heart []uint8
	lesion             []uint8 // nil for negatives
	report             string
	ctr                float64
}

// CTR bands. Positives of cardiomegaly must exceed 0.55 and its negatives
// stay below 0.5 (the phantom's promise to its users); the bands leave a margin.
const (
	ctrBigLo, ctrBigHi      = 0.58, 0.70
	ctrNormLo, ctrNormHi    = 0.39, 0.47
	ctrMildLo, ctrMildHi    = 0.57, 0.63 // incidental enlargement on lung-lesion negatives
	incidentalCardiomegalyP = 0.2
	incidentalLungFindingP  = 0.3
	maxAnatomyTries         = 6
	maxLesionTries          = 10
	heartFitTries           = 6
	caseLabelFormat         = "chexpercept/phantom/%d/%s"
)

// makeCase draws and renders one case from its own RNG.
func makeCase(seed uint64, cs caseSpec, s *scratch) (*caseData, error) {
	r := rng.New(fmt.Sprintf(caseLabelFormat, seed, cs.caseID))
	for try := 0; try < maxAnatomyTries; try++ {
		cd, err := tryCase(r, cs, s)
		if err == nil {
			return cd, nil
		}
		if err != errRetry {
			return nil, fmt.Errorf("case %s: %w", cs.caseID, err)
		}
	}
	return nil, fmt.Errorf("case %s: no acceptable phantom after %d attempts", cs.caseID, maxAnatomyTries)
}

func tryCase(r *rng.RNG, cs caseSpec, s *scratch) (*caseData, error) {
	a := sampleAnatomy(r)
	aspect := a.hb

	// Plan the findings before rasterising: some change the anatomy.
	f := planFindings(r, cs, &a)
	cc := &caseCtx{r: r, a: &a, field: s.field, tmp: s.tmp, tmp2: s.tmp2, labels: s.labels, stack: s.stack}
	if f.lungShape == shapeVolumeLoss {
		cc.volumeLoss()
	}

	right, left, heart := make([]uint8, npx), make([]uint8, npx), make([]uint8, npx)
	ctr, err := fitHeart(r, &a, aspect, f.ctrLo, f.ctrHi, s, right, left, heart)
	if err != nil {
		return nil, err
	}
	cc.right, cc.left, cc.heart = newLung(right, -1), newLung(left, 1), heart
	if cc.right.x1 >= cc.left.x0 {
		return nil, errRetry
	}
	cc.lungs = make([]uint8, npx)
	for i := range cc.lungs {
		cc.lungs[i] = right[i] | left[i]
	}

	var les *lesionOut
	if f.lungShape != "" {
		if les, err = cc.drawLesion(f.lungShape, f.lungName); err != nil {
			return nil, err
		}
	} else {
		clear(s.field)
	}

	cd := &caseData{right: right, left: left, heart: heart, ctr: ctr}
	cd.describe(cs, les, f.incidental)
	cd.img = make([]uint8, npx)
	render(r, &a, cc, les, s, cd.img)
	return cd, nil
}

// findings is the plan of one case's findings.
type findings struct {
	lungShape    string  // shape family of the lung finding to draw (target or incidental), or ""
	lungName     string  // its lesion name, for the report
	ctrLo, ctrHi float64 // band of the cardiothoracic ratio
	incidental   string  // incidental heart finding named in a negative's report, or ""
}

// planFindings draws the findings of case cs; a big heart also moves a's
// heart centre.
func planFindings(r *rng.RNG, cs caseSpec, a *anatomy) findings {
	f := findings{ctrLo: ctrNormLo, ctrHi: ctrNormHi}
	switch {
	case cs.heartFinding() && cs.positive:
		f.ctrLo, f.ctrHi = ctrBigLo, ctrBigHi
		a.hx += a.W * r.Uniform(0.02, 0.05) // big hearts extend to the left
	case cs.heartFinding():
		if r.Float64() < incidentalLungFindingP {
			f.lungShape = rng.Choice(r, []string{shapePleuralFluid, shapePatchy, shapeVolumeLoss, shapeLobar})
			f.lungName = shapeWord(f.lungShape)
		}
	case cs.positive:
		f.lungShape, f.lungName = cs.shape, cs.lesion
	default:
		if r.Float64() < incidentalCardiomegalyP {
			f.ctrLo, f.ctrHi = ctrMildLo, ctrMildHi
			f.incidental = "enlarged cardiac silhouette"
		}
	}
	return f
}

// volumeLoss draws the side of a volume-loss lesion and applies its volume loss
// to the anatomy: the hemidiaphragm rises and the mediastinum shifts
// towards the collapsed side.
func (c *caseCtx) volumeLoss() {
	r, a := c.r, c.a
	c.atelectSide = -1
	if r.Coin() {
		c.atelectSide = 1
	}
	c.atelectWedge = r.Float64() < 0.4
	lift := r.Uniform(18, 34)
	if c.atelectSide < 0 {
		a.domeR.peakY -= lift
	} else {
		a.domeL.peakY -= lift
	}
	a.hx += c.atelectSide * r.Uniform(6, 14)
}

// fitHeart sizes the heart (keeping its aspect) until the cardiothoracic
// ratio of the masks it rasterises into right, left and heart falls in
// [lo, hi], and returns that ratio; errRetry means the anatomy does not fit.
func fitHeart(r *rng.RNG, a *anatomy, aspect, lo, hi float64, s *scratch, right, left, heart []uint8) (float64, error) {
	target := r.Uniform(lo, hi)
	want := target
	for i := 0; i < heartFitTries; i++ {
		a.setHeart(want, aspect)
		if err := a.masks(right, left, heart, s.labels, s.stack); err != nil {
			return 0, errRetry
		}
		ctr := ctrOf(right, left, heart)
		if ctr >= lo && ctr <= hi {
			return ctr, nil
		}
		want *= target / ctr
	}
	return 0, errRetry
}

// drawLesion draws a lesion of the given kind, redrawing rejected ones;
// errRetry means none was accepted.
func (c *caseCtx) drawLesion(shape, name string) (*lesionOut, error) {
	for i := 0; i < maxLesionTries; i++ {
		l, err := c.makeLesion(shape, name)
		if err == errRetry {
			continue
		}
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	return nil, errRetry
}

// describe sets the case's lesion mask and report from its findings.
func (cd *caseData) describe(cs caseSpec, les *lesionOut, incidental string) {
	switch {
	case cs.heartFinding() && cs.positive:
		cd.lesion = cd.heart
		cd.report = fmt.Sprintf("Synthetic phantom: enlarged cardiac silhouette, cardiothoracic ratio %.2f.", cd.ctr)
	case cs.heartFinding():
		cd.report = fmt.Sprintf("Synthetic phantom: normal heart size, cardiothoracic ratio %.2f", cd.ctr)
		if les != nil {
			cd.report += "; " + les.phrase
		}
		cd.report += "."
	case cs.positive:
		cd.lesion = les.mask
		cd.report = "Synthetic phantom: " + les.phrase + "."
	default:
		cd.report = "Synthetic phantom: no " + cs.lesion
		if incidental != "" {
			cd.report += "; " + incidental
		}
		cd.report += "."
	}
}

// render draws the radiograph as an attenuation map (higher = whiter),
// then maps it to grey with the case's exposure and adds noise. The parts
// are drawn in a fixed order, which fixes the order of the RNG draws.
func render(r *rng.RNG, a *anatomy, cc *caseCtx, les *lesionOut, s *scratch, img []uint8) {
	d := s.d
	clear(d)
	drawTrunk(r, a, d)
	drawLungAir(r, a, cc.lungs, s)
	// Heart and aortic knob: slightly denser than the mediastinum.
	for i, v := range cc.heart {
		d[i] += 0.05 * float32(v)
	}
	splat(d, a.knobX, a.knobY, a.knobR*1.1, 0.12)
	drawAirways(a, s)
	drawSpine(r, a, d)
	drawRibs(r, a, d)
	drawClavicles(r, a, d)
	drawVessels(r, a, s)
	drawGastricBubble(r, a, d)
	if les != nil {
		renderLesion(r, cc, les, s)
	}
	boxBlur(d, s.tmp, 1)
	expose(r, d, s, img)
}

// drawTrunk draws the soft tissue: the trunk as a cylinder whose path
// length falls off towards the skin line; neck and shoulders above, and
// the humeral heads at the upper corners.
func drawTrunk(r *rng.RNG, a *anatomy, d []float32) {
	tissue := r.Uniform(0.85, 0.95)
	bottom := float64(size)
	for y := 0; y < size; y++ {
		fy := float64(y)
		var bw float64
		switch {
		case fy < a.shoulderY+30:
			bw = a.neckW + (a.shoulderW-a.neckW)*smoothstep(a.shoulderY-110, a.shoulderY+30, fy)
		case fy < a.apexY+0.35*a.H:
			bw = a.shoulderW + (a.bodyW-a.shoulderW)*smoothstep(a.shoulderY+30, a.apexY+0.35*a.H, fy)
		default:
			bw = a.bodyW - 0.05*a.bodyW*smoothstep(a.apexY+0.35*a.H, bottom, fy)
		}
		row := d[y*size : (y+1)*size]
		for x := range row {
			u := math.Abs(float64(x)-a.cx) / bw
			if u < 1 {
				row[x] = float32(tissue * math.Sqrt(math.Sqrt(1-u*u)))
			}
		}
	}
	for _, sd := range []float64{-1, 1} {
		splat(d, a.cx+sd*(a.shoulderW-45), a.shoulderY+75, 65, 0.3)
	}
}

// drawLungAir removes the attenuation of lung air (the periphery is
// thinner lung) and keeps it per pixel in s.air; s.lungSoft is left as the
// softened lung mask the later parts use.
func drawLungAir(r *rng.RNG, a *anatomy, lungs []uint8, s *scratch) {
	d := s.d
	for i := range s.lungSoft {
		s.lungSoft[i] = float32(lungs[i])
	}
	copy(s.aux, s.lungSoft)
	boxBlur(s.lungSoft, s.tmp, 3)
	boxBlur(s.aux, s.tmp, 22)
	air := r.Uniform(0.6, 0.7)
	paren := newNoise(r, 45)
	for y := 0; y < size; y++ {
		t := clamp((float64(y)-a.apexY)/a.H, 0, 1)
		k := air * (1 - 0.22*t*t)
		for x := 0; x < size; x++ {
			i := y*size + x
			if s.lungSoft[i] == 0 {
				s.air[i] = 0
				continue
			}
			// Low-frequency parenchymal mottling of a few percent.
			tex := 0.96 + 0.08*paren.at(float64(x), float64(y))
			s.air[i] = float32(k*tex) * s.lungSoft[i] * (0.55 + 0.45*s.aux[i])
			d[i] -= s.air[i]
		}
	}
}

// drawAirways draws the trachea and main bronchi: air in the upper
// mediastinum.
func drawAirways(a *anatomy, s *scratch) {
	d := s.d
	carY := a.apexY + 0.3*a.H
	clear(s.aux)
	for y := 0; y < int(carY); y++ {
		for x := int(a.cx - 16); x <= int(a.cx+16); x++ {
			s.aux[y*size+x] = float32(smoothstep(16, 10, math.Abs(float64(x)-a.cx)))
		}
	}
	for _, sd := range []float64{-1, 1} {
		hx, hy := a.cx+sd*(a.mwU+0.12*a.W), a.apexY+0.43*a.H
		for t := 0.0; t <= 1; t += 0.01 {
			bx, by := a.cx+(hx-a.cx)*t, carY+(hy-carY)*t
			splat(s.aux, bx, by, 11-4*t, 0.15)
		}
	}
	for i, v := range s.aux {
		// Bronchi vanish once they enter the aerated lung.
		d[i] -= 0.16 * min(v, 1) * (1 - s.lungSoft[i])
	}
}

// drawSpine draws the vertebral bodies with disc spaces and pedicles.
func drawSpine(r *rng.RNG, a *anatomy, d []float32) {
	sw := a.W * r.Uniform(0.11, 0.13)
	vh := a.H * r.Uniform(0.052, 0.06)
	off := r.Uniform(0, vh)
	for y := 0; y < size; y++ {
		ph := math.Mod(float64(y)+off, vh) / vh
		disc := smoothstep(0.0, 0.12, ph) * smoothstep(1.0, 0.88, ph)
		for x := int(a.cx - sw - 3); x <= int(a.cx+sw+3); x++ {
			u := math.Abs(float64(x)-a.cx) / sw
			if u >= 1.1 {
				continue
			}
			v := 0.13 * smoothstep(1.1, 0.9, u) * (0.6 + 0.4*disc)
			// Pedicles: bright ovals on both sides of each body.
			pu := (u - 0.72) / 0.16
			pv := (ph - 0.45) / 0.22
			if pu*pu+pv*pv < 1 {
				v += 0.04
			}
			d[y*size+x] += float32(v)
		}
	}
}

// drawVessels draws the hila and the vessels fanning out of them, visible
// only inside the lungs.
func drawVessels(r *rng.RNG, a *anatomy, s *scratch) {
	d := s.d
	clear(s.aux)
	for _, sd := range []float64{-1, 1} {
		hx, hy := a.cx+sd*(a.mwU+0.2*a.W), a.apexY+a.H*r.Uniform(0.4, 0.46)
		splat(s.aux, hx, hy, 30, 0.08)
		nb := r.IntRange(18, 24)
		for b := 0; b < nb; b++ {
			// Lateral is angle π on the right side, 0 on the left; the fan
			// spans from up-lateral to down-lateral.
			ang := math.Pi/2 - sd*math.Pi/2 + sd*r.Uniform(-1.3, 1.3)
			sx, sy := hx+r.Uniform(-15, 15), hy+r.Uniform(-35, 35)
			drawVessel(r, s.aux, sx, sy, ang, a.W*r.Uniform(0.3, 0.75), r.Uniform(2.5, 4.5), 2)
		}
	}
	boxBlur(s.aux, s.tmp, 2)
	for i, v := range s.aux {
		d[i] += 1.3 * v * s.lungSoft[i]
	}
}

// drawGastricBubble draws the gastric bubble under the left hemidiaphragm.
func drawGastricBubble(r *rng.RNG, a *anatomy, d []float32) {
	gx, gy := a.domeL.peakX+r.Uniform(-20, 30), a.domeL.peakY+r.Uniform(55, 80)
	grx, gry := r.Uniform(35, 60), r.Uniform(22, 34)
	for y := int(gy - gry); y <= int(gy+gry); y++ {
		for x := int(gx - grx); x <= int(gx+grx); x++ {
			if x < 0 || x >= size || y < 0 || y >= size || float64(y) < a.domeL.y(float64(x))+14 {
				continue
			}
			u, v := (float64(x)-gx)/grx, (float64(y)-gy)/gry
			d[y*size+x] -= float32(0.25 * smoothstep(1, 0.7, u*u+v*v))
		}
	}
}

// expose maps the attenuation d to grey: grey = 255·(1 − exp(−k·D))^γ,
// then quantum noise and slightly correlated film grain.
func expose(r *rng.RNG, d []float32, s *scratch, img []uint8) {
	k := r.Uniform(1.15, 1.6)
	gamma := r.Uniform(0.95, 1.35)
	lift := r.Uniform(-4, 10)
	sigma := float32(r.Uniform(2.5, 5))
	grain := float32(r.Uniform(2, 4.5))
	for i := range s.tmp2 {
		s.tmp2[i] = gauss(r)
	}
	boxBlur(s.tmp2, s.tmp, 1)
	// The exposure curve is tabulated: D in [0, lutMax) at lutSteps per unit.
	const lutSteps, lutMax = 2048, 4
	var lut [lutSteps*lutMax + 1]float32
	for j := range lut {
		v := float64(j) / lutSteps
		lut[j] = float32(255*math.Pow(1-math.Exp(-k*v), gamma) + lift)
	}
	for i, v := range d {
		j := int(v*lutSteps + 0.5)
		j = clampInt(j, 0, len(lut)-1)
		g := lut[j] + sigma*gauss(r) + grain*3*s.tmp2[i]
		img[i] = uint8(min(max(g+0.5, 0), 255))
	}
}

// renderLesion replaces a fraction of the lung air with the lesion's
// attenuation, so a lesion never shows outside the lungs and a full fill
// (effusion) erases the diaphragm and costophrenic angle.
func renderLesion(r *rng.RNG, cc *caseCtx, les *lesionOut, s *scratch) {
	tex := newNoise(r, les.texCell)
	fine := newNoise(r, les.texCell/3+1)
	if les.bronch {
		// Air bronchograms: dark branching tubes inside the opacity.
		clear(s.tmp2)
		x0, y0, x1, y1, ok := bbox(les.mask)
		if ok {
			for b := 0; b < 5; b++ {
				sx := float64(x0) + r.Float64()*float64(x1-x0)
				sy := float64(y0) + r.Float64()*float64(y1-y0)
				drawVessel(r, s.tmp2, sx, sy, r.Uniform(0, 2*math.Pi), r.Uniform(60, 140), 4, 1)
			}
		}
	}
	d := s.d
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			i := y*size + x
			f := float64(s.field[i])
			if f == 0 || s.air[i] == 0 {
				continue
			}
			t := 1.0
			if les.texAmp > 0 {
				n := 0.65*tex.at(float64(x), float64(y)) + 0.35*fine.at(float64(x), float64(y))
				t = 1 + les.texAmp*(2*n-1)
			}
			fill := min(les.fill*f*t, 1)
			if les.bronch {
				fill -= 6 * float64(s.tmp2[i]) * f
			}
			d[i] += float32(fill) * s.air[i]
		}
	}
}

// drawVessel draws a tapering, wandering tube of splats starting at
// (x, y) in direction ang, branching depth more times.
func drawVessel(r *rng.RNG, f []float32, x, y, ang, length, rad float64, depth int) {
	const step = 2.0
	n := int(length / step)
	for i := 0; i < n; i++ {
		t := float64(i) / float64(n)
		rr := rad * (1 - 0.8*t)
		splat(f, x, y, rr, 0.05*math.Sqrt(rr/3))
		x += step * math.Cos(ang)
		y += step * math.Sin(ang)
		ang += r.Uniform(-0.1, 0.1)
		if depth > 0 && i > 8 && r.UintN(25) == 0 {
			drawVessel(r, f, x, y, ang+r.Uniform(-0.7, 0.7), length*(1-t)*0.7, rr*0.7, depth-1)
		}
		if x < 0 || y < 0 || x >= size || y >= size {
			return
		}
	}
}

// paintCurve adds a band of vertical half-height hv(x) around yc(x) for
// columns x0..x1, with brighter cortical edges and a weight w(x) that
// tapers the ends.
func paintCurve(d []float32, x0, x1 int, yc, slope, weight func(x float64) float64, thick, dens float64) {
	for x := max(0, x0); x <= min(size-1, x1); x++ {
		fx := float64(x)
		w := weight(fx)
		if w <= 0 {
			continue
		}
		c := yc(fx)
		sl := slope(fx)
		hv := thick / 2 * math.Sqrt(1+sl*sl)
		for y := max(0, int(c-hv)-1); y <= min(size-1, int(c+hv)+1); y++ {
			s := math.Abs(float64(y)-c) / hv
			if s >= 1.15 {
				continue
			}
			v := (0.45 + 0.55*s*s*s*s) * smoothstep(1.15, 0.85, s)
			d[y*size+x] += float32(dens * w * v)
		}
	}
}

func drawRibs(r *rng.RNG, a *anatomy, d []float32) {
	sp := a.H * r.Uniform(0.088, 0.098)
	thick := sp * r.Uniform(0.3, 0.36)
	wr := a.W + 12
	post := r.Uniform(0.08, 0.11)
	ant := post * r.Uniform(0.3, 0.45)
	for _, sd := range []float64{-1, 1} {
		sd := sd
		base := a.apexY - 0.05*a.H + r.Uniform(-8, 8)
		for k := 0; k < 11; k++ {
			y0 := base + float64(k)*sp
			curv := 0.5 + 0.06*float64(max(0, 2-k))
			u := func(x float64) float64 { return math.Abs(x-a.cx) / wr }
			yc := func(x float64) float64 { uu := u(x); return y0 + wr*(-0.2*uu+curv*uu*uu) }
			sl := func(x float64) float64 { uu := u(x); return (-0.2 + 2*curv*uu) * sd }
			wt := func(x float64) float64 {
				uu := u(x)
				return smoothstep(0.08, 0.2, uu) * smoothstep(1.12, 1.0, uu)
			}
			lo, hi := int(a.cx), int(a.cx+sd*wr*1.12)
			if lo > hi {
				lo, hi = hi, lo
			}
			paintCurve(d, lo, hi, yc, sl, wt, thick, post)
			// Anterior rib: from the lateral end downwards towards the
			// midline, fading at the costal cartilage.
			yl := yc(a.cx + sd*wr)
			ya := func(x float64) float64 { uu := u(x); return yl + wr*0.42*(1-uu) - wr*0.12*(1-uu)*(1-uu) }
			sla := func(x float64) float64 { uu := u(x); return (-0.42 + 0.24*(1-uu)) * sd }
			wta := func(x float64) float64 {
				uu := u(x)
				return smoothstep(0.3, 0.5, uu) * smoothstep(1.05, 0.95, uu)
			}
			if k < 9 {
				paintCurve(d, lo, hi, ya, sla, wta, thick*0.7, ant)
			}
		}
	}
}

func drawClavicles(r *rng.RNG, a *anatomy, d []float32) {
	yM := a.apexY + a.H*r.Uniform(0.02, 0.06)
	yL := a.apexY - a.H*r.Uniform(0.03, 0.08)
	thick := r.Uniform(20, 27)
	for _, sd := range []float64{-1, 1} {
		span := a.W*1.2 - 30
		t := func(x float64) float64 { return (math.Abs(x-a.cx) - 30) / span }
		yc := func(x float64) float64 { tt := t(x); return yM + (yL-yM)*tt + 14*math.Sin(2*math.Pi*tt) }
		sl := func(x float64) float64 {
			tt := t(x)
			return ((yL-yM)/span + 14*2*math.Pi/span*math.Cos(2*math.Pi*tt)) * sd
		}
		wt := func(x float64) float64 { tt := t(x); return smoothstep(0, 0.06, tt) * smoothstep(1.05, 0.95, tt) }
		lo, hi := int(a.cx), int(a.cx+sd*(span+40))
		if lo > hi {
			lo, hi = hi, lo
		}
		paintCurve(d, lo, hi, yc, sl, wt, thick, 0.3)
	}
}
