package deform

import (
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

func pointJSON(p mask.Point) *ojson.Value {
	return ojson.Arr(ojson.Int(int64(p.X)), ojson.Int(int64(p.Y)))
}

func pointsJSON(ps []mask.Point) *ojson.Value {
	a := ojson.Arr()
	for _, p := range ps {
		a.A = append(a.A, pointJSON(p))
	}
	return a
}

// DeformationResultsJSON is the per-key_id object of deformation_results.json
// (build.md §11), keys in the reference order:
//
//	{"org_deformation_results": {"possible_deformation_anatomy", "deformation_results"},
//	 "qa_deformation_results": {"expansion", "contraction", "no_deformation"},
//	 "geometrical_mask_infos", "qa_deformation_success": true}
//
// geoInfos is anatomy.GeometricalMaskInfos of the case. Every mask_path is
// a mask name (the file masks/<key_id>/<name>.png), as the reference writes
// it and as its QA generation reads it back: an undeformed component's
// entry names <sid>_no_contraction (§8.7 step 2.5), a step its own name
// (§9.5 fake pool).
func (res *Result) DeformationResultsJSON(geoInfos *ojson.Value) *ojson.Value {
	dr := ojson.NewObject()
	for _, c := range res.Catalogue {
		def := ojson.NewObject()
		widths := ojson.NewObject()
		ops := ojson.NewObject()
		for _, a := range c.Anatomies {
			def.Set(a.Name, ojson.NewObject().
				Set("operation", ojson.Str(a.Op.String())).
				Set("points", pointsJSON(a.Points)))
			widths.Set(a.Name, ojson.Ints(a.Widths))
			ops.Set(a.Name, ojson.Bool(a.Op == Expansion))
		}
		lo := ojson.NewObject()
		for _, o := range c.LesionOverlap {
			lo.Set(o.Name, ojson.NewObject().
				Set("overlap_ratio", ojson.Float(o.Ratio)).
				Set("key", ojson.Str(o.Key)))
		}
		dr.Set(SID(c.Component), ojson.NewObject().
			Set("deformation_result", ojson.NewObject().
				Set("left", ojson.Bool(c.Left)).
				Set("right", ojson.Bool(c.Right)).
				Set("deformation", def)).
			Set("anatomy_depth_width_levels", widths).
			Set("deformation_success", ojson.Bool(true)).
			Set("retry_count", ojson.Int(int64(c.RetryCount))).
			Set("lesion_overlap", lo).
			Set("anatomy_operations", ops))
	}
	org := ojson.NewObject().
		Set("possible_deformation_anatomy", ojson.Strs(res.Possible)).
		Set("deformation_results", dr)

	exp, con, none := ojson.NewObject(), ojson.NewObject(), ojson.NewObject()
	if res.Final != nil {
		for _, cs := range res.Final.Components {
			sid := SID(cs.Component)
			if len(cs.Expansion) > 0 {
				a := ojson.Arr()
				for i := range cs.Expansion {
					a.A = append(a.A, stepJSON(&cs.Expansion[i]))
				}
				exp.Set(sid, a)
			}
			if len(cs.Contraction) > 0 {
				a := ojson.Arr()
				for i := range cs.Contraction {
					a.A = append(a.A, stepJSON(&cs.Contraction[i]))
				}
				con.Set(sid, a)
			}
			if cs.Undeformed {
				none.Set(sid, ojson.Arr(ojson.NewObject().
					Set("suboptimal_component_id", ojson.Str(sid)).
					Set("mask_path", ojson.Str(sid+"_no_contraction"))))
			}
		}
	}
	qa := ojson.NewObject().
		Set("expansion", exp).
		Set("contraction", con).
		Set("no_deformation", none)
	if geoInfos == nil {
		geoInfos = ojson.Arr()
	}
	return ojson.NewObject().
		Set("org_deformation_results", org).
		Set("qa_deformation_results", qa).
		Set("geometrical_mask_infos", geoInfos).
		Set("qa_deformation_success", ojson.Bool(true))
}

// stepJSON is one STEP of §11; a contraction step lists
// fake_points_contraction before fake_points_expansion (reference order).
func stepJSON(s *Step) *ojson.Value {
	o := ojson.NewObject().Set("suboptimal_component_id", ojson.Str(SID(s.Component)))
	if s.Op == Expansion {
		o.Set("exp_idx", ojson.Int(int64(s.Index)))
	} else {
		o.Set("cont_idx", ojson.Int(int64(s.Index)))
	}
	o.Set("anatomy", ojson.Str(s.Anatomy)).
		Set("points", pointsJSON(s.Points)).
		Set("mask_path", ojson.Str(s.Name)).
		Set("center_point", pointJSON(s.Center))
	fm := ojson.Arr()
	for _, f := range s.Fakes {
		fm.A = append(fm.A, ojson.NewObject().
			Set("org_mask", ojson.Str(s.Name)).
			Set("fake_mask", ojson.Str(f.Name)))
	}
	o.Set("fake_masks", fm)
	if s.Op == Expansion {
		o.Set("fake_points_expansion", pointsJSON(s.FakePointsExpansion)).
			Set("fake_points_contraction", pointsJSON(s.FakePointsContraction))
	} else {
		o.Set("fake_points_contraction", pointsJSON(s.FakePointsContraction)).
			Set("fake_points_expansion", pointsJSON(s.FakePointsExpansion))
	}
	return o.Set("revision", ojson.Str(s.Op.Opposite().String())).
		Set("revision_flow", ojson.NewObject().
			Set("before revision", ojson.Str(s.Before)).
			Set("after revision", ojson.Str(s.After)))
}
