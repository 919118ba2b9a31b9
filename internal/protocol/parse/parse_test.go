package parse

import (
	"reflect"
	"testing"
)

func TestReference(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		n       int
		glm     bool
		text    string
		nums    []int
		rule    string
		ok      bool
		inRange bool
	}{
		{"plain marker", "Answer: 2", 2, false, "2", []int{2}, "A4/B2", true, true},
		{"think block removed", "<think>Looking again, Answer: 1 seems off.</think>\nAnswer: 2", 2, false, "2", []int{2}, "A4/B2", true, true},
		{"orphan close think keeps reasoning", "The opacity suggests option 1.\n</think>\n\n2", 2, false, "The opacity suggests option 1.\n</think>\n\n2", []int{2}, "A7/B2", false, true},
		{"orphan close think marker inside reasoning wins", "Answer: 1 maybe\n</think>\nThe mask looks fine.", 2, false, "1", []int{1}, "A4/B2", true, true},
		{"gemma unused tokens", "<unused94>thought\nThe heart looks enlarged.<unused95>Answer: 1", 2, false, "1", []int{1}, "A4/B2", true, true},
		{"markdown bold marker not A4", "**Answer:** 2", 2, false, "**Answer:** 2", []int{2}, "A7/B3", false, true},
		{"upper case marker not A4", "ANSWER: 3", 4, false, "ANSWER: 3", []int{3}, "A7/B3", false, true},
		{"boxed alone", `\boxed{2}`, 2, false, "2", []int{2}, "A6/B2", true, true},
		{"boxed list", `The points are \boxed{1, 3}`, 4, false, "The points are 1, 3", []int{1, 3}, "A7/B3", false, true},
		{"final answer dollar", "Final answer: $3$", 4, false, "3", []int{3}, "A5/B2", true, true},
		{"final answer is", "So my final answer is 2.", 4, false, "2", []int{2}, "A5/B2", true, true},
		{"final answers word char blocks A5", "final answers: 2", 4, false, "final answers: 2", []int{2}, "A7/B3", false, true},
		{"final answer across lines", "Final answer\n\n(option)\n$$ 4 $$", 4, false, "4", []int{4}, "A5/B2", true, true},
		{"markdown final answer", "**Final Answer**: 2", 2, false, "2", []int{2}, "A5/B2", true, true},
		{"the answer is", "The answer is 2", 2, false, "The answer is 2", []int{2}, "A7/B1", false, true},
		{"answeris no boundary", "answeris 3", 4, false, "answeris 3", []int{3}, "A7/B1", false, true},
		{"answers are list", "The answers are 1, 3 given the mask", 4, false, "The answers are 1, 3 given the mask", []int{1, 3}, "A7/B1", false, true},
		{"B1 greedy across lines", "The answer is 2\n\n3 reasons support this", 4, false, "The answer is 2\n\n3 reasons support this", []int{2, 3}, "A7/B1", false, true},
		{"digit with dot", "4.", 4, false, "4", []int{4}, "A6/B2", true, true},
		{"comma list", "1, 3", 4, false, "1,3", []int{1, 3}, "A6/B2", true, true},
		{"arabic-indic digit", "Answer: ٣", 4, false, "٣", []int{3}, "A4/B2", true, true},
		{"full-width digit", "Answer: ３", 4, false, "３", []int{3}, "A4/B2", true, true},
		{"math sans digit", "Answer: \U0001D7E5", 4, false, "\U0001D7E5", []int{3}, "A4/B2", true, true},
		{"prose stray numbers", "The lesion spans 2 zones, about 30% of the right lung.", 4, false, "The lesion spans 2 zones, about 30% of the right lung.", []int{2, 30}, "A7/B3", false, false},
		{"prose no number", "I cannot determine this from the image.", 2, false, "I cannot determine this from the image.", []int{-1}, "A7/B3", false, false},
		{"empty", "", 2, false, "", []int{-1}, "A7/B0", false, false},
		{"whitespace only", " \n\u3000\t", 2, false, "", []int{-1}, "A7/B0", false, false},
		{"multiple markers last wins", "Answer: 1\nOn reflection the boundary is off.\nAnswer: 2", 2, false, "2", []int{2}, "A4/B2", true, true},
		{"glm box unwrapped", "<|begin_of_box|>2<|end_of_box|>", 2, true, "2", []int{2}, "A6/B2", true, true},
		{"glm box without quirk", "<|begin_of_box|>2<|end_of_box|>", 2, false, "<|begin_of_box|>2<|end_of_box|>", []int{2}, "A7/B3", false, true},
		{"glm box list after marker", "Answer: <|begin_of_box|>1,3<|end_of_box|>", 4, true, "1,3", []int{1, 3}, "A4/B2", true, true},
		{"glm box across lines", "<|begin_of_box|>\n3\n<|end_of_box|>", 4, true, "3", []int{3}, "A6/B2", true, true},
		{"parenthesised", "Answer: (2)", 2, false, "2", []int{2}, "A4/B2", true, true},
		{"spaced list", "Answer: 1 , 3", 4, false, "1,3", []int{1, 3}, "A4/B2", true, true},
		{"python whitespace nbsp", "Answer:\u00a02", 2, false, "2", []int{2}, "A4/B2", true, true},
		{"unclosed think", "<think>The answer is 2 because", 2, false, "<think>The answer is 2 because", []int{2}, "A7/B1", false, true},
		{"last numeric line", "I choose the option below:\n2\n", 2, false, "I choose the option below:\n2", []int{2}, "A7/B2", false, true},
		{"bold number after colon", "The answer is:\n\n**2**", 2, false, "The answer is:\n\n**2**", []int{2}, "A7/B3", false, true},
		{"huge number clamped", "99999999999", 2, false, "99999999999", []int{2147483647}, "A6/B2", true, false},
		{"out of range", "Answer: 5", 4, false, "5", []int{5}, "A4/B2", true, false},
		{"lower case answer inside word", "My answer: 1,3 and that is final", 4, false, "1,3", []int{1, 3}, "A4/B2", true, true},
		{"markdown heading then number line", "### Reasoning\nBoth points lie outside.\n\n**Answer**\n1, 2", 4, false, "### Reasoning\nBoth points lie outside.\n\n**Answer**\n1, 2", []int{1, 2}, "A7/B2", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Reference(tc.raw, tc.n, tc.glm)
			want := Result{Text: tc.text, Nums: tc.nums, Rule: tc.rule, OK: tc.ok, InRange: tc.inRange}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Reference(%q)\n got %+v\nwant %+v", tc.raw, got, want)
			}
		})
	}
}

func TestStrict(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		n     int
		multi bool
		text  string
		nums  []int
		rule  string
	}{
		{"plain marker", "Answer: 2", 2, false, "2", []int{2}, "answer_marker"},
		{"markdown bold", "**Answer:** 2", 2, false, "2", []int{2}, "answer_marker"},
		{"markdown bold inside", "**Answer: 2**", 2, false, "2", []int{2}, "answer_marker"},
		{"upper case", "ANSWER: 3", 4, false, "3", []int{3}, "answer_marker"},
		{"plural multi", "Answers: 1, 3", 4, true, "1,3", []int{1, 3}, "answer_marker"},
		{"full-width colon and digit", "Answer：２", 2, false, "2", []int{2}, "answer_marker"},
		{"arabic-indic", "Answer: ٢", 2, false, "2", []int{2}, "answer_marker"},
		{"boxed only", `\boxed{2}`, 2, false, "2", []int{2}, "boxed"},
		{"boxed last of two", `\boxed{1} no wait \boxed{2}`, 2, false, "2", []int{2}, "boxed"},
		{"boxed after marker", `Answer: \boxed{2}`, 2, false, "2", []int{2}, "answer_marker"},
		{"final answer dollar rejected", "Final answer: $3$", 4, false, "", nil, FailNoMarker},
		{"the answer is rejected", "The answer is 2", 2, false, "", nil, FailNoMarker},
		{"bare number rejected", "4.", 4, false, "", nil, FailNoMarker},
		{"prose numbers rejected", "The lesion covers 2 zones.", 4, false, "", nil, FailNoMarker},
		{"empty", "", 2, false, "", nil, FailEmpty},
		{"whitespace", " \n\u2003", 2, false, "", nil, FailEmpty},
		{"think block removed", "<think>Answer: 1</think>Answer: 2", 2, false, "2", []int{2}, "answer_marker"},
		{"orphan close think cuts reasoning", "Answer: 1 perhaps\n</think>\nThe mask looks fine.", 2, false, "", nil, FailNoMarker},
		{"orphan close think then marker", "thinking Answer: 1\n</think>\n**Answer:** 2", 2, false, "2", []int{2}, "answer_marker"},
		{"unclosed think dropped", "Answer: 2\n<think>maybe Answer: 1", 2, false, "2", []int{2}, "answer_marker"},
		{"only unclosed think", "<think>Answer: 1 is likely but", 2, false, "", nil, FailNoMarker},
		{"unused tokens", "<unused94>thought Answer: 1<unused95>Answer: 2", 2, false, "2", []int{2}, "answer_marker"},
		{"out of range", "Answer: 5", 4, false, "", []int{5}, FailRange},
		{"zero out of range", "Answer: 0", 4, false, "", []int{0}, FailRange},
		{"multiple for single", "Answer: 1,2", 2, false, "", []int{1, 2}, FailMultiple},
		{"duplicate single ok", "Answer: 2, 2", 2, false, "2", []int{2}, "answer_marker"},
		{"dedupe keeps first order", "Answer: 3, 1, 3", 4, true, "3,1", []int{3, 1}, "answer_marker"},
		{"none with others parsed", "Answer: 4, 1", 4, true, "4,1", []int{4, 1}, "answer_marker"},
		{"parenthesised", "Answer: ( 2 )", 2, false, "2", []int{2}, "answer_marker"},
		{"glm box any model", "Answer: <|begin_of_box|>2<|end_of_box|>", 2, false, "2", []int{2}, "answer_marker"},
		{"multiple markers last wins", "Answer: 1\nActually, Answer: 3", 4, false, "3", []int{3}, "answer_marker"},
		{"underscore emphasis", "__Answer__: 1", 2, false, "1", []int{1}, "answer_marker"},
		{"boxed empty rejected", `\boxed{ , }`, 2, false, "", nil, FailNoMarker},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Strict(tc.raw, tc.n, tc.multi)
			ok := tc.rule == "answer_marker" || tc.rule == "boxed"
			inR := len(tc.nums) > 0 && tc.rule != FailRange
			want := Result{Text: tc.text, Nums: tc.nums, Rule: tc.rule, OK: ok, InRange: inR}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Strict(%q)\n got %+v\nwant %+v", tc.raw, got, want)
			}
		})
	}
}

func TestConvert(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"-1", []int{-1}},
		{"1,3", []int{1, 3}},
		{"٣,x", []int{3, -1}},
		{"", []int{-1}},
		{"2147483648", []int{2147483647}},
		{"007", []int{7}},
	}
	for _, tc := range tests {
		if got := Convert(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Convert(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestDigitValue(t *testing.T) {
	for r, want := range map[rune]int{'0': 0, '9': 9, '٣': 3, '３': 3, '۷': 7, '७': 7, 0x1D7CE: 0, 0x1D7D8: 0, 0x1D7E5: 3, 0x1D7FF: 9} {
		if got := digitValue(r); got != want {
			t.Errorf("digitValue(%U) = %d, want %d", r, got, want)
		}
	}
}

func TestParseMode(t *testing.T) {
	if _, err := ParseMode("lenient"); err == nil {
		t.Fatal("want error for unknown mode")
	}
	if m, err := ParseMode("strict"); err != nil || m != ModeStrict {
		t.Fatalf("ParseMode(strict) = %v, %v", m, err)
	}
}

// FuzzParse checks invariants on arbitrary replies: no panic, reference
// mode always yields a number, a strict success is in range and unique.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"Answer: 2", "<think>x</think>1, 3", `\boxed{٣}`, "final answer $$ 4", "", "</think>Answer: 9"} {
		f.Add(s, 4, true)
	}
	f.Fuzz(func(t *testing.T, raw string, n int, multi bool) {
		r := Reference(raw, n, true)
		if len(r.Nums) == 0 || r.Rule[0] != 'A' {
			t.Fatalf("reference %q: %+v", raw, r)
		}
		s := Strict(raw, n, multi)
		if s.OK {
			if !s.InRange || s.Text == "" || (!multi && len(s.Nums) != 1) {
				t.Fatalf("strict %q: %+v", raw, s)
			}
		} else if s.Text != "" || s.Rule[:5] != "fail:" {
			t.Fatalf("strict failure %q: %+v", raw, s)
		}
	})
}
