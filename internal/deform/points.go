package deform

import (
	"math"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// Zones are the six zone names in canonical order (§6).
var Zones = []string{
	"right upper zone lung", "right mid zone lung", "right lung base",
	"left upper zone lung", "left mid zone lung", "left lung base",
}

// Reasons an operation was chosen (§8.2), for the inspect log.
const (
	whyCoin         = "coin"
	whyForceCon     = "ratio >= force_contraction_region_ratio"
	whyForceExp     = "ratio <= force_expansion_region_ratio"
	whyLungForceCon = "lung >= force_contraction_lung_ratio"
)

// selection is one selected anatomy with its operation.
type selection struct {
	Name  string
	Op    Op
	Depth int
}

// candidateLog records one candidate of §8.2 with its coin and the rule
// that decided its operation.
type candidateLog struct {
	Name      string  `json:"name"`
	Ratio     float64 `json:"ratio"`
	Coin      bool    `json:"coin"`
	Operation string  `json:"operation"`
	Why       string  `json:"why"`
}

type zoneLog struct {
	Zone       string         `json:"zone"`
	LungRatio  float64        `json:"same_side_lung_ratio"`
	Candidates []candidateLog `json:"candidates"`
	Chosen     string         `json:"chosen"`
}

type selectionLog struct {
	Zones []zoneLog `json:"zones,omitempty"`
	// Heart-type only.
	HeartK     int            `json:"heart_k,omitempty"`
	HeartZones []candidateLog `json:"heart_zones,omitempty"`
}

// selectAnatomies is §8.2 for one component.
func (e *engine) selectAnatomies(r *rng.RNG, ov ComponentOverlap) ([]selection, selectionLog) {
	if e.g.HeartType {
		return e.selectHeart(r, ov)
	}
	return e.selectLung(r, ov)
}

func (e *engine) selectLung(r *rng.RNG, ov ComponentOverlap) ([]selection, selectionLog) {
	cfg := &e.cfg
	var sl selectionLog
	var out []selection
	regions := map[string]float64{}
	var regionOrder []string
	zoneSet := map[string]bool{}
	for _, o := range ov.LesionOverlap {
		switch o.Key {
		case "lung_regions":
			regions[o.Name] = o.Ratio
			regionOrder = append(regionOrder, o.Name)
		case "zones":
			zoneSet[o.Name] = true
		}
	}
	for _, z := range Zones {
		if !zoneSet[z] {
			continue
		}
		var cands []string
		for _, name := range regionOrder {
			if strings.HasSuffix(name, "& "+z) {
				cands = append(cands, name)
			}
		}
		side := sideOf(z)
		if strings.HasSuffix(z, "lung base") {
			// Ours: only the CPA of the zone's own side (§8.2 fix).
			cpa := side + " costophrenic angle"
			if _, ok := regions[cpa]; ok {
				cands = append(cands, cpa)
			}
		}
		if len(cands) == 0 {
			continue
		}
		lungRatio := ov.RightRatio
		if side == "left" {
			lungRatio = ov.LeftRatio
		}
		zl := zoneLog{Zone: z, LungRatio: lungRatio}
		ops := make([]Op, len(cands))
		for i, c := range cands {
			coin := r.Coin()
			expand, why := coin, whyCoin
			ratio := regions[c]
			if ratio >= cfg.ForceContractionRegionRatio {
				expand, why = false, whyForceCon
			} else if ratio <= cfg.ForceExpansionRegionRatio {
				expand, why = true, whyForceExp
			}
			if lungRatio >= cfg.ForceContractionLungRatio {
				expand, why = false, whyLungForceCon
			}
			ops[i] = Contraction
			if expand {
				ops[i] = Expansion
			}
			zl.Candidates = append(zl.Candidates, candidateLog{Name: c, Ratio: ratio, Coin: coin, Operation: ops[i].String(), Why: why})
		}
		k := r.IntN(len(cands))
		zl.Chosen = cands[k]
		sl.Zones = append(sl.Zones, zl)
		out = append(out, selection{Name: cands[k], Op: ops[k], Depth: cfg.DepthLung})
	}
	return out, sl
}

func (e *engine) selectHeart(r *rng.RNG, ov ComponentOverlap) ([]selection, selectionLog) {
	cfg := &e.cfg
	var sl selectionLog
	ratios := map[string]float64{}
	var zones []string
	for _, z := range Zones {
		for _, o := range ov.LesionOverlap {
			if o.Key == "zones" && o.Name == z {
				zones = append(zones, z)
				ratios[z] = o.Ratio
			}
		}
	}
	k := r.IntRange(1, cfg.HeartZonesMax)
	sl.HeartK = k
	if len(zones) > k {
		zones = rng.Sample(r, zones, k)
	}
	var out []selection
	for _, z := range zones {
		coin := r.Coin()
		op := Contraction
		if coin {
			op = Expansion
		}
		sl.HeartZones = append(sl.HeartZones, candidateLog{Name: z, Ratio: ratios[z], Coin: coin, Operation: op.String(), Why: whyCoin})
		out = append(out, selection{Name: z, Op: op, Depth: cfg.DepthHeart})
	}
	return out, sl
}

// pointsCall is Points(M, R, op, D, avoid, sep, widths1) of §8.3, one call.
func (e *engine) pointsCall(r *rng.RNG, m, region mask.Mask, op Op, D int, avoid []mask.Point, sep int, widths1 []int) ([]mask.Point, []int, bool) {
	spacing2 := e.cfg.PointSpacingPx * e.cfg.PointSpacingPx
	sep2 := sep * sep
	var widths []int
	var pts, prev []mask.Point
	for d := 1; d <= D; d++ {
		C := inRegion(e.pointRing(m, op, d), region)
		w := depthWidth(r, d, widths, widths1)
		widths = append(widths, w)
		if len(C) == 0 {
			continue
		}
		if len(avoid) > 0 {
			C = farFrom(C, avoid, sep2)
		}
		if len(C) == 0 {
			continue
		}
		var nw []mask.Point
		if d == 1 {
			nw = firstDepthPoints(r, C, w, spacing2)
			pts = append(pts, nw...)
		} else {
			if len(prev) == 0 {
				continue
			}
			if nw, pts = deeperPoints(r, C, prev, w, pts); len(nw) == 0 {
				continue
			}
		}
		prev = nw
	}
	sum := 0
	for _, w := range widths {
		sum += w
	}
	return pts, widths, len(pts) == sum && len(pts) > 0
}

// depthWidth draws the width of depth d given the widths of the depths
// before it: one of widths1 at depth 1, then below the previous width but
// at least 2.
func depthWidth(r *rng.RNG, d int, widths, widths1 []int) int {
	if d == 1 {
		return rng.Choice(r, widths1)
	}
	if last := widths[len(widths)-1]; last > 2 {
		return r.IntRange(2, last-1)
	}
	return 2
}

// farFrom keeps, in order and in place, the candidates of C at squared
// distance ≥ sep2 from every point of avoid.
func farFrom(C, avoid []mask.Point, sep2 int) []mask.Point {
	k := 0
	for _, c := range C {
		if allFar(c, avoid, sep2) {
			C[k] = c
			k++
		}
	}
	return C[:k]
}

// allFar reports whether c lies at squared distance ≥ d2 from every point
// of ps.
func allFar(c mask.Point, ps []mask.Point, d2 int) bool {
	for _, p := range ps {
		if mask.Dist2(c, p) < d2 {
			return false
		}
	}
	return true
}

// firstDepthPoints is the depth-1 cluster: a random candidate, then up to
// w−1 more, each the candidate nearest to the first one among those at
// least the point spacing from every point taken.
func firstDepthPoints(r *rng.RNG, C []mask.Point, w, spacing2 int) []mask.Point {
	first := rng.Choice(r, C)
	nw := []mask.Point{first}
	for rep := 0; rep < w-1; rep++ {
		best, bestD := -1, 0
		for i, c := range C {
			if slices.Contains(nw, c) || !allFar(c, nw, spacing2) {
				continue
			}
			if dd := mask.Dist2(c, first); best < 0 || dd < bestD {
				best, bestD = i, dd
			}
		}
		if best < 0 {
			break
		}
		nw = append(nw, C[best])
	}
	return nw
}

// deeperPoints is a cluster below depth 1: for each of up to w points
// sampled from the previous depth's, the nearest candidate not yet in pts.
// It returns the new points and pts with them appended.
func deeperPoints(r *rng.RNG, C, prev []mask.Point, w int, pts []mask.Point) (nw, _ []mask.Point) {
	for _, q := range rng.Sample(r, prev, min(w, len(prev))) {
		best, bestD := -1, 0
		for i, c := range C {
			if slices.Contains(pts, c) {
				continue
			}
			if dd := mask.Dist2(c, q); best < 0 || dd < bestD {
				best, bestD = i, dd
			}
		}
		if best >= 0 {
			nw = append(nw, C[best])
			pts = append(pts, C[best])
		}
	}
	return nw, pts
}

// center is (round_half_even(mean x), round_half_even(mean y)).
func center(ps []mask.Point) mask.Point {
	if len(ps) == 0 {
		return mask.Point{}
	}
	sx, sy := 0, 0
	for _, p := range ps {
		sx += p.X
		sy += p.Y
	}
	n := float64(len(ps))
	return mask.Point{X: int(math.RoundToEven(float64(sx) / n)), Y: int(math.RoundToEven(float64(sy) / n))}
}

// pointsTryLog records one Points call.
type pointsTryLog struct {
	Widths  []int    `json:"widths"`
	Points  [][2]int `json:"points"`
	Success bool     `json:"success"`
}

// cluster runs up to anatomy_tries Points calls and keeps the first
// success (§8.3).
func (e *engine) cluster(r *rng.RNG, m, region mask.Mask, op Op, D int, avoid []mask.Point, sep int, widths1 []int) ([]mask.Point, []int, bool, []pointsTryLog) {
	var logs []pointsTryLog
	for t := 0; t < e.cfg.AnatomyTries; t++ {
		pts, widths, ok := e.pointsCall(r, m, region, op, D, avoid, sep, widths1)
		logs = append(logs, pointsTryLog{Widths: widths, Points: ptsJSON(pts), Success: ok})
		if ok {
			return pts, widths, true, logs
		}
	}
	return nil, nil, false, logs
}

func ptsJSON(ps []mask.Point) [][2]int {
	out := make([][2]int, len(ps))
	for i, p := range ps {
		out[i] = [2]int{p.X, p.Y}
	}
	return out
}
