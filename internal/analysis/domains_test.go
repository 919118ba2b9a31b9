package analysis

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/stats"
)

// synthRun is a scored run of n revision_required records whose stage
// outcomes come from correct(record, stage) (stages 1..4).
func synthRun(name, model, mode string, n int, correct func(i int, k int) bool) *RunResult {
	rr := &RunResult{Run: &Run{Name: name, Provider: "opensource", Kind: results.KindModel, Model: model, OracleMode: mode}, Scored: true}
	pi := pathIndex(benchmark.RevisionRequired)
	for i := 0; i < n; i++ {
		s := Score{Index: i, Key: fmt.Sprintf("k%03d", i), Path: pi, Lesion: benchmark.DefaultLesions().Names()[0], OK: true}
		for k := 0; k < 4; k++ {
			s.App[k] = true
			s.Cor[k] = correct(i, k+1)
		}
		rr.Scores = append(rr.Scores, s)
	}
	return rr
}

// bernoulli is a deterministic coin per (label, record): true with
// probability p.
func bernoulli(label string, i int, p float64) bool {
	return rng.New(fmt.Sprintf("test/%s/%d", label, i)).Float64() < p
}

func domainResult(t *testing.T, runs []*RunResult, dom DomainOptions) *DomainResult {
	t.Helper()
	o := Options{Bootstrap: 500, Domains: dom}
	if err := o.normalise(); err != nil {
		t.Fatal(err)
	}
	dr, _ := analyzeDomains(context.Background(), &Result{Runs: runs, Options: o}, &o)
	return dr
}

func findDiff(dr *DomainResult, comparison string, path benchmark.Path, k benchmark.Stage) *DiffRow {
	for i := range dr.Diffs {
		d := &dr.Diffs[i]
		if d.Comparison == comparison && d.Path == path && d.Stage == k {
			return d
		}
	}
	return nil
}

// Medical models clearly worse on stage 3 and equal on stage 1: the
// medical − general interval excludes 0 at stage 3 and includes it at
// stage 1.
func TestDomainDifference(t *testing.T) {
	reg := map[string]DomainModel{}
	var runs []*RunResult
	for g, group := range []string{groupGeneral, groupMedical} {
		for m := 0; m < 4; m++ {
			name := fmt.Sprintf("%s%d", group, m)
			reg[name] = DomainModel{Domain: group}
			stage3 := 0.9
			if g == 1 {
				stage3 = 0.15
			}
			runs = append(runs, synthRun("opensource_"+name, name, "none", 80, func(i, k int) bool {
				switch k {
				case 1:
					return bernoulli(name+"/1", i, 0.8)
				case 3:
					return bernoulli(name+"/3", i, stage3)
				}
				return true
			}))
		}
	}
	dr := domainResult(t, runs, DomainOptions{Registry: reg})
	s1 := findDiff(dr, ComparisonDomain, benchmark.RevisionRequired, 1)
	s3 := findDiff(dr, ComparisonDomain, benchmark.RevisionRequired, 3)
	if s1 == nil || s3 == nil {
		t.Fatalf("missing rows: %+v", dr.Diffs)
	}
	if !(s1.Lo <= 0 && 0 <= s1.Hi) {
		t.Errorf("stage 1: %+.3f [%+.3f, %+.3f] excludes 0", s1.Diff, s1.Lo, s1.Hi)
	}
	if !(s3.Hi < 0) {
		t.Errorf("stage 3: %+.3f [%+.3f, %+.3f] does not lie below 0", s3.Diff, s3.Lo, s3.Hi)
	}
	// 4 vs 4 models: 70 relabelings, the observed one and its mirror are
	// the most extreme.
	if !s3.Exact || math.Abs(s3.P-2.0/70) > 1e-12 || math.Abs(s3.MinP-2.0/70) > 1e-12 {
		t.Errorf("stage 3 permutation p %v (exact %v, min %v), want 2/70", s3.P, s3.Exact, s3.MinP)
	}
	if s1.NA != 4 || s1.NB != 4 {
		t.Errorf("models per group %d, %d", s1.NA, s1.NB)
	}
	// Medical is worse, never better: "no advantage" is supported only if
	// every upper bound is below the margin; here stage 1 is noisy, so
	// either supported or undecided, never "not supported".
	for _, v := range dr.Verdict {
		if v.Claim == 2 && v.Status == notSupported {
			t.Errorf("claim 2: %s (%s)", v.Status, v.Reason)
		}
	}
	// Same bytes at any worker count.
	o1 := Options{Bootstrap: 500, Domains: DomainOptions{Registry: reg}, Workers: 1}
	o1.normalise()
	a, _ := analyzeDomains(context.Background(), &Result{Runs: runs}, &o1)
	o8 := o1
	o8.Workers = 8
	b, _ := analyzeDomains(context.Background(), &Result{Runs: runs}, &o8)
	if !reflect.DeepEqual(a.Groups, b.Groups) || !reflect.DeepEqual(a.Diffs, b.Diffs) || !reflect.DeepEqual(a.Decay, b.Decay) {
		t.Error("results differ between 1 and 8 workers")
	}
}

// With one model per group the finding is undecided, whatever the data.
func TestOneModelPerGroupUndecided(t *testing.T) {
	reg := map[string]DomainModel{"g": {Domain: groupGeneral}, "m": {Domain: groupMedical}}
	runs := []*RunResult{
		synthRun("opensource_g", "g", "none", 200, func(i, k int) bool { return true }),
		synthRun("opensource_m", "m", "none", 200, func(i, k int) bool { return k == 1 }),
	}
	dr := domainResult(t, runs, DomainOptions{Registry: reg})
	for _, v := range dr.Verdict {
		if v.Status != Undecided {
			t.Errorf("claim %d: %s (%s), want undecided", v.Claim, v.Status, v.Reason)
		}
	}
	d := findDiff(dr, ComparisonDomain, benchmark.RevisionRequired, 3)
	if d == nil || d.MinP != 1 || d.P != 1 {
		t.Errorf("1 vs 1: %+v, want p = min p = 1", d)
	}
}

// TestPermutationSeeding: small groups are enumerated; larger ones are
// drawn from the cell's RNG, the same for the same cell.
func TestPermutationSeeding(t *testing.T) {
	if p, minP, exact := permutationP([]float64{1, 1, 1}, []float64{0, 0, 0}, 1, "x"); !exact || p != 0.1 || minP != 0.1 {
		t.Errorf("3 vs 3: p %v, min %v, exact %v; want 2/20 enumerated", p, minP, exact)
	}
	// 10 vs 10: 184,756 relabelings, so Monte Carlo from the cell's RNG.
	a := []float64{.9, .8, .85, .95, .7, .9, .88, .92, .81, .86}
	b := []float64{.1, .2, .15, .05, .3, .1, .12, .08, .19, .14}
	p1, min1, ex := permutationP(a, b, 7, "cell")
	p2, _, _ := permutationP(a, b, 7, "cell")
	if ex || p1 != p2 || p1 != 1.0/float64(PermDraws+1) || min1 != 1.0/float64(PermDraws+1) {
		t.Errorf("Monte Carlo: p %v, %v, min %v, exact %v", p1, p2, min1, ex)
	}
}

// A matched medical/base pair counts the discordant records.
func TestMatchedPair(t *testing.T) {
	reg := map[string]DomainModel{"medgemma": {Domain: groupMedical, Base: "gemma3"}, "gemma3": {Domain: groupGeneral}}
	runs := []*RunResult{
		synthRun("opensource_gemma3", "gemma3", "none", 30, func(i, k int) bool { return k < 3 || i < 20 }),      // stage 3: 20 right
		synthRun("opensource_medgemma", "medgemma", "none", 30, func(i, k int) bool { return k < 3 || i >= 25 }), // stage 3: 5 right
	}
	dr := domainResult(t, runs, DomainOptions{Registry: reg})
	d := findDiff(dr, "pair:opensource_medgemma:opensource_gemma3", benchmark.RevisionRequired, 3)
	if d == nil {
		t.Fatalf("no pair row: %+v", dr.Diffs)
	}
	// Med right & base wrong: keys 25..29 (5); med wrong & base right: 0..19 (20).
	if d.NPaired != 30 || d.B != 5 || d.C != 20 || math.Abs(d.Diff-(5.0-20)/30) > 1e-12 || math.Abs(d.P-stats.McNemarP(5, 20)) > 0 {
		t.Errorf("pair row %+v", d)
	}
	if d1 := findDiff(dr, "pair:opensource_medgemma:opensource_gemma3", benchmark.RevisionRequired, 1); d1 == nil || d1.B != 0 || d1.C != 0 || d1.P != 1 {
		t.Errorf("stage 1 pair row %+v", d1)
	}
}

// The precipitous-drop rule is mechanical: the ratio's upper bound below 0.5.
func TestDecayRule(t *testing.T) {
	reg := map[string]DomainModel{"a": {Domain: groupGeneral}, "b": {Domain: groupGeneral}}
	runs := []*RunResult{
		synthRun("opensource_a", "a", "none", 200, func(i, k int) bool { return k < 3 || i%10 == 0 }), // stage 3: 10 %
		synthRun("opensource_b", "b", "none", 200, func(i, k int) bool { return k < 3 || i%10 < 9 }),  // stage 3: 90 %
	}
	dr := domainResult(t, runs, DomainOptions{Registry: reg})
	got := map[string]bool{}
	for _, d := range dr.Decay {
		if d.Path == benchmark.RevisionRequired && d.Stage == 3 {
			got[d.Unit] = d.Precipitous
			if d.Precipitous != (d.RatioValid && d.RHi < PrecipitousBelow && d.N >= MinDecayRecords) {
				t.Errorf("%s: flag %v with ratio %v [%v, %v]", d.Unit, d.Precipitous, d.Ratio, d.RLo, d.RHi)
			}
		}
	}
	if !got["opensource_a"] || got["opensource_b"] {
		t.Errorf("precipitous at stage 3: %v", got)
	}
	// Two models, one collapsing and one not: the pooled interval of the
	// ratio is wide, so claim 1 is undecided.
	for _, v := range dr.Verdict {
		if v.Claim == 1 && v.Status != Undecided {
			t.Errorf("claim 1: %s (%s)", v.Status, v.Reason)
		}
	}
}

func TestAssignGroups(t *testing.T) {
	reg := map[string]DomainModel{"medgemma": {Domain: groupMedical}, "glm-4v": {Domain: groupGeneral}}
	mk := func(prov, model string) *RunResult {
		return &RunResult{Run: &Run{Name: prov + "_" + model, Provider: prov, Kind: results.KindOf(prov, false), Model: model, OracleMode: "none"}, Scored: true}
	}
	// A run without a manifest: the model is the label of its run name.
	noManifest := &RunResult{Run: &Run{Name: "opensource_medgemma_no_thinking_strict", Kind: results.KindModel, OracleMode: "none"}, Scored: true}
	res := &Result{Runs: []*RunResult{mk("opensource", "medgemma"), mk("opensource", "glm-4v"), mk("opensource", "my--raw"), mk("opensource", "other"), mk("baseline", "random"), noManifest}}
	o := DomainOptions{Registry: reg, Source: "d.yaml", Overrides: map[string]string{
		"opensource_glm-4v": "medical", // by run name, over the registry
		"my--raw":           "general", // by model
		"nosuch":            "general",
		"baseline_random":   "general", // baselines are never grouped
	}}
	members, warns := assignGroups(res, &o)
	got := map[string]string{}
	for _, m := range members {
		got[m.Run.Run.Name] = m.Group + "/" + m.Source
	}
	want := map[string]string{
		"opensource_medgemma": "medical/registry", "opensource_glm-4v": "medical/domains file (run)",
		"opensource_my--raw": "general/domains file (model)", "opensource_other": "/",
		"opensource_medgemma_no_thinking_strict": "medical/registry",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups %v, want %v", got, want)
	}
	if len(warns) != 2 || !strings.Contains(warns[0], "opensource_other") || !strings.Contains(warns[1], `d.yaml: "nosuch"`) {
		t.Errorf("warnings %q", warns)
	}
}

func TestReadDomains(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "# comment\nopensource_my-model: medical\nsome/raw-id: general\n")
	m, err := ReadDomains(good)
	if err != nil || !reflect.DeepEqual(m, map[string]string{"opensource_my-model": "medical", "some/raw-id": "general"}) {
		t.Fatalf("good: %v %v", m, err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, want string }{
		{write("list.yaml", "- a\n- b\n"), "line 1: want a mapping"},
		{write("nested.yaml", "a:\n  b: c\n"), `line 2: key "a": the group must be one word`},
		{write("all.yaml", "a: all\n"), `key "a": group "all" is reserved`},
		{write("dup.yaml", "a: medical\na: general\n"), `line 2: key "a" given twice`},
		{write("syntax.yaml", "a: [medical\n"), "syntax.yaml"},
		{write("empty.yaml", ""), "empty"},
		{write("two.yaml", "a: medical\n---\nb: general\n"), `line 2: a second YAML document starts here ("---")`},
		{write("big.yaml", strings.Repeat("#", maxDomainsFileBytes+1)), "big.yaml"},
		{filepath.Join(dir, "missing.yaml"), "missing.yaml"},
		{dir, "not a regular file"},
		{fifo, "not a regular file"},
	}
	for _, tc := range cases {
		_, err := ReadDomains(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Base(tc.path)) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line naming the file and containing %q", filepath.Base(tc.path), err, tc.want)
		}
	}
}

// The group interval reflects the spread between models, not only the
// records: two medical models at 95 % and 5 % against two general ones
// at 50 % give a wide interval for the difference, although 500 records
// per model would make a records-only interval about ±4 points.
func TestTwoLevelSeesModelSpread(t *testing.T) {
	reg := map[string]DomainModel{}
	var runs []*RunResult
	for i, p := range []float64{0.95, 0.05, 0.5, 0.5} {
		name := fmt.Sprintf("m%d", i)
		reg[name] = DomainModel{Domain: []string{groupMedical, groupGeneral}[i/2]}
		runs = append(runs, synthRun("opensource_"+name, name, "none", 500, func(j, k int) bool { return bernoulli(name, j, p) }))
	}
	dr := domainResult(t, runs, DomainOptions{Registry: reg})
	d := findDiff(dr, ComparisonDomain, benchmark.RevisionRequired, 1)
	if d == nil || d.Hi-d.Lo < 0.5 {
		t.Errorf("medical − general %+v: interval narrower than the models' spread", d)
	}
	for _, g := range dr.Groups {
		if g.Group == groupMedical && g.Path == benchmark.RevisionRequired && g.Stage == 1 && (g.Lo > 0.15 || g.Hi < 0.85) {
			t.Errorf("medical group interval [%v, %v], want about [0.05, 0.95]", g.Lo, g.Hi)
		}
	}
}

// TestDecayVerdict: claim 1 is decided by the pooled ratio at RR stage 4,
// and only with enough records; a handful of all-wrong records gives a
// zero-width bootstrap interval that must not decide anything.
func TestDecayVerdict(t *testing.T) {
	reg := map[string]DomainModel{"a": {Domain: groupGeneral}, "b": {Domain: groupGeneral}}
	collapse := func(i, k int) bool { return k < 4 || i%10 == 0 } // stage 4: 10 %
	steady := func(i, k int) bool { return i%10 < 8 }             // every stage 80 %
	tests := []struct {
		name    string
		n       int
		correct func(i, k int) bool
		want    string
		reason  string
	}{
		{"collapse", 200, collapse, supported, ""},
		{"steady", 200, steady, notSupported, ""},
		{"collapse, few records", 20, func(i, k int) bool { return k < 4 }, Undecided, "fewer than the 30 a verdict needs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs := []*RunResult{
				synthRun("opensource_a", "a", "none", tc.n, tc.correct),
				synthRun("opensource_b", "b", "none", tc.n, tc.correct),
			}
			dr := domainResult(t, runs, DomainOptions{Registry: reg})
			found := false
			for _, v := range dr.Verdict {
				if v.Claim != 1 {
					continue
				}
				found = true
				if v.Status != tc.want || !strings.Contains(v.Reason, tc.reason) {
					t.Errorf("claim 1: %s (%s), want %s with %q", v.Status, v.Reason, tc.want, tc.reason)
				}
			}
			if !found {
				t.Fatal("no claim 1 verdict")
			}
			for _, d := range dr.Decay {
				if d.N >= MinDecayRecords && tc.n < MinDecayRecords {
					t.Errorf("%s: %d records, but each model has %d", d.Unit, d.N, tc.n)
				}
				if tc.n < MinDecayRecords && d.Precipitous {
					t.Errorf("%s stage %d flagged precipitous with %d records", d.Unit, d.Stage, d.N)
				}
			}
		})
	}
}

// TestDomainsFileWarnsWithoutGroups: a domains file whose key matches no
// run (a typo) is warned about even when, as a result, no run has a group;
// without groups claim 2 is not assessed, and claim 1 still is, on the
// models pooled (the group "all" alone).
func TestDomainsFileWarnsWithoutGroups(t *testing.T) {
	res := &Result{Runs: []*RunResult{{Run: &Run{Name: "opensource_my-vlm", Provider: "opensource", Kind: results.KindModel, Model: "my-vlm", OracleMode: "none"}, Scored: true}}}
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		want      []string
	}{
		{"typo", map[string]string{"opensource_my-vml": "medical"}, []string{"no domain known for", `d.yaml: "opensource_my-vml" names no run`}},
		{"no domains file", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Options{Domains: DomainOptions{Source: "d.yaml", Overrides: tc.overrides}}
			dr, warns := analyzeDomains(context.Background(), res, o)
			if len(warns) != len(tc.want) {
				t.Fatalf("warnings %q, want %q", warns, tc.want)
			}
			for _, g := range dr.Groups {
				if g.Group != groupAll {
					t.Errorf("group %q without any domain", g.Group)
				}
			}
			if len(dr.Verdict) != 2 || dr.Verdict[0].Claim != 1 || dr.Verdict[0].Status == NotAssessed ||
				dr.Verdict[1].Claim != 2 || dr.Verdict[1].Status != NotAssessed || !strings.Contains(dr.Verdict[1].Reason, "pass --domains") {
				t.Errorf("verdicts %+v: want claim 1 assessed and claim 2 not assessed", dr.Verdict)
			}
			for i, w := range tc.want {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %d: %q, want %q", i, warns[i], w)
				}
			}
		})
	}
}

// findDecay is the decay row of unit at stage k of revision_required.
func findDecay(t *testing.T, dr *DomainResult, unit string, k benchmark.Stage) DecayRow {
	t.Helper()
	for _, d := range dr.Decay {
		if d.Unit == unit && d.Path == benchmark.RevisionRequired && d.Stage == k {
			return d
		}
	}
	t.Fatalf("no decay row for %s stage %d", unit, k)
	return DecayRow{}
}

// TestDecayHonestIntervals: 7 revision-required records, one of them
// cardiomegaly (no stage 4), and none of the other 6 right at stage 4.
// The bootstrap of 0 of 6 resamples to 0 every time; the row must show
// n = 6 and the Wilson interval of 0 of 6 rather than [0, 0], and its
// ratio a non-degenerate interval too.
func TestDecayHonestIntervals(t *testing.T) {
	reg := map[string]DomainModel{"a": {Domain: groupGeneral}}
	rr := synthRun("opensource_a", "a", "none", 7, func(i, k int) bool { return k < 4 && i%3 != 2 })
	rr.Scores[6].App[3] = false // cardiomegaly: stage 4 does not apply
	dr := domainResult(t, []*RunResult{rr}, DomainOptions{Registry: reg})
	wlo, whi, _ := stats.Wilson(0, 6)
	for _, unit := range []string{"opensource_a", groupAll} {
		d := findDecay(t, dr, unit, 4)
		if d.N != 6 {
			t.Errorf("%s stage 4: n = %d, want 6 (the records stage 4 applies to)", unit, d.N)
		}
		if !d.AccValid || d.Acc != 0 || d.AccLo != wlo || d.AccHi != whi {
			t.Errorf("%s stage 4: %v [%v, %v], want 0 [%v, %v] (Wilson, 0 of 6)", unit, d.Acc, d.AccLo, d.AccHi, wlo, whi)
		}
		if !d.RatioValid || d.Ratio != 0 || !(d.RHi > d.RLo) {
			t.Errorf("%s stage 4 ratio: valid %v, %v [%v, %v], want 0 with a non-zero-width interval", unit, d.RatioValid, d.Ratio, d.RLo, d.RHi)
		}
		if d1 := findDecay(t, dr, unit, 1); d1.N != 7 || !(d1.AccHi > d1.AccLo) {
			t.Errorf("%s stage 1: n = %d [%v, %v], want 7 records and a proper interval", unit, d1.N, d1.AccLo, d1.AccHi)
		}
	}
	// A group of one model resamples like the model alone.
	for _, k := range benchmark.Stages {
		m, g := findDecay(t, dr, "opensource_a", k), findDecay(t, dr, groupAll, k)
		m.Unit, m.Group, g.Unit, g.Group = "", false, "", false
		if m != g {
			t.Errorf("stage %d: the group of one model %+v differs from the model %+v", k, g, m)
		}
	}
	for _, g := range dr.Groups {
		if g.Valid && !(g.Hi > g.Lo) {
			t.Errorf("group %s %s stage %d: zero-width interval [%v, %v]", g.Group, g.Path, g.Stage, g.Lo, g.Hi)
		}
	}
}

// TestIdenticalAnswersIdenticalIntervals: two runs with the same answers
// under different names get the same decay intervals, and so does a
// run's records given in another order.
func TestIdenticalAnswersIdenticalIntervals(t *testing.T) {
	reg := map[string]DomainModel{"a": {Domain: groupGeneral}, "b": {Domain: groupGeneral}}
	answers := func(i, k int) bool { return bernoulli("same", i*4+k, 0.6) }
	a := synthRun("opensource_a", "a", "none", 7, answers)
	b := synthRun("opensource_b", "b", "none", 7, answers)
	slices.Reverse(b.Scores)
	dr := domainResult(t, []*RunResult{a, b}, DomainOptions{Registry: reg})
	for _, k := range benchmark.Stages {
		da, db := findDecay(t, dr, "opensource_a", k), findDecay(t, dr, "opensource_b", k)
		da.Unit, db.Unit = "", ""
		if da != db {
			t.Errorf("stage %d: %+v\nvs %+v", k, da, db)
		}
	}
}
