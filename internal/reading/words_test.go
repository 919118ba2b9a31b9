package reading

import (
	"reflect"
	"testing"
)

// TestPageWords: the implicit oracle's notice and the candidates' labels
// speak the page's words — question numbers as the page shows them and
// options as "(N) text" — never a turn id or the answer syntax.
func TestPageWords(t *testing.T) {
	t.Parallel()
	points := "Which point lies inside the lesion?\n\nOptions:\n(1) red point\n(2) blue point\n(6) purple point"
	zones := "Where is it?\n\nOptions:\n(1) right upper\n(2) right mid\n(3) right lower"
	masks := "Each of the following images shows a candidate mask.\n\nOptions:\n(1) 1st mask\n(2) 2nd mask\n(3) 3rd mask\n(4) 4th mask"
	for _, tc := range []struct {
		answer, text, want string
	}{
		{"Answer: 6", points, "(6) purple point"},
		{"Answer: 1,3", zones, "(1) right upper and (3) right lower"},
		{"Answer: 1,2,3", zones, "(1) right upper, (2) right mid and (3) right lower"},
		{"Answer: 9", points, "option 9"},
		{"Answer: ", points, "no option"},
	} {
		if got := answerWords(tc.answer, tc.text); got != tc.want {
			t.Errorf("answerWords(%q) = %q, want %q", tc.answer, got, tc.want)
		}
	}

	hist := []Exchange{{Turn: "T1", Text: "Is there a lesion?\n\nOptions:\n(1) Yes\n(2) No"}, {Turn: "T2", Text: zones},
		{Turn: "T3", Text: points, Answer: "Answer: 6", Patched: true}}
	if got := patchedView(hist[:2]); got != nil {
		t.Errorf("no replaced answer: %+v", got)
	}
	one := patchedView(hist)
	if one == nil || one.Summary != "Oracle: question 3 is answered for you as (6) purple point" {
		t.Errorf("one replaced answer: %+v", one)
	}
	hist[0].Answer, hist[0].Patched = "Answer: 1", true
	two := patchedView(hist)
	want := &patchView{Summary: "Oracle: questions 1 and 3 are answered for you",
		Items: []string{"question 1 is answered for you as (1) Yes", "question 3 is answered for you as (6) purple point"}}
	if !reflect.DeepEqual(two, want) {
		t.Errorf("two replaced answers: %+v, want %+v", two, want)
	}

	for _, tc := range []struct {
		text string
		n    int
		want []string
	}{
		{masks, 4, []string{"(1) 1st mask", "(2) 2nd mask", "(3) 3rd mask", "(4) 4th mask"}},
		{masks, 1, []string{"Image 1"}},                        // one image: not the options'
		{points, 3, []string{"Image 1", "Image 2", "Image 3"}}, // options not numbered 1..n
		{zones, 2, []string{"Image 1", "Image 2"}},             // not one image per option
	} {
		if got := imageLabels(tc.text, tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("imageLabels(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
