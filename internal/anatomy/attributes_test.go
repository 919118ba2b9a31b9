package anatomy

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/rng"
)

func lungOv(inter, area int, has bool) LungOverlap {
	l := LungOverlap{Inter: inter, Area: area, Ratio: float64(inter) / float64(area), HasOverlap: has}
	if has {
		l.Size = inter
	}
	return l
}

// record builds an overlap record whose lung regions at the given canonical
// indices have has_overlap.
func record(id int, regions []int, left, right LungOverlap) ComponentOverlap {
	c := ComponentOverlap{ID: id, Left: left, Right: right}
	for _, n := range ZoneNames {
		c.Zones = append(c.Zones, Overlap{Name: n, Key: KeyZones})
	}
	for i, n := range LungRegionNames {
		c.LungRegions = append(c.LungRegions, Overlap{Name: n, Key: KeyLungRegions, HasOverlap: slices.Contains(regions, i)})
	}
	return c
}

func TestRegionString(t *testing.T) {
	tests := map[string]string{
		"right costophrenic angle":                  "the right costophrenic angle",
		"left costophrenic angle":                   "the left costophrenic angle",
		"right medial lung & right upper zone lung": "the intersection of the right medial lung and the right upper zone lung",
		"left peripheral lung & left lung base":     "the intersection of the left peripheral lung and the left lower zone lung",
		"right lateral lung & right mid zone lung":  "the intersection of the right lateral lung and the right mid zone lung",
	}
	for in, want := range tests {
		if got := RegionString(in); got != want {
			t.Errorf("RegionString(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDistribution(t *testing.T) {
	tests := []struct {
		regions []int
		zones   []string
		index   int
	}{
		{[]int{0}, []string{"right lower zone lung"}, 1},
		{[]int{1, 0}, []string{"right lower zone lung", "left lower zone lung"}, 2},
		{[]int{2, 3, 8}, []string{"right upper zone lung", "right mid zone lung"}, 2},
		{[]int{4, 16, 19}, []string{"right lower zone lung", "left lower zone lung"}, 2},
		{[]int{2, 3, 4, 5}, []string{"right upper zone lung", "right mid zone lung", "right lower zone lung", "left upper zone lung"}, 4},
		{[]int{2, 3, 4, 5, 6, 7}, []string{"right upper zone lung", "right mid zone lung", "right lower zone lung",
			"left upper zone lung", "left mid zone lung", "left lower zone lung"}, 4},
		{[]int{11, 12, 13}, []string{"left upper zone lung", "left mid zone lung", "left lower zone lung"}, 3},
	}
	for _, tc := range tests {
		ov := []ComponentOverlap{record(0, tc.regions, lungOv(100, 1000, true), lungOv(100, 1000, true))}
		a, err := Attributes(rng.New("dist"), ov, nil, buildcfg.Default())
		if err != nil {
			t.Fatal(err)
		}
		d := a.Distribution
		if !reflect.DeepEqual(d.AnswerZones, tc.zones) || d.AnswerIndex != tc.index || d.Answer() != DistributionOptions[tc.index-1] {
			t.Errorf("regions %v: zones %v index %d, want %v %d", tc.regions, d.AnswerZones, d.AnswerIndex, tc.zones, tc.index)
		}
		if !strings.HasPrefix(d.Derivation, fmt.Sprintf("distribution = %d: P = {the ", tc.index)) {
			t.Errorf("derivation %q", d.Derivation)
		}
	}
}

// refLocation is §10's location pseudo-code, transcribed independently.
func refLocation(r *rng.RNG, P, N []string) (sel, SP []string, idx []int) {
	m := min(3, len(P))
	s := 0
	if m != 0 {
		s = r.IntRange(0, m)
	}
	SP = rng.Sample(r, P, s)
	var SN []string
	if 3-s > 0 && len(N) > 0 {
		SN = rng.Sample(r, N, min(3-s, len(N)))
	}
	sel = append(append([]string{}, SP...), SN...)
	if len(sel) < 3 {
		var rest []string
		for _, p := range P {
			if !slices.Contains(SP, p) {
				rest = append(rest, p)
			}
		}
		X := rng.Sample(r, rest, min(3-len(sel), len(rest)))
		sel = append(sel, X...)
		SP = append(SP, X...)
	}
	rng.Shuffle(r, sel)
	for i := 1; i <= 3; i++ {
		if slices.Contains(SP, sel[i-1]) {
			idx = append(idx, i)
		}
	}
	if idx == nil {
		idx = []int{4}
	}
	return
}

func TestLocationDraws(t *testing.T) {
	sets := [][]int{{0}, {5, 9}, {0, 1, 2}, {2, 3, 4, 14, 15}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17},
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}}
	sawNone, sawAll := false, false
	for si, regions := range sets {
		for seed := 0; seed < 60; seed++ {
			label := fmt.Sprintf("loc/%d/%d", si, seed)
			ov := []ComponentOverlap{record(0, regions, lungOv(100, 1000, true), lungOv(0, 1000, false))}
			a, err := Attributes(rng.New(label), ov, nil, buildcfg.Default())
			if err != nil {
				t.Fatal(err)
			}
			ref := rng.New(label)
			sel, SP, idx := refLocation(ref, a.Positive, a.Negative)
			l := a.Location
			if !reflect.DeepEqual(l.Options, sel) || !reflect.DeepEqual(l.AnswerZones, SP) || !reflect.DeepEqual(l.AnswerIndex, idx) {
				t.Fatalf("%s: got %v %v %v, want %v %v %v", label, l.Options, l.AnswerZones, l.AnswerIndex, sel, SP, idx)
			}
			// Properties independent of the transcription.
			if len(l.Options) != 3 || len(a.Positive)+len(a.Negative) != 20 {
				t.Fatalf("%s: %d options, |P|+|N| = %d", label, len(l.Options), len(a.Positive)+len(a.Negative))
			}
			for i, o := range l.Options {
				if slices.Index(l.Options, o) != i {
					t.Fatalf("%s: repeated option %q", label, o)
				}
				if slices.Contains(l.AnswerIndex, i+1) != slices.Contains(a.Positive, o) {
					t.Fatalf("%s: option %d %q marked wrongly", label, i+1, o)
				}
			}
			if l.AnswerIndex[0] == 4 {
				sawNone = true
				if l.Answer() != LocationNone {
					t.Fatalf("answer %q", l.Answer())
				}
			} else if len(l.AnswerIndex) == 3 {
				sawAll = true
			}
			if len(l.AllOptions()) != 4 || l.AllOptions()[3] != LocationNone {
				t.Fatalf("AllOptions %v", l.AllOptions())
			}
			// Severity draws after location: here only the right lung has
			// overlap and nothing is random, so exactly the location draws
			// were consumed.
			if r2 := rng.New(label); true {
				refLocation(r2, a.Positive, a.Negative)
				r1 := rng.New(label)
				if _, err := Attributes(r1, ov, nil, buildcfg.Default()); err != nil {
					t.Fatal(err)
				}
				if r1.U64() != r2.U64() {
					t.Fatalf("%s: Attributes drew more than the location draws", label)
				}
			}
		}
	}
	if !sawNone || !sawAll {
		t.Errorf("draws never produced a None answer (%t) or an all-positive answer (%t)", sawNone, sawAll)
	}
}

func TestSeverity(t *testing.T) {
	R, L := "the right costophrenic angle", "the left costophrenic angle"
	const area = 300
	tests := []struct {
		name   string
		zones  []string
		ov     []ComponentOverlap
		lung   string
		I      int
		index  int
		random bool // one Choice draw decides
	}{
		{"right only", []string{R}, []ComponentOverlap{record(0, nil, lungOv(50, area, true), lungOv(99, area, true))}, RightLung, 99, 1, false},
		{"right only, right lacks → left", []string{R}, []ComponentOverlap{record(0, nil, lungOv(100, area, true), lungOv(2, area, false))}, LeftLung, 100, 2, false},
		{"left only", []string{L, L}, []ComponentOverlap{record(0, nil, lungOv(199, area, true), lungOv(5, area, true))}, LeftLung, 199, 2, false},
		{"both named, one has", []string{L, R}, []ComponentOverlap{record(0, nil, lungOv(200, area, true), lungOv(2, area, false))}, LeftLung, 200, 3, false},
		{"both named, both have", []string{R, L}, []ComponentOverlap{record(0, nil, lungOv(10, area, true), lungOv(20, area, true))}, "", 0, 1, true},
		{"none named, both have", nil, []ComponentOverlap{record(0, nil, lungOv(10, area, true), lungOv(20, area, true))}, "", 0, 1, true},
		{"I sums flagged components only", []string{R}, []ComponentOverlap{
			record(0, nil, lungOv(0, area, false), lungOv(60, area, true)),
			record(1, nil, lungOv(0, area, false), lungOv(40, area, true)),
			record(2, nil, lungOv(2, area, false), lungOv(2, area, false))}, RightLung, 100, 2, false},
		{"neither has → larger raw", []string{L}, []ComponentOverlap{
			record(0, nil, lungOv(1, area, false), lungOv(2, area, false)),
			record(1, nil, lungOv(0, area, false), lungOv(1, area, false))}, RightLung, 3, 1, false},
		{"neither has, tie → left", []string{R}, []ComponentOverlap{record(0, nil, lungOv(2, area, false), lungOv(2, area, false))}, LeftLung, 2, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rng.New("sev/" + tc.name)
			s := severity(r, tc.ov, tc.zones)
			ref := rng.New("sev/" + tc.name)
			if tc.random {
				tc.lung = rng.Choice(ref, []string{LeftLung, RightLung})
				tc.I = map[string]int{LeftLung: 10, RightLung: 20}[tc.lung]
			}
			if r.U64() != ref.U64() {
				t.Errorf("wrong number of draws")
			}
			if s.SelectedLung != tc.lung || s.I != tc.I || s.Area != area || s.AnswerIndex != tc.index {
				t.Errorf("got %s I=%d area=%d → %d, want %s I=%d → %d", s.SelectedLung, s.I, s.Area, s.AnswerIndex, tc.lung, tc.I, tc.index)
			}
			if s.OverlapRatio != float64(tc.I)/area {
				t.Errorf("ratio %v", s.OverlapRatio)
			}
			if !strings.Contains(s.Derivation, "→ "+s.SelectedLung) || !strings.HasSuffix(s.Derivation, fmt.Sprintf("→ %d", s.AnswerIndex)) {
				t.Errorf("derivation %q", s.Derivation)
			}
		})
	}
}

func TestSeverityThresholdsAreExact(t *testing.T) {
	// 1/3 and 2/3 are not representable; the integer rule decides.
	for _, tc := range []struct{ I, area, want int }{
		{0, 3, 1}, {1, 3, 2}, {2, 3, 3}, {3, 3, 3},
		{33333, 100000, 1}, {33334, 100000, 2}, {66666, 100000, 2}, {66667, 100000, 3},
		{23334, 70002, 2}, {23333, 70000, 1}, {46668, 70002, 3},
	} {
		s := severity(rng.New("x"), []ComponentOverlap{record(0, nil, lungOv(0, tc.area, false), lungOv(tc.I, tc.area, true))}, nil)
		if s.AnswerIndex != tc.want {
			t.Errorf("I=%d area=%d → %d, want %d", tc.I, tc.area, s.AnswerIndex, tc.want)
		}
	}
}

func TestComparison(t *testing.T) {
	tests := []struct {
		name           string
		ov             []ComponentOverlap
		left, right    int
		lhas, rhas     bool
		index          int
		derivationPart string
	}{
		{"both sizes 0 → 2", []ComponentOverlap{record(0, nil, LungOverlap{HasOverlap: true, Area: 9}, LungOverlap{HasOverlap: true, Area: 9})}, 0, 0, true, true, 2, "2·0 ≥ 3·0 → 2"},
		{"left 0 → 3", []ComponentOverlap{record(0, nil, LungOverlap{HasOverlap: true, Area: 9}, lungOv(5, 9, true))}, 0, 5, true, true, 3, "→ 3"},
		{"right 0 → 2", []ComponentOverlap{record(0, nil, lungOv(5, 9, true), LungOverlap{HasOverlap: true, Area: 9})}, 5, 0, true, true, 2, "→ 2"},
		{"similar", []ComponentOverlap{record(0, nil, lungOv(100, 9, true), lungOv(149, 9, true))}, 100, 149, true, true, 1, "2·149 < 3·100 → 1"},
		{"exactly 1.5× right", []ComponentOverlap{record(0, nil, lungOv(100, 9, true), lungOv(150, 9, true))}, 100, 150, true, true, 3, "2·150 ≥ 3·100 → 3"},
		{"exactly 1.5× left", []ComponentOverlap{record(0, nil, lungOv(150, 9, true), lungOv(100, 9, true))}, 150, 100, true, true, 2, "2·150 ≥ 3·100 → 2"},
		{"spec example", []ComponentOverlap{record(0, nil, lungOv(15000, 9, true), lungOv(52000, 9, true))}, 15000, 52000, true, true, 3, "left 15 000, right 52 000, 2·52 000 ≥ 3·15 000 → 3"},
		{"one side", []ComponentOverlap{record(0, nil, lungOv(4, 9, false), lungOv(52000, 9, true))}, 0, 52000, false, true, 4, "only the right lung"},
		{"sums over components", []ComponentOverlap{
			record(0, nil, lungOv(100, 9, true), lungOv(7, 9, false)),
			record(1, nil, lungOv(20, 9, true), lungOv(110, 9, true))}, 120, 110, true, true, 1, "→ 1"},
		{"neither → larger raw", []ComponentOverlap{
			record(0, nil, lungOv(3, 9, false), lungOv(2, 9, false)),
			record(1, nil, lungOv(0, 9, false), lungOv(2, 9, false))}, 0, 4, false, true, 4, "neither lung"},
		{"neither, tie → left", []ComponentOverlap{record(0, nil, lungOv(3, 9, false), lungOv(3, 9, false))}, 3, 0, true, false, 4, "only the left lung"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := comparison(tc.ov)
			if c.LeftSize != tc.left || c.RightSize != tc.right || c.LeftHasOverlap != tc.lhas || c.RightHasOverlap != tc.rhas || c.AnswerIndex != tc.index {
				t.Errorf("got %+v", c)
			}
			if !strings.Contains(c.Derivation, tc.derivationPart) {
				t.Errorf("derivation %q lacks %q", c.Derivation, tc.derivationPart)
			}
		})
	}
}

func TestAttributesFailures(t *testing.T) {
	ov := []ComponentOverlap{record(0, nil, lungOv(1, 9, false), lungOv(0, 9, false))}
	_, err := Attributes(rng.New("x"), ov, nil, buildcfg.Default())
	wantReason(t, err, ReasonNoPositiveRegion)

	heart := ov[0]
	heart.LungRegions = nil
	if _, err := Attributes(rng.New("x"), []ComponentOverlap{heart}, nil, buildcfg.Default()); err == nil {
		t.Errorf("heart-type records accepted")
	}
}

func TestGroup(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1 000", 28713: "28 713", 1234567: "1 234 567", -4500: "-4 500"} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q, want %q", n, got, want)
		}
	}
}
