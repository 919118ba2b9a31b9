package qagen

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/deform"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/rng"
)

var (
	lungR = rect(0, 0, W/2, W)
	lungL = rect(W/2, 0, W, W)
)

func lungCtx(secondary bool) TokenContext {
	l := render.Lungs{ChexRight: lungR, ChexLeft: lungL}
	if secondary {
		l.CxasRight, l.CxasLeft, l.HasSecondary = rect(1, 1, W/2, W-1), rect(W/2, 1, W-1, W-1), true
	}
	return TokenContext{Lungs: l}
}

// oneComponent is the format.md §4 RR example: exp1 (with one fake
// contraction) then cont1 (with one fake expansion).
func oneComponent() *attemptBuilder {
	b := newAttempt()
	b.component(0, rect(10, 10, 20, 20))
	b.step(deform.Expansion, "right lower zone lung", p(300, 300), rect(10, 10, 24, 20),
		[]fakeSpec{{deform.Contraction, rect(12, 10, 24, 20)}}, nil, nil)
	b.step(deform.Contraction, "right mid zone lung", p(300, 700), rect(10, 13, 24, 20),
		[]fakeSpec{{deform.Expansion, rect(10, 13, 28, 20)}}, nil, nil)
	return b
}

// optionUnions renders every option's union mask.
func optionUnions(t *testing.T, rc *RevisionChoice) []mask.Mask {
	t.Helper()
	var out []mask.Mask
	for _, o := range rc.Options {
		u, err := rc.Tokens.Union(o.Masks)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// checkChoice checks the invariants of every successful §9.5 result.
func checkChoice(t *testing.T, rc *RevisionChoice, wantOptions int) {
	t.Helper()
	if len(rc.Options) != wantOptions {
		t.Fatalf("%d options, want %d", len(rc.Options), wantOptions)
	}
	nTrue := 0
	var fakes [][]string
	for k, o := range rc.Options {
		if o.Type == "true" {
			nTrue++
			if rc.AnswerIndex != k+1 || !slices.Equal(o.Masks, rc.TrueCombination) {
				t.Errorf("true option %d: answer index %d, masks %v", k+1, rc.AnswerIndex, o.Masks)
			}
			if o.RelativePath != fmt.Sprintf("option_%d_mask_answer.png", k+1) {
				t.Errorf("true option path %s", o.RelativePath)
			}
		} else {
			fakes = append(fakes, o.Masks)
			if o.Type != "fake" || o.RelativePath != fmt.Sprintf("option_%d_mask_fake.png", k+1) {
				t.Errorf("fake option %d: %+v", k+1, o)
			}
		}
	}
	if nTrue != 1 {
		t.Errorf("%d true options", nTrue)
	}
	if rc.Answer() != benchmark.OrdinalMask(rc.AnswerIndex) {
		t.Errorf("answer %q", rc.Answer())
	}
	// The fake options are the accepted distractors (shuffled).
	if len(fakes) != len(rc.FakeCombinations) {
		t.Errorf("fake options %v vs fake_combinations %v", fakes, rc.FakeCombinations)
	}
	for _, f := range rc.FakeCombinations {
		if !slices.ContainsFunc(fakes, func(x []string) bool { return slices.Equal(x, f) }) {
			t.Errorf("fake combination %v is not an option", f)
		}
		if slices.Equal(sortedSet(f), sortedSet(rc.RevisionBeforeMasks)) {
			t.Errorf("distractor %v equals the before-set", f)
		}
	}
	// No two option images are the same picture (else the question has
	// two right answers): render them
	// as the builder does and compare the pixels.
	u := optionUnions(t, rc)
	g := image.NewGray(image.Rect(0, 0, u[0].W, u[0].H))
	for i := range g.Pix {
		g.Pix[i] = uint8(i * 37)
	}
	imgs := make([][]byte, len(u))
	for i := range u {
		imgs[i] = render.Overlay(g, u[i]).Pix
	}
	for i := range u {
		for j := i + 1; j < len(u); j++ {
			if bytes.Equal(imgs[i], imgs[j]) {
				t.Errorf("options %d and %d render the same image", i+1, j+1)
			}
		}
	}
}

func TestRevisionOptionsOneComponent(t *testing.T) {
	cfg := buildcfg.Default()
	b := oneComponent()
	rc, err := RevisionOptions(rng.New("rev1"), b.a, lungCtx(false), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkChoice(t, rc, 4)
	sid := "suboptimal_component_0"
	if !slices.Equal(rc.RevisionBeforeMasks, []string{sid + "_cont1"}) || !slices.Equal(rc.RevisionAfterMasks, []string{"optimal_component_0"}) {
		t.Errorf("before %v after %v", rc.RevisionBeforeMasks, rc.RevisionAfterMasks)
	}
	wantPool := []string{sid + "_exp1_fake_contraction_1", sid + "_exp1", sid + "_cont1_fake_expansion_1", sid + "_cont1"}
	if len(rc.FakeMasks) != 1 || rc.FakeMasks[0].Component != sid || !slices.Equal(rc.FakeMasks[0].Masks, wantPool) {
		t.Errorf("fake_masks %+v, want %v", rc.FakeMasks, wantPool)
	}
	if !reflect.DeepEqual(rc.TrueMasks, benchmark.NamedMasks{{Component: sid, Masks: []string{"optimal_component_0"}}}) {
		t.Errorf("true_masks %+v", rc.TrueMasks)
	}
	// Group 0 (no tokens) holds exactly the three non-before fakes, all distinct.
	got := slices.Clone(rc.FakeCombinations)
	slices.SortFunc(got, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	want := [][]string{{wantPool[2]}, {wantPool[1]}, {wantPool[0]}}
	slices.SortFunc(want, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fake_combinations %v, want %v", rc.FakeCombinations, want)
	}
	again, _ := RevisionOptions(rng.New("rev1"), oneComponent().a, lungCtx(false), cfg)
	if !reflect.DeepEqual(rc.Options, again.Options) || !reflect.DeepEqual(rc.FakeCombinations, again.FakeCombinations) {
		t.Error("not deterministic")
	}
	// The draws are: Shuffle(group 0), then Shuffle([true] ++ accepted).
	twin := rng.New("rev1")
	g0 := [][]string{{wantPool[0]}, {wantPool[1]}, {wantPool[2]}} // product order
	rng.Shuffle(twin, g0)
	if !reflect.DeepEqual(rc.FakeCombinations, g0) {
		t.Errorf("acceptance order %v, want shuffled group %v", rc.FakeCombinations, g0)
	}
}

// A fake mask whose pixels equal the optimal mask is rejected; the next
// group (one default token) supplies the third distractor.
func TestRevisionOptionsPixelIdentical(t *testing.T) {
	cfg := buildcfg.Default()
	b := newAttempt()
	opt := rect(10, 10, 20, 20)
	b.component(0, opt)
	b.step(deform.Expansion, "right lower zone lung", p(300, 300), rect(10, 10, 24, 20),
		[]fakeSpec{{deform.Contraction, opt.Clone()}, {deform.Contraction, rect(12, 10, 24, 20)}}, nil, nil)
	b.step(deform.Contraction, "right mid zone lung", p(300, 700), rect(10, 13, 24, 20), nil, nil, nil)
	rc, err := RevisionOptions(rng.New("dup"), b.a, lungCtx(false), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkChoice(t, rc, 4)
	if rc.Duplicates != 1 {
		t.Errorf("%d duplicates, want 1", rc.Duplicates)
	}
	tokens := 0
	for _, f := range rc.FakeCombinations {
		if strings.Contains(f[0], "_fake_contraction_1") {
			t.Errorf("pixel-identical fake accepted: %v", f)
		}
		if render.IsToken(f[0]) {
			tokens++
		}
	}
	if tokens != 1 || !render.IsToken(rc.FakeCombinations[2][0]) {
		t.Errorf("fake_combinations %v: want two group-0 fakes then one token", rc.FakeCombinations)
	}
}

// A fake whose mask covers exactly the optimal mask's pixels, but stores
// them as 255 instead of 1, would render the answer's image: it is
// rejected like a pixel-identical one.
func TestRevisionOptionsSameCoverage(t *testing.T) {
	cfg := buildcfg.Default()
	b := newAttempt()
	opt := rect(10, 10, 20, 20)
	b.component(0, opt)
	same := opt.Clone()
	for i, v := range same.Pix {
		same.Pix[i] = v * 255
	}
	b.step(deform.Expansion, "right lower zone lung", p(300, 300), rect(10, 10, 24, 20),
		[]fakeSpec{{deform.Contraction, same}, {deform.Contraction, rect(12, 10, 24, 20)}}, nil, nil)
	b.step(deform.Contraction, "right mid zone lung", p(300, 700), rect(10, 13, 24, 20), nil, nil, nil)
	rc, err := RevisionOptions(rng.New("dup"), b.a, lungCtx(false), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Duplicates != 1 {
		t.Errorf("%d duplicates, want 1", rc.Duplicates)
	}
	for _, f := range rc.FakeCombinations {
		if strings.Contains(f[0], "_fake_contraction_1") {
			t.Errorf("fake covering the answer's pixels accepted: %v", f)
		}
	}
	checkChoice(t, rc, 4)
}

func TestRevisionOptionsInsufficient(t *testing.T) {
	b := newAttempt()
	opt := rect(10, 10, 20, 20)
	b.component(0, opt)
	b.step(deform.Expansion, "right lower zone lung", p(300, 300), rect(10, 10, 26, 20), nil, nil, nil)
	b.a.Components[0].NoContraction = true
	b.put("suboptimal_component_0_no_contraction", opt)
	ctx := lungCtx(false)
	ctx.Lungs.ChexRight = opt.Clone() // the lung token renders exactly the answer
	cfg := buildcfg.Default()
	_, err := RevisionOptions(rng.New("few"), b.a, ctx, cfg)
	var ce *frame.CaseError
	if !errors.As(err, &ce) || ce.Reason != ReasonInsufficientRevisionOptions {
		t.Fatalf("err = %v, want %s", err, ReasonInsufficientRevisionOptions)
	}
	cfg.RequireFourRevisionOptions = false
	rc, err := RevisionOptions(rng.New("few"), b.a, ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkChoice(t, rc, 2)
	if !slices.Equal(rc.FakeCombinations[0], []string{render.TokenKeep}) {
		t.Errorf("fake_combinations %v", rc.FakeCombinations)
	}
}

// Heart-type: every component gets keep/dilated/eroded; an undeformed
// component's true mask is its no_contraction mask and it comes after the
// deformed ones in revision_before/after_masks; the before-set is never a
// distractor.
func TestRevisionOptionsHeartTwoComponents(t *testing.T) {
	b := newAttempt()
	b.component(0, rect(20, 20, 40, 40))
	b.step(deform.Expansion, "heart zone 1", p(500, 500), rect(18, 20, 40, 40), nil, nil, nil)
	b.step(deform.Expansion, "heart zone 2", p(500, 650), rect(18, 20, 44, 40),
		[]fakeSpec{{deform.Expansion, rect(18, 16, 44, 40)}}, nil, nil)
	b.a.Components[0].NoContraction = true
	b.put("suboptimal_component_0_no_contraction", rect(20, 20, 40, 40))
	b.undeformed(1, rect(2, 2, 8, 8))
	// Put the undeformed component first in the slice: the order comes from the ids.
	b.a.Components[0], b.a.Components[1] = b.a.Components[1], b.a.Components[0]
	comps := components(b.a, TokenContext{HeartType: true})
	if comps[0].sid != "suboptimal_component_0" || comps[1].sid != "suboptimal_component_1" {
		t.Fatalf("component order %s, %s", comps[0].sid, comps[1].sid)
	}
	for _, c := range comps {
		if !slices.Equal(c.defaults, []string{"default_keep", "default_dilated", "default_eroded"}) {
			t.Errorf("%s defaults %v", c.sid, c.defaults)
		}
	}
	cfg := buildcfg.Default()
	rc, err := RevisionOptions(rng.New("heart"), b.a, TokenContext{HeartType: true}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkChoice(t, rc, 4)
	if !slices.Equal(rc.RevisionBeforeMasks, []string{"suboptimal_component_0_exp2", "suboptimal_component_1_no_contraction"}) ||
		!slices.Equal(rc.RevisionAfterMasks, []string{"optimal_component_0", "suboptimal_component_1_no_contraction"}) ||
		!slices.Equal(rc.TrueCombination, []string{"optimal_component_0", "suboptimal_component_1_no_contraction"}) {
		t.Errorf("before %v after %v true %v", rc.RevisionBeforeMasks, rc.RevisionAfterMasks, rc.TrueCombination)
	}
	if len(rc.FakeMasks) != 1 || !slices.Equal(rc.FakeMasks[0].Masks, []string{
		"suboptimal_component_0_exp1", "suboptimal_component_0_exp2_fake_expansion_1", "suboptimal_component_0_exp2"}) {
		t.Errorf("fake_masks %+v", rc.FakeMasks)
	}
	if len(rc.TrueMasks) != 2 {
		t.Errorf("true_masks %+v", rc.TrueMasks)
	}
}

func TestDefaultTokensLungType(t *testing.T) {
	b := newAttempt()
	// Components 0 and 2 are on the left, 1 on the right (by first-step
	// anatomy); 3 is undeformed with left-lung ratio > 0.
	for i, anat := range []string{"left upper zone lung", "right mid zone lung", "left lung base"} {
		b.component(i, rect(i, i, i+4, i+4))
		b.step(deform.Contraction, anat, p(100*i, 100), rect(i, i, i+3, i+4), nil, nil, nil)
	}
	b.undeformed(3, rect(40, 40, 44, 44))
	b.undeformed(4, rect(50, 50, 54, 54))
	ov := []anatomy.ComponentOverlap{{ID: 3}, {ID: 4}}
	ov[0].Left.Ratio = 0.3
	ctx := lungCtx(true)
	ctx.Overlaps = ov
	comps := components(b.a, ctx)
	want := [][]string{
		{"default_keep", "default_left_lung_chex", "default_left_lung_cxas"},
		{"default_keep", "default_right_lung_chex", "default_right_lung_cxas"},
		{"default_keep"},
		{"default_keep"}, // undeformed, left (ratio > 0), side already seen
		{"default_keep"}, // undeformed, right (ratio 0), side already seen
	}
	for i, c := range comps {
		if !slices.Equal(c.defaults, want[i]) {
			t.Errorf("%s defaults %v, want %v", c.sid, c.defaults, want[i])
		}
	}
	// Without a secondary lung source there is no cxas token.
	ctx.Lungs.HasSecondary = false
	if d := components(b.a, ctx)[0].defaults; !slices.Equal(d, []string{"default_keep", "default_left_lung_chex"}) {
		t.Errorf("without secondary: %v", d)
	}
	// An undeformed component alone takes right when its left ratio is 0.
	b2 := newAttempt()
	b2.undeformed(0, rect(1, 1, 5, 5))
	if d := components(b2.a, lungCtx(false))[0].defaults; !slices.Equal(d, []string{"default_keep", "default_right_lung_chex"}) {
		t.Errorf("undeformed right: %v", d)
	}
}

func TestComponentOrderLexicographic(t *testing.T) {
	b := newAttempt()
	for i := 0; i < 12; i++ {
		b.undeformed(i, rect(i, 0, i+1, 1))
	}
	var got []string
	for _, c := range components(b.a, lungCtx(false)) {
		got = append(got, strings.TrimPrefix(c.sid, "suboptimal_component_"))
	}
	want := []string{"0", "1", "10", "11", "2", "3", "4", "5", "6", "7", "8", "9"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// The pruned group walk equals filtering the full product (in product
// order) by token count, with the cap taking the first ones.
func TestEnumeratorMatchesBruteForce(t *testing.T) {
	mk := func(choices ...string) *component {
		c := &component{choices: choices}
		for _, n := range choices {
			c.isDefault = append(c.isDefault, render.IsToken(n))
		}
		return c
	}
	comps := []*component{
		mk("t0", "a", "b", "default_keep", "default_x"),
		mk("t1", "default_keep"),
		mk("t2", "c", "default_keep", "default_y", "default_z"),
	}
	skip := func(idx []int) bool { return idx[0] == 0 && idx[1] == 0 && idx[2] == 0 || (idx[0] == 1 && idx[2] == 1) }
	var all [][]int
	for i := range comps[0].choices {
		for j := range comps[1].choices {
			for k := range comps[2].choices {
				all = append(all, []int{i, j, k})
			}
		}
	}
	en := newEnumerator(comps, skip)
	for g := 0; g <= 3; g++ {
		var want [][]int
		for _, idx := range all {
			n := 0
			for p, j := range idx {
				if comps[p].isDefault[j] {
					n++
				}
			}
			if n == g && !skip(idx) {
				want = append(want, idx)
			}
		}
		if got := en.group(g, 1000); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("group %d: %v, want %v", g, got, want)
		}
		if len(want) > 2 {
			if got := en.group(g, 2); !reflect.DeepEqual(got, want[:2]) {
				t.Errorf("group %d cap 2: %v, want %v", g, got, want[:2])
			}
		}
	}
}
