package phantom

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// minLesionPx is the smallest lesion component we emit. The builder keeps
// components of ≥ 1000 px after a close/open with a radius-5 disc; 3000 px
// of a smooth blob leaves a wide margin.
const minLesionPx = 3000

// lung summarises one lung mask: its bounding box and the row limits of
// its vertical thirds (build.md §6 zones).
type lung struct {
	m              []uint8
	x0, y0, x1, y1 int
	b1, b2         int // last row of the upper and of the mid zone
	side           float64
	name           string // "right" or "left"
}

func newLung(m []uint8, side float64) lung {
	x0, y0, x1, y1, _ := bbox(m)
	h := y1 - y0 + 1
	l := lung{m: m, x0: x0, y0: y0, x1: x1, y1: y1, b1: y0 + h/3, b2: y0 + 2*h/3, side: side, name: "right"}
	if side > 0 {
		l.name = "left"
	}
	return l
}

// rowExtent returns the first and last lung pixel of row y.
func (l lung) rowExtent(y int) (int, int, bool) {
	if y < 0 || y >= size {
		return 0, 0, false
	}
	row := l.m[y*size : (y+1)*size]
	lo, hi := -1, -1
	for x, v := range row {
		if v != 0 {
			if lo < 0 {
				lo = x
			}
			hi = x
		}
	}
	return lo, hi, lo >= 0
}

// medialX and lateralX are the bounding-box edges on the medial and
// lateral sides.
func (l lung) medialX() float64 {
	if l.side < 0 {
		return float64(l.x1)
	}
	return float64(l.x0)
}

func (l lung) lateralX() float64 {
	if l.side < 0 {
		return float64(l.x0)
	}
	return float64(l.x1)
}

var zoneNames = [3]string{"upper zone", "mid zone", "lower zone"}

// zoneRows returns the row range [ya, yb] of zone z (0 upper, 1 mid, 2 base).
func (l lung) zoneRows(z int) (int, int) {
	switch z {
	case 0:
		return l.y0, l.b1
	case 1:
		return l.b1 + 1, l.b2
	}
	return l.b2 + 1, l.y1
}

// pointIn draws a lung pixel in rows [ya, yb] at least margin px inside
// the lung horizontally; ok is false when none was found.
func (l lung) pointIn(r *rng.RNG, ya, yb, margin int) (x, y float64, ok bool) {
	for try := 0; try < 200; try++ {
		py := r.IntRange(ya, yb)
		px := r.IntRange(l.x0, l.x1)
		if l.m[py*size+px] == 0 {
			continue
		}
		if px-margin < 0 || px+margin >= size || l.m[py*size+px-margin] == 0 || l.m[py*size+px+margin] == 0 {
			continue
		}
		return float64(px), float64(py), true
	}
	return 0, 0, false
}

// lesionOut is a generated lesion: its binary mask (0/1), the rendering
// field (opacity weight per pixel, 0..1), and how to render it.
type lesionOut struct {
	mask    []uint8
	fill    float64 // fraction of the local lung air replaced by the lesion at weight 1
	texCell float64 // texture noise cell size in px
	texAmp  float64 // texture contrast (0 = homogeneous)
	bronch  bool    // draw air bronchograms
	phrase  string  // report phrase, e.g. "moderate right basal <name> with meniscus"
}

// caseCtx bundles what the lesion generators need.
type caseCtx struct {
	r            *rng.RNG
	a            *anatomy
	right, left  lung
	lungs        []uint8 // union, 0/1
	heart        []uint8
	field        []float32
	tmp, tmp2    []float32
	labels       []int32
	stack        []int32
	atelectSide  float64 // side chosen for a volume-loss lesion (volume loss is applied to the anatomy first)
	atelectWedge bool
}

var errRetry = errors.New("lesion rejected")

// Shape families: how the phantom draws a lesion. A lesion definition
// names its family (benchmark.LesionDef.Phantom); the heart family enlarges
// the cardiac silhouette, every other one draws inside the lungs.
const (
	ShapeEnlargedHeart = "enlarged-heart"
	shapeVolumeLoss    = "volume-loss"
	shapeLobar         = "lobar"
	shapePerihilar     = "perihilar"
	shapePleuralFluid  = "pleural-fluid"
	shapePatchy        = "patchy"
	shapeMultifocal    = "multifocal"
	shapePleuralAir    = "pleural-air"
	shapeNodule        = "nodule"
)

// lungShapes are the families drawn inside the lungs. A generator gets the
// lesion's name for its report phrase.
var lungShapes = map[string]func(c *caseCtx, mask []uint8, name string) (*lesionOut, error){
	shapeVolumeLoss:   (*caseCtx).volumeLossLesion,
	shapeLobar:        (*caseCtx).lobar,
	shapePerihilar:    (*caseCtx).perihilar,
	shapePleuralFluid: (*caseCtx).pleuralFluid,
	shapePatchy:       (*caseCtx).patchy,
	shapeMultifocal:   (*caseCtx).multifocal,
	shapePleuralAir:   (*caseCtx).pleuralAir,
	shapeNodule:       (*caseCtx).nodule,
}

// Shapes lists every shape family, heart first, then the lung families in
// byte order.
func Shapes() []string {
	return append([]string{ShapeEnlargedHeart}, slices.Sorted(maps.Keys(lungShapes))...)
}

// makeLesion draws one lesion of the given shape family into c.field and
// a fresh mask; name is the lesion's name for the report phrase. The heart
// family is not handled here (its mask is the heart).
func (c *caseCtx) makeLesion(shape, name string) (*lesionOut, error) {
	clear(c.field)
	mask := make([]uint8, npx)
	draw, ok := lungShapes[shape]
	if !ok {
		return nil, fmt.Errorf("unknown phantom shape %q", shape)
	}
	out, err := draw(c, mask, name)
	if err != nil {
		return nil, err
	}
	out.mask = mask
	if c.cleanMask(mask) == 0 {
		return nil, errRetry
	}
	return out, nil
}

// cleanMask smooths a raw lesion mask (an 11×11 majority vote acts like a
// small close/open), clips it to the lungs and drops pieces smaller than
// minLesionPx. It returns the remaining pixel count.
func (c *caseCtx) cleanMask(m []uint8) int {
	maskToField(m, c.tmp2)
	boxBlur(c.tmp2, c.tmp, 5)
	for i, v := range c.tmp2 {
		if v >= 0.5 && c.lungs[i] != 0 {
			m[i] = 1
		} else {
			m[i] = 0
		}
	}
	return keepComponents(m, minLesionPx, false, c.labels, c.stack)
}

// blob fills field with max(field, opacity) and mask with f > 0 for a
// noisy ellipse: f = 1 − ρ² + amp·(noise − ½), opacity = smoothstep(lo, hi, f)·gain(ρ).
func (c *caseCtx) blob(mask []uint8, ex, ey, rx, ry, amp float64, n noiseGrid, lo, hi float64, core float64) {
	ext := 1.0 + amp
	x0, x1 := max(0, int(ex-rx*ext)-2), min(size-1, int(ex+rx*ext)+2)
	y0, y1 := max(0, int(ey-ry*ext)-2), min(size-1, int(ey+ry*ext)+2)
	for y := y0; y <= y1; y++ {
		dy := (float64(y) - ey) / ry
		for x := x0; x <= x1; x++ {
			dx := (float64(x) - ex) / rx
			rho2 := dx*dx + dy*dy
			f := 1 - rho2 + amp*(n.at(float64(x), float64(y))-0.5)
			i := y*size + x
			if f > 0 {
				mask[i] = 1
			}
			o := smoothstep(lo, hi, f) * (1 - core + core*clamp(1-rho2, 0, 1))
			if float32(o) > c.field[i] {
				c.field[i] = float32(o)
			}
		}
	}
}

func (c *caseCtx) pickLung() lung {
	if c.r.Coin() {
		return c.left
	}
	return c.right
}

func (c *caseCtx) volumeLossLesion(mask []uint8, name string) (*lesionOut, error) {
	l := c.right
	if c.atelectSide > 0 {
		l = c.left
	}
	z := c.r.IntRange(1, 2)
	ya, yb := l.zoneRows(z)
	n := newNoise(c.r, 28)
	w := float64(l.x1 - l.x0)
	out := &lesionOut{fill: c.r.Uniform(0.5, 0.68), texCell: 24, texAmp: 0.25}
	if !c.atelectWedge {
		// Plate-like band: a long thin noisy ellipse, near horizontal,
		// centred on a lung row and shorter than that row.
		py := float64(c.r.IntRange(ya+(yb-ya)/5, yb-(yb-ya)/3))
		rx0, rx1, ok := l.rowExtent(int(py))
		if !ok || rx1-rx0 < 80 {
			return nil, errRetry
		}
		px := float64(rx0+rx1)/2 + c.r.Uniform(-0.1, 0.1)*float64(rx1-rx0)
		w = float64(rx1 - rx0)
		ang := c.r.Uniform(-0.28, 0.28)
		hl := w * c.r.Uniform(0.36, 0.48)
		ht := c.r.Uniform(16, 24)
		ca, sa := math.Cos(ang), math.Sin(ang)
		for y := max(0, int(py-hl)-2); y <= min(size-1, int(py+hl)+2); y++ {
			for x := max(0, int(px-hl)-2); x <= min(size-1, int(px+hl)+2); x++ {
				dx, dy := float64(x)-px, float64(y)-py
				along := (dx*ca + dy*sa) / hl
				perp := (-dx*sa + dy*ca) / ht
				f := 1 - perp*perp - along*along*along*along + 0.5*(n.at(float64(x), float64(y))-0.5)
				i := y*size + x
				if f > 0 {
					mask[i] = 1
				}
				c.field[i] = max(c.field[i], float32(smoothstep(-0.7, 0.6, f)))
			}
		}
		out.phrase = fmt.Sprintf("plate-like %s in the %s %s with volume loss", name, l.name, zoneNames[z])
		return out, nil
	}
	// Wedge: a sector opening from the hilum towards the lateral base.
	hx := l.medialX() - l.side*w*0.12
	hy := float64(l.y0) + float64(l.y1-l.y0)*c.r.Uniform(0.42, 0.5)
	dir := math.Pi/2 + l.side*(-1)*c.r.Uniform(0.55, 0.95) // down and lateral
	half := c.r.Uniform(0.22, 0.32)
	length := float64(l.y1-l.y0) * c.r.Uniform(0.4, 0.52)
	for y := max(0, int(hy)); y <= min(size-1, int(hy+length)+2); y++ {
		for x := max(0, int(hx-length)-2); x <= min(size-1, int(hx+length)+2); x++ {
			dx, dy := float64(x)-hx, float64(y)-hy
			dist := math.Hypot(dx, dy)
			if dist < 1 {
				continue
			}
			da := math.Atan2(dy, dx) - dir
			for da > math.Pi {
				da -= 2 * math.Pi
			}
			for da < -math.Pi {
				da += 2 * math.Pi
			}
			f := math.Min(math.Min((half-math.Abs(da))/half, (length-dist)/length), (dist-25)/length)
			f += 0.12 * (n.at(float64(x), float64(y)) - 0.5)
			i := y*size + x
			if f > 0 {
				mask[i] = 1
			}
			c.field[i] = max(c.field[i], float32(smoothstep(-0.05, 0.08, f)))
		}
	}
	out.phrase = fmt.Sprintf("wedge-shaped %s in the %s lower zone with volume loss", name, l.name)
	return out, nil
}

func (c *caseCtx) lobar(mask []uint8, name string) (*lesionOut, error) {
	type lobe struct {
		name string
		l    lung
		lo   float64 // lobe rows as fractions of the lung height
		hi   float64
		med  bool // medial half only (middle lobe, lingula)
	}
	lobes := []lobe{
		{"right upper lobe", c.right, 0, 0.42, false},
		{"right middle lobe", c.right, 0.42, 0.7, true},
		{"right lower lobe", c.right, 0.62, 1, false},
		{"left upper lobe", c.left, 0, 0.45, false},
		{"lingula", c.left, 0.45, 0.72, true},
		{"left lower lobe", c.left, 0.62, 1, false},
	}
	lb := rng.Choice(c.r, lobes)
	l := lb.l
	h := float64(l.y1 - l.y0)
	w := float64(l.x1 - l.x0)
	top := float64(l.y0) + lb.lo*h
	bot := float64(l.y0) + lb.hi*h
	n := newNoise(c.r, 36)
	// The fissure side is sharp (a straight, slightly tilted line); the
	// pleural sides come from the lung mask; one more side is ill-defined.
	tiltTop := c.r.Uniform(-0.08, 0.08)
	tiltBot := c.r.Uniform(-0.08, 0.08)
	cover := c.r.Uniform(0.75, 1.0)
	bx := (l.medialX() + l.lateralX()) / 2
	rx := w * 0.5 * (cover + 0.25)
	if lb.med {
		bx = l.medialX() - l.side*w*0.3
		rx = w * 0.32 * (cover + 0.2)
	}
	by := (top + bot) / 2
	ry := (bot - top) * 0.5 * (cover + 0.35)
	for y := max(0, int(top)-30); y <= min(size-1, int(bot)+30); y++ {
		fy := float64(y)
		for x := max(0, l.x0-10); x <= min(size-1, l.x1+10); x++ {
			fx := float64(x)
			dTop := fy - (top + tiltTop*(fx-bx))
			dBot := (bot + tiltBot*(fx-bx)) - fy
			if lb.lo == 0 {
				dTop = 1e3
			}
			if lb.hi == 1 {
				dBot = 1e3
			}
			dx, dy := (fx-bx)/rx, (fy-by)/ry
			f := 1 - dx*dx - dy*dy + 0.45*(n.at(fx, fy)-0.5)
			g := math.Min(dTop, dBot)
			i := y*size + x
			if f > 0 && g > 0 {
				mask[i] = 1
			}
			o := smoothstep(-0.2, 0.15, f) * smoothstep(-2, 3, g)
			c.field[i] = max(c.field[i], float32(o))
		}
	}
	return &lesionOut{fill: c.r.Uniform(0.8, 0.92), texCell: 40, texAmp: 0.06, bronch: true,
		phrase: "dense homogeneous " + lb.name + " " + name}, nil
}

func (c *caseCtx) perihilar(mask []uint8, name string) (*lesionOut, error) {
	n := newNoise(c.r, 40)
	sev := c.r.Uniform(0, 1)
	for _, l := range []lung{c.right, c.left} {
		h := float64(l.y1 - l.y0)
		w := float64(l.x1 - l.x0)
		ex := l.medialX() - l.side*w*c.r.Uniform(0.12, 0.2)
		ey := float64(l.y0) + h*c.r.Uniform(0.42, 0.52)
		rx := w * c.r.Uniform(0.45, 0.6) * (0.9 + 0.2*sev)
		ry := h * c.r.Uniform(0.28, 0.36) * (0.9 + 0.2*sev)
		c.blob(mask, ex, ey, rx, ry, 0.45, n, -0.45, 0.35, 0.55)
	}
	// Both lungs must keep a component.
	m2 := append([]uint8(nil), mask...)
	if c.cleanMask(m2) == 0 || !touchesOnly(m2, c.right.m) || !touchesOnly(m2, c.left.m) {
		return nil, errRetry
	}
	word := "mild"
	if sev > 0.6 {
		word = "moderate"
	}
	return &lesionOut{fill: 0.32 + 0.15*sev, texCell: 26, texAmp: 0.4,
		phrase: word + " bilateral perihilar haze in keeping with pulmonary " + name}, nil
}

// touchesOnly reports whether m and l share a pixel.
func touchesOnly(m, l []uint8) bool {
	for i, v := range m {
		if v != 0 && l[i] != 0 {
			return true
		}
	}
	return false
}

func (c *caseCtx) pleuralFluid(mask []uint8, name string) (*lesionOut, error) {
	l := c.pickLung()
	h := float64(l.y1 - l.y0)
	dm := c.a.domeR
	if l.side > 0 {
		dm = c.a.domeL
	}
	// The fluid level at the lateral wall lies frac·h above the dome's
	// apex, so the whole base is covered and the angle is blunted.
	frac := c.r.Uniform(0.08, 0.35)
	hm := c.r.Uniform(0.3, 0.5) // how much lower the level lies medially
	latY := dm.peakY - frac*h
	lat, med := l.lateralX(), l.medialX()
	span := math.Abs(med - lat)
	for y := max(0, int(latY)-20); y < size; y++ {
		fy := float64(y)
		for x := max(0, l.x0-12); x <= min(size-1, l.x1+12); x++ {
			u := clamp(math.Abs(float64(x)-lat)/span, 0, 1)
			// Meniscus: the fluid climbs the lateral chest wall.
			men := latY + (frac*h+40)*hm*math.Sqrt(u)
			// Keep a layer at least 45 px deep above the dome so the mask
			// is a solid basal crescent, not a sliver.
			men = math.Min(men, dm.y(float64(x))-45)
			d := fy - men
			i := y*size + x
			if d > 0 {
				mask[i] = 1
			}
			c.field[i] = float32(smoothstep(-8, 14, d) * (0.8 + 0.2*smoothstep(0, 80, d)))
		}
	}
	word := "small"
	switch {
	case frac > 0.26:
		word = "large"
	case frac > 0.16:
		word = "moderate"
	}
	return &lesionOut{fill: c.r.Uniform(0.93, 1.0), texAmp: 0, texCell: 50,
		phrase: fmt.Sprintf("%s %s basal %s with meniscus", word, l.name, name)}, nil
}

func (c *caseCtx) patchy(mask []uint8, name string) (*lesionOut, error) {
	k := 1
	if c.r.Float64() < 0.3 {
		k = 2
	}
	n := newNoise(c.r, 30)
	var where []string
	for j := 0; j < k; j++ {
		l := c.pickLung()
		px, py, ok := l.pointIn(c.r, l.y0+40, l.y1-30, 30)
		if !ok {
			return nil, errRetry
		}
		rx := c.r.Uniform(60, 105)
		ry := rx * c.r.Uniform(0.75, 1.3)
		c.blob(mask, px, py, rx, ry, 0.7, n, -0.6, 0.35, 0.4)
		where = append(where, l.name+" "+zoneNames[zoneOf(l, int(py))])
	}
	return &lesionOut{fill: c.r.Uniform(0.4, 0.55), texCell: 20, texAmp: 0.35,
		phrase: "patchy ill-defined " + name + " in the " + strings.Join(where, " and ")}, nil
}

func zoneOf(l lung, y int) int {
	switch {
	case y <= l.b1:
		return 0
	case y <= l.b2:
		return 1
	}
	return 2
}

func (c *caseCtx) multifocal(mask []uint8, name string) (*lesionOut, error) {
	k := 1
	if c.r.Float64() < 0.35 {
		k = 2
	}
	n := newNoise(c.r, 22)
	var where []string
	used := map[string]bool{}
	for j := 0; j < k; j++ {
		l := c.pickLung()
		z := c.r.IntRange(0, 2)
		name := l.name + " " + zoneNames[z]
		if used[name] {
			continue
		}
		used[name] = true
		ya, yb := l.zoneRows(z)
		px, py, ok := l.pointIn(c.r, ya+10, yb-10, 35)
		if !ok {
			return nil, errRetry
		}
		blobs := c.r.IntRange(5, 8)
		for b := 0; b < blobs; b++ {
			ox := px + c.r.Uniform(-70, 70)
			oy := py + c.r.Uniform(-60, 60)
			rr := c.r.Uniform(32, 55)
			c.blob(mask, ox, oy, rr*c.r.Uniform(0.8, 1.25), rr, 0.5, n, -0.3, 0.3, 0.3)
		}
		where = append(where, name)
	}
	return &lesionOut{fill: c.r.Uniform(0.62, 0.78), texCell: 14, texAmp: 0.45, bronch: c.r.Coin(),
		phrase: "patchy " + shapeWord(shapeLobar) + " in the " + strings.Join(where, " and ") + " suggesting " + name}, nil
}

// shapeWord is the name of the built-in lesion drawn with a shape family,
// for report phrases that describe one finding in terms of another.
func shapeWord(shape string) string {
	for _, d := range benchmark.DefaultLesionDefs() {
		if d.Phantom == shape {
			return d.Name
		}
	}
	return shape
}

// pleuralAir draws a pleural-edge crescent along the lateral wall and apex
// of one lung (a pneumothorax-like finding): air without lung markings,
// so it renders darker than the lung, widest at the apex and tapering
// towards the base.
func (c *caseCtx) pleuralAir(mask []uint8, name string) (*lesionOut, error) {
	l := c.pickLung()
	h := float64(l.y1 - l.y0)
	depth := c.r.Uniform(0.45, 0.75) // how far down the lateral wall it reaches
	width := c.r.Uniform(28, 60)     // rim width at the apex, px
	yEnd := float64(l.y0) + depth*h
	for y := l.y0; y <= int(yEnd) && y < size; y++ {
		lo, hi, ok := l.rowExtent(y)
		if !ok {
			continue
		}
		t := (float64(y) - float64(l.y0)) / (yEnd - float64(l.y0) + 1)
		w := int(width * (1 - t*t))
		if w < 2 {
			continue
		}
		x0, x1 := lo, min(hi, lo+w)
		if l.side > 0 {
			x0, x1 = max(lo, hi-w), hi
		}
		for x := x0; x <= x1; x++ {
			mask[y*size+x] = 1
			c.field[y*size+x] = 1
		}
	}
	word := "small"
	if depth > 0.62 || width > 48 {
		word = "moderate"
	}
	// A negative fill takes attenuation away: more air than lung.
	return &lesionOut{fill: -c.r.Uniform(0.22, 0.35), texCell: 40,
		phrase: fmt.Sprintf("%s %s apical and lateral %s", word, l.name, name)}, nil
}

// nodule draws one small, well-defined round opacity inside a lung.
func (c *caseCtx) nodule(mask []uint8, name string) (*lesionOut, error) {
	l := c.pickLung()
	px, py, ok := l.pointIn(c.r, l.y0+60, l.y1-60, 60)
	if !ok {
		return nil, errRetry
	}
	rx := c.r.Uniform(38, 52)
	ry := rx * c.r.Uniform(0.9, 1.1)
	c.blob(mask, px, py, rx, ry, 0.15, newNoise(c.r, 25), -0.2, 0.2, 0.5)
	return &lesionOut{fill: c.r.Uniform(0.55, 0.7), texCell: 12, texAmp: 0.1,
		phrase: fmt.Sprintf("well-defined round %s in the %s %s", name, l.name, zoneNames[zoneOf(l, int(py))])}, nil
}
