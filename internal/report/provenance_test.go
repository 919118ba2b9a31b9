package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/runset"
)

// TestProvenance: a model's run answered by serve-baseline is marked a
// rehearsal at that run in index.html, report.md and summary.json, with
// the server it names; a run of a real server and a baseline run are
// not. A benchmark whose build_info.json says phantom / accept_all gets
// the synthetic / unreviewed banner; one without build_info.json none.
func TestProvenance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		buildInfo string // "" writes none
		banner    bool
	}{
		{"phantom, unreviewed", `{"review_mode": "accept_all", "phantom_source": true}`, true},
		{"unreviewed only", `{"review_mode": "accept_all", "phantom_source": false}`, true},
		{"reviewed real cases", `{"review_mode": "review_db", "phantom_source": false}`, false},
		{"no build_info.json", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			dir := fixture(t, tmp, benchtest.Sample(),
				&analysistest.Run{Provider: "opensource", Label: "qwen3.6-27b", Oracle: "none", Policy: analysistest.Random(1), ServerOwner: provider.BaselineOwner},
				&analysistest.Run{Provider: "openai", Label: "gpt-5.4", Oracle: "none", Policy: analysistest.Random(2), ServerOwner: "openai"},
				&analysistest.Run{Provider: "baseline", Label: "oracle", Oracle: "none", Policy: analysistest.Oracle})
			if tc.buildInfo != "" {
				if err := os.WriteFile(filepath.Join(tmp, "bench", "build_info.json"), []byte(tc.buildInfo), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(tmp, "report")
			if _, err := Generate(context.Background(), Config{Load: runset.Loader([]string{dir}, runset.Options{}), Out: out, Report: Options{Version: "test"}, Analysis: analysis.Options{Bootstrap: 20}}); err != nil {
				t.Fatal(err)
			}
			md, html := string(read(t, filepath.Join(out, "report.md"))), string(read(t, filepath.Join(out, "index.html")))
			for name, page := range map[string]string{"report.md": md, "index.html": html} {
				if !strings.Contains(page, "opensource_qwen3.6-27b ("+analysis.RehearsalNote+")") {
					t.Errorf("%s: the serve-baseline run is not marked a rehearsal at its leaderboard row", name)
				}
				for _, other := range []string{"openai_gpt-5.4 (rehearsal", "baseline_oracle (rehearsal"} {
					if strings.Contains(page, other) {
						t.Errorf("%s: %s…: a real server's or a baseline's run marked a rehearsal", name, other)
					}
				}
				if !strings.Contains(page, `owned_by=`) || !strings.Contains(page, provider.BaselineOwner) {
					t.Errorf("%s does not name the server identity", name)
				}
				if got := strings.Contains(page, "Synthetic / unreviewed benchmark"); got != tc.banner {
					t.Errorf("%s: synthetic/unreviewed banner %v, want %v", name, got, tc.banner)
				}
			}
			v, err := ojson.Parse(read(t, filepath.Join(out, "summary.json")))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range v.Get("runs").A {
				name, reh, server := r.Get("run").S, r.Get("rehearsal"), r.Get("server")
				want := name == "opensource_qwen3.6-27b"
				if reh == nil || reh.Kind != ojson.KindBool || reh.B != want {
					t.Errorf("summary.json %s: rehearsal %v, want %v", name, reh, want)
				}
				if wantServer := name != "baseline_oracle"; (server.Kind == ojson.KindString) != wantServer {
					t.Errorf("summary.json %s: server %v", name, server)
				}
				if want && (r.Get("note") == nil || r.Get("note").S != analysis.RehearsalNote) {
					t.Errorf("summary.json %s: no rehearsal note", name)
				}
			}
			bb := v.Get("benchmark_build")
			if known := tc.buildInfo != ""; (bb.Kind == ojson.KindObject) != known {
				t.Errorf("summary.json benchmark_build %v", bb)
			} else if known && bb.Get("synthetic_or_unreviewed").B != tc.banner {
				t.Errorf("summary.json synthetic_or_unreviewed %v, want %v", bb.Get("synthetic_or_unreviewed").B, tc.banner)
			}
			csv := string(read(t, filepath.Join(out, SamplesCSV)))
			if !strings.Contains(csv, provider.BaselineOwner) || !strings.Contains(csv, analysis.RehearsalNote) {
				t.Error("samples.csv: no server column naming the stand-in")
			}
		})
	}
}
