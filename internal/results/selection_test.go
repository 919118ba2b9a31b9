package results

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/rng"
)

func ip(v int) *int { return &v }

func TestSelect(t *testing.T) {
	recs := benchtest.Full(2) // per lesion: LF, LF, RF, RR, RF, RR
	edema := slices.Index(benchmark.DefaultLesions().Names(), "edema") * 6
	for _, c := range []struct {
		name string
		sel  Selection
		want []int
	}{
		{"all", Selection{}, nil},
		{"limit", Selection{Limit: ip(5)}, []int{0, 1, 2, 3, 4}},
		{"limit beyond", Selection{Limit: ip(1000)}, nil},
		{"per-path overrides limit", Selection{Limit: ip(1), PerPathLimit: ip(2)}, []int{0, 1, 2, 3, 4, 5}},
		{"lesions", Selection{Lesions: []string{"edema"}}, []int{edema, edema + 1, edema + 2, edema + 3, edema + 4, edema + 5}},
		{"lesions then limit", Selection{Lesions: []string{"edema"}, Limit: ip(2)}, []int{edema, edema + 1}},
		{"shard 2/3 of limit 6", Selection{Limit: ip(6), Shard: &Shard{I: 2, N: 3}}, []int{1, 4}},
		{"shard 3/3", Selection{Limit: ip(6), Shard: &Shard{I: 3, N: 3}}, []int{2, 5}},
	} {
		got, err := Select(recs, c.sel)
		if err != nil {
			t.Fatal(err)
		}
		want := c.want
		if want == nil {
			if c.name == "all" || c.name == "limit beyond" {
				for i := range recs {
					want = append(want, i)
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", c.name, got, want)
		}
	}
}

func TestAllocate(t *testing.T) {
	for _, c := range []struct {
		sizes []int
		n     int
		want  []int
	}{
		{[]int{5, 3, 2}, 4, []int{2, 1, 1}}, // remainders 0, 2, 8: the last gets the spare slot
		{[]int{3, 3, 4}, 5, []int{2, 1, 2}}, // tie 5, 5: stratum order
		{[]int{1, 1, 1}, 3, []int{1, 1, 1}},
		{[]int{10}, 0, []int{0}},
	} {
		if got := allocate(c.sizes, c.n); !slices.Equal(got, c.want) {
			t.Errorf("allocate(%v, %d) = %v, want %v", c.sizes, c.n, got, c.want)
		}
	}
}

func TestSampleStratified(t *testing.T) {
	// 21 strata of one record: 5 slots go to the first five strata in
	// byte order, whatever the seed.
	recs := benchtest.Full(1)
	got, err := Select(recs, Selection{Sample: ip(5), Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range got {
		names = append(names, recs[i].Lesion+"|"+string(recs[i].Path()))
	}
	want := []string{"atelectasis|lesion_free", "atelectasis|revision_free", "atelectasis|revision_required", "cardiomegaly|lesion_free", "cardiomegaly|revision_free"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("sampled strata %v, want %v", names, want)
	}

	// Strata of 3: the draw uses the §2.3 RNG label, stratum by stratum.
	recs = benchtest.Full(3)
	got, _ = Select(recs, Selection{Sample: ip(10), Seed: 7})
	strata := map[string][]int{}
	for i, r := range recs {
		k := r.Lesion + "|" + string(r.Path())
		strata[k] = append(strata[k], i)
	}
	var keys []string
	for k := range strata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	r := rng.New("chexpercept/eval-sample/" + strconv.Itoa(7))
	var want2 []int
	for _, k := range keys[:10] {
		want2 = append(want2, rng.Sample(r, strata[k], 1)...)
	}
	for _, k := range keys[10:] {
		rng.Sample(r, strata[k], 0)
	}
	slices.Sort(want2)
	if !slices.Equal(got, want2) {
		t.Errorf("sample = %v, want %v", got, want2)
	}
	again, _ := Select(recs, Selection{Sample: ip(10), Seed: 7})
	other, _ := Select(recs, Selection{Sample: ip(10), Seed: 8})
	if !slices.Equal(got, again) || slices.Equal(got, other) {
		t.Error("the sample is not a function of the seed")
	}
}

func TestParseShard(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		in      string
		env     func(string) string
		want    *Shard
		errWant string
	}{
		{"2/3", env(), &Shard{I: 2, N: 3}, ""},
		{"auto/4", env("JOB_COMPLETION_INDEX", "0"), &Shard{I: 1, N: 4}, ""},
		{"auto/4", env("SLURM_ARRAY_TASK_ID", "7", "SLURM_ARRAY_TASK_MIN", "5"), &Shard{I: 3, N: 4}, ""},
		{"auto/4", env(), nil, "neither"},
		{"0/3", env(), nil, "outside 1..3"},
		{"4/3", env(), nil, "outside 1..3"},
		{"auto/2", env("JOB_COMPLETION_INDEX", "2"), nil, "outside"},
		{"x", env(), nil, "want i/n"},
		{"1/0", env(), nil, "positive"},
	} {
		got, err := ParseShard(c.in, c.env)
		if c.errWant != "" {
			// The command puts its flag in front: "--shard " + err.
			if err == nil || !strings.Contains(err.Error(), c.errWant) || strings.Contains(err.Error(), "--") {
				t.Errorf("ParseShard(%q): err %v, want %q and no flag name", c.in, err, c.errWant)
			}
			continue
		}
		if err != nil || *got != *c.want {
			t.Errorf("ParseShard(%q) = %v, %v", c.in, got, err)
		}
	}
	if s := (&Shard{I: 2, N: 5}).Dir(); s != "shard-2-of-5" {
		t.Errorf("Dir = %s", s)
	}
}

func TestSelectionHashes(t *testing.T) {
	a := Selection{Limit: ip(3)}
	b := Selection{Limit: ip(3), Lesions: []string{}}
	if a.Hash() != b.Hash() {
		t.Error("nil and empty lesion lists hash differently")
	}
	if a.Hash() == (Selection{Limit: ip(4)}).Hash() {
		t.Error("different limits hash the same")
	}
	if KeysHash([]string{"a", "b"}) == KeysHash([]string{"ab"}) {
		t.Error("key list hash is ambiguous")
	}
	if _, err := ParseLesions("edema,No_pe"); err == nil || !strings.Contains(err.Error(), `"No_pe" is not a lesion name`) {
		t.Errorf("malformed lesion: %v", err)
	}
	if sel, err := ParseLesions("edema,nope"); err != nil {
		t.Errorf("well-formed lesions: %v", err)
	} else if err := CheckLesions(Selection{Lesions: sel}, nil); err == nil || !strings.HasPrefix(err.Error(), `unknown lesion "nope" (this benchmark has `) {
		t.Errorf("unknown lesion: %v", err)
	}
	neg := -1
	for _, sel := range []Selection{{Limit: &neg}, {PerPathLimit: &neg}, {Sample: &neg}} {
		if _, err := Select(nil, sel); err == nil || !strings.HasPrefix(err.Error(), "selection ") || !strings.HasSuffix(err.Error(), " -1 is negative") {
			t.Errorf("Select(%+v): %v, want the field named", sel, err)
		}
	}
	if l, _ := ParseLesions("pneumonia, edema,edema"); !slices.Equal(l, []string{"edema", "pneumonia"}) {
		t.Errorf("ParseLesions = %v", l)
	}
}

// The strict parse mode's name, which names a run apart, is protocol's.
func TestParseStrictName(t *testing.T) {
	if parseStrict != string(parse.ModeStrict) {
		t.Errorf("parseStrict %q, protocol's strict mode %q", parseStrict, parse.ModeStrict)
	}
	if got := RunName("openai", "m", true, true); got != "openai_m_no_thinking_strict" {
		t.Errorf("run name %q", got)
	}
}
