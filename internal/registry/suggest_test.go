package registry

import (
	"slices"
	"testing"
)

func TestSuggest(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"medgema", []string{"medgemma"}},                                      // deletion
		{"megdemma", []string{"medgemma"}},                                     // adjacent transposition counts one
		{"MedGemma", []string{"medgemma"}},                                     // case-insensitive; an exact match is conclusive (not medgemma1.5)
		{"glm4v", []string{"glm-4v"}},                                          // insertion
		{"internvl35", []string{"internvl3.5"}},                                // insertion
		{"gemini-3-pro", []string{"gemini-3.1-pro"}},                           // two edits within the bound of 3
		{"qwen3.6-27", []string{"qwen3.6-27b", "qwen3.5"}},                     // distance 1, then qwen3.5 (model id Qwen3.5-27B) at 2
		{"lingshu-32b", []string{"lingshu"}},                                   // the model id's last element
		{"google/gemma-3-27b-it", []string{"gemma3"}},                          // a registry model id as a raw id (not gemma4, 3 edits away)
		{"Qwen3.5-27B", []string{"qwen3.5"}},                                   // exact match of the model id's last element: not qwen3.6-27b at 1
		{"qwen", []string{"qwen3.6", "qwen3.5", "qwen3.6-27b", "qwen3.5-moe"}}, // prefix matches, shortest first, capped at four
		{"gemini", []string{"gemini-3.1-pro", "gemini-3.1-flash"}},
		{"gpt-5.4-mini", []string{"gpt-5.4-nano"}},
		{"medgemma", nil},                    // an alias: nothing to suggest (not medgemma1.5)
		{"  medgema ", []string{"medgemma"}}, // spaces as eval trims them
		{"qwen9-999b", nil},                  // too far from everything
		{"Qwen/Qwen2.5-VL-7B-Instruct", nil},
		{"gp", nil}, // too short for a prefix match, too far for an edit
		{"", nil},
		{"x", nil},
		{string(make([]byte, 1000)), nil}, // not compared at all
	} {
		if got := r.Suggest(tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("Suggest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestSuggestUserEntries: aliases from a user's models file are suggested
// like the built-in ones.
func TestSuggestUserEntries(t *testing.T) {
	r, err := Load("testdata/extra_models.yaml")
	if err != nil {
		t.Fatal(err)
	}
	es := r.Entries()
	last := es[len(es)-1].Alias
	typo := last[:len(last)-1]
	if got := r.Suggest(typo); !slices.Contains(got, last) {
		t.Errorf("Suggest(%q) = %q, want it to contain the user alias %q", typo, got, last)
	}
}
