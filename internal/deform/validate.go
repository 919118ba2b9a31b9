package deform

import (
	"github.com/chexpercept/chexpercept/internal/mask"
)

// validation is the outcome of §8.5 for one deformation result.
type validation struct {
	Valid        bool     `json:"valid"`
	FailedExp    [][2]int `json:"failed_expansion_points,omitempty"`
	FailedCon    [][2]int `json:"failed_contraction_points,omitempty"`
	Changed      int      `json:"changed_px"`
	ChangeNeeded float64  `json:"changed_px_needed"`
	IoU          float64  `json:"iou"`
	CenterCheck  *bool    `json:"center_in_change,omitempty"`
	Reason       string   `json:"reason,omitempty"`
}

// validate applies checks 1–3 of §8.5 (and check 4 when centre is given
// and require_center_in_change is set) to n against old.
func (e *engine) validate(n cropped, old mask.Mask, expPts, conPts []mask.Point, centre *mask.Point, centreOp Op) validation {
	var v validation
	for _, p := range expPts {
		if n.at(p) == 0 {
			v.FailedExp = append(v.FailedExp, [2]int{p.X, p.Y})
		}
	}
	for _, p := range conPts {
		if n.at(p) != 0 {
			v.FailedCon = append(v.FailedCon, [2]int{p.X, p.Y})
		}
	}
	// |N|, |N ∧ old| over the crop (N is off outside it); |old| is cached
	// per base mask.
	inter, nN := 0, 0
	if n.c.W != 0 {
		for y := n.b.y0; y <= n.b.y1; y++ {
			crow := n.c.Row(y - n.b.y0)
			orow := old.Pix[y*old.W+n.b.x0 : y*old.W+n.b.x1+1]
			for x, a := range crow {
				nN += int(a)
				inter += int(a & orow[x])
			}
		}
	}
	oldN := e.rings.count(old)
	union := nN + oldN - inter
	v.Changed = union - inter
	v.ChangeNeeded = max(float64(e.cfg.MinChangePx), float64(e.cfg.MinChangeFrac*float64(oldN)))
	if union > 0 {
		v.IoU = float64(inter) / float64(union)
	}
	switch {
	case len(v.FailedExp) > 0 || len(v.FailedCon) > 0:
		v.Reason = "points"
	case float64(v.Changed) < v.ChangeNeeded:
		v.Reason = "min_change"
	case v.IoU > e.cfg.MaxIoU:
		v.Reason = "max_iou"
	}
	if centre != nil && e.cfg.RequireCenterInChange {
		nv, ov := n.at(*centre), old.Pix[centre.Y*old.W+centre.X]
		var ok bool
		if centreOp == Expansion {
			ok = nv == 1 && ov == 0
		} else {
			ok = ov == 1 && nv == 0
		}
		v.CenterCheck = &ok
		if !ok && v.Reason == "" {
			v.Reason = "center_not_in_change"
		}
	}
	v.Valid = v.Reason == ""
	return v
}
