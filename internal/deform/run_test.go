package deform

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// checkInvariants verifies the §8.5–§8.8 guarantees on a successful result.
func checkInvariants(t *testing.T, label string, in *Input, res *Result) {
	t.Helper()
	cfg := in.Cfg
	att := res.Final
	if att == nil {
		t.Fatalf("%s: no final attempt", label)
	}
	for i, c := range res.Catalogue {
		if mask.CountXor(c.Mask, in.Prep.Components[i]) < cfg.MinChangePx {
			t.Errorf("%s: catalogue mask %d changes too little", label, i)
		}
	}
	steps := att.Steps()
	for _, st := range steps {
		old, ok := att.Masks[st.After]
		if !ok {
			t.Fatalf("%s: %s: previous mask %q not in the attempt", label, st.Name, st.After)
		}
		if got, ok := att.Masks[st.Name]; !ok || !mask.Equal(got, st.Mask) {
			t.Errorf("%s: step mask %s not registered", label, st.Name)
		}
		changed := mask.CountXor(st.Mask, old)
		need := max(float64(cfg.MinChangePx), cfg.MinChangeFrac*float64(old.Count()))
		if float64(changed) < need {
			t.Errorf("%s: %s changes %d px < %v", label, st.Name, changed, need)
		}
		if iou := mask.IoU(st.Mask, old); iou > cfg.MaxIoU {
			t.Errorf("%s: %s IoU %v > %v", label, st.Name, iou, cfg.MaxIoU)
		}
		c := st.Center
		if st.Op == Expansion {
			if !st.Mask.At(c.X, c.Y) || old.At(c.X, c.Y) {
				t.Errorf("%s: %s: GT point %v not in the added area", label, st.Name, c)
			}
			for _, p := range st.Points {
				if !st.Mask.At(p.X, p.Y) {
					t.Errorf("%s: %s: expansion point %v not covered", label, st.Name, p)
				}
			}
		} else {
			if st.Mask.At(c.X, c.Y) || !old.At(c.X, c.Y) {
				t.Errorf("%s: %s: GT point %v not in the removed area", label, st.Name, c)
			}
			for _, p := range st.Points {
				if st.Mask.At(p.X, p.Y) {
					t.Errorf("%s: %s: contraction point %v still on", label, st.Name, p)
				}
			}
		}
		if len(st.Fakes) > 2*cfg.FakeMasksPerCall {
			t.Errorf("%s: %s has %d fakes", label, st.Name, len(st.Fakes))
		}
		for _, f := range st.Fakes {
			if !strings.HasPrefix(f.Name, st.Name+"_fake_"+f.Op.String()+"_") {
				t.Errorf("%s: fake name %q", label, f.Name)
			}
			if mask.CountXor(f.Mask, st.Mask) < cfg.MinChangePx {
				t.Errorf("%s: fake %s differs from its step by too little", label, f.Name)
			}
			for _, o := range steps {
				if mask.Equal(f.Mask, o.Mask) {
					t.Errorf("%s: fake %s equals step %s", label, f.Name, o.Name)
				}
			}
			if _, ok := att.Masks[f.Name]; !ok {
				t.Errorf("%s: fake %s not registered", label, f.Name)
			}
		}
		for _, p := range append(append([]mask.Point(nil), st.FakePointsExpansion...), st.FakePointsContraction...) {
			if mask.Dist2(p, c) < cfg.FakePointSpacingPx*cfg.FakePointSpacingPx {
				t.Errorf("%s: %s: fake point %v within %d px of the centre", label, st.Name, p, cfg.FakePointSpacingPx)
			}
		}
	}
	for a := range steps {
		for b := 0; b < a; b++ {
			if mask.Dist2(steps[a].Center, steps[b].Center) < cfg.MinMarkerSeparation*cfg.MinMarkerSeparation {
				t.Errorf("%s: centres of %s and %s too close", label, steps[a].Name, steps[b].Name)
			}
		}
	}
	for _, cs := range att.Components {
		sid := SID(cs.Component)
		if cs.NoExpansion != (len(cs.Expansion) == 0) || cs.NoContraction != (len(cs.Contraction) == 0) {
			t.Errorf("%s: %s: no_* flags inconsistent", label, sid)
		}
		if cs.NoContraction {
			if m, ok := att.Masks[sid+"_no_contraction"]; !ok || !mask.Equal(m, in.Prep.Components[cs.Component]) {
				t.Errorf("%s: %s_no_contraction missing or not the optimal mask", label, sid)
			}
		}
		// Revision flow chains back to the optimal mask.
		all := append(append([]Step(nil), cs.Expansion...), cs.Contraction...)
		if len(all) > 0 && all[0].After != OptimalName(cs.Component) {
			t.Errorf("%s: first step's after = %q", label, all[0].After)
		}
		for k := 1; k < len(all); k++ {
			if all[k].After != all[k-1].Name {
				t.Errorf("%s: flow broken at %s", label, all[k].Name)
			}
		}
	}
}

func resultBytes(res *Result) []byte {
	var b bytes.Buffer
	b.Write(ojson.MarshalCompact(res.DeformationResultsJSON(nil)))
	if res.Final != nil {
		for _, n := range res.Final.Names {
			m := res.Final.Masks[n]
			fmt.Fprintf(&b, "\n%s %d ", n, m.Count())
			b.Write(m.Pix)
		}
	}
	return b.Bytes()
}

func TestRunSynthetic(t *testing.T) {
	t.Parallel()
	seeds := 4
	if testing.Short() {
		seeds = 2
	}
	for _, heart := range []bool{false, true} {
		in := synthInput(t, heart)
		var prev []byte
		steps := 0
		for s := 0; s < seeds; s++ {
			label := fmt.Sprintf("heart=%v/seed=%d", heart, s)
			res, err := Run(rng.New("chexpercept/case/"+label), in, nil)
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			checkInvariants(t, label, in, res)
			steps += len(res.Final.Steps())
			got := resultBytes(res)
			// Same seed: identical names, masks and JSON.
			res2, err := Run(rng.New("chexpercept/case/"+label), in, nil)
			if err != nil {
				t.Fatalf("%s: rerun: %v", label, err)
			}
			if !bytes.Equal(got, resultBytes(res2)) {
				t.Errorf("%s: same seed, different result", label)
			}
			if prev != nil && bytes.Equal(got, prev) {
				t.Errorf("%s: different seeds, identical result", label)
			}
			prev = got
		}
		if steps == 0 {
			t.Errorf("heart=%v: no steps in %d runs", heart, seeds)
		}
	}
}

func TestFinalizeHook(t *testing.T) {
	t.Parallel()
	in := synthInput(t, false)
	calls := 0
	res, err := Run(rng.New("hook"), in, func(a *Attempt) error {
		calls++
		if len(a.Steps()) == 0 && !a.Components[0].Undeformed {
			t.Error("finalize called on an attempt without steps or no_deformation")
		}
		if calls < 3 {
			return frame.Fail("insufficient_revision_options", "test")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err=%v calls=%d, want success on the third call", err, calls)
	}
	n := 0
	for _, rl := range res.Log.Sequential {
		if rl.Finalize != "" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("log shows %d finalize failures, want 2", n)
	}
	lj, err := res.Log.JSON()
	if err != nil {
		t.Fatalf("log JSON: %v", err)
	}
	seq := lj.Get("sequential")
	if seq == nil || len(seq.A) != 3 || seq.A[2].Get("result").S != "success" {
		t.Errorf("deformation.json sequential log: want 3 retries ending in success")
	}
	if b := lj.Get("catalogue").A[0].Get("attempts"); b == nil || len(b.A) == 0 || b.A[len(b.A)-1].Get("validation").Get("iou") == nil {
		t.Errorf("deformation.json catalogue log lacks validation details")
	}
	// Always failing: the case fails with finalize's error after all retries.
	_, err = Run(rng.New("hook2"), in, func(*Attempt) error {
		return frame.Fail("insufficient_revision_options", "never")
	})
	var ce *frame.CaseError
	if !errors.As(err, &ce) || ce.Reason != "insufficient_revision_options" {
		t.Errorf("always failing finalize: err = %v", err)
	}
}

func TestCatalogueFailure(t *testing.T) {
	t.Parallel()
	in := synthInput(t, false)
	g, err := in.Geometry()
	if err != nil {
		t.Fatal(err)
	}
	g.Overlaps = []ComponentOverlap{{}} // nothing overlapped: nothing to select
	res, err := RunGeometry(rng.New("x"), g, in.Cfg, nil)
	var ce *frame.CaseError
	if !errors.As(err, &ce) || ce.Reason != ReasonDeformationFailed || ce.Detail != "catalogue component 0" {
		t.Fatalf("err = %v, want deformation_failed: catalogue component 0", err)
	}
	if res == nil || len(res.Log.Catalogue) != 1 || len(res.Log.Catalogue[0].Attempts) != in.Cfg.CatalogueAttempts {
		t.Errorf("log should hold %d failed attempts", in.Cfg.CatalogueAttempts)
	}
	if _, err := res.Log.JSON(); err != nil {
		t.Errorf("log JSON: %v", err)
	}
}

func TestDeformationResultsJSON(t *testing.T) {
	t.Parallel()
	in := synthInput(t, false)
	var res *Result
	for s := 0; s < 20; s++ {
		r, err := Run(rng.New(fmt.Sprintf("json%d", s)), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Final.Steps()) > 0 {
			res = r
			break
		}
	}
	if res == nil {
		t.Fatal("no seed produced a step")
	}
	v, err := ojson.Parse(ojson.Marshal(res.DeformationResultsJSON(ojson.Arr())))
	if err != nil {
		t.Fatal(err)
	}
	keys := func(v *ojson.Value) string {
		var ks []string
		for _, m := range v.O {
			ks = append(ks, m.Key)
		}
		return strings.Join(ks, ",")
	}
	if got := keys(v); got != "org_deformation_results,qa_deformation_results,geometrical_mask_infos,qa_deformation_success" {
		t.Errorf("top keys %s", got)
	}
	org := v.Get("org_deformation_results")
	if got := keys(org); got != "possible_deformation_anatomy,deformation_results" {
		t.Errorf("org keys %s", got)
	}
	c0 := org.Get("deformation_results").Get("suboptimal_component_0")
	if got := keys(c0); got != "deformation_result,anatomy_depth_width_levels,deformation_success,retry_count,lesion_overlap,anatomy_operations" {
		t.Errorf("component keys %s", got)
	}
	if got := keys(c0.Get("deformation_result")); got != "left,right,deformation" {
		t.Errorf("deformation_result keys %s", got)
	}
	qa := v.Get("qa_deformation_results")
	if got := keys(qa); got != "expansion,contraction,no_deformation" {
		t.Errorf("qa keys %s", got)
	}
	for _, op := range []string{"expansion", "contraction"} {
		for _, m := range qa.Get(op).O {
			for _, st := range m.Value.A {
				want := "suboptimal_component_id,exp_idx,anatomy,points,mask_path,center_point,fake_masks,fake_points_expansion,fake_points_contraction,revision,revision_flow"
				if op == "contraction" {
					want = "suboptimal_component_id,cont_idx,anatomy,points,mask_path,center_point,fake_masks,fake_points_contraction,fake_points_expansion,revision,revision_flow"
				}
				if got := keys(st); got != want {
					t.Errorf("%s STEP keys %s", op, got)
				}
				// A mask name, as the reference writes it (its QA generation
				// adds it to the fake pool by name, §9.5): the step's own name.
				if mp := st.Get("mask_path").S; mp != st.Get("revision_flow").Get("before revision").S || !strings.HasPrefix(mp, "suboptimal_component_0_") {
					t.Errorf("mask_path %q is not the step's name", mp)
				}
				if p := st.Get("center_point"); p.Kind != ojson.KindArray || len(p.A) != 2 || p.A[0].Kind != ojson.KindNumber {
					t.Errorf("center_point is not [x, y]")
				}
			}
		}
	}
}

// TestNoDeformationMaskPath pins the mask_path of an undeformed
// component: the mask name <sid>_no_contraction (§8.7 step 2.5), which the
// reference's QA generation uses as the component's before, after and true
// mask; a file path there changes the revision options it rebuilds.
func TestNoDeformationMaskPath(t *testing.T) {
	t.Parallel()
	res := &Result{Final: &Attempt{Components: []ComponentSteps{
		{Component: 0, NoContraction: true, Expansion: []Step{{Component: 0, Op: Expansion, Index: 1,
			Name: "suboptimal_component_0_exp1", Before: "suboptimal_component_0_exp1", After: "optimal_component_0"}}},
		{Component: 1, NoExpansion: true, NoContraction: true, Undeformed: true},
	}}}
	qa := res.DeformationResultsJSON(nil).Get("qa_deformation_results")
	tests := []struct{ op, sid, want string }{
		{"expansion", "suboptimal_component_0", "suboptimal_component_0_exp1"},
		{"no_deformation", "suboptimal_component_1", "suboptimal_component_1_no_contraction"},
	}
	for _, tc := range tests {
		e := qa.Get(tc.op).Get(tc.sid)
		if e == nil || len(e.A) != 1 {
			t.Fatalf("%s has no single entry for %s: %s", tc.op, tc.sid, ojson.MarshalCompact(qa))
		}
		if got := e.A[0].Get("mask_path").S; got != tc.want {
			t.Errorf("%s %s mask_path %q, want %q", tc.op, tc.sid, got, tc.want)
		}
	}
	if qa.Get("no_deformation").Get("suboptimal_component_0") != nil {
		t.Errorf("a deformed component has a no_deformation entry")
	}
}

func TestConfigChecks(t *testing.T) {
	t.Parallel()
	in := synthInput(t, false)
	for _, tc := range []struct {
		key string
		mod func(c *buildcfg.Config)
	}{
		{"heart_zones_max", func(c *buildcfg.Config) { c.HeartZonesMax = 0 }},
		{"point_widths", func(c *buildcfg.Config) { c.PointWidths = nil }},
		{"organic_axis_range", func(c *buildcfg.Config) { c.OrganicAxisRange = [2]float64{0, 1} }},
		{"organic_cells", func(c *buildcfg.Config) { c.OrganicCells = []int{0} }},
		{"geo_window", func(c *buildcfg.Config) { c.GeoWindow = -1 }},
	} {
		cfg := in.Cfg
		tc.mod(&cfg)
		g, _ := in.Geometry()
		_, err := RunGeometry(rng.New("cfg"), g, cfg, nil)
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: err = %v, want an error naming the key", tc.key, err)
		}
	}
	// A component of the wrong size is an error naming it, not a panic.
	g, _ := in.Geometry()
	g.Components = []mask.Mask{mask.New(10, 10)}
	if _, err := RunGeometry(rng.New("cfg"), g, in.Cfg, nil); err == nil || !strings.Contains(err.Error(), "optimal_component_0") {
		t.Errorf("size mismatch: err = %v", err)
	}
}
