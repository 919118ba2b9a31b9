package analysis

import (
	"strings"
	"testing"
)

// pairDiffers warns about a real difference only: an unknown benchmark
// hash (a run without manifest) is no difference, and hashes are shown
// abbreviated.
func TestPairDiffers(t *testing.T) {
	const h1 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const h2 = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	tests := []struct {
		name string
		a, b Run
		want []string // substrings, one per warning
	}{
		{"same", Run{BenchmarkSHA256: h1, ParseMode: "strict"}, Run{BenchmarkSHA256: h1, ParseMode: "strict"}, nil},
		{"benchmark differs", Run{BenchmarkSHA256: h1}, Run{BenchmarkSHA256: h2},
			[]string{"differ in benchmark sha256: 0123456789ab… vs fedcba987654…"}},
		{"benchmark unknown", Run{BenchmarkSHA256: h1}, Run{}, nil},
		{"parse mode", Run{ParseMode: "strict"}, Run{ParseMode: "reference"}, []string{"differ in parse mode: strict vs reference"}},
		{"profile", Run{ProfileName: "p", ProfileSHA256: h1}, Run{ProfileName: "p", ProfileSHA256: h2},
			[]string{"differ in prompt profile: p 0123456789ab… vs p fedcba987654…"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.a.Name, tc.b.Name = "a", "b"
			got := pairDiffers(&tc.a, &tc.b)
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q lacks %q", got[i], w)
				}
			}
		})
	}
}
