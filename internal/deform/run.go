package deform

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// OptimalName is the mask name of optimal component i.
func OptimalName(i int) string { return fmt.Sprintf("optimal_component_%d", i) }

// SID is the component id suboptimal_component_<i>.
func SID(i int) string { return fmt.Sprintf("suboptimal_component_%d", i) }

func newEngine(g *Geometry, cfg buildcfg.Config) (*engine, error) {
	if g == nil || g.Gray == nil {
		return nil, errors.New("deform: no image")
	}
	b := g.Gray.Bounds()
	w, h := b.Dx(), b.Dy()
	check := func(what string, m mask.Mask) error {
		if m.W != w || m.H != h || len(m.Pix) != w*h {
			return fmt.Errorf("deform: %s is %dx%d, image is %dx%d", what, m.W, m.H, w, h)
		}
		return nil
	}
	if err := check("right lung", g.LungRight); err != nil {
		return nil, err
	}
	if err := check("left lung", g.LungLeft); err != nil {
		return nil, err
	}
	for i, c := range g.Components {
		if err := check(OptimalName(i), c); err != nil {
			return nil, err
		}
	}
	for name, m := range g.Regions {
		if err := check("region "+name, m); err != nil {
			return nil, err
		}
	}
	if len(g.Overlaps) != len(g.Components) {
		return nil, fmt.Errorf("deform: %d overlap records for %d components", len(g.Overlaps), len(g.Components))
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	e := &engine{cfg: cfg, g: g, w: w, h: h}
	e.lungUnion = mask.Or(g.LungRight, g.LungLeft)
	if g.HeartType {
		e.regionR = mask.New(w, h)
		for i := range e.regionR.Pix {
			e.regionR.Pix[i] = 1
		}
	} else {
		e.regionR = e.lungUnion
	}
	e.e32 = mask.Ellipse32()
	e.smooth = mask.Disc(cfg.DeformSmoothRadius)
	e.rings = newRingCache(e.e32)
	e.empty = mask.New(w, h)
	e.log = &Log{}
	e.cost, e.log.GradientP = CostField(g.Gray, e.lungUnion, cfg.GeoSigma, cfg.GeoAlpha, cfg.GeoGradientPercentile)
	lo, hi := fieldRange(e.cost)
	if cfg.GeoWindow < 0 {
		return nil, fmt.Errorf("deform: geo_window %d must be ≥ 0", cfg.GeoWindow)
	}
	if lo >= 1 && hi < 1e6 {
		e.search = newBucketSearch(e.cost, w, h, cfg.GeoWindow, hi)
	}
	return e, nil
}

// checkConfig rejects values under which the §8 procedures are undefined
// (an empty range for IntRange, a zero axis scale, …), naming the key.
func checkConfig(cfg buildcfg.Config) error {
	bad := func(key string, v any, want string) error {
		return fmt.Errorf("deform: config %s = %v, want %s", key, v, want)
	}
	if len(cfg.PointWidths) == 0 || len(cfg.FakePointWidths) == 0 {
		return errors.New("deform: config point_widths and fake_point_widths must not be empty")
	}
	for _, w := range append(append([]int(nil), cfg.PointWidths...), cfg.FakePointWidths...) {
		if w < 1 {
			return bad("point_widths/fake_point_widths", w, "every width ≥ 1")
		}
	}
	for _, c := range []struct {
		key string
		v   int
	}{
		{"heart_zones_max", cfg.HeartZonesMax}, {"sequential_anatomies_max", cfg.SequentialAnatomiesMax},
		{"depth_lung", cfg.DepthLung}, {"depth_heart", cfg.DepthHeart},
	} {
		if c.v < 1 {
			return bad(c.key, c.v, "≥ 1")
		}
	}
	for _, c := range []struct {
		key string
		v   int
	}{
		{"ring_iterations_expansion", cfg.RingIterationsExpansion}, {"ring_iterations_contraction", cfg.RingIterationsContraction},
		{"geo_window", cfg.GeoWindow}, {"deform_smooth_radius", cfg.DeformSmoothRadius},
		{"point_spacing_px", cfg.PointSpacingPx}, {"fake_point_spacing_px", cfg.FakePointSpacingPx},
	} {
		if c.v < 0 {
			return bad(c.key, c.v, "≥ 0")
		}
	}
	for _, z := range cfg.OrganicCells {
		if z < 1 {
			return bad("organic_cells", cfg.OrganicCells, "cell sizes ≥ 1")
		}
	}
	if a := cfg.OrganicAxisRange; !(a[0] > 0 && a[0] <= a[1]) {
		return bad("organic_axis_range", a, "0 < low ≤ high")
	}
	if !(cfg.GeoSigma >= 0) {
		return bad("geo_sigma", cfg.GeoSigma, "≥ 0")
	}
	return nil
}

func (e *engine) region(name string) mask.Mask {
	if m, ok := e.g.Regions[name]; ok {
		return m
	}
	return e.empty
}

// RunGeometry is Run on an already converted Geometry. On a case failure
// (a *frame.CaseError) the returned Result is still non-nil and carries
// the Log and whatever catalogue was built, for the inspect view.
func RunGeometry(r *rng.RNG, g *Geometry, cfg buildcfg.Config, finalize func(*Attempt) error) (*Result, error) {
	e, err := newEngine(g, cfg)
	if err != nil {
		return nil, err
	}
	res := &Result{Log: e.log}
	for i := range g.Components {
		entry, ok := e.catalogueComponent(r, i)
		if !ok {
			e.log.Failure = fmt.Sprintf("%s: catalogue component %d", ReasonDeformationFailed, i)
			return res, frame.Fail(ReasonDeformationFailed, "catalogue component %d", i)
		}
		res.Catalogue = append(res.Catalogue, entry)
	}
	for _, c := range res.Catalogue {
		for _, a := range c.Anatomies {
			if a.Op == Expansion {
				res.Possible = append(res.Possible, a.Name)
			}
		}
		for _, a := range c.Anatomies {
			if a.Op == Contraction {
				res.Possible = append(res.Possible, a.Name)
			}
		}
	}
	var last error
	for retry := 0; retry < cfg.SequentialRetries; retry++ {
		att, err := e.sequentialRetry(r, retry, res, finalize)
		if err == nil {
			res.Final = att
			return res, nil
		}
		last = err
	}
	if last == nil {
		last = frame.Fail(ReasonDeformationFailed, "sequential")
	}
	e.log.Failure = last.Error()
	return res, last
}

// catalogueComponent is §8.6 for component i.
func (e *engine) catalogueComponent(r *rng.RNG, i int) (CatalogueEntry, bool) {
	cfg := &e.cfg
	m := e.g.Components[i]
	ov := e.g.Overlaps[i]
	cl := CatalogueLog{Component: i}
	defer func() { e.log.Catalogue = append(e.log.Catalogue, cl) }()
	for att := 0; att < cfg.CatalogueAttempts; att++ {
		al := catAttemptLog{Attempt: att}
		sels, sl := e.selectAnatomies(r, ov)
		al.Selection = sl
		anats, expPts, conPts := e.placeClusters(r, m, sels, &al)
		if len(anats) == 0 {
			al.Result = "no anatomy with points"
			if len(sels) == 0 {
				al.Result = "nothing selected"
			}
			cl.Attempts = append(cl.Attempts, al)
			continue
		}
		ordered, E, K := orderAnatomies(anats)
		n, dl, ok := e.deform(r, m, E, K, true)
		al.Deform = &dl
		if !ok {
			al.Result = dl.Failed
			cl.Attempts = append(cl.Attempts, al)
			continue
		}
		v := e.validate(n, m, expPts, conPts, nil, Expansion)
		al.Validation = &v
		if !v.Valid {
			al.Result = "invalid: " + v.Reason
			cl.Attempts = append(cl.Attempts, al)
			continue
		}
		al.Result = "valid"
		cl.Attempts = append(cl.Attempts, al)
		entry := CatalogueEntry{Component: i, Anatomies: ordered, Mask: n.full(), RetryCount: att, LesionOverlap: ov.LesionOverlap, Log: cl}
		for _, a := range ordered {
			switch flagSide(a.Name) {
			case "left":
				entry.Left = true
			case "right":
				entry.Right = true
			}
		}
		return entry, true
	}
	return CatalogueEntry{}, false
}

// placeClusters places a cluster of points on component m for each
// selected anatomy (§8.3), each clear of the clusters of the other
// operation placed before it, and logs every anatomy in al. It returns the
// anatomies that got points, in selection order, and all expansion and
// contraction points.
func (e *engine) placeClusters(r *rng.RNG, m mask.Mask, sels []selection, al *catAttemptLog) (anats []AnatomyPoints, expPts, conPts []mask.Point) {
	for _, s := range sels {
		avoid := conPts
		if s.Op == Contraction {
			avoid = expPts
		}
		pts, widths, ok, tries := e.cluster(r, m, e.region(s.Name), s.Op, s.Depth, avoid, e.cfg.PointSeparationPx, e.cfg.PointWidths)
		lg := anatomyLog{Name: s.Name, Operation: s.Op.String(), Depth: s.Depth, Tries: tries, Kept: ok}
		if ok {
			ap := AnatomyPoints{Name: s.Name, Op: s.Op, Points: pts, Widths: widths, Side: sideOf(s.Name), Center: center(pts)}
			c := [2]int{ap.Center.X, ap.Center.Y}
			lg.Center = &c
			anats = append(anats, ap)
			if s.Op == Expansion {
				expPts = append(expPts, pts...)
			} else {
				conPts = append(conPts, pts...)
			}
		}
		al.Anatomies = append(al.Anatomies, lg)
	}
	return anats, expPts, conPts
}

// orderAnatomies puts the expansion anatomies first, then the contraction
// ones, each in selection order, and returns them with the expansion
// prompts and the contraction points of one deformation.
func orderAnatomies(anats []AnatomyPoints) (ordered []AnatomyPoints, E []prompt, K []mask.Point) {
	ordered = make([]AnatomyPoints, 0, len(anats))
	for _, a := range anats {
		if a.Op == Expansion {
			ordered = append(ordered, a)
			for _, p := range a.Points {
				E = append(E, prompt{p, a.Side})
			}
		}
	}
	for _, a := range anats {
		if a.Op == Contraction {
			ordered = append(ordered, a)
			K = append(K, a.Points...)
		}
	}
	return ordered, E, K
}

// flagSide is the flag rule of §8.6: a name containing "left" sets left,
// else one containing "right" sets right.
func flagSide(name string) string {
	switch {
	case strings.Contains(name, "left"):
		return "left"
	case strings.Contains(name, "right"):
		return "right"
	}
	return ""
}

// seqRetry is the state one sequential retry (§8.7) carries from
// component to component: its log, the attempt being built and the
// selected anatomies not yet applied.
type seqRetry struct {
	rl       RetryLog
	att      *Attempt
	selected []string
}

// fail records why the retry failed and returns the case error.
func (s *seqRetry) fail(why string) (*Attempt, error) {
	s.rl.Result = why
	return nil, frame.Fail(ReasonDeformationFailed, "sequential")
}

// sequentialRetry is one retry of §8.7, ending with the marker check and
// the finalize hook.
func (e *engine) sequentialRetry(r *rng.RNG, retry int, res *Result, finalize func(*Attempt) error) (*Attempt, error) {
	s := &seqRetry{rl: RetryLog{Retry: retry}}
	defer func() { e.log.Sequential = append(e.log.Sequential, s.rl) }()
	k := r.IntRange(1, e.cfg.SequentialAnatomiesMax)
	s.rl.K = k
	for _, n := range rng.Sample(r, res.Possible, min(k, len(res.Possible))) {
		if !slices.Contains(s.selected, n) {
			s.selected = append(s.selected, n)
		}
	}
	s.rl.Selected = append([]string(nil), s.selected...)
	s.att = &Attempt{Masks: map[string]mask.Mask{}}
	for i, entry := range res.Catalogue {
		p, why := e.sequentialComponent(r, s, i, entry.Anatomies)
		s.rl.Components = append(s.rl.Components, p.cr)
		if why != "" {
			return s.fail(why)
		}
		s.att.Components = append(s.att.Components, p.cs)
	}
	// Marker separation (§8.7 step 3).
	s.rl.Markers = markerCheck(s.att.Steps(), e.cfg.MinMarkerSeparation)
	if !s.rl.Markers.OK {
		return s.fail("markers too close")
	}
	if finalize != nil {
		if err := finalize(s.att); err != nil {
			s.rl.Finalize = err.Error()
			s.rl.Result = "finalize failed"
			return nil, err
		}
	}
	s.rl.Result = "success"
	return s.att, nil
}

// componentPass is one component's walk through its targets in a
// sequential retry: expansion targets, then contraction targets, each step
// applied to the state the previous one left.
type componentPass struct {
	i       int
	targets [2][]*AnatomyPoints // by Op, in shuffled order
	forFake [2][]mask.Point     // exp_for_fake / con_for_fake, fixed for the pass
	all     [2][]mask.Point     // exp / con points of the steps so far
	state   mask.Mask           // the component after the last valid step
	flow    string              // the name of state
	cs      ComponentSteps
	cr      compRetryLog
}

// sequentialComponent applies the selected anatomies of component i. On
// failure it returns why; the pass's log is complete either way.
func (e *engine) sequentialComponent(r *rng.RNG, s *seqRetry, i int, anats []AnatomyPoints) (*componentPass, string) {
	optimal := e.g.Components[i]
	s.att.put(OptimalName(i), optimal)
	p := &componentPass{i: i, state: optimal, flow: OptimalName(i), cs: ComponentSteps{Component: i}}
	p.targets, p.cr = sequentialTargets(r, i, anats, s.selected)
	for op := range p.targets {
		for _, a := range p.targets[op] {
			p.forFake[op] = append(p.forFake[op], a.Points...)
		}
	}
	for _, op := range []Op{Expansion, Contraction} {
		if len(p.targets[op]) == 0 {
			s.att.put(SID(i)+"_no_"+op.String(), optimal)
			if op == Expansion {
				p.cs.NoExpansion = true
			} else {
				p.cs.NoContraction = true
			}
			continue
		}
		for n, a := range p.targets[op] {
			sl, why := e.sequentialStep(r, s, p, op, n+1, a)
			p.cr.Steps = append(p.cr.Steps, sl)
			if why != "" {
				return p, why
			}
		}
	}
	p.cs.Undeformed = len(p.targets[Expansion]) == 0 && len(p.targets[Contraction]) == 0
	return p, ""
}

// sequentialTargets shuffles component i's catalogue anatomies and keeps
// the selected ones, by operation in shuffled order.
func sequentialTargets(r *rng.RNG, i int, anats []AnatomyPoints, selected []string) ([2][]*AnatomyPoints, compRetryLog) {
	byName := map[string]*AnatomyPoints{}
	names := make([]string, len(anats))
	for j := range anats {
		a := &anats[j]
		byName[a.Name] = a
		names[j] = a.Name
	}
	rng.Shuffle(r, names)
	var targets [2][]*AnatomyPoints
	for _, n := range names {
		a := byName[n]
		if slices.Contains(selected, n) {
			targets[a.Op] = append(targets[a.Op], a)
		}
	}
	cr := compRetryLog{Component: i, Shuffled: names}
	for _, a := range targets[Expansion] {
		cr.TargetsExp = append(cr.TargetsExp, a.Name)
	}
	for _, a := range targets[Contraction] {
		cr.TargetsCon = append(cr.TargetsCon, a.Name)
	}
	return targets, cr
}

// sequentialStep applies anatomy a with operation op as step idx
// (1-based) of pass p, then places its fakes. On failure it returns why,
// and p and s are left as they were apart from p.all.
func (e *engine) sequentialStep(r *rng.RNG, s *seqRetry, p *componentPass, op Op, idx int, a *AnatomyPoints) (stepLog, string) {
	p.all[op] = append(p.all[op], a.Points...)
	var E []prompt
	var K []mask.Point
	if op == Expansion {
		for _, pt := range a.Points {
			E = append(E, prompt{pt, a.Side})
		}
	} else {
		K = a.Points
	}
	sl := stepLog{Anatomy: a.Name, Operation: op.String(), Points: ptsJSON(a.Points), Center: [2]int{a.Center.X, a.Center.Y}}
	ncrop, dl, ok := e.deform(r, p.state, E, K, true)
	sl.Deform = dl
	if !ok {
		return sl, "step " + a.Name + ": " + dl.Failed
	}
	c := a.Center
	v := e.validate(ncrop, p.state, p.all[Expansion], p.all[Contraction], &c, op)
	sl.Validation = &v
	if !v.Valid {
		return sl, "step " + a.Name + " invalid: " + v.Reason
	}
	name := stepName(p.i, op, idx)
	nm := ncrop.full()
	sl.Name = name
	st := Step{Component: p.i, Op: op, Index: idx, Name: name, Anatomy: a.Name,
		Points: a.Points, Center: a.Center, Mask: nm, Before: name, After: p.flow}
	prev := append(append([]mask.Point(nil), p.all[Expansion]...), p.all[Contraction]...)
	for _, fop := range []Op{op.Opposite(), op} {
		sl.FakeCalls = append(sl.FakeCalls, e.fakeCall(r, &st, fop, p.forFake, prev))
	}
	s.att.put(name, nm)
	for _, f := range st.Fakes {
		s.att.put(f.Name, f.Mask)
	}
	if op == Expansion {
		p.cs.Expansion = append(p.cs.Expansion, st)
	} else {
		p.cs.Contraction = append(p.cs.Contraction, st)
	}
	s.selected = removeName(s.selected, a.Name)
	p.flow, p.state = name, nm
	return sl, ""
}

// stepName is the mask name of step idx (1-based) of component i:
// suboptimal_component_<i>_exp<idx> or ..._cont<idx>.
func stepName(i int, op Op, idx int) string {
	suffix := "_exp"
	if op == Contraction {
		suffix = "_cont"
	}
	return fmt.Sprintf("%s%s%d", SID(i), suffix, idx)
}

// markerCheck is the marker-separation check of §8.7 step 3: every pair of
// step centres at least minSep apart.
func markerCheck(steps []*Step, minSep int) *markerLog {
	ml := &markerLog{OK: true}
	sep2 := minSep * minSep
	for a := range steps {
		ml.Centers = append(ml.Centers, [2]int{steps[a].Center.X, steps[a].Center.Y})
		for b := 0; b < a; b++ {
			if mask.Dist2(steps[a].Center, steps[b].Center) < sep2 {
				ml.TooClose = append(ml.TooClose, [2]int{b, a})
				ml.OK = false
			}
		}
	}
	return ml
}

func removeName(xs []string, s string) []string {
	out := xs[:0:0]
	for _, x := range xs {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
