package registry

import (
	"cmp"
	"github.com/chexpercept/chexpercept/internal/editdist"
	"path"
	"slices"
	"strings"
)

// maxSuggestions caps Suggest: enough for "qwen" to show the Qwen family,
// few enough for one line of a notice.
const maxSuggestions = 4

// Suggest returns the aliases a name that is no alias may have meant,
// closest first (ties in registry order), at most four; nil for an
// alias. The name is compared case-insensitively with each entry's alias,
// display name, model id and the model id's last path element, so
// "MedGemma", "medgema", "google/gemma-3-27b-it" and "Lingshu-32B" all
// find their alias. An entry matches when the edit distance (restricted
// Damerau–Levenshtein: adjacent transpositions count one) is at most a
// quarter of the name's length, clamped to 1..3, or when a name of three
// or more characters starts one of those strings ("qwen", "gemini"). An
// exact case-insensitive match is conclusive: then only such matches are
// returned.
func (r *Registry) Suggest(name string) []string {
	name = strings.TrimSpace(name)
	low := strings.ToLower(name)
	n := len([]rune(low))
	if _, ok := r.byAlias[name]; ok || n == 0 || n > 256 { // an alias, nothing to compare, or no mistyped alias
		return nil
	}
	bound := min(max(n/4, 1), 3)
	type hit struct {
		alias string
		dist  int
		order int
	}
	var hits []hit
	for i, e := range r.entries {
		best, ok := -1, false
		for _, c := range []string{e.Alias, e.DisplayName, e.ModelID, path.Base(e.ModelID)} {
			c = strings.ToLower(c)
			if c == "" {
				continue
			}
			d := editdist.Distance(low, c)
			if d <= bound || n >= 3 && strings.HasPrefix(c, low) {
				ok = true
			}
			if best < 0 || d < best {
				best = d
			}
		}
		if ok {
			hits = append(hits, hit{e.Alias, best, i})
		}
	}
	if slices.ContainsFunc(hits, func(h hit) bool { return h.dist == 0 }) {
		hits = slices.DeleteFunc(hits, func(h hit) bool { return h.dist > 0 })
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(a.order, b.order)) })
	var out []string
	for _, h := range hits[:min(len(hits), maxSuggestions)] {
		out = append(out, h.alias)
	}
	return out
}
