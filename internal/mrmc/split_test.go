package mrmc

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// joinBlocks makes one split-plot study of fully crossed blocks, its
// readers and cases renamed "b<block>-<name>" so that no two blocks share
// a name.
func joinBlocks(t *testing.T, blocks []*Data) *Data {
	t.Helper()
	d := &Data{FOM: blocks[0].FOM, Modalities: blocks[0].Modalities, Scores: make([][][]float64, len(blocks[0].Modalities))}
	var ncases int
	for _, b := range blocks {
		ncases += len(b.Cases)
	}
	offset := 0
	for bi, b := range blocks {
		d.Blocks = append(d.Blocks, fmt.Sprint(bi+1))
		for _, c := range b.Cases {
			d.Cases = append(d.Cases, fmt.Sprintf("b%d-%s", bi+1, c))
			d.CaseBlock = append(d.CaseBlock, bi)
		}
		if b.Truth != nil {
			d.Truth = append(d.Truth, b.Truth...)
		}
		for j, r := range b.Readers {
			d.Readers = append(d.Readers, fmt.Sprintf("b%d-%s", bi+1, r))
			d.ReaderBlock = append(d.ReaderBlock, bi)
			for i := range d.Modalities {
				s := make([]float64, ncases)
				for k := range s {
					s[k] = math.NaN()
				}
				copy(s[offset:], b.Scores[i][j])
				d.Scores[i] = append(d.Scores[i], s)
			}
		}
		offset += len(b.Cases)
	}
	return d
}

// sameAnalysis compares two analyses' numbers bit for bit (NaN equal to
// NaN), the design's description aside.
func sameAnalysis(t *testing.T, what string, got, want *Analysis) {
	t.Helper()
	strip := func(a *Analysis) string {
		c := *a
		c.Blocks, c.BlockReaders, c.BlockCases = nil, nil, nil
		return fmt.Sprintf("%#v|%#v|%#v|%#v", c.Theta, c.ModalityMeans, c.Components, c.Designs)
	}
	if g, w := strip(got), strip(want); g != w {
		t.Errorf("%s: the analyses differ:\n%s\nwant\n%s", what, g, w)
	}
}

// TestOneBlockIsCrossed: a split-plot study of one block is the fully
// crossed study, to the last bit, for both figures of merit.
func TestOneBlockIsCrossed(t *testing.T) {
	t.Parallel()
	vd := loadVanDyke(t)
	r := rand.New(rand.NewPCG(7, 7))
	sim := simAlternative.draw(simDesign{Readers: 5, Cases: 70, Blocks: 1}, r)[0]
	for _, d := range []*Data{vd, sim} {
		want, err := Analyze(d, 0)
		if err != nil {
			t.Fatal(err)
		}
		one := *d
		one.Blocks = []string{"all"}
		one.ReaderBlock = make([]int, len(d.Readers))
		one.CaseBlock = make([]int, len(d.Cases))
		got, err := Analyze(&one, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameAnalysis(t, string(d.FOM), got, want)
		if got.MSTRG != got.MSTR {
			t.Errorf("%s: one block: MS(T×R(G)) %v, MS(T×R) %v", d.FOM, got.MSTRG, got.MSTR)
		}
		if got.DesignName() != "split-plot, 1 block" || want.DesignName() != "fully crossed" {
			t.Errorf("design names %q, %q", got.DesignName(), want.DesignName())
		}
	}
}

// TestSplitPlotFromBlocks: the split-plot analysis of two blocks of
// unequal size, recomputed from each block's own fully crossed analysis:
// MS(T×R(G)) is the blocks' MS(T×R) pooled on their degrees of freedom;
// Var and Cov1 are averaged over readers, Cov2 and Cov3 over the pairs of
// readers within a block; the random-readers test divides MS(T) by
// MS(T×R(G)) + (Σ r_b²/r)·max(Cov2 − Cov3, 0), on Hillis' df.
func TestSplitPlotFromBlocks(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	b1 := simAlternative.draw(simDesign{Readers: 3, Cases: 40, Blocks: 1}, r)[0]
	b2 := simAlternative.draw(simDesign{Readers: 5, Cases: 55, Blocks: 1}, r)[0]
	d := joinBlocks(t, []*Data{b1, b2})
	a, err := Analyze(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	a1, err := Analyze(b1, 0)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := Analyze(b2, 0)
	if err != nil {
		t.Fatal(err)
	}
	const tt = 2.0
	r1, r2 := 3.0, 5.0
	rr := r1 + r2
	msTRG := ((r1-1)*a1.MSTR + (r2-1)*a2.MSTR) / (rr - 2)
	v := (r1*a1.Var + r2*a2.Var) / rr
	c1 := (r1*a1.Cov1 + r2*a2.Cov1) / rr
	p1, p2 := r1*(r1-1), r2*(r2-1)
	c2 := (p1*a1.Cov2 + p2*a2.Cov2) / (p1 + p2)
	c3 := (p1*a1.Cov3 + p2*a2.Cov3) / (p1 + p2)
	// MS(T) of all eight readers.
	m := [2]float64{}
	for i := range 2 {
		m[i] = (r1*a1.ModalityMeans[i] + r2*a2.ModalityMeans[i]) / rr
	}
	msT := rr * ((m[0] - m[1]) * (m[0] - m[1]) / 2) / (tt - 1)
	nEff := (r1*r1 + r2*r2) / rr
	den := msTRG + nEff*math.Max(c2-c3, 0)
	df := den * den / (msTRG * msTRG / ((tt - 1) * (rr - 2)))
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"MS(T×R(G))", a.MSTRG, msTRG}, {"Var", a.Var, v}, {"Cov1", a.Cov1, c1}, {"Cov2", a.Cov2, c2}, {"Cov3", a.Cov3, c3},
		{"MS(T)", a.MST, msT}, {"F", a.Designs[0].Test.Stat, msT / den}, {"df", a.Designs[0].Test.DF2, df},
		{"chi2", a.Designs[1].Test.Stat, msT / (v - c1 + (p1+p2)/rr*math.Max(c2-c3, 0))},
		{"RRFC F", a.Designs[2].Test.Stat, msT / msTRG},
	} {
		if math.Abs(c.got-c.want) > 1e-12*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s: %.15g, want %.15g", c.name, c.got, c.want)
		}
	}
	if a.Designs[2].Test.DF2 != 6 {
		t.Errorf("fixed cases df %v, want (t − 1)(r − B) = 6", a.Designs[2].Test.DF2)
	}
	if a.DesignName() != "split-plot, 2 blocks" {
		t.Errorf("design %q", a.DesignName())
	}
}

// TestSplitPlotScoresTable: a split-plot scores table is read with its
// block column or without it (the blocks found from which cases each
// reader scored), both giving the same analysis, and written back.
func TestSplitPlotScoresTable(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 9))
	d := joinBlocks(t, simAlternative.draw(simDesign{Readers: 6, Cases: 90, Blocks: 3}, r))
	withBlock := FormatScores(d)
	if !strings.HasPrefix(string(withBlock), "modality,reader,case,truth,score,block\r\n") {
		t.Fatalf("header: %q", strings.SplitN(string(withBlock), "\n", 2)[0])
	}
	if n := strings.Count(string(withBlock), "\n"); n != 1+2*6*30 {
		t.Errorf("%d lines, want a header and one row per scored cell (%d)", n, 1+2*6*30)
	}
	want, err := Analyze(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseScores(bytes.NewReader(withBlock), "scores.csv", Accuracy)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(FormatScores(got), withBlock) {
		t.Error("a split-plot table read and written again differs")
	}
	a, err := Analyze(got, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameAnalysis(t, "with the block column", a, want)
	// Without the block column: the blocks are found.
	var noBlock strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(string(withBlock), "\r\n"), "\r\n") {
		noBlock.WriteString(line[:strings.LastIndexByte(line, ',')] + "\n")
	}
	found, err := ParseScores(strings.NewReader(noBlock.String()), "scores.csv", Accuracy)
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Blocks) != 3 {
		t.Fatalf("found %d blocks, want 3", len(found.Blocks))
	}
	a, err = Analyze(found, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameAnalysis(t, "blocks found", a, want)
	var text strings.Builder
	if err := a.Text(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Design: split-plot, 3 blocks (block 1: 2 readers, 30 cases;") {
		t.Errorf("text does not state the design:\n%s", text.String()[:300])
	}
	if js := string(a.Files()["mrmc.json"]); !strings.Contains(js, `"design": "split-plot"`) || !strings.Contains(js, `"ms_trg"`) {
		t.Error("mrmc.json does not state the design")
	}
}

// TestSplitPlotRefused: tables that are neither crossed nor split-plot,
// and split-plot studies the analysis cannot take, are refused in one
// line naming the file and the reason.
func TestSplitPlotRefused(t *testing.T) {
	t.Parallel()
	head := "modality,reader,case,truth,score\n"
	rows := func(m, r string, cases ...string) string {
		var b strings.Builder
		for n, c := range cases {
			fmt.Fprintf(&b, "%s,%s,%s,NA,%d\n", m, r, c, n%2)
		}
		return b.String()
	}
	both := func(r string, cases ...string) string { return rows("A", r, cases...) + rows("B", r, cases...) }
	for _, c := range []struct{ name, table, want string }{
		{"overlap", head + both("r1", "1", "2", "3") + both("r2", "1", "2", "3") + both("r3", "3", "4", "5") + both("r4", "3", "4", "5"),
			"s.csv: modality A, reader r1 has no score for case 4: neither fully crossed (every reader scores every case in every modality) nor split-plot (readers in blocks of at least 2, each scoring every case of its block only)"},
		{"lone reader", head + both("r1", "1", "2", "3") + both("r2", "1", "2", "3") + both("r3", "4", "5", "6"),
			"s.csv: modality A, reader r1 has no score for case 4: neither fully crossed"},
		{"lone reader, block column", "modality,reader,case,truth,score,block\nA,r1,1,NA,1,x\nA,r1,2,NA,0,x\nA,r2,1,NA,1,x\nA,r2,2,NA,0,x\nA,r3,3,NA,1,y\nA,r3,4,NA,0,y\n",
			"s.csv: block y: 1 reader(s): a split-plot study needs at least 2 readers in every block"},
		{"missing cell", head + both("r1", "1", "2", "3") + both("r2", "1", "2", "3") + both("r3", "4", "5", "6") + rows("A", "r4", "4", "5", "6") + rows("B", "r4", "4", "5"),
			"s.csv: modality B, reader r4 has no score for case 6: in a split-plot study every reader scores every case of its block (2) in every modality"},
		{"block across", "modality,reader,case,truth,score,block\nA,r1,1,NA,1,x\nA,r1,2,NA,0,y\n",
			"s.csv line 3: field block: reader r1 is in another block on line 2"},
		{"case across", "modality,reader,case,truth,score,block\nA,r1,1,NA,1,x\nA,r2,1,NA,0,y\n",
			"s.csv line 3: field block: case 1 is in another block on line 2"},
	} {
		_, err := ParseScores(strings.NewReader(c.table), "s.csv", Accuracy)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v\nwant %s", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error of more than one line", c.name)
		}
	}
}
