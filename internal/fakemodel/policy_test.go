package fakemodel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

func question(opts ...string) string {
	var b strings.Builder
	b.WriteString("Which option is right?\n\nOptions:")
	for i, o := range opts {
		fmt.Fprintf(&b, "\n(%d) %s", i+1, o)
	}
	return b.String()
}

func TestParseOptions(t *testing.T) {
	cases := []struct {
		text  string
		n     int
		multi bool
		err   bool
	}{
		{question("Yes", "No"), 2, false, false},
		{question("1st", "2nd", "3rd", "4th"), 4, false, false},
		{question("upper", "lower", "None"), 3, true, false},
		{question("left", "right", "apical", "None of the above locations"), 4, true, false},
		{question("None"), 1, false, false},
		// only the last Options block counts
		{question("a", "b", "c") + "\n\nMore.\n\nOptions:\n(1) x\n(2) None", 2, true, false},
		// numbering must be consecutive from 1
		{"Q\n\nOptions:\n(1) a\n(3) b", 1, false, false},
		{"Q\n\nOptions:\n(2) a", 0, false, true},
		{"no options here", 0, false, true},
		{"Options:\r\n(1) a\r\n(2) None\r", 2, true, false},
	}
	for _, tc := range cases {
		n, multi, err := ParseOptions(tc.text)
		if (err != nil) != tc.err || n != tc.n || multi != tc.multi {
			t.Errorf("%q: got %d %v %v, want %d %v err=%v", tc.text, n, multi, err, tc.n, tc.multi, tc.err)
		}
	}
}

func TestRandomAnswerIsPure(t *testing.T) {
	texts := []string{"SYS", question("Yes", "No"), "Answer: 1", question("a", "b", "c", "d")}
	a, err := RandomAnswer(7, texts, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if b, _ := RandomAnswer(7, append([]string(nil), texts...), ""); b != a {
			t.Fatalf("same input gave %q then %q", a, b)
		}
	}
	// The answer depends on seed and on every text: over many variants
	// the answers must not all coincide.
	seen := map[string]bool{}
	for s := int64(0); s < 40; s++ {
		b, _ := RandomAnswer(s, texts, "")
		seen[b] = true
	}
	if len(seen) < 3 {
		t.Errorf("seed does not change the answer: %v", seen)
	}
	seen = map[string]bool{}
	for i := 0; i < 40; i++ {
		tx := append([]string(nil), texts...)
		tx[0] = fmt.Sprintf("SYS %d", i)
		b, _ := RandomAnswer(7, tx, "")
		seen[b] = true
	}
	if len(seen) < 3 {
		t.Errorf("earlier texts do not change the answer: %v", seen)
	}
	// Records asking identical texts about different radiographs must
	// not share one draw, or the baseline would not sit at chance.
	seen = map[string]bool{}
	for i := 0; i < 40; i++ {
		b, _ := RandomAnswer(7, texts, provider.PayloadKey(fmt.Sprintf("image %d", i)))
		seen[b] = true
	}
	if len(seen) < 3 {
		t.Errorf("the first image does not change the answer: %v", seen)
	}
}

func TestRandomLabelFraming(t *testing.T) {
	if RandomLabel(1, []string{"ab", "c"}, "") == RandomLabel(1, []string{"a", "bc"}, "") {
		t.Error("different splits of the same text share a label")
	}
	if got := RandomLabel(3, []string{"ab", ""}, ""); got != "chexpercept/random/3/2:ab0:" {
		t.Errorf("label = %q", got)
	}
}

// TestRandomDistribution: over many distinct questions the answers are
// uniform over the valid answers (chi-square, fixed seed; the critical
// values are the 99.9% quantiles, so a correct policy fails ~never and a
// biased one, e.g. never drawing None alone, fails always).
func TestRandomDistribution(t *testing.T) {
	cases := []struct {
		opts []string
		want []string // every valid answer
		crit float64  // chi-square 99.9% quantile for len(want)-1 dof
	}{
		{[]string{"Yes", "No"}, []string{"Answer: 1", "Answer: 2"}, 10.83},
		{[]string{"a", "b", "c", "d"}, []string{"Answer: 1", "Answer: 2", "Answer: 3", "Answer: 4"}, 16.27},
		{[]string{"red point", "blue point", "None"}, []string{"Answer: 3", "Answer: 1", "Answer: 2", "Answer: 1,2"}, 16.27},
		{[]string{"l", "r", "b", "None of the above"}, []string{"Answer: 4", "Answer: 1", "Answer: 2", "Answer: 3",
			"Answer: 1,2", "Answer: 1,3", "Answer: 2,3", "Answer: 1,2,3"}, 24.32},
	}
	const N = 8000
	for _, tc := range cases {
		counts := map[string]int{}
		for i := 0; i < N; i++ {
			texts := []string{"SYS", fmt.Sprintf("case %d\n\n", i) + question(tc.opts...)}
			a, err := RandomAnswer(0, texts, "")
			if err != nil {
				t.Fatal(err)
			}
			counts[a]++
		}
		if len(counts) != len(tc.want) {
			t.Errorf("%v: answers %v, want exactly %v", tc.opts, counts, tc.want)
			continue
		}
		exp := float64(N) / float64(len(tc.want))
		chi := 0.0
		for _, w := range tc.want {
			d := float64(counts[w]) - exp
			chi += d * d / exp
		}
		if chi > tc.crit || math.IsNaN(chi) {
			t.Errorf("%v: chi-square %.2f > %.2f: %v", tc.opts, chi, tc.crit, counts)
		}
	}
}

func TestBaselineClient(t *testing.T) {
	req := &provider.Request{Messages: []provider.Message{{Role: provider.RoleSystem, Text: "S"},
		{Role: provider.RoleUser, Text: question("a", "b", "None"), Images: []*provider.Image{provider.NewImage([]byte("x"))}}}}
	first, _ := NewClient(runmodel.PolicyFirst, 0)
	if r, err := first.Complete(context.Background(), req); err != nil || r.Text != "Answer: 1" || r.FinishReason != "stop" {
		t.Errorf("first: %+v %v", r, err)
	}
	rnd, _ := NewClient(runmodel.PolicyRandom, 5)
	r, err := rnd.Complete(context.Background(), req)
	want, _ := RandomAnswer(5, []string{"S", question("a", "b", "None")}, "")
	if err != nil || r.Text != want || r.Usage == nil || r.Usage.Input != 1+int64(len(question("a", "b", "None"))+3)/4+EstTokensPerImage {
		t.Errorf("random: %+v %v (want %q)", r, err, want)
	}
	or, _ := NewClient(runmodel.PolicyOracle, 0)
	if r, err := or.CompleteWithAnswer(context.Background(), req, []int{2, 1}); err != nil || r.Text != "Answer: 1,2" {
		t.Errorf("oracle: %+v %v", r, err)
	}
	// The other policies do not look at the answer they are handed.
	if r, err := rnd.CompleteWithAnswer(context.Background(), req, []int{2, 1}); err != nil || r.Text != want {
		t.Errorf("random handed an answer: %+v %v (want %q)", r, err, want)
	}
	var ce *provider.CallError
	if _, err := or.Complete(context.Background(), req); !errors.As(err, &ce) || ce.Retryable() || !strings.Contains(ce.Msg, "ground truth") {
		t.Errorf("oracle without the answer: %v", err)
	}
	if _, err := rnd.Complete(context.Background(), &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "no options"}}}); !errors.As(err, &ce) || ce.Retryable() {
		t.Errorf("random without options: %v", err)
	}
	if _, err := NewClient("dummy", 0); err == nil {
		t.Error("unknown policy accepted")
	}
}
