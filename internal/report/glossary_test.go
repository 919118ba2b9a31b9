package report

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGlossaryMarkdown: report.md ends with the same glossary as
// index.html, one definition per term, and its anchors are unique.
func TestGlossaryMarkdown(t *testing.T) {
	t.Parallel()
	out, _ := plantedReport(t)
	md := string(read(t, filepath.Join(out, "report.md")))
	i := strings.LastIndex(md, "\n## Glossary\n")
	if i < 0 {
		t.Fatal("report.md has no Glossary section")
	}
	gl := md[i:]
	ids := map[string]bool{}
	for _, g := range glossary {
		if ids[g.ID] {
			t.Errorf("glossary anchor %q twice", g.ID)
		}
		ids[g.ID] = true
		if n := strings.Count(gl, "- **"+g.Term+"**: "); n != 1 {
			t.Errorf("report.md's glossary defines %q %d times", g.Term, n)
		}
	}
	for _, tc := range []struct{ mode, id string }{
		{"none", "oracle-none"}, {"implicit", "oracle-implicit"}, {"explicit", "oracle-explicit"}, {"other", "oracle-mode"},
	} {
		if got := oracleModeID(tc.mode); got != tc.id || !ids[got] {
			t.Errorf("oracleModeID(%q) = %q, want %q", tc.mode, got, tc.id)
		}
	}
}
