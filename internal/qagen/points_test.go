package qagen

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/deform"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// optionOf returns the 1-based option index holding point q, or 0.
func optionOf(pool *PointPool, q mask.Point) int {
	for k, o := range pool.Options {
		if o.Point != nil && o.Point[0] == q.X && o.Point[1] == q.Y {
			return k + 1
		}
	}
	return 0
}

// checkPoolShape checks the invariants of format.md §3.4 that hold for
// every pool: palette colours in order, one final None, distinct points.
func checkPoolShape(t *testing.T, pool *PointPool) {
	t.Helper()
	n := len(pool.Options)
	if n < 2 || pool.Options[n-1].Point != nil || pool.Options[n-1].Color != "None" {
		t.Fatalf("last option %+v, want None", pool.Options[n-1])
	}
	seen := map[[2]int]bool{}
	for k, o := range pool.Options[:n-1] {
		if o.Point == nil {
			t.Fatalf("option %d has no point", k+1)
		}
		if want := render.PaletteName(k + 1); o.Color != want {
			t.Errorf("option %d colour %s, want %s", k+1, o.Color, want)
		}
		if seen[*o.Point] {
			t.Errorf("option %d repeats point %v", k+1, *o.Point)
		}
		seen[*o.Point] = true
	}
	if len(pool.Kinds) != n-1 {
		t.Errorf("%d kinds for %d points", len(pool.Kinds), n-1)
	}
}

func TestPointPool(t *testing.T) {
	cfg := buildcfg.Default()
	sq := rect(10, 10, 30, 30)
	type want struct {
		gtExp, gtCon []mask.Point // GT points in GT order
		fakes        []mask.Point // fake points expected to survive (any order)
		nFakes       int          // when fakes is nil: how many survive the cap
	}
	tests := []struct {
		name  string
		build func() *deform.Attempt
		want  want
	}{
		{
			// exp1 then cont1: expanding undoes cont1 (its centre), contracting undoes exp1.
			name: "exp then cont, spacing filter",
			build: func() *deform.Attempt {
				b := newAttempt()
				b.component(0, sq)
				b.step(deform.Expansion, "right lower zone lung", p(300, 300), sq, nil,
					[]mask.Point{p(399, 300) /* 99 px from GT: dropped */, p(500, 300)},
					[]mask.Point{p(600, 600)})
				b.step(deform.Contraction, "right mid zone lung", p(300, 700), sq, nil,
					[]mask.Point{p(500, 370) /* 70 px from kept (500,300): dropped */, p(300, 800) /* exactly 100: kept */},
					nil)
				return b.a
			},
			want: want{gtExp: []mask.Point{p(300, 700)}, gtCon: []mask.Point{p(300, 300)},
				fakes: []mask.Point{p(500, 300), p(300, 800), p(600, 600)}},
		},
		{
			// Only expansion corruptions: the expansion answer is None; two
			// components give two contraction GT points in component order.
			name: "none and GT order",
			build: func() *deform.Attempt {
				b := newAttempt()
				b.component(0, sq)
				b.step(deform.Expansion, "left upper zone lung", p(700, 200), sq, nil, nil, nil)
				b.step(deform.Expansion, "left mid zone lung", p(700, 500), sq, nil, nil, nil)
				b.component(1, sq)
				b.step(deform.Expansion, "right mid zone lung", p(200, 500), sq, nil, nil, nil)
				return b.a
			},
			want: want{gtCon: []mask.Point{p(700, 200), p(700, 500), p(200, 500)}, fakes: []mask.Point{}},
		},
		{
			// 2 GT + 10 well separated fakes: capped to 8 points.
			name: "cap",
			build: func() *deform.Attempt {
				b := newAttempt()
				b.component(0, sq)
				var fk []mask.Point
				for i := 0; i < 10; i++ {
					fk = append(fk, p(100+100*(i%5), 600+150*(i/5)))
				}
				b.step(deform.Contraction, "right lung base", p(100, 100), sq, nil, fk[:5], fk[5:])
				b.step(deform.Contraction, "right mid zone lung", p(300, 100), sq, nil, nil, nil)
				return b.a
			},
			want: want{gtExp: []mask.Point{p(100, 100), p(300, 100)}, nFakes: 6},
		},
		{
			// Two steps of different components share a centre: one option,
			// referenced by both answers.
			name: "repeated coordinates",
			build: func() *deform.Attempt {
				b := newAttempt()
				b.component(0, sq)
				b.step(deform.Expansion, "left lower zone lung", p(500, 500), sq, nil, nil, nil)
				b.component(1, sq)
				b.step(deform.Contraction, "left lower zone lung", p(500, 500), sq, nil, nil, nil)
				return b.a
			},
			want: want{gtExp: []mask.Point{p(500, 500)}, gtCon: []mask.Point{p(500, 500)}, fakes: []mask.Point{}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.build()
			pool, err := NewPointPool(rng.New("test/"+tc.name), a, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkPoolShape(t, pool)
			none := len(pool.Options)
			check := func(what string, gt []mask.Point, idx []int, ans string) {
				if len(gt) == 0 {
					if !slices.Equal(idx, []int{none}) || ans != "None" {
						t.Errorf("%s: index %v answer %q, want [%d] None", what, idx, ans, none)
					}
					return
				}
				var wantIdx []int
				var wantAns []string
				for _, q := range gt {
					k := optionOf(pool, q)
					if k == 0 {
						t.Fatalf("%s: GT point %v missing", what, q)
					}
					if !slices.Contains(wantIdx, k) {
						wantIdx = append(wantIdx, k)
						wantAns = append(wantAns, pool.Options[k-1].Color+" point")
					}
				}
				if !slices.Equal(idx, wantIdx) {
					t.Errorf("%s: index %v, want %v (GT order)", what, idx, wantIdx)
				}
				if w := joinComma(wantAns); ans != w {
					t.Errorf("%s: answer %q, want %q", what, ans, w)
				}
			}
			check("expansion", tc.want.gtExp, pool.ExpansionIndex, pool.ExpansionAnswer())
			check("contraction", tc.want.gtCon, pool.ContractionIndex, pool.ContractionAnswer())
			var fakes []mask.Point
			for k, kind := range pool.Kinds {
				if kind == KindFake {
					fakes = append(fakes, p(pool.Options[k].Point[0], pool.Options[k].Point[1]))
				}
			}
			if tc.want.fakes != nil {
				if len(fakes) != len(tc.want.fakes) {
					t.Errorf("fakes %v, want %v", fakes, tc.want.fakes)
				}
				for _, q := range tc.want.fakes {
					if !slices.Contains(fakes, q) {
						t.Errorf("fake %v missing from %v", q, fakes)
					}
				}
			} else if len(fakes) != tc.want.nFakes {
				t.Errorf("%d fakes, want %d", len(fakes), tc.want.nFakes)
			}
			// Same seed, same pool.
			again, _ := NewPointPool(rng.New("test/"+tc.name), a, cfg)
			if !reflect.DeepEqual(pool, again) {
				t.Error("not deterministic")
			}
		})
	}
}

func joinComma(xs []string) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}

// The pool's draws are exactly RNG.Sample(kept, 8−|gt|) then
// RNG.Shuffle(gt_exp ++ gt_con ++ kept): replay them on a twin RNG.
func TestPointPoolDrawOrder(t *testing.T) {
	cfg := buildcfg.Default()
	sq := rect(0, 0, 8, 8)
	b := newAttempt()
	b.component(0, sq)
	var fk []mask.Point
	for i := 0; i < 9; i++ {
		fk = append(fk, p(100+110*i, 900))
	}
	b.step(deform.Expansion, "right upper zone lung", p(100, 100), sq, nil, fk, nil)
	b.step(deform.Contraction, "right mid zone lung", p(400, 100), sq, nil, nil, nil)
	pool, err := NewPointPool(rng.New("draws"), b.a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	twin := rng.New("draws")
	kept := rng.Sample(twin, fk, 6)
	all := append([]mask.Point{p(400, 100), p(100, 100)}, kept...)
	rng.Shuffle(twin, all)
	var got []mask.Point
	for _, o := range pool.Options[:len(pool.Options)-1] {
		got = append(got, p(o.Point[0], o.Point[1]))
	}
	if !slices.Equal(got, all) {
		t.Errorf("options %v, want %v", got, all)
	}
	// 8 or more GT points leave no room for fakes (and draw no sample).
	b2 := newAttempt()
	b2.component(0, sq)
	for i := 0; i < 9; i++ {
		b2.step(deform.Expansion, "x", p(50+110*i, 50), sq, nil, []mask.Point{p(50+110*i, 900)}, nil)
	}
	pool2, _ := NewPointPool(rng.New("many"), b2.a, cfg)
	if len(pool2.Options) != 10 || pool2.Options[8].Color != "red" {
		t.Errorf("9 GT points: %d options, 9th colour %s (want 10 options, cyclic red)", len(pool2.Options), pool2.Options[8].Color)
	}
	for _, k := range pool2.Kinds {
		if k == KindFake {
			t.Error("fake kept although |gt| ≥ max_points")
		}
	}
}

func TestPointPoolEmpty(t *testing.T) {
	b := newAttempt()
	b.undeformed(0, rect(0, 0, 4, 4))
	if _, err := NewPointPool(rng.New("x"), b.a, buildcfg.Default()); err == nil {
		t.Error("an attempt without steps must fail")
	}
}

func TestSummaries(t *testing.T) {
	cfg := buildcfg.Default()
	a := rrAttempt()
	r := rng.New("sum")
	pool, err := NewPointPool(r, a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := RevisionOptions(r, a, TokenContext{Overlaps: overlaps()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ps, rs := pool.Summary(), rev.Summary()
	for _, want := range []string{"GT-exp", "GT-con", "fake", "option 7 None", "expansion = ["} {
		if !strings.Contains(ps, want) {
			t.Errorf("point summary lacks %q:\n%s", want, ps)
		}
	}
	for _, want := range []string{"suboptimal_component_0_cont1", "accepted 3", "revision result = "} {
		if !strings.Contains(rs, want) {
			t.Errorf("revision summary lacks %q:\n%s", want, rs)
		}
	}
}
