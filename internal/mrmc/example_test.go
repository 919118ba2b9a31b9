package mrmc_test

import (
	"fmt"
	"strings"

	"github.com/chexpercept/chexpercept/internal/mrmc"
)

// A reader study as a long table: two modalities, three readers, six
// cases scored right (1) or wrong (0).
func Example() {
	var b strings.Builder
	b.WriteString("modality,reader,case,truth,score\n")
	right := map[string]string{
		"film/r1": "111010", "film/r2": "110010", "film/r3": "101110",
		"cad/r1": "111011", "cad/r2": "111010", "cad/r3": "111111",
	}
	for _, m := range []string{"film", "cad"} {
		for _, r := range []string{"r1", "r2", "r3"} {
			for c, s := range right[m+"/"+r] {
				fmt.Fprintf(&b, "%s,%s,%d,,%c\n", m, r, c+1, s)
			}
		}
	}
	d, err := mrmc.ParseScores(strings.NewReader(b.String()), "study.csv", mrmc.Accuracy)
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := mrmc.Analyze(d, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	rrrc := a.Designs[0]
	diff := rrrc.Diffs[0]
	fmt.Printf("%s: %s − %s = %.3f, 95 %% CI (%.3f, %.3f) on %.1f df\n", rrrc.Name, diff.A, diff.B, diff.Estimate, diff.Lo, diff.Hi, diff.DF)
	// Output:
	// random readers, random cases: film − cad = -0.222, 95 % CI (-0.402, -0.043) on 5.1 df
}
